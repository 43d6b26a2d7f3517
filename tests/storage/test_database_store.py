"""The database store (issue 34): PostgreSQL holds each vault; two machines, each with its own
folder for the mirror and its own history repository, sharing nothing but the database, see
each other's notes, changes and history, and undo each other's changes. A vault of the file
store is brought in whole the first time it is used, once. The vault's git remote is one on
every machine: a push taken by one is the other's head."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from storage.db import Database
from storage.errors import ChangedSince, Fenced, NotFound
from storage.history import History, changing, history_path
from storage.meaning import vector_rows
from storage.meaning.shared_model import Meaning
from storage.models import Job
from storage.processes import process_name
from storage.repositories import leases
from storage.sync.remote import FETCH_FIRST, VaultRemote
from storage.types import ReceiptDraft
from storage.vault.files import Vault
from storage.vault.mirror import Mirror
from storage.vault.store import Store
from tests.databases import fresh_url
from tests.storage.sync_client import LIMITS, files_at, head_of, on_top, push

pytestmark = pytest.mark.postgres_only

PERSON = "db:U1"


class Machine:
    """One machine's view of a person's vault: a data directory of its own, one database."""

    def __init__(self, base: Path, db: Database, key: str = PERSON) -> None:
        vault = Vault(base / "vaults" / "U1", key=key)
        self.history = History(history_path(base / "history", vault.root), vault)
        self.store = Store(vault, db, history=self.history,
                           mirror=Mirror(db, vault, self.history))

    def files(self) -> dict[str, bytes]:
        root = self.store.vault.root
        return {p.relative_to(root).as_posix(): p.read_bytes()
                for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
async def db(tmp_path: Path):  # type: ignore[no-untyped-def]
    database = await Database.open(fresh_url(tmp_path))
    yield database
    await database.close()


async def test_two_machines_see_change_and_undo_each_others_notes(tmp_path: Path,
                                                                   db: Database) -> None:
    a, b = Machine(tmp_path / "a", db), Machine(tmp_path / "b", db)
    with changing("U1", "slack a"):
        kites = await a.store.create("ideas", "Kites", {}, "Kites over the bay\n")
        await a.store.create("admin", "Renew passport", {"status": "todo"}, "Before June\n")
    # machine b has never seen the vault: it lists, searches and reads what a wrote
    assert {e.name for e in (await b.store.list()).entries} == {"Kites", "Renew passport"}
    assert [e.name for e in (await b.store.search("passport")).entries] == ["Renew passport"]
    assert (await b.store.get(kites.id or "")).body == "Kites over the bay\n"
    # b changes a's note; a sees it, and both histories list the same changes
    with changing("U1", "cli b"):
        await b.store.update(kites.path, {}, append_body="And a red one.")
        moved = await b.store.move(kites.path, "projects")
    assert "And a red one." in (await a.store.get(moved.new_path)).body
    ids_a = [c.id for c in await a.store.changes(None)]
    ids_b = [c.id for c in await b.store.changes(None)]
    assert ids_a == ids_b and len(ids_a) >= 4
    # a undoes b's move: both machines' mirrors end byte for byte alike
    with changing("U1", "cli a"):
        undone = await a.store.undo(ids_a[0])
    assert moved.new_path in undone.paths
    await b.store.list()  # a read brings b up to date
    assert a.files() == b.files()
    assert "ideas/kites.md" in b.files() and "projects/kites.md" not in b.files()


async def test_a_file_store_vault_is_brought_in_once_with_its_history(tmp_path: Path,
                                                                       db: Database) -> None:
    # a vault of the file store, with notes written by the app and one by hand
    root = tmp_path / "a" / "vaults" / "U1"
    plain = Vault(root)
    old = History(history_path(tmp_path / "a" / "history", plain.root), plain)
    before = Store(plain, db, history=old)
    with changing("U1", "cli"):
        await before.create("people", "Sara", {}, "Sara from the book club\n")
    (root / "notes").mkdir()
    (root / "notes" / "by-hand.md").write_text("# By hand\nWritten in Obsidian\n")
    history_then = [c.id for c in await before.changes(None)]
    old.close()
    # the same folder now mirrors the database: its first use sends it whole, once
    a = Machine(tmp_path / "a", db)
    assert {e.name for e in (await a.store.list()).entries} >= {"Sara"}
    b = Machine(tmp_path / "b", db)
    assert {e.name for e in (await b.store.list()).entries} >= {"Sara", "by-hand"}
    assert b.files() == a.files()
    assert [c.id for c in await b.store.changes(None)][-len(history_then):] == history_then
    a_again = Machine(tmp_path / "a", db)  # a restart: nothing is sent twice
    await a_again.store.list()
    assert a_again.files() == b.files()


async def test_vaults_of_two_people_never_mix(tmp_path: Path, db: Database) -> None:
    a = Machine(tmp_path / "a", db)
    other = Machine(tmp_path / "b", db, key="db:U2")
    with changing("U1", "cli"):
        await a.store.create("ideas", "Kites", {}, "Mine\n")
    assert (await other.store.list()).entries == []
    assert other.files() == {}


async def test_a_forgotten_vault_leaves_every_machine_and_the_database(
        tmp_path: Path, db: Database) -> None:
    a, b = Machine(tmp_path / "a", db), Machine(tmp_path / "b", db)
    with changing("U1", "cli"):
        await a.store.create("people", "Sara Lindqvist", {}, "Her new address\n")
    assert [e.name for e in (await b.store.list()).entries] == ["Sara Lindqvist"]
    assert a.store.mirror is not None
    await a.store.mirror.erase()  # what `brain forget` does first in the database store
    await b.store.list()  # b's next read: its mirror goes, history and all
    assert b.files() == {}
    assert not (b.history.path / "repo.git").exists()
    async with db.session() as s:
        left = (await s.execute(text(
            "SELECT (SELECT count(*) FROM vault_files WHERE vault = :v), "
            "(SELECT count(*) FROM vault_objects WHERE vault = :v), "
            "(SELECT string_agg(head, ',') FROM vault_heads WHERE vault = :v)"),
            {"v": PERSON})).one()
    assert tuple(left) == (0, 0, "")  # no name, no text, no object of theirs


async def test_the_git_remote_is_one_line_on_every_machine(tmp_path: Path, db: Database) -> None:
    a, b = Machine(tmp_path / "a", db), Machine(tmp_path / "b", db)
    with changing("U1", "slack a"):
        await a.store.create("ideas", "Kites", {}, "Kites over the bay\n")
    remote_a, remote_b = VaultRemote(a.store, "U1", LIMITS), VaultRemote(b.store, "U1", LIMITS)
    first = await head_of(remote_a)
    assert await head_of(remote_b) == first  # b serves a's line, not one of its own
    refused, _ = await push(remote_a, lambda store, head: on_top(
        store, head, {"ideas/late.md": b"Late\n"}, "Late"), old=first)
    assert refused is None
    with changing("U1", "slack b"):  # b moves on: a push to a on the old head must pull first
        await b.store.create("admin", "Renew passport", {}, "Before June\n")
    stale, _ = await push(remote_a, lambda store, head: on_top(
        store, head, {"ideas/stale.md": b"Stale\n"}, "Stale"), old=first)
    assert stale == FETCH_FIRST
    refused, tip = await push(remote_b, lambda store, head: on_top(
        store, head, {"ideas/from-b.md": b"From b\n"}, "From b"))
    assert refused is None
    assert await head_of(remote_a) == await head_of(remote_b) == tip  # the pushed commit itself
    pushed = files_at(a.history.repo.repo.object_store, tip)
    assert {"ideas/late.md", "ideas/from-b.md", "admin/renew-passport.md"} <= set(pushed)
    assert a.files() == b.files() == pushed
    assert "ideas/stale.md" not in a.files()


# One step of a random sequence on one of two machines: (kind, machine, a number that picks
# the note, a number for the rest). No outside edits: a mirror is never edited by hand here.
STEP = st.tuples(st.sampled_from(["create", "update", "move", "trash", "undo"]),
                 st.integers(0, 1), st.integers(0, 50), st.integers(0, 50))
FILED = ("people", "projects", "ideas", "admin")
NAMES = ("Project Phoenix", "Sara Lopez", "Budget", "Podcast idea", "Car insurance")


async def _step(store: Store, kind: str, pick: int, extra: int) -> None:
    present = sorted(e.path for e in (await store.list(limit=500)).entries)
    target = present[pick % len(present)] if present else None
    if kind == "create" or target is None:
        await store.create(FILED[extra % 4], NAMES[pick % len(NAMES)], {}, f"body {extra}")
    elif kind == "update":
        await store.update(target, {"tags": [f"t{extra}"]}, append_body=f"more {extra}")
    elif kind == "move":
        await store.move(target, FILED[extra % 4])
    elif kind == "trash":
        await store.trash(target)
    else:
        with contextlib.suppress(NotFound, ChangedSince):
            await store.undo()


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(STEP, min_size=1, max_size=20))
def test_changes_made_on_two_machines_undone_in_reverse_restore_each_state(
        tmp_path: Path, steps: list[tuple[str, int, int, int]]) -> None:
    """The history's property (tests/storage/test_history.py) on the database store: random
    changes made on either of two machines, undone in reverse from either, give back each
    earlier state byte for byte, on both machines' mirrors."""
    async def go() -> None:
        db = await Database.open(fresh_url(tmp_path, name="history"))
        base = Path(tempfile.mkdtemp(dir=tmp_path))
        try:
            machines = [Machine(base / "a", db), Machine(base / "b", db)]
            states = []  # (change id, both mirrors before it)
            with changing("U1", "test"):
                for kind, which, pick, extra in steps:
                    before = await _both(machines)
                    store = machines[which].store
                    known = {c.id for c in await store.changes(limit=200)}
                    await _step(store, kind, pick, extra)
                    new = [c for c in await store.changes(limit=200)
                           if c.id not in known and c.action != "start of history"]
                    assert len(new) <= 1, new  # one step, one change
                    if new:
                        states.append((new[0].id, before))
                for i, (change_id, before) in enumerate(reversed(states)):
                    await machines[i % 2].store.undo(change_id)
                    assert await _both(machines) == before
        finally:
            await db.close()

    asyncio.run(go())


