"""The database store's mirror of one vault (issue 34, `BRAIN_STORE=database`).

PostgreSQL holds each vault's files (`vault_files`) and its history's git objects and head
(`vault_objects`, `vault_heads`: migration 0016); each machine keeps a mirror of both in its
own data directory, and the Store works on the mirror as it works on a vault of its own. Every
row carries a number from one sequence, so a mirror asks only for what changed since the last
number it saw.

- **Pull** (before a read, and first thing under the write lock): the rows past the mirror's
  number, read in one snapshot, written into the mirror (files with the writer's mtime, so
  every machine indexes them alike; the objects, then the head). Under this machine's part of
  the vault lock, so two processes of one machine do not write the mirror at once.
- **Push** (at the end of a write, still under the write lock, which on PostgreSQL every
  machine's writers share): the files the write touched and the history's new objects and
  head, with their index rows, in the lock's own transaction, which holds every other row the
  write made (a capture's receipt): all of the write or nothing. A write that does not commit
  (it raised, the database refused it, its process died) leaves its files marked in the
  mirror (`unpushed`), and the next pull on this machine puts them back as the database
  holds them (storage/vault/uncommitted.py).
- **The git remote** (storage/sync): its state (`remote.json` beside the history: the head
  git clients see, the history commit it stands for) travels with the history's head, and
  its commits (a mirror of each history commit, the commits people pushed) with the
  history's objects, so every machine serves one line and a push taken by one is what a
  pull from another brings.
- **Import**: a vault used in the database store for the first time, whose mirror already
  holds files or a history (a vault of the file store), is sent whole, once.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from dulwich.objects import ObjectID, ShaFile
from sqlalchemy.ext.asyncio import AsyncSession

from storage.db import Database
from storage.history import History
from storage.history.history import LOG_NAME, REMOTE_NAME
from storage.history.repo import BRANCH
from storage.processes import process_name, runs
from storage.vault import vault_rows as rows
from storage.vault.atomic import TEMP_NAME, write_atomic
from storage.vault.files import Vault
from storage.vault.locks import machine_lock
from storage.vault.uncommitted import put_back
from storage.vault.vault_rows import Index, Outgoing

FORGOTTEN = ""  # the head of a vault whose person was forgotten
STATE = "mirror.json"  # beside the vault's history: the last number pulled, unpushed paths


def _remote_head(state: str | None) -> ObjectID | None:
    """The head git clients see, in the remote's state (`remote.json`'s text)."""
    try:
        found = json.loads(state or "")["remote"]
    except (ValueError, KeyError, TypeError):
        return None
    return ObjectID(found.encode()) if isinstance(found, str) and len(found) == 40 else None


@dataclass(frozen=True)
class Pulled:
    paths: list[str]  # files the pull changed in the mirror
    head: str | None  # the history's head it brought, if it moved


class Mirror:
    def __init__(self, db: Database, vault: Vault, history: History) -> None:
        self.db = db
        self.vault = vault
        self.history = history
        self.key = vault.key
        self.state_path = history.path / STATE
        self._wrote: list[str] | None = None  # the paths the write now under way changed
        self._reindex: list[str] = []  # of them, the ones to index as they are sent
        self._nested = 0  # writes under way inside the one under way

    @contextlib.asynccontextmanager
    async def writing(self, lock: contextlib.AbstractAsyncContextManager[None],
                      pulled: Callable[[list[str]], Awaitable[None]],
                      index: Index | None = None) -> AsyncIterator[None]:
        """A write under `lock` (the vault's write lock, whose transaction this task's
        sessions share: storage/vault/locks.py): the mirror pulled first (`pulled` hears what
        changed), the write's paths pushed at the end with the index rows of the files the
        write asked to index (`reindex`, by `index.rows`), all in the lock's one transaction;
        the mirror's state moved on once it commits (`index.written` then). A write that
        raises, or a commit that fails, sends nothing: the files it changed are put back as
        the database holds them by the next pull. Within a write already under way, nothing
        more."""
        settle: Callable[[], None] | None = None
        began = False
        try:
            async with lock:
                if self._wrote is not None:
                    self._nested += 1
                    try:
                        yield
                    finally:
                        self._nested -= 1
                    return
                changed = (await self.pull()).paths
                if changed:  # indexed now: what other machines sent is not this write's
                    await pulled(changed)
                self._mark(writing=process_name())  # should it die: storage/vault/uncommitted.py
                began = True
                self._wrote, self._reindex = [], []
                try:
                    yield
                    settle = await self.push(self._wrote, index if self._reindex else None,
                                             self._reindex)
                finally:  # (the marks of what it wrote stay until the commit is known)
                    self._wrote, self._reindex = None, []
        except BaseException:
            if began:  # alive: the files it changed are all marked (`unpushed`)
                self._mark(writing=False)
            raise
        if settle is not None:
            settle()

    def _mark(self, **marks: Any) -> None:
        state = self._state()
        state.update(marks)
        self.save(state)

    @property
    def in_write(self) -> bool:
        """Within a write, and not within a write inside it (a git push applying its commits
        one by one: the next may need the index rows of the one before)."""
        return self._wrote is not None and self._nested == 0

    @property
    def under_way(self) -> bool:
        """Within a write (or a write inside it)."""
        return self._wrote is not None

    def reindex(self, rels: Iterable[str]) -> None:
        """Within a write: index these files in the transaction that sends them, so no
        machine ever sees a note's index rows without its text, or its text without them."""
        rels = list(rels)
        self.wrote(rels)
        self._reindex.extend(rels)

    def wrote(self, rels: Iterable[str]) -> None:
        """The write under way changed these files (sent by its push). Marked in the mirror's
        state at once: should the write not commit, the next pull on this machine puts them
        back as the database holds them (storage/vault/uncommitted.py)."""
        if self._wrote is None:
            return
        rels = list(rels)
        self._wrote.extend(rels)
        state = self._state()
        marked = set(state.get("unpushed", []))
        if not marked.issuperset(rels):  # (a write's index marks what its record did)
            state["unpushed"] = sorted(marked.union(rels))
            self.save(state)

    # --- the mirror's own state -------------------------------------------------------------

    def _state(self) -> dict[str, Any]:
        try:
            found = json.loads(self.state_path.read_text(encoding="utf-8"))
            return found if isinstance(found, dict) else {}
        except (OSError, ValueError):
            return {}

    def save(self, state: dict[str, Any]) -> None:
        self.state_path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(self.state_path, json.dumps(state).encode())

    # --- pull -------------------------------------------------------------------------------

    async def behind(self, session: AsyncSession | None = None) -> bool:
        """Does the database hold rows of this vault the mirror has not seen? (Cheap: three
        index lookups, no lock; in the caller's transaction when it gives one.)"""
        async with contextlib.AsyncExitStack() as stack:
            s = session if session is not None else \
                await stack.enter_async_context(self.db.session())
            newest = await rows.top(s, self.key)
        return self.behind_of(newest)

    def behind_of(self, top: int | None) -> bool:
        """Behind a vault whose newest row is `top` (None: it has none), or holding files a
        write that did not commit changed (storage/vault/uncommitted.py: one that ended, or
        whose process died; never one under way)?"""
        state = self._state()
        return not state.get("ready") or (
            top is not None and int(top) > int(state.get("seq", 0))) or (
            self._wrote is None and _uncommitted(state))

    async def pull(self) -> Pulled:
        """Bring the mirror up to date (see the module's text)."""
        async with machine_lock(self.vault.root):
            sent = await self._first_use()
            state = self._state()
            if (state.get("unpushed") or state.get("writing")) and self._wrote is None:
                sent += await put_back(self, state)
            since = int(state.get("seq", 0))
            files, objects, head = await self._read_since(since)
            if not files and not objects and head is None:
                return Pulled(sent, None)
            changed = sent + await asyncio.to_thread(self._apply, files, objects, head)
            seqs = [r[-1] for r in files] + [r[-1] for r in objects] + \
                ([head[1]] if head is not None else [])
            state["seq"] = max([since, *seqs])
            if head is not None and head[0] != FORGOTTEN:  # what the database holds now
                state.update(head=head[0], remote=head[2] or state.get("remote"))
            self.save(state)
        return Pulled(changed, head[0] if head is not None else None)

    async def _read_since(self, since: int) -> tuple[list[Any], list[Any], Any]:
        return await rows.read_since(self.db, self.key, since)

    def _apply(self, files: list[Any], objects: list[Any], head: Any) -> list[str]:
        if head is not None and head[0] == FORGOTTEN:
            return self._wipe()
        store = self.history.repo.repo.object_store
        for sha, kind, data, _ in objects:
            if ObjectID(sha.encode()) not in store:
                store.add_object(ShaFile.from_raw_string(kind, bytes(data)))
        changed = []
        for rel, content, mtime_ns, _ in files:
            path = self.vault.resolve(rel)
            current = path.read_bytes() if path.is_file() else None
            if content is None:
                if current is not None:
                    path.unlink()
                    changed.append(rel)
                continue
            if current != bytes(content):
                path.parent.mkdir(parents=True, exist_ok=True)
                write_atomic(path, bytes(content))
                changed.append(rel)
            os.utime(path, ns=(int(mtime_ns), int(mtime_ns)))
        if head is not None:
            self.history.repo.repo.refs[BRANCH] = ObjectID(str(head[0]).encode())
            # The list of changes is a cache of this machine's commits: built again from
            # the commits, which now hold the other machines' changes too.
            (self.history.path / LOG_NAME).unlink(missing_ok=True)
            if head[2] is not None:  # the git remote's state, its commits among the objects
                write_atomic(self.history.path / REMOTE_NAME, str(head[2]).encode())
        return changed

    def _wipe(self) -> list[str]:
        """The person was forgotten (on some machine): this mirror goes too, history and all."""
        gone = self.all_files()
        for rel in gone:
            self.vault.resolve(rel).unlink(missing_ok=True)
        for folder in sorted(self.vault.root.rglob("*"), reverse=True):
            if folder.is_dir() and not folder.is_symlink():
                with contextlib.suppress(OSError):
                    folder.rmdir()
        self.history.erase()
        return gone

    async def erase(self) -> None:
        """Forget the vault in the database (`brain forget`): its files and objects deleted,
        its head marked forgotten, so every machine's mirror erases itself at its next pull.
        No note's name or text stays."""
        await rows.erase(self.db, self.key, FORGOTTEN)
        self.state_path.unlink(missing_ok=True)

    # --- push -------------------------------------------------------------------------------

    async def push(self, rels: Iterable[str], index: Index | None = None,
                   reindex: Sequence[str] = ()) -> Callable[[], None]:
        """Send what a write changed (called under the vault's write lock): the files at
        `rels` as they are now, and the history's objects and head past what the database
        holds, with `index`'s rows of `reindex`. One transaction (the write's, when it shares
        one). Returns what to do once it commits: the mirror's state moved on."""
        state = self._state()
        rels = sorted({*rels, *state.get("unpushed", [])})
        if rels != state.get("unpushed"):  # until the database has them (`wrote`)
            state["unpushed"] = rels
            self.save(state)
        files = await asyncio.to_thread(self._files, rels)
        out = await asyncio.to_thread(self._outgoing, state)
        seqs = await self._write(files, out, index, list(reindex))

        def settle() -> None:
            state.update(unpushed=[], writing=False, head=out.head or state.get("head"),
                         remote=out.remote or state.get("remote"),
                         seq=max([int(state.get("seq", 0)), *seqs]))
            self.save(state)
            if index is not None:
                index.written(list(reindex))
        return settle

    def _files(self, rels: list[str]) -> list[dict[str, Any]]:
        out = []
        for rel in rels:
            path = self.vault.resolve(rel)
            if path.is_file() and not path.is_symlink():
                data = path.read_bytes()
                out.append({"path": rel, "content": data, "mtime_ns": path.stat().st_mtime_ns,
                            "sha": hashlib.sha256(data).hexdigest()})
            else:
                out.append({"path": rel, "content": None, "mtime_ns": 0, "sha": None})
        return out

    def _remote(self) -> str | None:
        try:
            return (self.history.path / REMOTE_NAME).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    def _outgoing(self, state: dict[str, Any]) -> Outgoing:
        """The history's objects the database lacks (past its head and the remote's head as
        `state` knows them), the head and the remote's state where they moved."""
        repo = self.history.repo
        store = repo.repo.object_store
        now = repo.head()
        known = state.get("head")
        head = now.decode() if now is not None and now.decode() != known else None
        remote = self._remote()
        remote = remote if remote is not None and remote != state.get("remote") else None
        wants = [sha for sha in (now if head else None, _remote_head(remote))
                 if sha is not None and sha in store]
        if not wants:
            return Outgoing([], head, None, None if now is None else now.decode())
        haves = [sha for sha in (ObjectID(known.encode()) if known else None,
                                 _remote_head(state.get("remote")))
                 if sha is not None and sha in store]
        out = []
        for sha, _ in store.find_missing_objects(haves, wants):
            obj = store[sha]
            out.append({"sha": sha.decode(), "kind": obj.type_num, "data": obj.as_raw_string()})
        return Outgoing(out, head, remote, None if now is None else now.decode())

    async def _write(self, files: list[dict[str, Any]], out: Outgoing,
                     index: Index | None = None, reindex: Sequence[str] = ()) -> list[int]:
        return await rows.write(self.db, self.key, files, out, index, reindex)

    # --- import -----------------------------------------------------------------------------

    async def _first_use(self) -> list[str]:
        """A vault this machine mirrors for the first time: sent whole when the database does
        not hold it yet and the mirror's folder already does (a file store's vault). Returns
        the files sent (to be indexed under the vault's shared name)."""
        if self._state().get("ready"):
            return []
        sent: list[str] = []
        if not await self.held() and await asyncio.to_thread(self._has_content):
            sent = await self.send_all()
        state = self._state()
        state["ready"] = True
        self.save(state)
        return sent

    def _has_content(self) -> bool:
        return self.history.repo.head() is not None or any(
            p.is_file() for p in self.vault.root.rglob("*"))

    async def held(self) -> bool:
        """Does the database hold this vault yet (a head, or any file)?"""
        return await rows.held(self.db, self.key)

    async def send_all(self) -> list[str]:
        """The whole mirror sent (a file store's vault brought in): every file, every object
        of its history, its head; idempotent. Returns the files."""
        rels = await asyncio.to_thread(self.all_files)
        state = self._state()
        for known in ("head", "remote"):  # the database knows neither of this vault yet
            state.pop(known, None)
        self.save(state)
        with self.db.alone():  # committed now, whatever becomes of the write it began
            settle = await self.push(rels)
        settle()
        return rels

    def all_files(self) -> list[str]:
        out = []
        for path in sorted(self.vault.root.rglob("*")):
            if path.is_file() and not path.is_symlink() and not TEMP_NAME.match(path.name):
                out.append(path.relative_to(self.vault.root).as_posix())
        return out


def _uncommitted(state: dict[str, Any]) -> bool:
    writer = state.get("writing")
    if writer:  # a write under way, unless its process is gone
        return isinstance(writer, str) and not runs(writer)
    return bool(state.get("unpushed"))


async def mirrors_behind(db: Database, mirrors: Sequence[Mirror]) -> set[str]:
    """The keys of `mirrors` whose vault holds rows their mirror has not seen, in one
    statement for all (the background indexer's look at every vault it watches; one
    mirror's own check is `Mirror.behind`)."""
    if not mirrors:
        return set()
    newest = await rows.tops(db, [m.key for m in mirrors])
    return {m.key for m in mirrors if m.behind_of(newest.get(m.key))}
