"""Each `brain serve --workers N` process runs a background indexer over the same vault; each
found the same notes without vectors and embedded them again, so a burst's embedding took N
times its CPU from the turns. One process of a machine now embeds a vault at a time and the
others look again later (storage/index/indexer.py).

Two real processes start an indexer over one vault of notes without vectors at the same
moment: every note gets its vectors, and the notes embedded by both add up to the vault's.
On both databases (BRAIN_TEST_DB=postgres).
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
from pathlib import Path

import pytest

from storage.db import Database
from storage.meaning.shared_model import Meaning
from storage.vault.files import Vault
from storage.vault.store import Store
from tests.databases import fresh_url

REPO = Path(__file__).resolve().parents[2]
NOTES = 64  # two batches: the first process is still embedding when the second looks

RUN = """
import asyncio, logging, sys, time
from pathlib import Path
from storage.db import Database
from storage.meaning import vector_rows
from storage.index.indexer import Indexer, embed_lock
from storage.vault.locks import if_free
from storage.meaning.shared_model import Meaning
from storage.vault.store import Store
from storage.vault.files import Vault

logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(message)s")
logging.getLogger("storage.index.indexer").setLevel(logging.DEBUG)

async def main(who, other, root, sync, url):
    db = await Database.open(url)
    meaning = Meaning.load()
    store = Store(Vault(root), db, meaning=meaning)
    Path(sync, who).touch()
    while not Path(sync, other).exists():  # both start together
        time.sleep(0.001)
    indexer = Indexer(db, meaning)
    indexer.watch(store)
    indexer.start()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # every note has vectors and no pass is under way
        async with db.session() as s:
            left = await vector_rows.count_pending(s, store.index.key, meaning.model)
        if not left:
            with if_free(embed_lock(store.index.key, meaning.model)) as idle:
                if idle:
                    break
        await asyncio.sleep(0.1)
    await indexer.close()
    await db.close()

asyncio.run(main(*sys.argv[1:6]))
"""


async def test_two_indexers_of_one_vault_embed_each_note_once(tmp_path: Path) -> None:
    if not Meaning.load().available:
        pytest.skip("no embedding model here")
    root, sync = tmp_path / "vault", tmp_path / "sync"
    sync.mkdir()
    for i in range(NOTES):
        path = root / "ideas" / f"idea-{i}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"---\nname: Idea {i}\n---\nA thought number {i} about the garden, "
                        f"the budget and the offsite in week {i % 52}.\n", encoding="utf-8")
    url = fresh_url(tmp_path)
    db = await Database.open(url)
    await Store(Vault(root), db).refresh()  # words indexed; no vectors yet
    await db.close()
    procs = [await asyncio.create_subprocess_exec(
        sys.executable, "-c", RUN, who, other, str(root), str(sync), url,
        cwd=REPO, env={**os.environ}, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE) for who, other in (("a", "b"), ("b", "a"))]
    outs = [await p.communicate() for p in procs]
    embedded = 0
    for p, (_, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err.decode()[-2000:]
        embedded += sum(int(n) for n in re.findall(r"embedded (\d+) note", err.decode()))
    db = await Database.open(url)
    try:
        from storage.meaning import vector_rows

        async with db.session() as s:
            key = Store(Vault(root), db).index.key
            assert await vector_rows.count_pending(s, key, Meaning.load().model) == 0
    finally:
        await db.close()
    assert embedded == NOTES
