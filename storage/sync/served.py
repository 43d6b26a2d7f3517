"""The repository a git client sees at `/git/<person>.git`: the objects of the person's vault
history (storage/history), and one branch, `main`, at the remote head the projection keeps
(storage/sync/projection.py). Nothing else is reachable: a client may only ask for the
commits advertised to it (dulwich's upload-pack refuses any other want), and those hold the
vault's files only.

A push lands in a quarantine: an object store of its own beside the history (reading the
history's objects through git's alternates), so a refused push leaves nothing behind; only
once the push is accepted is its pack moved into the history's store.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import time
import uuid
from collections.abc import Iterable, Iterator
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any

from dulwich.config import ConfigFile, StackedConfig
from dulwich.hooks import Hook
from dulwich.object_store import (
    BaseObjectStore,
    DiskObjectStore,
    GraphTraversalReachability,
    PackBasedObjectStore,
)
from dulwich.objects import Commit, ObjectID
from dulwich.pack import UnpackedObject
from dulwich.refs import DictRefsContainer, Ref
from dulwich.repo import BaseRepo

from storage.sync.deltas import oldest_first, path_deltas
from storage.vault.locks import if_free

BRANCH = Ref(b"refs/heads/main")
HEAD = Ref(b"HEAD")
SEEN_PREFIX = b"refs/brain/seen/"  # earlier heads, wanted by a fetch that began before a change
INCOMING = "incoming"  # the quarantines, beside the history's repository
SCAN_FROM = 1000  # objects a fetch sends from which reusable deltas are looked for
PACK_FROM = 1000  # loose objects in the history from which they are packed
PACK_BATCH = 2000  # objects read into memory for one pack
STALE_SECONDS = 3600.0  # a quarantine this old was left by a process that stopped


class ParentCache:
    """Each remote commit's parents, as read once (commits never change): a pull's "what does
    the client have" walks the client's whole history, ~0.5 ms a commit read from the
    store, a few µs from here. Bounded: past `most` entries the oldest are dropped."""

    def __init__(self, most: int = 500_000) -> None:
        self.most = most
        self._parents: dict[bytes, tuple[ObjectID, ...]] = {}

    def of(self, store: BaseObjectStore, sha: ObjectID) -> tuple[ObjectID, ...]:
        found = self._parents.get(sha)
        if found is None:
            commit = store[sha]
            found = tuple(commit.parents) if isinstance(commit, Commit) else ()
            if len(self._parents) >= self.most:
                for old in list(itertools.islice(self._parents, self.most // 10)):
                    del self._parents[old]
            self._parents[sha] = found
        return found


class _Reachability(GraphTraversalReachability):
    """dulwich's graph walk, with the ancestors of the client's commits read from the cache."""

    def __init__(self, store: BaseObjectStore, parents: ParentCache) -> None:
        super().__init__(store)
        self.parents = parents

    def get_reachable_commits(self, heads: Iterable[ObjectID],
                              exclude: Iterable[ObjectID] | None = None,
                              shallow: AbstractSet[ObjectID] | None = None) -> set[ObjectID]:
        if exclude or shallow:
            return super().get_reachable_commits(heads, exclude, shallow)
        seen: set[ObjectID] = set()
        todo = list(heads)
        while todo:
            sha = todo.pop()
            if sha not in seen:
                seen.add(sha)
                todo.extend(self.parents.of(self.store, sha))
        return seen


class RemoteObjectStore(DiskObjectStore):
    """The history's objects as a fetch reads them (reachability through `ParentCache`)."""

    def __init__(self, path: Path, parents: ParentCache,
                 heads: Iterable[ObjectID] = ()) -> None:
        super().__init__(str(path))
        self.parents = parents
        self.heads = list(heads)  # what a fetch may want: where a clone's commits are found

    def get_reachability_provider(self, prefer_bitmaps: bool = True) -> _Reachability:
        return _Reachability(self, self.parents)

    def iter_unpacked_subset(self, shas: Iterable[Any], *, include_comp: bool = False,
                             allow_missing: bool = False,
                             convert_ofs_delta: bool = True) -> Iterator[UnpackedObject]:
        """The deltas dulwich's pack writer may send (its only use of this; it looks for
        them by reading every object of every pack): none for a pull's few objects, for a
        clone's many each changed tree and file against its parent commit's
        (storage/sync/deltas.py)."""
        wanted = set(shas)
        if len(wanted) < SCAN_FROM:
            return iter(())
        commits = oldest_first(lambda sha: self.parents.of(self, sha), self.heads, wanted)
        return path_deltas(self, commits, wanted)


