"""The history repository: a bare git repository (dulwich, pure Python: no `git` binary
needed, and git itself can read it) whose trees are snapshots of a vault's notes.

Only what this module needs: the head, a file's bytes in a commit, a commit of changed paths
(only the touched subtrees are rewritten, so a commit costs the same at 10 or 10,000 notes),
and the paths one commit changed.
"""

from __future__ import annotations

import binascii
import contextlib
import hashlib
import os
import time
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from dulwich.diff_tree import tree_changes
from dulwich.objects import Blob, Commit, ObjectID, Tree
from dulwich.refs import Ref
from dulwich.repo import Repo

BRANCH = Ref(b"refs/heads/main")
FILE_MODE = 0o100644
DIR_MODE = 0o040000
EMPTY_TREE = b"4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # git's id of the empty tree
TREE_CACHE = 256  # trees whose entries a process keeps in memory
COMMITTER = b"Second Brain <brain@localhost>"
# A lock file this old is left by a writer that stopped (git's own rule of thumb): every
# writer holds the vault's lock while it commits, so under that lock nobody live holds it.
STALE_LOCK_SECONDS = 60.0
LOCKS = ("refs/heads/main.lock", "HEAD.lock", "packed-refs.lock")  # what a commit may meet


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
        # Entries of trees read or written, by id (a cache: ids name content for good).
        self._trees: dict[bytes, dict[bytes, tuple[int, bytes]]] = {}
        self._commit_trees: dict[bytes, ObjectID] = {}  # commit -> its tree

    def close(self) -> None:
        self.repo.close()

    # --- locks and health ---------------------------------------------------------------------

    def lock_files(self) -> list[tuple[Path, float]]:
        """(lock file, its age in seconds) of the files a commit writes (a few stats: this
        runs before every commit)."""
        found = []
        now = time.time()
        for name in LOCKS:
            path = self.path / name
            with contextlib.suppress(FileNotFoundError):
                found.append((path, now - path.stat().st_mtime))
        return found

    def clear_stale_locks(self, older_than: float = STALE_LOCK_SECONDS) -> list[str]:
        """Remove the lock files a writer that stopped left (a minute old or more; any age
        when the caller knows that writer stopped). Call only under the vault's lock: every
        live writer of ours holds it while it commits."""
        removed = []
        for path, age in self.lock_files():
            if age >= older_than:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                    removed.append(path.relative_to(self.path).as_posix())
        return removed

    def unwritable(self) -> str | None:
        """Why a commit would fail now (a lock younger than a minute: stale ones are cleared
        by the commit; a folder it may not write), or None."""
        for path, age in self.lock_files():
            if age >= STALE_LOCK_SECONDS:
                continue
            name = path.relative_to(self.path).as_posix()
            return (f"its lock file {name} is held ({age:.0f} s old: a writer now, or one that "
                    "stopped; cleared once it is a minute old)")
        for folder in (self.path / "objects", self.path / "refs" / "heads"):
            if not os.access(folder, os.W_OK | os.X_OK):
                return f"{folder.relative_to(self.path)} cannot be written"
        return None

    def readable(self, commit_id: ObjectID | None, rels: Iterable[str]) -> None:
        """Read what a commit on top of `commit_id` touching `rels` needs (the commit and the
        trees along each path); KeyError names an object that is missing."""
        if commit_id is None:
            return
        for rel in rels:
            self.blob_at(commit_id, rel)

    def missing(self, budget: float = 5.0) -> tuple[list[str], int]:
        """Objects the history needs that are missing or unreadable (at most 5), and how many
        commits were checked (`brain doctor`): the head's whole tree (every later commit
        builds on it), then each commit newest first, with the blobs its change reads and
        writes (what an undo of it needs), for about `budget` seconds."""
        bad: list[str] = []
        head = self.head()
        if head is None:
            return bad, 0
        store = self._object_ids()
        try:
            todo, seen = [self._tree_of(head) or EMPTY_TREE], set()
            while todo:
                tree = self.repo[ObjectID(todo.pop())]
                assert isinstance(tree, Tree)
                for entry in tree.iteritems():
                    if entry.mode == DIR_MODE and entry.sha not in seen:
                        seen.add(entry.sha)
                        todo.append(entry.sha)
                    elif entry.mode != DIR_MODE and entry.sha not in store:
                        bad.append(entry.sha.decode())
        except KeyError as exc:
            return [_named(exc)], 0
        checked = 0
        at: ObjectID | None = head
        deadline = time.monotonic() + budget
        while at is not None and len(bad) < 5 and time.monotonic() < deadline:
            try:
                commit = self.repo[at]
                assert isinstance(commit, Commit)
                parent = commit.parents[0] if commit.parents else None
                bad += [sha.decode() for sha in self._blobs_changed(self._tree_of(parent),
                                                                     commit.tree)
                        if sha not in store]
            except KeyError as exc:
                bad.append(_named(exc))
                break
            checked += 1
            at = parent
        return list(dict.fromkeys(bad))[:5], checked

    def _object_ids(self) -> set[bytes]:
        """The ids of every object the repository holds, loose or packed (one listing: far
        cheaper than asking the store about each)."""
        found: set[bytes] = set()
        for folder in (self.path / "objects").glob("[0-9a-f][0-9a-f]"):
            found.update((folder.name + name).encode() for name in os.listdir(folder)
                         if len(name) == 38)
        for pack in self.repo.object_store.packs:
            found.update(pack.index)
        return found

    def _blobs_changed(self, old: bytes | None, new: bytes | None) -> Iterator[ObjectID]:
        """The blobs on either side of two trees that differ (both the bytes a change
        replaced and the new ones), descending only into subtrees that differ."""
        if old == new:
            return
        before = self._cached(old) if old is not None else {}
        after = self._cached(new) if new is not None else {}
        for name in before.keys() | after.keys():
            one, two = before.get(name), after.get(name)
            if one == two:
                continue
            dirs = [binascii.hexlify(e[1]) if e and e[0] == DIR_MODE else None
                    for e in (one, two)]
            if dirs[0] is not None or dirs[1] is not None:
                yield from self._blobs_changed(dirs[0], dirs[1])
            for entry, folder in ((one, dirs[0]), (two, dirs[1])):
                if entry is not None and folder is None:
                    yield ObjectID(binascii.hexlify(entry[1]))

    def head(self) -> ObjectID | None:
        try:
            return self.repo.refs[BRANCH]
        except KeyError:
            return None

    def _tree_of(self, commit_id: ObjectID | None) -> ObjectID | None:
        if commit_id is None:
            return None
        tree = self._commit_trees.get(commit_id)
        if tree is None:  # (a commit never changes: its tree is read once)
            obj = self.repo[commit_id]
            assert isinstance(obj, Commit)
            tree = obj.tree
            if len(self._commit_trees) >= TREE_CACHE:
                self._commit_trees.pop(next(iter(self._commit_trees)))
            self._commit_trees[commit_id] = tree
        return tree

    def blob_at(self, commit_id: ObjectID | None, rel: str) -> ObjectID | None:
        """The id of `rel`'s blob in that commit, or None when it was not there."""
        tree: bytes | None = self._tree_of(commit_id)
        parts = rel.encode().split(b"/")
        for depth, name in enumerate(parts):
            if tree is None:
                return None
            entry = self._cached(tree).get(name)
            if entry is None:
                return None
            mode, sha = entry
            if depth == len(parts) - 1:
                return None if mode == DIR_MODE else ObjectID(binascii.hexlify(sha))
            tree = binascii.hexlify(sha) if mode == DIR_MODE else None
        return None

    def data(self, blob: ObjectID) -> bytes:
        obj = self.repo[blob]
        assert isinstance(obj, Blob)
        return obj.data

    def add_blob(self, data: bytes) -> ObjectID:
        """Keep these bytes as a blob (a file a change is about to write); returns its id."""
        return ObjectID(binascii.hexlify(self._write_loose(b"blob", data)))

    def commit(self, files: Mapping[str, bytes | None], message: str, author: str,
               *, when: int | None = None) -> ObjectID:
        """A commit on the head that sets each path to its bytes (None: removed)."""
        self.clear_stale_locks()
        parent = self.head()
        changes: dict[tuple[bytes, ...], tuple[int, bytes] | None] = {}
        blobs = []
        for rel, data in files.items():
            parts = tuple(rel.encode().split(b"/"))
            if data is None:
                changes[parts] = None
            elif len(files) > 100:  # a first snapshot: one pack, not thousands of files
                blob = Blob.from_string(data)
                blobs.append(blob)
                changes[parts] = (FILE_MODE, binascii.unhexlify(blob.id))
            else:
                changes[parts] = (FILE_MODE, self._write_loose(b"blob", data))
        if blobs:
            self.repo.object_store.add_objects([(b, None) for b in blobs])
        root = self._apply(self._tree_of(parent), changes)
        stamp = int(time.time()) if when is None else when
        commit = Commit()
        commit.tree = ObjectID(root)
        commit.parents = [parent] if parent is not None else []
        commit.author = author.encode()
        commit.committer = COMMITTER
        commit.author_time = commit.commit_time = stamp
        commit.author_timezone = commit.commit_timezone = 0
        commit.encoding = b"UTF-8"
        commit.message = message.encode()
        self.repo.object_store.add_object(commit)
        # Compare-and-set: a second writer that got past the lock cannot drop a commit.
        if not self.repo.refs.set_if_equals(BRANCH, parent, commit.id):
            raise RuntimeError("the history moved while a change was being recorded")
        return commit.id

    # Trees are written here rather than by dulwich's `commit_tree_changes`, which parses and
    # serialises each touched tree in Python: ~160 ms a change with 2,500 notes in a folder,
    # against ~3 ms here (the entries of trees kept in memory, the bytes joined at once).

    def _entries(self, tree: bytes | None) -> dict[bytes, tuple[int, bytes]]:
        return {} if tree is None else dict(self._cached(tree))

    def _cached(self, tree: bytes) -> dict[bytes, tuple[int, bytes]]:
        cached = self._trees.get(tree)
        if cached is None:
            obj = self.repo[ObjectID(tree)]
            assert isinstance(obj, Tree)
            cached = {e.path: (e.mode, binascii.unhexlify(e.sha)) for e in obj.iteritems()}
            if len(self._trees) >= TREE_CACHE:
                self._trees.pop(next(iter(self._trees)))
            self._trees[tree] = cached
        return cached

    def _apply(self, tree: bytes | None,
               changes: Mapping[tuple[bytes, ...], tuple[int, bytes] | None]) -> bytes:
        """The id of `tree` with the changes made (paths split at "/"), its subtrees too."""
        entries = self._entries(tree)
        deeper: dict[bytes, dict[tuple[bytes, ...], tuple[int, bytes] | None]] = {}
        for parts, value in changes.items():
            if len(parts) > 1:
                deeper.setdefault(parts[0], {})[parts[1:]] = value
            elif value is None:
                entries.pop(parts[0], None)
            else:
                entries[parts[0]] = value
        for name, inner in deeper.items():
            current = entries.get(name)
            sub = binascii.hexlify(current[1]) if current and current[0] == DIR_MODE else None
            new = self._apply(sub, inner)
            if new == EMPTY_TREE:
                entries.pop(name, None)  # git keeps no empty folders
            else:
                entries[name] = (DIR_MODE, binascii.unhexlify(new))
        # git's order: by name, a folder's as if it ended with "/" (a folder of notes only,
        # the usual case, sorts by plain name: a third of the cost)
        if any(mode == DIR_MODE for mode, _sha in entries.values()):
            names = sorted(entries, key=lambda n: n + b"/" if entries[n][0] == DIR_MODE else n)
        else:
            names = sorted(entries)
        raw = b"".join([b"%o %s\0%s" % (entries[n][0], n, entries[n][1]) for n in names])
        new_id = binascii.hexlify(self._write_loose(b"tree", raw))
        self._trees[new_id] = entries
        return new_id

    def _write_loose(self, kind: bytes, data: bytes) -> bytes:
        """Write one object as git stores it loose; returns its binary id."""
        whole = b"%s %d\0" % (kind, len(data)) + data
        digest = hashlib.sha1(whole)  # noqa: S324 (git's object names)
        hexid = digest.hexdigest()
        path = self.path / "objects" / hexid[:2] / hexid[2:]
        if not path.exists():
            path.parent.mkdir(exist_ok=True)
            tmp = path.with_name(f".{hexid[2:]}.{os.getpid()}.tmp")
            tmp.write_bytes(zlib.compress(whole, 1))
            os.replace(tmp, path)
        return digest.digest()

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


def _named(exc: KeyError) -> str:
    """The id of the object a KeyError of dulwich's names."""
    found = exc.args[0] if exc.args else b"?"
    return found.decode(errors="replace") if isinstance(found, bytes) else str(found)
