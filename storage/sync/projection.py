"""A vault's history as its git remote shows it: one branch whose commits mirror the history's
(the same trees, so the same files; the same author and time; a message saying what changed
and from where, as `brain history` does), so a clone holds the vault and its history, and a
pull after one change fetches that change only.

The remote's commits cannot be the history's own: a pushed commit must stay the commit the
client made (or the client would have to merge its own work back), while the history records
the push as changes of the app's (storage/sync/push.py). So the remote keeps its own line:
`remote.json` beside the history pairs the head clients see with the history commit it
stands for; a change recorded after it is mirrored on top of that head the next time anyone
fetches or pushes. Mirroring is deterministic (a commit's mirror depends only on it and on the
mirror of its parent), and it is done under the vault's lock.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from dulwich.object_store import PackBasedObjectStore
from dulwich.objects import Commit, ObjectID

from storage.history import History
from storage.history.history import REMOTE_NAME, TRAILER
from storage.history.repo import COMMITTER
from storage.vault.atomic import write_atomic

STATE_NAME = REMOTE_NAME  # (the database store shares it: storage/vault/mirror.py)
SEEN = 8  # earlier heads a fetch that began before a change may still ask for
PACK_FROM = 100  # mirrors written as one pack past this many
CHANGE_TRAILER = "Brain-Change"  # the history's id of the change (`brain undo <id>`)


@dataclass(frozen=True)
class RemoteState:
    remote: str  # the head git clients see
    history: str  # the history commit it stands for
    seen: tuple[str, ...] = ()  # earlier heads, newest first

    def moved(self, remote: str, history: str) -> RemoteState:
        seen = (self.remote, *self.seen) if remote != self.remote else self.seen
        return RemoteState(remote, history, tuple(dict.fromkeys(seen))[:SEEN])


def remote_message(message: bytes, change_id: str) -> bytes:
    """The history's commit message as the remote shows it: what changed, then who and
    through which door, then the change's id; the history's own JSON trailer left out."""
    text = message.decode("utf-8", errors="replace")
    lines = text.splitlines()
    first = lines[0] if lines else ""
    meta: dict[str, object] = {}
    for line in reversed(lines):
        if line.startswith(TRAILER):
            with contextlib.suppress(ValueError):
                meta = json.loads(line[len(TRAILER):])
            break
    who, source = meta.get("who"), meta.get("source")
    by = f"\n\nby {who} via {source}" if who and source else ""
    return f"{first}{by}\n\n{CHANGE_TRAILER}: {change_id}\n".encode()


class Projection:
    def __init__(self, history: History) -> None:
        self.history = history

    @property
    def path(self) -> Path:
        return self.history.path / STATE_NAME

    def state(self) -> RemoteState | None:
        """The pairing kept, if its head is still in the repository."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            found = RemoteState(str(data["remote"]), str(data["history"]),
                                tuple(str(s) for s in data.get("seen", ())))
        except (FileNotFoundError, ValueError, KeyError, TypeError):
            return None
        store = self.history.repo.repo.object_store
        if ObjectID(found.remote.encode()) not in store:
            return None  # a damaged or replaced repository: the remote starts again
        return found

    def behind(self) -> bool:
        """Has the history changed since the remote's head was made? (Two small reads.)"""
        state = self.state()
        head = self.history.repo.head()
        return state is None or head is None or state.history != head.decode()

    def _write(self, state: RemoteState) -> RemoteState:
        data = {"remote": state.remote, "history": state.history, "seen": list(state.seen)}
        write_atomic(self.path, json.dumps(data) + "\n")
        return state

    def export(self) -> RemoteState:
        """Mirror the history's changes made since the remote's head (under the vault's lock,
        the history started). Returns the pairing now."""
        repo = self.history.repo
        head = repo.head()
        assert head is not None, "the history is started before it is exported"
        state = self.state()
        if state is not None and state.history == head.decode():
            return state
        chain = self._since(head, None if state is None else state.history)
        parent = None if state is None else ObjectID(state.remote.encode())
        made = []
        for commit in chain:
            mirror = _mirrored(commit, parent)
            made.append(mirror)
            parent = mirror.id
        _add(repo.repo.object_store, made)
        assert parent is not None
        new = (state.moved(parent.decode(), head.decode()) if state is not None
               else RemoteState(parent.decode(), head.decode()))
        return self._write(new)

    def _since(self, head: ObjectID, known: str | None) -> list[Commit]:
        """The history's commits after `known`, oldest first; when `known` is not one of
        them (the history began again), the head alone (one commit to the vault as it is)."""
        store = self.history.repo.repo.object_store
        found: list[Commit] = []
        at: ObjectID | None = head
        while at is not None and at.decode() != known:
            commit = store[at]
            assert isinstance(commit, Commit)
            found.append(commit)
            at = commit.parents[0] if commit.parents else None
        if at is None and known is not None:
            return found[:1]
        found.reverse()
        return found

    def pushed(self, previous: RemoteState, pushed: ObjectID, message: str) -> RemoteState:
        """After a push was applied: the remote's head is the pushed commit, or, where the
        vault keeps it otherwise (a deleted note kept in the trash, links that followed a
        move), one commit on top of it with the vault as it is, saying so."""
        repo = self.history.repo
        head = repo.head()
        assert head is not None
        store = repo.repo.object_store
        wanted = store[head]
        got = store[pushed]
        assert isinstance(wanted, Commit) and isinstance(got, Commit)
        remote = pushed
        if wanted.tree != got.tree:
            settle = Commit()
            settle.tree = wanted.tree
            settle.parents = [pushed]
            settle.author = settle.committer = COMMITTER
            settle.author_time = settle.commit_time = wanted.commit_time
            settle.author_timezone = settle.commit_timezone = 0
            settle.encoding = b"UTF-8"
            settle.message = f"{message}\n\n{CHANGE_TRAILER}: {head.decode()}\n".encode()
            store.add_object(settle)
            remote = settle.id
        return self._write(previous.moved(remote.decode(), head.decode()))

    def heads(self, state: RemoteState) -> Iterable[ObjectID]:
        return [ObjectID(s.encode()) for s in state.seen]


def _add(store: PackBasedObjectStore, objects: list[Commit]) -> None:
    """Many in one pack (a first export of a long history), a few loose (a pack each time
    would leave thousands of tiny packs, each looked in on every read)."""
    if len(objects) > PACK_FROM:
        store.add_objects([(obj, None) for obj in objects])
    else:
        for obj in objects:
            store.add_object(obj)


def _mirrored(commit: Commit, parent: ObjectID | None) -> Commit:
    mirror = Commit()
    mirror.tree = commit.tree
    mirror.parents = [parent] if parent is not None else []
    mirror.author = commit.author
    mirror.committer = commit.committer
    mirror.author_time, mirror.author_timezone = commit.author_time, commit.author_timezone
    mirror.commit_time, mirror.commit_timezone = commit.commit_time, commit.commit_timezone
    mirror.encoding = b"UTF-8"
    mirror.message = remote_message(commit.message, commit.id.decode())
    return mirror
