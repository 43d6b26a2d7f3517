"""Pushes applied to a vault as its own changes (storage/sync/remote.py, apply.py), through a
person's `VaultRemote` as git's update hook calls it, with the pushed commits built by
dulwich (tests/storage/sync_client.py) on the test's database."""

from __future__ import annotations

from pathlib import Path

from dulwich.object_store import BaseObjectStore
from dulwich.objects import Commit, ObjectID

from storage.sync.remote import FETCH_FIRST, VaultRemote
from storage.vault.store import Store
from tests.storage.sync_client import (
    LIMITS,
    commit_of,
    files_at,
    head_of,
    on_top,
    push,
    tree_of,
)

PUSH = "git push by U1"


def vault_files(store: Store) -> dict[str, bytes]:
    root = store.vault.root
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


async def remote_with(store: Store, **notes: str) -> VaultRemote:
    for name, body in notes.items():
        await store.create("ideas", name, {}, body)
    return VaultRemote(store, "U1", LIMITS)


def main_files(remote: VaultRemote, commit: str) -> dict[str, bytes]:
    return files_at(remote.history.repo.repo.object_store, ObjectID(commit.encode()))


async def test_each_pushed_commit_is_a_change_and_the_remote_ends_at_the_tip(
        history_store: Store) -> None:
    remote = await remote_with(history_store, Alpha="First thought.\n")
    (alpha,) = vault_files(history_store)

    def build(store: BaseObjectStore, head: ObjectID) -> ObjectID:
        text = files_at(store, head)[alpha] + b"\nMore from Obsidian.\n"
        one = on_top(store, head, {alpha: text}, "Edit alpha")
        return on_top(store, one, {"ideas/zebra.md": b"# Zebra crossings\nNear school.\n"},
                      "Add zebra\n\nwith a body that is not the subject")

    refused, tip = await push(remote, build)
    assert refused is None
    changes = await history_store.changes(limit=5)
    assert [(c.action, c.summary) for c in changes[:2]] == [(PUSH, "Add zebra"),
                                                            (PUSH, "Edit alpha")]
    assert changes[0].paths == ("ideas/zebra.md",) and changes[1].paths == (alpha,)
    state = remote.projection.state()
    assert state is not None and state.remote == tip.decode()  # the client's own commit
    assert main_files(remote, state.remote) == vault_files(history_store)
    found = await history_store.search("zebra crossings")
    assert [e.path for e in found.entries][:1] == ["ideas/zebra.md"]  # indexed at once
    assert await head_of(remote) == tip  # nothing new to mirror


async def test_a_deleted_note_goes_to_the_trash_and_the_next_pull_says_so(
        history_store: Store) -> None:
    remote = await remote_with(history_store, Alpha="First thought.\n", Beta="Second.\n")
    alpha, beta = sorted(vault_files(history_store))
    kept = vault_files(history_store)[alpha]
    refused, tip = await push(remote, lambda s, h: on_top(s, h, {alpha: None}, "Tidy up"))
    assert refused is None
    files = vault_files(history_store)
    assert alpha not in files and files[f".trash/{alpha}"] == kept
    (change,) = [c for c in await history_store.changes(limit=3) if c.action == PUSH]
    assert change.moved == ((alpha, f".trash/{alpha}"),)
    state = remote.projection.state()
    assert state is not None and state.remote != tip.decode()
    settle = remote.history.repo.repo.object_store[ObjectID(state.remote.encode())]
    assert isinstance(settle, Commit) and settle.parents == [tip]
    assert b"1 deleted file(s) kept in .trash/" in settle.message
    assert main_files(remote, state.remote) == files  # the pull brings the trash too
    undone = await history_store.undo()
    assert undone.undoes == change.id and vault_files(history_store)[alpha] == kept


async def test_a_moved_note_keeps_the_links_to_it(history_store: Store) -> None:
    remote = await remote_with(history_store, Alpha="First thought.\n")
    (alpha,) = vault_files(history_store)
    linking = b"# Index\nSee [[" + alpha.removesuffix(".md").encode() + b"]] for alpha.\n"
    await push(remote, lambda s, h: on_top(s, h, {"index.md": linking}, "Index"))
    await history_store.refresh()  # (the index's link rows, as a rescan leaves them)

    def build(store: BaseObjectStore, head: ObjectID) -> ObjectID:
        data = files_at(store, head)[alpha]
        return on_top(store, head, {alpha: None, "projects/renamed.md": data}, "Move alpha")

    refused, _tip = await push(remote, build)
    assert refused is None
    files = vault_files(history_store)
    assert files["index.md"] == b"# Index\nSee [[projects/renamed]] for alpha.\n"
    assert not any(path.startswith(".trash/") for path in files)  # a move, not a deletion
    (change,) = [c for c in await history_store.changes(limit=2) if c.summary == "Move alpha"]
    assert change.moved == ((alpha, "projects/renamed.md"),)
    assert "index.md" in change.paths


