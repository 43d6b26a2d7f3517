"""One person's vault as a git remote: the repository a fetch is served (the history's
objects, `main` at the projection's head, brought up to date first: late changes recorded,
outside edits found by the last rescan, the history's new changes mirrored), and how a push
is taken: received into a quarantine, then, under the vault's lock, checked as a
fast-forward of the head, checked file by file (storage/sync/push.py), and applied as the
vault's own changes (storage/sync/apply.py). The bot's writes take the same lock, so a push
and a capture never interleave inside a note, and whatever the bot changed before the push
took the lock makes the push one that must pull first.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from dulwich.errors import HookError
from dulwich.hooks import Hook
from dulwich.objects import ObjectID

from storage.errors import StorageError, UnsafePath
from storage.history import History
from storage.sync.apply import apply_push
from storage.sync.projection import Projection, RemoteState
from storage.sync.push import PushLimits, PushRefused, check, descends, new_commits
from storage.sync.served import (
    BRANCH,
    ParentCache,
    Quarantine,
    RemoteObjectStore,
    ServedRepo,
    clear_incoming,
    pack_loose,
    quarantined,
)

if TYPE_CHECKING:
    from dulwich.objects import Commit

    from storage.vault.store import Store

log = logging.getLogger(__name__)

ZERO = ObjectID(b"0" * 40)
FETCH_FIRST = ("fetch first: the vault has changes you do not have yet (git pull, then push "
               "again); nothing was changed")


class HistoryBehind(StorageError):
    """The vault's history cannot be written now: nothing is served or taken until it can."""

    code = "history"


class _PushHook(Hook):
    """dulwich's `update` hook, in the handler's thread: the push decided on the event loop."""

    def __init__(self, remote: VaultRemote, quarantine: Quarantine,
                 loop: asyncio.AbstractEventLoop) -> None:
        self.remote, self.quarantine, self.loop = remote, quarantine, loop

    def execute(self, *args: object) -> tuple[bytes, bytes]:
        ref, old, new = args
        assert isinstance(ref, bytes) and isinstance(old, bytes) and isinstance(new, bytes)
        if ref != BRANCH:
            raise HookError(f"only main is kept here, not {ref.decode(errors='replace')}")
        if new == ZERO:
            raise HookError("main cannot be deleted")
        problem = asyncio.run_coroutine_threadsafe(
            self.remote.push(self.quarantine, ObjectID(old), ObjectID(new)), self.loop).result()
        if problem is not None:
            raise HookError(problem)
        return b"", b""  # (the hook's stdout and stderr: nothing to show)


def _disk_problem(root: str, path: str) -> str | None:
    """Why the vault's folder cannot take `path` as a file now (a link on the way, a folder
    where the file goes), or None."""
    at = root
    for part in path.split("/"):
        at = os.path.join(at, part)
        if os.path.islink(at):
            return f"{path} would go through a symbolic link in the vault"
    if os.path.isdir(at):
        return f"{path} is a folder in the vault"
    return None


