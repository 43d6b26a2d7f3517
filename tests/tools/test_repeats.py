"""The same thought sent twice in a short while is one note (tools/capture/repeats.py); after the
window, or once its note is done or gone, the same words are a new thought."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import update

from storage.db import Database
from storage.models import Receipt
from storage.vault.files import Vault
from storage.vault.store import Store
from tests.tools.conftest import snapshot
from tools.base import ToolContext, ToolDeps
from tools.capture.repeats import REPEAT_WINDOW
from tools.registry import Execution, execute

THOUGHT = "Renew the car insurance before March"


async def capture(ctx: ToolContext, text: str = THOUGHT) -> Execution:
    done = await execute(ctx, "c1", "classify_and_capture", {"text": text})
    assert done.status == "ok" and done.output is not None, done.content
    return done


def notes(root: Path) -> list[str]:
    return [p for p in snapshot(root) if p.endswith(".md") and not p.startswith(".")]


async def test_the_same_words_again_name_the_first_note_and_file_nothing(
        ctx: ToolContext, vault_root: Path) -> None:
    first = await capture(ctx)
    assert first.output is not None and first.output.kind == "capture"
    files = snapshot(vault_root)
    again = await capture(ctx, "  renew the car INSURANCE   before March ")
    assert again.output is not None and again.output.kind == "entry"
    assert again.output.data["id"] == first.output.data["id"]
    assert again.output.text.startswith(
        f"Already in your notes: {first.output.data['name']} [{first.output.data['path']}]")
    assert snapshot(vault_root) == files  # not a byte written
    other = await capture(ctx, THOUGHT + " and the house insurance too")
    assert other.output is not None and other.output.kind == "capture"
    assert len(notes(vault_root)) == 2


async def test_once_the_note_is_done_or_gone_the_same_words_are_a_new_thought(
        ctx: ToolContext, vault_root: Path) -> None:
    first = await capture(ctx, "Renew the passport before June")
    assert first.output is not None
    await ctx.deps.store.update(first.output.data["path"], {"status": "done"})
    second = await capture(ctx, "Renew the passport before June")
    assert second.output is not None and second.output.kind == "capture"
    await ctx.deps.store.trash(second.output.data["path"])
    third = await capture(ctx, "Renew the passport before June")
    assert third.output is not None and third.output.kind == "capture"
    assert len(notes(vault_root)) == 2  # the done one and the third


async def test_after_the_window_the_same_words_are_filed_again(
        ctx: ToolContext, db: Database, vault_root: Path) -> None:
    first = await capture(ctx)
    assert first.output is not None
    async with db.session() as s:  # the first capture, as if made a while ago
        await s.execute(update(Receipt).values(
            created_at=datetime.now(UTC) - REPEAT_WINDOW - timedelta(seconds=5)))
        await s.commit()
    again = await capture(ctx)
    assert again.output is not None and again.output.kind == "capture"
    assert len(notes(vault_root)) == 2


async def test_someone_elses_same_words_are_their_own_note(
        ctx: ToolContext, db: Database, tmp_path: Path) -> None:
    await capture(ctx)
    (tmp_path / "theirs").mkdir()
    other = ToolContext(deps=ToolDeps(store=Store(Vault(tmp_path / "theirs"), db), db=db,
                                      user_id="U2"),
                        source="cli")
    theirs = await capture(other)
    assert theirs.output is not None and theirs.output.kind == "capture"