async def _both(machines: list[Machine]) -> dict[str, bytes]:
    """The vault as both machines' mirrors hold it after a read (they must agree)."""
    for m in machines:
        await m.store.list()
    first, second = (m.files() for m in machines)
    assert first == second
    return first


async def test_the_indexers_look_asks_once_for_all_its_mirrors_and_pulls_the_one_behind(
        tmp_path: Path, db: Database) -> None:
    """A machine watching many people's vaults: each pass asks the database about all of
    them in one statement (not one transaction per vault every two seconds), and a note
    another machine wrote reaches this machine's mirror with no read asking for it."""
    from sqlalchemy import event

    from storage.index.indexer import Indexer
    from storage.meaning.shared_model import Meaning

    here = [Machine(tmp_path / "here", db, key=f"db:U{n}") for n in range(8)]
    there = Machine(tmp_path / "there", db, key="db:U3")
    for machine in here:
        await machine.store.list()  # each mirror made ready
    indexer = Indexer(db, Meaning.off(), scan_every=0.05)
    for machine in here:
        indexer.watch(machine.store)
    statements: list[str] = []

    def heard(_conn, _cursor, statement, _params, _context, _many) -> None:  # type: ignore[no-untyped-def]
        statements.append(statement)

    indexer.start()
    try:
        await asyncio.sleep(0.5)  # passes over vaults with nothing new
        event.listen(db.engine.sync_engine, "before_cursor_execute", heard)
        await asyncio.sleep(1.0)
        event.remove(db.engine.sync_engine, "before_cursor_execute", heard)
        looks = [s for s in statements if "vault_heads" in s]
        assert looks and all("unnest" in s for s in looks), looks[:3]

        with changing("U3", "cli there"):
            kites = await there.store.create("ideas", "Kites", {}, "Kites over the bay\n")
        mirrored = here[3].store.vault.root / kites.path
        for _ in range(200):
            if mirrored.is_file():
                break
            await asyncio.sleep(0.05)
        assert mirrored.read_bytes() == there.files()[kites.path]
    finally:
        await indexer.close()