class VaultRemote:
    def __init__(self, store: Store, person: str, limits: PushLimits,
                 parents: ParentCache | None = None) -> None:
        assert store.history is not None, "a remote serves a vault that keeps history"
        self.store = store
        self.person = person
        self.limits = limits
        self.history: History = store.history
        self.projection = Projection(self.history)
        self.parents = parents if parents is not None else ParentCache()

    # --- bringing it up to date ---------------------------------------------------------------

    def _up_to_date(self) -> RemoteState:
        """Under the vault's lock: late changes recorded, the history started, its new
        changes mirrored. HistoryBehind when it cannot be written."""
        self.history.settle()
        if self.history.pending.behind or self.history.repo.head() is None:
            raise HistoryBehind(self.history.trouble or "it cannot be started")
        clear_incoming(self.history.repo.path)
        return self.projection.export()

    async def current(self) -> RemoteState:
        """The remote's head now (the lock is taken only when there is something to do)."""
        await self.store._fresh()  # outside edits the last rescan found are in the history
        if self.history.started and not self.history.pending.behind \
                and not self.projection.behind():
            found = self.projection.state()
            if found is not None:
                return found
        async with self.store._changing():
            state = await asyncio.to_thread(self._up_to_date)
        await asyncio.to_thread(pack_loose, self.history.repo.path)  # (outside the lock)
        return state

    # --- what dulwich's handlers are given -------------------------------------------------------

    async def fetch_repo(self, *, advertise: bool) -> ServedRepo:
        """For upload-pack: `advertise` for the ref list; otherwise the pack request, which
        may also want a head the list showed before a change replaced it."""
        state = await self.current()
        seen = () if advertise else self.projection.heads(state)
        head = ObjectID(state.remote.encode())
        objects = RemoteObjectStore(self.history.repo.path / "objects", self.parents,
                                    heads=[head, *seen])
        return ServedRepo(objects, head, seen=seen)

    @contextlib.asynccontextmanager
    async def receive_repo(self) -> AsyncIterator[ServedRepo]:
        """For receive-pack: the pack goes to a quarantine; the update hook decides."""
        state = await self.current()
        loop = asyncio.get_running_loop()
        with quarantined(self.history.repo.path) as quarantine:
            yield ServedRepo(quarantine.store, ObjectID(state.remote.encode()),
                             update=_PushHook(self, quarantine, loop),
                             max_input=self.limits.max_push_bytes)

    # --- a push ----------------------------------------------------------------------------------

    def _checked(self, quarantine: Quarantine, new: ObjectID,
                 state: RemoteState) -> list[Commit]:
        store = quarantine.store
        main = self.history.repo.repo.object_store
        head = ObjectID(state.remote.encode())
        commits = new_commits(store, new, lambda sha: sha in main, self.limits.max_files)
        if not descends(store, new, head):
            raise PushRefused("non-fast-forward: it does not build on the vault's main (git "
                              "pull, then push again)")
        pushed = check(store, commits, self.limits)
        tip = store[new]
        root = str(self.store.vault.root)
        for path in sorted(pushed.paths):
            try:
                self.store.vault.resolve(path)
            except UnsafePath as exc:
                raise PushRefused(exc.message) from None
            problem = _disk_problem(root, path)
            if problem is not None:
                raise PushRefused(problem)
        if not commits or commits[-1].id != new:  # already here (an interrupted push's)
            commits.append(tip)  # type: ignore[arg-type]
        return commits

    async def push(self, quarantine: Quarantine, old: ObjectID, new: ObjectID) -> str | None:
        """Apply a push that fast-forwards the head; None when done, else why not."""
        try:
            return await self._push(quarantine, old, new)
        except StorageError as exc:  # the vault's lock stayed busy, its folder unsafe
            return f"nothing was changed: {exc.message}"

    async def _push(self, quarantine: Quarantine, old: ObjectID, new: ObjectID) -> str | None:
        async with self.store._changing():
            try:
                state = await asyncio.to_thread(self._up_to_date)
                problem = self.history.repo.unwritable()
                if problem is not None:
                    raise HistoryBehind(problem)
            except HistoryBehind as exc:
                return (f"the vault's history cannot be written now ({exc}); nothing was "
                        "changed, try again later")
            if old != state.remote.encode():
                return FETCH_FIRST
            try:
                commits = await asyncio.to_thread(self._checked, quarantine, new, state)
            except PushRefused as exc:
                return f"nothing was changed: {exc}"
            except Exception as exc:  # noqa: BLE001 (objects that do not read: bad input)
                log.info("a push to %s could not be read: %s", self.person, exc)
                return "nothing was changed: the pushed objects could not be read"
            quarantine.accept()
            try:
                applied = await apply_push(self.store, self.person, commits)
            except Exception as exc:  # noqa: BLE001 (the changes made so far stand)
                log.warning("a push to %s stopped half-way: %s", self.person, exc)
                return ("stopped before every commit was applied (those applied are changes "
                        f"of the vault's now: git pull, then push again): {exc}")
            await asyncio.to_thread(self.projection.pushed, state, new, applied.said())
        return None
