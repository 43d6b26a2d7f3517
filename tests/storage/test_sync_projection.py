"""The vault's history as its git remote shows it (storage/sync/projection.py): the head holds
exactly the vault's files and nothing from outside it; each change is one commit saying who
and through which door; mirroring is deterministic and a change adds exactly one commit."""

from __future__ import annotations

from pathlib import Path

from dulwich.objects import Commit, ObjectID

from storage.history import changing
from storage.sync.projection import SEEN, Projection
from storage.sync.served import loose_count, pack_loose
from storage.vault.store import Store
from tests.storage.sync_client import files_at


def vault_files(store: Store) -> dict[str, bytes]:
    root = store.vault.root
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.is_symlink()}


async def exported(store: Store) -> tuple[Projection, str]:
    assert store.history is not None
    await store.refresh()  # outside edits recorded, as a fetch has them
    projection = Projection(store.history)
    return projection, projection.export().remote


def remote_files(projection: Projection, head: str) -> dict[str, bytes]:
    return files_at(projection.history.repo.repo.object_store, ObjectID(head.encode()))


async def test_the_remote_holds_exactly_the_vaults_files(history_store: Store,
                                                         tmp_path: Path) -> None:
    root = history_store.vault.root
    with changing("U1", "slack https://example.slack.com/archives/D1/p1"):
        sara = await history_store.create("people", "Sara", {}, "Call about Q3.\n")
        await history_store.create("ideas", "Lending library", {}, "For the office.\n")
        await history_store.attach("minutes.pdf", b"%PDF-1.4 minutes")
        await history_store.move(sara.path, "projects")
        await history_store.trash("ideas/lending-library.md")
    (root / "ideas" / "by-hand.md").write_text("Written in Obsidian on the server.\n")
    projection, head = await exported(history_store)
    assert remote_files(projection, head) == vault_files(history_store)
    assert ".trash/ideas/lending-library.md" in remote_files(projection, head)


async def test_nothing_outside_the_vault_enters_through_a_link(tmp_path: Path,
                                                               history_store: Store) -> None:
    secret = tmp_path / "outside" / "secret.md"
    secret.parent.mkdir()
    secret.write_text("the server's secret\n")
    root = history_store.vault.root
    (root / ".trash").mkdir(parents=True)
    (root / ".trash" / "leak.md").symlink_to(secret)  # the first snapshot reads .trash/
    (root / "ideas").mkdir()
    (root / "ideas" / "leak.md").symlink_to(secret)
    (root / "notes").symlink_to(secret.parent, target_is_directory=True)
    await history_store.create("ideas", "Real note", {}, "Mine.\n")
    projection, head = await exported(history_store)
    files = remote_files(projection, head)
    assert list(files) == ["ideas/real-note.md"]
    store = projection.history.repo.repo.object_store
    assert not any(b"the server's secret" in store[sha].as_raw_string() for sha in store)


async def test_each_change_is_one_commit_saying_who_and_from_where(
        history_store: Store) -> None:
    with changing("U1", "cli"):
        await history_store.create("ideas", "Alpha", {}, "One.\n")
    projection, first = await exported(history_store)
    with changing("U1", "mcp claude"):
        await history_store.update("ideas/alpha.md", {}, append_body="Two.")
    projection, second = await exported(history_store)
    repo = projection.history.repo.repo
    commit = repo[ObjectID(second.encode())]
    assert isinstance(commit, Commit) and commit.parents == [ObjectID(first.encode())]
    (change,) = await history_store.changes(limit=1)
    assert commit.message.decode() == (f"update: Alpha: text added\n\nby U1 via mcp claude\n\n"
                                       f"Brain-Change: {change.id}\n")
    assert commit.author.startswith(b"U1 <")
    state = projection.state()
    assert state is not None and state.seen[0] == first


async def test_mirroring_is_deterministic_and_keeps_a_few_earlier_heads(
        history_store: Store) -> None:
    heads = []
    for n in range(SEEN + 3):
        await history_store.create("ideas", f"Note {n}", {}, f"Text {n}.\n")
        projection, head = await exported(history_store)
        heads.append(head)
    state = projection.state()
    assert state is not None and list(state.seen) == heads[-2::-1][:SEEN]
    projection.path.unlink()  # the pairing lost: made again, the same commits
    assert projection.export().remote == heads[-1]


async def test_the_historys_loose_objects_packed_keep_every_change(
        history_store: Store) -> None:
    for n in range(12):
        await history_store.create("ideas", f"Note {n}", {}, f"Text {n}.\n")
    projection, head = await exported(history_store)
    repo_path = projection.history.repo.path
    before = remote_files(projection, head)
    assert loose_count(repo_path / "objects") >= 40
    assert pack_loose(repo_path, least=10) >= 40
    assert loose_count(repo_path / "objects") == 0
    assert pack_loose(repo_path, least=10) == 0  # nothing left to pack
    assert remote_files(projection, head) == before
    undone = await history_store.undo()
    assert "Note 11" in undone.summary and len(await history_store.changes(limit=50)) == 14