class ServedRepo(BaseRepo):
    """What dulwich's server handlers read and write: `main` (HEAD points at it), the objects
    of `store`, an `update` hook that decides a push, and the most a push may send."""

    object_store: PackBasedObjectStore

    def __init__(self, store: PackBasedObjectStore, head: ObjectID, *,
                 seen: Iterable[ObjectID] = (), update: Hook | None = None,
                 max_input: int | None = None) -> None:
        refs = DictRefsContainer({})
        refs.set_symbolic_ref(HEAD, BRANCH)
        refs.set_if_equals(BRANCH, None, head)
        super().__init__(store, refs)
        # Only the pack request of a fetch knows these: its advertisement showed a head that
        # a change may have replaced since (git's stateless HTTP asks in two requests).
        self._seen = {Ref(SEEN_PREFIX + str(n).encode()): sha for n, sha in enumerate(seen)}
        self._max_input = max_input
        if update is not None:
            self.hooks["update"] = update

    def get_refs(self) -> dict[Ref, ObjectID]:
        return {**self.refs.as_dict(), **self._seen}

    def get_config(self) -> ConfigFile:
        config = ConfigFile()
        if self._max_input:
            config.set((b"receive",), b"maxInputSize", str(self._max_input).encode())
        return config

    def get_config_stack(self) -> StackedConfig:
        return StackedConfig([self.get_config()])  # never the server user's ~/.gitconfig

    def get_named_file(self, path: str) -> None:  # no shallow file, no description
        return None

    def get_shallow(self) -> set[ObjectID]:
        return set()

    def close(self) -> None:
        """Let go of the pack files a fetch opened (a push's quarantine closes its own)."""
        if isinstance(self.object_store, RemoteObjectStore):
            self.object_store.close()


class Quarantine:
    """A push's objects, kept apart until the push is accepted."""

    def __init__(self, repo_path: Path) -> None:
        self.main = repo_path / "objects"
        self.folder = repo_path.parent / INCOMING / uuid.uuid4().hex
        self.folder.parent.mkdir(parents=True, exist_ok=True)
        self.store = DiskObjectStore.init(str(self.folder))
        self.store.add_alternate_path(str(self.main))

    def accept(self) -> None:
        """Move what was received into the history's store: packs (each before its index:
        git and dulwich read a pack only once its index is there) and loose objects."""
        packs = self.folder / "pack"
        target = self.main / "pack"
        target.mkdir(parents=True, exist_ok=True)
        names = sorted(os.listdir(packs), key=lambda n: n.endswith(".idx"))
        for name in names:
            if name.endswith((".pack", ".idx", ".rev")):
                os.replace(packs / name, target / name)
        for folder in self.folder.glob("[0-9a-f][0-9a-f]"):
            (self.main / folder.name).mkdir(exist_ok=True)
            for loose in folder.iterdir():
                os.replace(loose, self.main / folder.name / loose.name)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.store.close()
        shutil.rmtree(self.folder, ignore_errors=True)


@contextlib.contextmanager
def quarantined(repo_path: Path) -> Iterator[Quarantine]:
    """A quarantine for one push, removed afterwards (accepted packs have left it)."""
    found = Quarantine(repo_path)
    try:
        yield found
    finally:
        found.close()


def clear_incoming(repo_path: Path, max_age: float = STALE_SECONDS) -> None:
    """Quarantines a killed process left (its push was never accepted: nothing refers to
    them); one younger than `max_age` seconds may be a push being received now."""
    folder = repo_path.parent / INCOMING
    with contextlib.suppress(FileNotFoundError):
        for entry in os.scandir(folder):
            with contextlib.suppress(OSError):
                if time.time() - entry.stat().st_mtime > max_age:
                    shutil.rmtree(entry.path, ignore_errors=True)


def loose_count(objects: Path) -> int:
    return sum(len(os.listdir(folder)) for folder in objects.glob("[0-9a-f][0-9a-f]"))


def pack_loose(repo_path: Path, least: int = PACK_FROM) -> int:
    """The history's loose objects (each change writes a few) moved into packs once there
    are `least` of them: a fetch reads a pack faster than as many files (a clone at 2,000
    changes 30 % sooner). Without the vault's lock (writers only add objects: each is in
    its pack before its file goes), one process of the machine at a time; how many."""
    objects = repo_path / "objects"
    if loose_count(objects) < least:
        return 0
    packed = 0
    with if_free(f"history-pack:{repo_path.resolve()}") as ours:
        if not ours:
            return 0
        store = DiskObjectStore(str(objects))
        try:
            loose = store._iter_loose_objects()
            while batch := list(itertools.islice(loose, PACK_BATCH)):
                found = [(o, None) for sha in batch
                         if (o := store._get_loose_object(sha)) is not None]
                store.add_objects(found)
                for obj, _path in found:
                    store.delete_loose_object(obj.id)
                packed += len(found)
        finally:
            store.close()
    return packed