async def refuse(db: Database, table: str, word: str | None = None, why: str = "") -> None:
    """PostgreSQL refuses every row of `table` whose path holds `word`, raising `why` (a real
    fault in the database, as a full disk or a broken index would be); without `word`, it
    takes the refusal back."""
    async with db.session() as s:
        if word is None:
            await s.execute(text(f"DROP TRIGGER refuse ON {table}"))
        else:
            await s.execute(text(
                "CREATE OR REPLACE FUNCTION refuse_rows() RETURNS trigger AS $$ BEGIN "
                f"IF NEW.path LIKE '%{word}%' THEN RAISE EXCEPTION '{why}'; END IF; "
                "RETURN NEW; END $$ LANGUAGE plpgsql"))
            await s.execute(text(f"CREATE TRIGGER refuse BEFORE INSERT OR UPDATE ON {table} "
                                 "FOR EACH ROW EXECUTE FUNCTION refuse_rows()"))
        await s.commit()


async def test_a_write_whose_text_the_database_refused_is_undone_on_its_machine_too(
        tmp_path: Path, db: Database) -> None:
    """A write is one transaction (its note's text, index rows, history and receipt): when
    the database refuses the text, no machine finds the note, not even the one that wrote
    it (its mirror is put back), and nothing of it is sent later; made again, it lands."""
    a, b = Machine(tmp_path / "a", db), Machine(tmp_path / "b", db)
    await a.store.create("ideas", "Boats", {}, "A rowing boat\n")
    head = a.history.repo.head()
    await refuse(db, "vault_files", "kites", "no room for kites")  # as a full disk would
    with pytest.raises(Exception, match="no room for kites"):
        await a.store.create("ideas", "Kites", {}, "Kites over the bay\n")
    assert (await b.store.search("kites")).entries == []
    assert (await a.store.search("kites")).entries == []
    assert not any("kites" in rel for rel in a.files())
    assert a.history.repo.head() == head  # its change is not in the history either

    await refuse(db, "vault_files")
    await a.store.create("ideas", "Oars", {}, "Two oars\n")
    assert (await b.store.search("kites")).entries == []  # nothing of it was sent later
    await a.store.create("ideas", "Kites", {}, "Kites over the bay\n")
    [found] = (await b.store.search("kites")).entries
    assert (await b.store.get(found.path)).body == "Kites over the bay\n"
    await b.store.list()
    assert a.files() == b.files()


