"""A git client's side of a push, made with dulwich's objects (the e2e tests use Debian's git;
these build exactly the trees and merges a test needs): files to a tree, a commit, a push
through a person's `VaultRemote` as the update hook makes it."""

from __future__ import annotations

from collections.abc import Callable

from dulwich.object_store import BaseObjectStore
from dulwich.objects import Blob, Commit, ObjectID, Tree

from storage.sync.push import PushLimits
from storage.sync.remote import VaultRemote
from storage.sync.served import quarantined

FILE = 0o100644
LIMITS = PushLimits(max_files=50, max_file_bytes=100_000, max_push_bytes=10_000_000)
Files = dict[str, bytes | tuple[int, bytes]]  # path -> bytes, or (mode, bytes)


def tree_of(store: BaseObjectStore, files: Files) -> ObjectID:
    """A tree (and its subtrees and blobs, added to `store`) holding `files`."""
    here: dict[bytes, tuple[int, ObjectID]] = {}
    deeper: dict[str, Files] = {}
    for path, value in files.items():
        mode, data = value if isinstance(value, tuple) else (FILE, value)
        first, _, rest = path.partition("/")
        if rest:
            deeper.setdefault(first, {})[rest] = (mode, data)
            continue
        blob = Blob.from_string(data)
        store.add_object(blob)
        here[first.encode()] = (mode, blob.id)
    for name, inner in deeper.items():
        here[name.encode()] = (0o040000, tree_of(store, inner))
    tree = Tree()
    for name, (mode, sha) in here.items():
        tree.add(name, mode, sha)
    store.add_object(tree)
    return tree.id


def files_at(store: BaseObjectStore, commit: ObjectID) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    top = store[commit]
    assert isinstance(top, Commit)
    todo = [("", top.tree)]
    while todo:
        prefix, tree_id = todo.pop()
        tree = store[tree_id]
        assert isinstance(tree, Tree)
        for entry in tree.iteritems():
            path = prefix + entry.path.decode()
            if entry.mode == 0o040000:
                todo.append((path + "/", entry.sha))
            else:
                blob = store[entry.sha]
                assert isinstance(blob, Blob)
                found[path] = blob.data
    return found


def commit_of(store: BaseObjectStore, tree: ObjectID, parents: list[ObjectID],
              message: str, when: int = 1_800_000_000) -> ObjectID:
    commit = Commit()
    commit.tree, commit.parents = tree, parents
    commit.author = commit.committer = b"Alex <alex@example.com>"
    commit.author_time = commit.commit_time = when
    commit.author_timezone = commit.commit_timezone = 0
    commit.message = message.encode()
    store.add_object(commit)
    return commit.id


def on_top(store: BaseObjectStore, parent: ObjectID, changes: Files | dict[str, None],
           message: str) -> ObjectID:
    """A commit on `parent` with these files changed (None: removed)."""
    files: Files = dict(files_at(store, parent))
    for path, value in changes.items():
        if value is None:
            files.pop(path, None)
        else:
            files[path] = value
    return commit_of(store, tree_of(store, files), [parent], message)


async def head_of(remote: VaultRemote) -> ObjectID:
    return ObjectID((await remote.current()).remote.encode())


async def push(remote: VaultRemote,
               build: Callable[[BaseObjectStore, ObjectID], ObjectID],
               old: ObjectID | None = None) -> tuple[str | None, ObjectID]:
    """Build a push's commits on the remote's head (`build(store, head) -> tip`) in a
    quarantine and take it as the update hook would: (the refusal or None, the tip)."""
    head = await head_of(remote)
    with quarantined(remote.history.repo.path) as quarantine:
        tip = build(quarantine.store, head)
        return await remote.push(quarantine, old or head, tip), tip
