"""A note with a given id (derived from a job or a saved message) is made at most once per
vault, whichever processes make it at the same moment (docs/reliability.md: a worker that
stalled past its lease and the one that took its job over both file the message).

Two real processes make the same ids round after round, each its own category and name, in
step (each round starts when both are ready): one file per id, and both get its path back.
On both databases (BRAIN_TEST_DB=postgres).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from storage.db import Database
from storage.vault.files import Vault
from storage.vault.store import Store
from tests.databases import fresh_url
from tests.shared import ids_on_disk

REPO = Path(__file__).resolve().parents[2]
ROUNDS = 40

RUN = """
import asyncio, json, sys, time
from pathlib import Path
from storage.db import Database
from storage.vault.store import Store
from storage.vault.files import Vault

async def main(who, other, root, sync, url, rounds):
    db = await Database.open(url)
    store = Store(Vault(root), db)
    category = {"a": "admin", "b": "inbox"}[who]
    for i in range(rounds):
        Path(sync, f"{who}-{i}").touch()
        while not Path(sync, f"{other}-{i}").exists():  # both start the round together
            time.sleep(0.0005)
        entry, made, _ = await store.create_once(category, f"Round {i} by {who}", {},
                                              f"Thought {i}\\n", entry_id=f"e_round{i:07d}")
        print(json.dumps({"round": i, "path": entry.path, "id": entry.id, "made": made}))
    await db.close()

asyncio.run(main(*sys.argv[1:6], int(sys.argv[6])))
"""


async def test_two_processes_making_one_id_at_once_make_one_note(tmp_path: Path) -> None:
    root, sync = tmp_path / "vault", tmp_path / "sync"
    sync.mkdir()
    url = fresh_url(tmp_path)
    await (await Database.open(url)).close()  # migrated before the racers start
    procs = [await asyncio.create_subprocess_exec(
        sys.executable, "-c", RUN, who, other, str(root), str(sync), url, str(ROUNDS),
        cwd=REPO, env={**os.environ}, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE) for who, other in (("a", "b"), ("b", "a"))]
    outs = [await p.communicate() for p in procs]
    for p, (_, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err.decode()[-2000:]
    a, b = ([json.loads(line) for line in out.decode().splitlines()] for out, _ in outs)
    assert len(a) == len(b) == ROUNDS
    on_disk = ids_on_disk(root)
    for ra, rb in zip(a, b, strict=True):
        note_id = f"e_round{ra['round']:07d}"
        assert ra["id"] == rb["id"] == note_id
        assert on_disk[note_id] == [ra["path"]], (note_id, on_disk[note_id])
        assert ra["path"] == rb["path"]
        assert ra["made"] != rb["made"]  # one process made it, the other found it
    assert len(on_disk) == ROUNDS


async def test_a_made_note_is_found_again_and_a_new_id_is_made(tmp_path: Path) -> None:
    db = await Database.open(fresh_url(tmp_path))
    try:
        store = Store(Vault(tmp_path / "vault"), db)
        first, made, _ = await store.create_once("ideas", "Kites", {}, "x\n", entry_id="e_kites0001")
        again, made_again, _ = await store.create_once("admin", "Other", {}, "y\n",
                                                    entry_id="e_kites0001")
        assert (made, made_again) == (True, False)
        assert again.path == first.path == "ideas/kites.md"
        # Removed by hand (its index row is stale): the id is free again.
        (store.vault.root / first.path).unlink()
        _, made_third, _ = await store.create_once("admin", "Other", {}, "y\n",
                                                entry_id="e_kites0001")
        assert made_third
        assert ids_on_disk(store.vault.root) == {"e_kites0001": ["admin/other.md"]}
    finally:
        await db.close()
