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
import os
import shutil
import time
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path

from dulwich.config import ConfigFile, StackedConfig
from dulwich.hooks import Hook
from dulwich.object_store import DiskObjectStore, PackBasedObjectStore
from dulwich.objects import ObjectID
from dulwich.refs import DictRefsContainer, Ref
from dulwich.repo import BaseRepo

BRANCH = Ref(b"refs/heads/main")
HEAD = Ref(b"HEAD")
SEEN_PREFIX = b"refs/brain/seen/"  # earlier heads, wanted by a fetch that began before a change
INCOMING = "incoming"  # the quarantines, beside the history's repository
STALE_SECONDS = 3600.0  # a quarantine this old was left by a process that stopped


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
