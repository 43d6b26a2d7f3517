"""Notes survive what real use throws at them: a writer killed at any instant, the CLI and the
bot changing one note at once from two processes, and any text a model or a user can send.

Every check is on files a user would open: a note is whole or absent, parses back with its id,
and keeps every change that was acknowledged.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storage.db import Database
from storage.vault.files import Vault
from storage.vault.note_text import parse_note
from storage.vault.store import Store
from tests.databases import fresh_url
from tools.base import ToolContext, ToolDeps
from tools.capture.limits import not_text, refusal
from tools.registry import execute

REPO = Path(__file__).resolve().parents[2]

WRITER = """
import sys
from storage.vault.files import Vault
vault = Vault(sys.argv[1])
body = "paragraph of a long note. " * 4000  # ~100 kB: a write takes a while
i = 0
while True:
    vault.create("ideas", f"Idea {i}", {"tags": ["a", "b"]}, body)
    i += 1
"""


def _check_notes(root: Path) -> int:
    notes = [p for p in root.rglob("*.md")]
    for path in notes:
        text = path.read_text(encoding="utf-8")
        parsed = parse_note(text)
        assert parsed.frontmatter.get("id"), f"{path.name} is not whole: {text[:80]!r}"
        assert parsed.body.startswith("paragraph"), path.name
    return len(notes)


@pytest.mark.slow
def test_a_writer_killed_at_any_instant_leaves_whole_notes_or_none(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    rng = random.Random(7)
    for _ in range(15):
        before = len(list(root.rglob("*.md")))
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(root)], cwd=REPO,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # Killed while writing: once it has written a note (Python's start-up takes longer
        # on a busy machine), a random instant later.
        deadline = time.monotonic() + 30
        while len(list(root.rglob("*.md"))) == before and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(rng.random() * 0.2)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        _check_notes(root)
    assert _check_notes(root) > 15
    # temp files a kill left behind are ours to remove, and nothing else is touched
    leftovers = [p for p in root.rglob(".*.tmp")]
    removed = Vault(root).clean_temp(max_age=0)
    assert sorted(removed) == sorted(p.relative_to(root).as_posix() for p in leftovers)
    assert not list(root.rglob(".*.tmp"))


RACER = """
import asyncio, sys
from storage.db import Database
from storage.vault.store import Store
from storage.vault.files import Vault

async def main(role, root, url, ref, n):
    db = await Database.open(url)
    store = Store(Vault(root), db)
    for i in range(n):
        if role == "cli":
            await store.update(ref, {}, append_body=f"line {i} from the cli")
        else:
            await store.move(ref, ("projects", "ideas")[i % 2])
    await db.close()

asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])))
"""


async def test_the_cli_and_the_bot_never_overwrite_each_other(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    url = fresh_url(tmp_path)
    db = await Database.open(url)
    entry = await Store(Vault(root), db).create("ideas", "Shared note", {}, "start\n")
    await db.close()
    n = 60
    procs = [await asyncio.create_subprocess_exec(
        sys.executable, "-c", RACER, role, str(root), url, entry.id or "", str(n), cwd=REPO,
        env={**os.environ}, stderr=asyncio.subprocess.PIPE) for role in ("cli", "bot")]
    results = [await p.communicate() for p in procs]
    for p, (_, err) in zip(procs, results, strict=True):
        assert p.returncode == 0, err.decode()[-2000:]
    notes = list(root.rglob("*.md"))
    assert len(notes) == 1, notes  # moved back and forth, never duplicated
    text = notes[0].read_text(encoding="utf-8")
    missing = [i for i in range(n) if f"line {i} from the cli" not in text]
    assert not missing, f"updates lost: {missing}"


# Any character at all, lone surrogates, NUL, controls, RTL marks and emoji included.
ANY_TEXT = st.text(st.characters(codec=None, categories=None), min_size=1, max_size=60)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(text=ANY_TEXT, name=ANY_TEXT, value=ANY_TEXT, tag=ANY_TEXT)
def test_any_text_through_every_writing_tool_parses_back(tmp_path: Path, text: str, name: str,
                                                          value: str, tag: str) -> None:
    async def go() -> None:
        unique = uuid.uuid4().hex[:12]  # hypothesis seeds `random`: examples would collide
        db = await Database.open(fresh_url(tmp_path))  # one database; a vault per example
        root = tmp_path / f"vault-{unique}"
        ctx = ToolContext(deps=ToolDeps(store=Store(Vault(root), db), db=db, user_id="u1"))
        try:
            captured = await execute(ctx, "c1", "classify_and_capture", {
                "text": text + " remember this",
                "hints": {"category": "projects", "confidence": 0.9, "name": name,
                          "next_action": value, "tags": [tag]}})
            if not_text(text + " remember this"):  # refused at every door, nothing written
                assert (captured.error or {}).get("message") == refusal(text + " remember this")
                assert not list(root.rglob("*.md"))
                return
            assert captured.status == "ok", captured.error
            ref = captured.output.data["id"] if captured.output else ""
            updated = await execute(ctx, "c2", "update_entry", {
                "path": ref, "updates": {"context": value, "mood": tag},
                "append": text})
            moved = await execute(ctx, "c3", "move_entry", {"path": ref,
                                                            "target_category": "ideas"})
            for ex in (updated, moved):
                assert ex.status == "ok" or (ex.error or {}).get("code") == "invalid", ex.error
            for path in root.rglob("*.md"):
                parsed = parse_note(path.read_bytes().decode("utf-8"))  # strict UTF-8
                assert parsed.frontmatter_error is None
                assert parsed.frontmatter.get("id") == ref
            assert (await ctx.deps.store.search("remember")).entries
        finally:
            await db.close()

    asyncio.run(go())
