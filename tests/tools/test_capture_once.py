"""A stalled first attempt and the attempt that took its job over capture the same message at
once (docs/reliability.md): one note, one receipt, and both replies name that note, even when
the two runs chose different categories. Real storage; two Database objects stand in for the
two processes (own pools, own connections); the processes themselves race in
tests/storage/test_create_once.py.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from storage.db import Database
from storage.models import Receipt
from storage.vault.files import Vault
from storage.vault.store import Store
from tests.databases import fresh_url
from tests.shared import ids_on_disk
from tools.base import ToolContext, ToolDeps, derived_id
from tools.capture.thought import capture_thought

ADMIN = {"category": "admin", "confidence": 0.9, "name": "Renew the passport"}
INBOX = {"category": "ideas", "confidence": 0.2, "name": "Passport thought"}  # -> inbox


async def _receipts(db: Database, entry_id: str) -> list[tuple[str, str]]:
    async with db.session() as s:
        rows = await s.execute(select(Receipt.path, Receipt.category)
                               .where(Receipt.entry_id == entry_id))
        return [(r[0], r[1]) for r in rows]


def _ctx(store: Store, db: Database, key: str, attempt: int) -> ToolContext:
    return ToolContext(deps=ToolDeps(store=store, db=db, user_id="U1"), source="cli", job_id=7,
                       job_key=key, job_attempt=attempt)


async def test_both_attempts_of_one_job_file_one_note_with_one_receipt(tmp_path: Path) -> None:
    url = fresh_url(tmp_path)
    dbs = [await Database.open(url), await Database.open(url)]
    try:
        root = tmp_path / "vault"
        stores = [Store(Vault(root), db) for db in dbs]
        for n in range(12):
            key = f"event:Ev{n}"
            first, second = _ctx(stores[0], dbs[0], key, 1), _ctx(stores[1], dbs[1], key, 2)
            hints: list[dict[str, Any]] = [ADMIN, INBOX] if n % 2 else [INBOX, ADMIN]
            text = f"Renew passport number {n} before June"  # one thought per job
            outs = await asyncio.gather(capture_thought(first, text, dict(hints[0])),
                                        capture_thought(second, text, dict(hints[1])))
            note_id = derived_id(key, 1)
            paths = ids_on_disk(root)[note_id]
            assert len(paths) == 1, paths
            assert {o.data["path"] for o in outs} == {paths[0]}
            category = paths[0].split("/", 1)[0]
            assert {o.data["category"] for o in outs} == {category}
            assert await _receipts(dbs[0], note_id) == [(paths[0], category)]
        async with dbs[0].session() as s:
            assert await s.scalar(select(func.count()).select_from(Receipt)) == 12
    finally:
        for db in dbs:
            await db.close()


async def test_a_first_attempt_resuming_late_finds_the_note_of_the_second(
        tmp_path: Path) -> None:
    db = await Database.open(fresh_url(tmp_path))
    try:
        store = Store(Vault(tmp_path / "vault"), db)
        key = "event:Late"
        done = await capture_thought(_ctx(store, db, key, 2), "Renew the passport", dict(INBOX))
        late = await capture_thought(_ctx(store, db, key, 1), "Renew the passport", dict(ADMIN))
        assert done.data["path"] == late.data["path"] and done.data["path"].startswith("inbox/")
        assert late.data["category"] == "inbox" and late.data["status"] == "needs_review"
        assert late.text.startswith("Saved to inbox for review")
        assert len(await _receipts(db, derived_id(key, 1))) == 1
        assert len(list(store.vault.root.rglob("*.md"))) == 1
    finally:
        await db.close()
