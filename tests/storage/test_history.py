"""The vault's history (storage/history): every change recorded, any change undone, byte for
byte, on both databases."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storage.db import Database
from storage.errors import ChangedSince, InvalidValue, NotFound
from storage.history import changing
from storage.vault.store import Store
from tests.databases import fresh_url
from tests.storage.conftest import make_history_store as make_store

REPO = Path(__file__).resolve().parents[2]
FILED = ("people", "projects", "ideas", "admin")
NAMES = ("Project Phoenix", "Sara Lopez", "Budget", "Podcast idea", "Car insurance")


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file of the vault, byte for byte (the trash too)."""
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def store(history_store: Store) -> Store:  # tests/storage/conftest.py
    return history_store


def notes(store: Store) -> list[str]:
    return sorted(rel for rel, _m, _s in store.vault.scan())


# One step of a random sequence: (kind, a number that picks the note, a number for the rest)
STEP = st.tuples(st.sampled_from(["create", "update", "move", "trash", "outside",
                                  "outside_new", "undo"]),
                 st.integers(0, 50), st.integers(0, 50))


async def apply(store: Store, kind: str, pick: int, extra: int) -> None:
    present = notes(store)
    target = present[pick % len(present)] if present else None
    if kind == "create" or target is None and kind != "outside_new":
        await store.create(FILED[extra % 4], NAMES[pick % len(NAMES)], {}, f"body {extra}")
    elif kind == "update":
        with contextlib.suppress(InvalidValue):  # frontmatter the app won't touch
            await store.update(target, {"tags": [f"t{extra}"]}, append_body=f"more {extra}")
    elif kind == "move":
        await store.move(target, FILED[extra % 4])
    elif kind == "trash":
        await store.trash(target)
    elif kind == "outside":
        path = store.vault.root / target
        path.write_bytes(path.read_bytes() + f"\nedited outside {extra} \u00e9\n".encode())
        await store.refresh()
    elif kind == "outside_new":
        path = store.vault.root / "inbox" / f"typed-{pick}-{extra}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"---\nname: typed\n---\nwritten in Obsidian\r\n")
        await store.refresh()
    else:
        with contextlib.suppress(NotFound, ChangedSince):
            await store.undo()


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(STEP, min_size=1, max_size=30))
def test_undoing_every_change_in_reverse_restores_each_earlier_state(
        tmp_path: Path, steps: list[tuple[str, int, int]]) -> None:
    async def go() -> None:
        db = await Database.open(fresh_url(tmp_path, name="history"))
        try:
            store = make_store(db, Path(tempfile.mkdtemp(dir=tmp_path)))
            states = []  # (change id, the vault before it)
            with changing("U1", "test"):
                for kind, pick, extra in steps:
                    before = snapshot(store.vault.root)
                    known = {c.id for c in await store.changes(limit=200)}
                    await apply(store, kind, pick, extra)
                    new = [c for c in await store.changes(limit=200) if c.id not in known]
                    new = [c for c in new if c.action != "start of history"]
                    assert len(new) <= 1, new  # one step, one change
                    if new:
                        states.append((new[0].id, before))
                for change_id, before in reversed(states):
                    await store.undo(change_id)
                    assert snapshot(store.vault.root) == before
        finally:
            await db.close()

    asyncio.run(go())


async def test_an_undo_refused_because_the_file_changed_since_changes_nothing(
        store: Store) -> None:
    with changing("U1", "cli"):
        entry = await store.create("projects", "Project Phoenix", {}, "Launch in May.")
        update = await store.update(entry.path, {"next_action": "Call Sara"})
    assert update.fields["next_action"] == "Call Sara"
    first_update = (await store.changes(limit=1))[0]
    path = store.vault.root / entry.path
    path.write_bytes(path.read_bytes() + b"\nTyped in Obsidian.\n")  # after the app's update
    before, count = snapshot(store.vault.root), len(await store.changes(limit=200))

    with pytest.raises(ChangedSince) as refused:
        await store.undo(first_update.id)
    assert entry.path in refused.value.message and "outside edit" in refused.value.message
    assert snapshot(store.vault.root) == before  # nothing clobbered
    # Listing the history recorded the outside edit; the refusal added nothing.
    changes = await store.changes(limit=200)
    assert len(changes) == count and changes[0].action == "outside edit"
    assert changes[0].who == "outside"