async def test_a_branch_merged_after_the_bots_change_keeps_both(history_store: Store) -> None:
    remote = await remote_with(history_store, Plan="Line one.\n")
    (plan,) = vault_files(history_store)
    base = await head_of(remote)
    await history_store.update(plan, {}, append_body="A line from the bot.")

    def build(store: BaseObjectStore, head: ObjectID) -> ObjectID:
        theirs = files_at(store, head)[plan]
        ours = on_top(store, base, {plan: files_at(store, base)[plan] + b"Mine.\n",
                                    "extra.md": b"An extra note.\n"}, "Work offline")
        merged = dict(files_at(store, head))
        merged[plan] = theirs + b"Mine.\n"
        merged["extra.md"] = b"An extra note.\n"
        return commit_of(store, tree_of(store, dict(merged)), [ours, head], "Merge main")

    refused, _tip = await push(remote, build)
    assert refused is None
    text = vault_files(history_store)[plan]
    assert b"A line from the bot." in text and text.endswith(b"Mine.\n")
    pushed = [c for c in await history_store.changes(limit=5) if c.action == PUSH]
    assert [(c.summary, c.paths) for c in pushed] == [("Merge main", (plan,)),
                                                      ("Work offline", ("extra.md",))]
    await history_store.undo()  # the merge's change: the bot's line stays
    text = vault_files(history_store)[plan]
    assert b"A line from the bot." in text and b"Mine." not in text


async def test_a_push_not_on_main_or_behind_it_changes_nothing(history_store: Store) -> None:
    remote = await remote_with(history_store, Alpha="First thought.\n")
    before, changes = vault_files(history_store), len(await history_store.changes())

    def unrelated(store: BaseObjectStore, head: ObjectID) -> ObjectID:
        return commit_of(store, tree_of(store, {"other.md": b"x\n"}), [], "A new root")

    refused, _ = await push(remote, unrelated)
    assert refused is not None and "non-fast-forward" in refused
    old = await head_of(remote)
    await history_store.create("ideas", "Bot note", {}, "Filed meanwhile.\n")
    refused, _ = await push(remote, lambda s, h: on_top(s, old, {"late.md": b"x\n"}, "Late"),
                            old=old)
    assert refused == FETCH_FIRST
    assert set(vault_files(history_store)) == set(before) | {"ideas/bot-note.md"}
    assert len(await history_store.changes()) == changes + 1


async def test_a_file_the_vault_has_outside_the_history_is_kept_before_a_push_replaces_it(
        history_store: Store, tmp_path: Path) -> None:
    remote = await remote_with(history_store, Alpha="First thought.\n")
    (history_store.vault.root / "todo.txt").write_bytes(b"written on the server by hand\n")
    refused, _ = await push(remote, lambda s, h: on_top(s, h, {"todo.txt": b"pushed\n"}, "T"))
    assert refused is None
    assert (history_store.vault.root / "todo.txt").read_bytes() == b"pushed\n"
    await history_store.undo()  # the push: the hand-written file comes back
    assert (history_store.vault.root / "todo.txt").read_bytes() == \
        b"written on the server by hand\n"


async def test_a_history_that_cannot_be_written_refuses_the_push(history_store: Store) -> None:
    remote = await remote_with(history_store, Alpha="First thought.\n")
    before = vault_files(history_store)
    lock = remote.history.repo.path / "refs" / "heads" / "main.lock"
    lock.write_text("held by a writer now\n")
    refused, _ = await push(remote, lambda s, h: on_top(s, h, {"new.md": b"x\n"}, "New"))
    assert refused is not None and "cannot be written now" in refused
    assert "nothing was changed" in refused and vault_files(history_store) == before


async def test_a_note_moved_and_edited_is_a_move_by_its_id(history_store: Store) -> None:
    remote = await remote_with(history_store, Alpha="First thought.\n")
    (alpha,) = vault_files(history_store)

    def build(store: BaseObjectStore, head: ObjectID) -> ObjectID:
        data = files_at(store, head)[alpha] + b"\nEdited while moving.\n"
        return on_top(store, head, {alpha: None, "projects/alpha.md": data}, "Move and edit")

    refused, _ = await push(remote, build)
    assert refused is None
    (change,) = [c for c in await history_store.changes(limit=2) if c.action == PUSH]
    assert change.moved == ((alpha, "projects/alpha.md"),)
    assert not any(p.startswith(".trash/") for p in vault_files(history_store))
    found = await history_store.find_id((await history_store.get("projects/alpha.md")).id or "")
    assert found is not None and found.path == "projects/alpha.md"