async def test_a_change_whose_index_rows_were_refused_is_undone_with_its_text(
        tmp_path: Path, db: Database) -> None:
    """The other way round, for a change of a note: when its index rows cannot be written,
    its text is not sent, and the machine that wrote it reads the note as it was."""
    a, b = Machine(tmp_path / "a", db), Machine(tmp_path / "b", db)
    boats = await a.store.create("ideas", "Boats", {}, "A rowing boat\n")
    await refuse(db, "index_notes", "boats", "no index for boats")
    with pytest.raises(Exception, match="no index for boats"):
        await a.store.update(boats.path, {}, append_body="With a sail.")
    assert "sail" not in (await b.store.get(boats.path)).body
    assert (await b.store.search("sail")).entries == []
    assert (await a.store.get(boats.path)).body == "A rowing boat\n"

    await refuse(db, "index_notes")
    await a.store.update(boats.path, {}, append_body="With a sail.")
    [found] = (await b.store.search("sail")).entries
    assert "With a sail." in (await b.store.get(found.path)).body


_WRITER = """
import asyncio, sys
from pathlib import Path
from storage.db import Database
from storage.types import ReceiptDraft
from tests.storage.test_database_store import Machine

async def main() -> None:
    db = await Database.open(sys.argv[1])
    store = Machine(Path(sys.argv[2]), db).store
    await store.create_once("ideas", "Kites", {}, "Kites over the bay\\n",
                            entry_id="20260101-job-7", receipt=ReceiptDraft(
                                user_id="U1", original_text="Kites over the bay",
                                category="ideas", status="filed", confidence=0.9,
                                job_id=None))

asyncio.run(main())
"""