async def test_an_outside_edit_is_recorded_and_can_be_undone(store: Store) -> None:
    with changing("U1", "cli"):
        entry = await store.create("ideas", "Podcast idea", {}, "About gardens.")
    path = store.vault.root / entry.path
    app_bytes = path.read_bytes()
    path.write_bytes(b"---\nname: Podcast idea\n---\nRewritten by hand\r\n")
    await store.refresh()
    outside = (await store.changes(limit=1))[0]
    assert (outside.action, outside.paths) == ("outside edit", (entry.path,))
    undone = await store.undo(outside.id)
    assert path.read_bytes() == app_bytes
    assert undone.undoes == outside.id
    assert (await store.search("gardens")).entries[0].path == entry.path  # re-indexed
    # The default undo is the app's last change (not the outside edit): the capture.
    with changing("U1", "cli"):
        last = await store.undo()
    assert last.undoes != outside.id and not path.exists()


async def test_repeated_undo_walks_back_and_history_of_a_note_follows_its_moves(
        store: Store) -> None:
    with changing("U7", "slack https://slack.com/archives/D1/p1"):
        entry = await store.create("ideas", "Project Phoenix", {}, "x")
        moved = await store.move(entry.path, "projects")
        await store.update(moved.new_path, {"status": "waiting"})
        other = await store.create("people", "Sara Lopez", {}, "y")
    mine = await store.changes("Project Phoenix")
    assert [c.action for c in mine] == ["update", "move", "create"]
    assert all(c.who == "U7" and c.source.startswith("slack https://") for c in mine)
    assert other.path not in {p for c in mine for p in c.paths}
    steps = []
    for _ in range(4):
        steps.append((await store.undo()).summary)
    assert steps == ["create: Sara Lopez in people", "update: Project Phoenix: status",
                     "move: Project Phoenix to projects", "create: Project Phoenix in ideas"]
    assert notes(store) == []
    with pytest.raises(NotFound):
        await store.undo()
    with pytest.raises(InvalidValue):
        await store.undo("zz-not-hex")


async def test_the_first_change_keeps_the_vault_as_it_was(store: Store) -> None:
    """A vault with notes before history began: its first snapshot holds them, so undoing
    the first change never deletes what was there."""
    typed = store.vault.root / "ideas" / "old.md"
    typed.parent.mkdir(parents=True)
    typed.write_bytes(b"no frontmatter\n")
    with changing("U1", "cli"):
        await store.update("ideas/old.md", {"tags": ["x"]})
        await store.undo()
    assert typed.read_bytes() == b"no frontmatter\n"
    start = (await store.changes(limit=200))[-1]
    assert start.action == "start of history" and start.paths == ("ideas/old.md",)
    with pytest.raises(InvalidValue):
        await store.undo(start.id)


WRITER = """
import asyncio, sys
from pathlib import Path
from storage.db import Database
from storage.history import History, changing
from storage.vault.store import Store
from storage.vault.files import Vault

async def main(name, root, url, n):
    db = await Database.open(url)
    vault = Vault(Path(root) / "vault")
    store = Store(vault, db, history=History(Path(root) / "history", vault))
    with changing(name, "test"):
        shared = await store.find_id("e_shared00001")
        for i in range(n):
            note = await store.create("ideas", f"{name} idea {i}", {}, "x")
            await store.update(note.path, {"tags": [name]})
            await store.update(shared.path, {}, append_body=f"{name} {i}")
    await db.close()

asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
"""


async def test_two_processes_changing_one_vault_make_one_line_with_every_change(
        tmp_path: Path) -> None:
    url = fresh_url(tmp_path)
    db = await Database.open(url)
    store = make_store(db, tmp_path)
    await store.create("projects", "Shared", {}, "start\n", entry_id="e_shared00001")
    n = 8
    procs = [await asyncio.create_subprocess_exec(
        sys.executable, "-c", WRITER, name, str(tmp_path), url, str(n), cwd=REPO,
        stderr=asyncio.subprocess.PIPE) for name in ("replica-a", "replica-b")]
    for proc in procs:
        _, err = await proc.communicate()
        assert proc.returncode == 0, err.decode()[-2000:]
    changes = await store.changes(limit=200)
    walked = list(store.history.repo.walk())  # type: ignore[union-attr]
    assert [c.id for c in changes] == [c.id for c in walked]  # one line, the list agrees
    assert [c.parent for c in walked[:-1]] == [c.id for c in walked[1:]]
    for name in ("replica-a", "replica-b"):
        mine = [c for c in changes if c.who == name]
        assert [c.action for c in mine].count("create") == n
        assert [c.action for c in mine].count("update") == 2 * n
    shared = (store.vault.root / "projects" / "shared.md").read_text()
    assert all(f"replica-{r} {i}" in shared for r in "ab" for i in range(n))
    await db.close()
