"""The history repository: a bare git repository (dulwich, pure Python: no `git` binary
needed, and git itself can read it) whose trees are snapshots of a vault's notes.

Only what this module needs: the head, a file's bytes in a commit, a commit of changed paths
(only the touched subtrees are rewritten, so a commit costs the same at 10 or 10,000 notes),
and the paths one commit changed.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from dulwich.diff_tree import tree_changes
from dulwich.errors import NotTreeError
from dulwich.object_store import commit_tree_changes, tree_lookup_path
from dulwich.objects import Blob, Commit, ObjectID, Tree
from dulwich.refs import Ref
from dulwich.repo import Repo

BRANCH = Ref(b"refs/heads/main")
FILE_MODE = 0o100644
COMMITTER = b"Second Brain <brain@localhost>"


@dataclass(frozen=True)
class Recorded:
    id: str
    parent: str | None
    message: str
    at: int  # seconds since the epoch


def blob_id(data: bytes) -> ObjectID:
    return Blob.from_string(data).id


class HistoryRepo:
    def __init__(self, path: Path) -> None:
        self.path = path
        if (path / "HEAD").is_file():
            self.repo = Repo(str(path))
        else:
            path.mkdir(parents=True, exist_ok=True)
            self.repo = Repo.init_bare(str(path))
            self.repo.refs.set_symbolic_ref(Ref(b"HEAD"), BRANCH)

    def close(self) -> None:
        self.repo.close()

    def head(self) -> ObjectID | None:
        try:
            return self.repo.refs[BRANCH]
        except KeyError:
            return None

    def _tree_of(self, commit_id: ObjectID | None) -> ObjectID | None:
        if commit_id is None:
            return None
        obj = self.repo[commit_id]
        assert isinstance(obj, Commit)
        return obj.tree

    def blob_at(self, commit_id: ObjectID | None, rel: str) -> ObjectID | None:
        """The id of `rel`'s blob in that commit, or None when it was not there."""
        tree = self._tree_of(commit_id)
        if tree is None:
            return None
        try:
            _mode, sha = tree_lookup_path(self.repo.object_store.__getitem__, tree,
                                          rel.encode())
        except (KeyError, NotTreeError):
            return None
        return sha

    def data(self, blob: ObjectID) -> bytes:
        obj = self.repo[blob]
        assert isinstance(obj, Blob)
        return obj.data

    def commit(self, files: Mapping[str, bytes | None], message: str, author: str,
               *, when: int | None = None) -> ObjectID:
        """A commit on the head that sets each path to its bytes (None: removed)."""
        parent = self.head()
        store = self.repo.object_store
        blobs = []
        changes: list[tuple[bytes, int | None, ObjectID | None]] = []
        for rel, data in sorted(files.items()):
            if data is None:
                changes.append((rel.encode(), None, None))
            else:
                blob = Blob.from_string(data)
                blobs.append(blob)
                changes.append((rel.encode(), FILE_MODE, blob.id))
        if len(blobs) > 100:  # a first snapshot: one pack, not thousands of loose files
            store.add_objects([(b, None) for b in blobs])
        else:
            for blob in blobs:
                store.add_object(blob)
        base = self._tree_of(parent)
        if base is None:
            empty = Tree()
            store.add_object(empty)
            base = empty.id
        tree = commit_tree_changes(store, base, changes)
        stamp = int(time.time()) if when is None else when
        commit = Commit()
        commit.tree = tree
        commit.parents = [parent] if parent is not None else []
        commit.author = author.encode()
        commit.committer = COMMITTER
        commit.author_time = commit.commit_time = stamp
        commit.author_timezone = commit.commit_timezone = 0
        commit.encoding = b"UTF-8"
        commit.message = message.encode()
        store.add_object(commit)
        # Compare-and-set: a second writer that got past the lock cannot drop a commit.
        if not self.repo.refs.set_if_equals(BRANCH, parent, commit.id):
            raise RuntimeError("the history moved while a change was being recorded")
        return commit.id

    def read_commit(self, commit_id: ObjectID) -> Recorded:
        obj = self.repo[commit_id]
        assert isinstance(obj, Commit)
        return Recorded(obj.id.decode(), obj.parents[0].decode() if obj.parents else None,
                       obj.message.decode("utf-8", errors="replace"), obj.commit_time)

    def walk(self) -> Iterable[Recorded]:
        """Every commit from the head back, newest first (the history is linear)."""
        at = self.head()
        while at is not None:
            found = self.read_commit(at)
            yield found
            at = ObjectID(found.parent.encode()) if found.parent else None

    def changed(self, commit_id: ObjectID
                ) -> list[tuple[str, ObjectID | None, ObjectID | None]]:
        """(path, blob before, blob after) of every file the commit changed."""
        obj = self.repo[commit_id]
        assert isinstance(obj, Commit)
        before = self._tree_of(obj.parents[0]) if obj.parents else None
        out: list[tuple[str, ObjectID | None, ObjectID | None]] = []
        for change in tree_changes(self.repo.object_store, before, obj.tree):
            old, new = change.old, change.new
            path = (new.path if new is not None and new.path else old.path if old else b"")
            out.append((path.decode(), old.sha if old is not None and old.sha else None,
                        new.sha if new is not None and new.sha else None))
        return out