async def test_a_capture_killed_before_its_commit_leaves_nothing_and_is_made_once(
        tmp_path: Path, db: Database) -> None:
    """A process killed (SIGKILL) while its capture's transaction is open, after the note's
    file is in its machine's mirror: the database holds nothing of it (no note, no receipt),
    the next process of that machine finds its mirror put back, and the capture run again
    files one note, under one receipt."""
    a = Machine(tmp_path / "a", db)
    await a.store.create("ideas", "Boats", {}, "A rowing boat\n")
    async with db.session() as s:  # the database stalls the capture's text until told
        await s.execute(text(
            "CREATE FUNCTION stall() RETURNS trigger AS $$ BEGIN "
            "IF NEW.path LIKE '%kites%' THEN PERFORM pg_sleep(600); END IF; "
            "RETURN NEW; END $$ LANGUAGE plpgsql"))
        await s.execute(text("CREATE TRIGGER stall BEFORE INSERT ON vault_files "
                             "FOR EACH ROW EXECUTE FUNCTION stall()"))
        await s.commit()
    root = Path(__file__).resolve().parents[2]
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _WRITER, db.url, str(tmp_path / "a"), cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)})
    written = a.store.vault.root / "ideas" / "kites.md"
    while not written.is_file():  # the note's file is in the mirror, its rows not sent
        assert child.returncode is None, "the writer ended before its file was written"
        await asyncio.sleep(0.01)
    child.kill()
    await child.wait()
    async with db.session() as s:  # its stalled statement ends with it (a dead machine's
        await s.execute(text(      # connection is ended by the server the same way)
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = "
            "current_database() AND query LIKE '%vault_files%' AND pid <> pg_backend_pid()"))
        await s.execute(text("DROP TRIGGER stall ON vault_files"))
        await s.commit()
        assert await s.scalar(text("SELECT count(*) FROM receipts")) == 0
        assert await s.scalar(text(
            "SELECT count(*) FROM vault_files WHERE path LIKE '%kites%'")) == 0

    again = Machine(tmp_path / "a", db)  # the machine's next process
    assert [e.name for e in (await again.store.list()).entries] == ["Boats"]
    assert not written.exists()
    made = await again.store.create_once(
        "ideas", "Kites", {}, "Kites over the bay\n", entry_id="20260101-job-7",
        receipt=ReceiptDraft(user_id="U1", original_text="Kites over the bay",
                             category="ideas", status="filed", confidence=0.9, job_id=None))
    assert made.made and made.entry.path == "ideas/kites.md"
    b = Machine(tmp_path / "b", db)
    assert sorted(e.path for e in (await b.store.list()).entries) == [
        "ideas/boats.md", "ideas/kites.md"]
    async with db.session() as s:
        assert await s.scalar(text("SELECT count(*) FROM receipts")) == 1


async def test_a_mirror_left_mid_write_is_compared_whole_with_the_database(
        tmp_path: Path, db: Database) -> None:
    """A process that died while writing, before it marked the file it wrote and in the
    middle of its history commit (the state a SIGKILL there leaves): the next pull compares
    every file with the database, puts back each one that is not the database's, and the
    history's lock file the dead writer left goes (the next write commits at once)."""
    a = Machine(tmp_path / "a", db)
    boats = await a.store.create("ideas", "Boats", {}, "A rowing boat\n")
    root = a.store.vault.root
    before = a.files()
    (root / "ideas" / "kites.md").write_text("---\nid: x\n---\nKites\n")  # never marked
    (root / boats.path).write_text("changed, never sent\n")
    dead = subprocess.run(  # a process of this machine that has ended: the writer
        [sys.executable, "-c", "from storage.processes import process_name as p; print(p())"],
        cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True,
        check=True).stdout.strip()
    state = a.store.mirror._state()  # noqa: SLF001 (as the dead process left it)
    a.store.mirror.save({**state, "writing": dead})
    ref_lock = a.history.repo.path / "refs" / "heads" / "main.lock"
    ref_lock.write_bytes(b"")  # it died in the middle of its history commit

    again = Machine(tmp_path / "a", db)
    assert [e.name for e in (await again.store.list()).entries] == ["Boats"]
    assert again.files() == before
    assert not again.store.mirror._state().get("writing")  # noqa: SLF001
    assert not ref_lock.exists()
    await again.store.create("ideas", "Oars", {}, "Two oars\n")  # its history writes on


async def test_a_write_for_a_job_another_worker_took_over_commits_nothing(
        tmp_path: Path, db: Database) -> None:
    """A worker whose job was taken over (its lease ran out while it stalled) writes nothing
    in the database store: its write's transaction checks the lease, commits nothing, and its
    mirror is put back; the lease's holder writes."""
    a, b = Machine(tmp_path / "a", db), Machine(tmp_path / "b", db)
    await a.store.create("ideas", "Boats", {}, "A rowing boat\n")
    async with db.session() as s:
        job = Job(key="turn:k1", kind="turn", user_id="U1", lane="U1", payload={},
                  state="running", attempts=2, lease_owner="host:2:serve.1")
        s.add(job)
        await s.commit()
    with leases.working_for(job.id, "host:1:serve.1"), pytest.raises(Fenced):
        await a.store.create("ideas", "Kites", {}, "Kites over the bay\n")
    assert (await b.store.search("kites")).entries == []
    assert [e.name for e in (await a.store.list()).entries] == ["Boats"]
    assert not any("kites" in rel for rel in a.files())

    with leases.working_for(job.id, "host:2:serve.1"):
        await a.store.create("ideas", "Kites", {}, "Kites over the bay\n")
    [found] = (await b.store.search("kites")).entries
    assert found.name == "Kites"


async def test_a_write_under_way_in_another_process_is_not_put_back_by_a_read(
        tmp_path: Path, db: Database) -> None:
    """A read does not take the marks of a write another live process has under way for a
    dead write's: it neither waits for that write nor puts its files back."""
    a = Machine(tmp_path / "a", db)
    await a.store.create("ideas", "Boats", {}, "A rowing boat\n")
    root = a.store.vault.root
    (root / "ideas" / "kites.md").write_text("---\nid: x\n---\nKites\n")  # being written
    state = a.store.mirror._state()  # noqa: SLF001
    a.store.mirror.save({**state, "writing": process_name(), "unpushed": ["ideas/kites.md"]})
    again = Machine(tmp_path / "a", db)  # this process runs: its write is under way
    assert not await again.store.mirror.behind()
    assert (root / "ideas" / "kites.md").is_file()


async def test_two_machines_changing_one_note_at_once_lose_nothing(tmp_path: Path,
                                                                   db: Database) -> None:
    """Two machines (each its own mirror and its own database pool) add lines to one note at
    the same moment, ten each: every line is in the note at the end, on both machines and in
    the history (the vault's lock across machines puts the writes one after another, each on
    a mirror just pulled)."""
    other = await Database.open(db.url)
    try:
        a, b = Machine(tmp_path / "a", db), Machine(tmp_path / "b", other)
        plan = await a.store.create("ideas", "Plan", {}, "The plan\n")
        await b.store.list()

        async def add(machine: Machine, line: str) -> None:
            await machine.store.update(plan.path, {}, append_body=line)

        lines = [f"line {m} {i}" for i in range(10) for m in "ab"]
        await asyncio.gather(*(add(a if line.split()[1] == "a" else b, line)
                               for line in lines))
        for machine in (a, b):
            body = (await machine.store.get(plan.path)).body
            assert all(line in body for line in lines), body
        await a.store.list()
        assert a.files() == b.files()
        changes = await b.store.changes(plan.path, limit=50)
        assert sum(c.action == "update" for c in changes) == len(lines)
    finally:
        await other.close()


async def test_a_captured_notes_vectors_are_written_in_its_write(tmp_path: Path,
                                                                 db: Database) -> None:
    """A new note's few passages get their vectors in the write's own transaction (a capture
    writes inside `together`, as tools/capture/thought.py does): another machine finds it by
    meaning at once, and the background indexer is not woken for it; a note of many passages
    is left to the indexer, which is told once the write commits."""
    meaning = Meaning.load()
    if not meaning.available:
        pytest.skip("the embedding model is not installed")
    woken: list[str] = []
    a, b = Machine(tmp_path / "a", db), Machine(tmp_path / "b", db)
    for machine in (a, b):
        machine.store.meaning = meaning
    a.store.on_write = woken.append
    async with a.store.together():
        await a.store.create("ideas", "Kites", {}, "Flying kites over the bay on windy days\n")
    assert woken == []
    async with db.session() as s:
        assert await vector_rows.count_pending(s, a.store.index.key, meaning.model) == 0
    near = await b.store.nearby("a kite in the wind by the sea", k=3)
    assert [e.name for e in near] == ["Kites"]

    long = "\n\n".join(f"## Part {i}\n" + " ".join(f"word{i}x{j}" for j in range(160))
                       for i in range(12))
    await a.store.create("ideas", "Long", {}, long + "\n")
    assert woken == [a.store.index.key]  # its passages: the indexer's, after the commit
