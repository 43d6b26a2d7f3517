"""One vault's history: record each change as a commit, list them (storage/history/undo.py
undoes any of them).

Every method that writes runs under the vault's lock (the Store takes it), so two processes,
or two replicas, never interleave: the history is one line. The files are the truth; before
the app changes a file it first records, as an "outside edit", whatever changed that file
since the history last saw it (Obsidian, a `git pull`), so an undo restores exactly what was
there. The list of changes is kept in `changes.jsonl` beside the repository, a cache that the
commits' own messages rebuild when it falls behind (a crash between the two writes). A change
the history cannot record when it is made (a lock left by a writer that died, a damaged
repository) stands in the vault and is recorded late (storage/history/pending.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import shutil
import time
from collections.abc import Iterable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dulwich.objects import ObjectID

from storage.errors import InvalidValue, NotFound, UnsafePath
from storage.history.context import collected, current_origin
from storage.history.pending import Late, Pending, why
from storage.history.repo import HistoryRepo, blob_id
from storage.types import TRASH_DIR, Change
from storage.vault.files import Vault

TRAILER = "brain-change: "
LOG_NAME = "changes.jsonl"
REMOTE_NAME = "remote.json"  # the git remote's state (storage/sync/projection.py)
OUTSIDE = "outside edit"
OUTSIDE_SUMMARY = "file(s) changed outside the app"
RETELL_SECONDS = 600.0  # the same failure is logged again after this long
LATE = " (recorded late: the history could not be written then)"
START = "start of history"
UNDO = "undo"

log = logging.getLogger(__name__)


def history_path(base: Path, vault_root: Path) -> Path:
    """Where a vault's history is kept under `base` (the data directory's `history/`): named
    for the vault's folder and its full path, so two vaults never share one."""
    digest = hashlib.sha256(str(vault_root).encode()).hexdigest()[:12]
    name = "".join(c if c.isalnum() or c in "-_" else "_" for c in vault_root.name)[:40]
    return base / f"{name or 'vault'}-{digest}"


def _trash_files(vault: Vault) -> Iterable[str]:
    trash = vault.root / TRASH_DIR
    if not trash.is_dir():
        return
    for folder, _dirs, files in os.walk(trash, followlinks=False):
        for name in files:
            if name.lower().endswith(".md") and not name.startswith("."):
                yield vault.relpath(Path(folder) / name)


class History:
    def __init__(self, path: Path, vault: Vault) -> None:
        self.path = path
        self.vault = vault
        self._repo: HistoryRepo | None = None
        self.pending = Pending(path, vault.root)
        self._told: tuple[str | None, float] = (None, 0.0)  # the last failure logged, when

    @property
    def repo(self) -> HistoryRepo:
        if self._repo is None:
            self._repo = HistoryRepo(self.path / "repo.git")
        return self._repo

    @property
    def started(self) -> bool:
        """Has the first snapshot been taken?"""
        return self._repo is not None and self._repo.head() is not None or \
            (self.path / "repo.git" / "refs" / "heads" / "main").is_file()

    @property
    def _log_path(self) -> Path:
        return self.path / LOG_NAME

    # --- the files -------------------------------------------------------------------------

    def disk(self, rel: str) -> bytes | None:
        """The file's bytes; None when absent, or when a link takes it out of the vault (such
        bytes never enter the history, nor the vault's git remote)."""
        try:
            return self.vault.resolve(rel).read_bytes()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError, UnsafePath):
            return None

    def _differs(self, rels: Iterable[str]) -> dict[str, bytes | None]:
        """The files whose bytes on disk are not the head's."""
        head = self.repo.head()
        out: dict[str, bytes | None] = {}
        for rel in dict.fromkeys(rels):
            data = self.disk(rel)
            if (blob_id(data) if data is not None else None) != self.repo.blob_at(head, rel):
                out[rel] = data
        return out

    # --- recording (under the vault lock) ----------------------------------------------------

    async def ready(self) -> None:
        """The first snapshot taken (off the event loop: it reads every note) and the late
        changes recorded; never raises (what cannot be done now waits for the next time)."""
        if not self.started or self.pending.behind:
            await asyncio.to_thread(self.settle)

    def settle(self) -> None:
        try:
            self.catch_up()
            self.ensure()
        except Exception as exc:  # noqa: BLE001 (the vault is the truth; the history lags)
            self._fell_behind(None, exc)

    def ensure(self) -> None:
        """The first snapshot of the vault, as it is, the first time history is needed."""
        if self.repo.head() is not None:
            return
        rels = [rel for rel, _m, _s in self.vault.scan()] + list(_trash_files(self.vault))
        files: dict[str, bytes | None] = {
            rel: data for rel in rels if (data := self.disk(rel)) is not None}
        self._commit(files, START, f"the vault as it was ({len(files)} notes)", who="app",
                     source="app")

    def before(self, rels: Iterable[str]) -> Change | None:
        """Record what changed outside the app in these files before the app changes them.
        Never raises: when the history cannot be written the app's change still goes ahead
        (it is recorded late, with these files as they are then)."""
        try:
            self.catch_up()
            return self._outside_now(rels)
        except Exception as exc:  # noqa: BLE001 (the vault is the truth; the history lags)
            self._fell_behind(None, exc)
            return None

    def outside(self, rels: Iterable[str]) -> Change | None:
        """An "outside edit" change for the files among `rels` that differ from the head (a
        rescan found them); kept to record late when the history cannot be written now."""
        rels = list(rels)
        try:
            self.catch_up()
            return self._outside_now(rels)
        except Exception as exc:  # noqa: BLE001
            self._fell_behind(Late(OUTSIDE, OUTSIDE_SUMMARY, tuple(rels), "outside", "files",
                                   int(time.time())), exc)
            return None

    def _outside_now(self, rels: Iterable[str]) -> Change | None:
        self.ensure()
        files = self._differs(rels)
        if not files:
            return None
        return self._commit(files, OUTSIDE, f"{len(files)} {OUTSIDE_SUMMARY}", who="outside",
                            source="files")

    def record(self, action: str, summary: str, rels: Iterable[str], *,
               moved: Iterable[tuple[str, str]] = (), undoes: str | None = None,
               new_folders: Iterable[str] = ()) -> Change | None:
        """The app's change to these files, as they are now; None when nothing changed, or
        when the history cannot be written now (then it is recorded late: never raises, as
        the change itself is made and must not be made again)."""
        origin = current_origin()
        late = Late(action, summary, tuple(dict.fromkeys(rels)), origin.who, origin.source,
                    int(time.time()), tuple(moved), undoes, tuple(new_folders))
        try:
            self.catch_up()
            return self.record_now(late)
        except Exception as exc:  # noqa: BLE001
            self._fell_behind(late, exc)
            return None

    def record_now(self, late: Late, *, when: int | None = None,
                   collect: bool = True) -> Change | None:
        """Record one change now; raises when the history cannot be written."""
        self.ensure()
        files = self._differs(late.paths)
        if not files:
            return None
        return self._commit(files, late.action, late.summary, who=late.who, source=late.source,
                            moved=late.moved, undoes=late.undoes, when=when,
                            new_folders=late.new_folders, collect=collect)

    def catch_up(self) -> int:
        """Record the changes kept for later (in their order, with their files as they are
        now); raises when the history still cannot be written. Returns how many."""
        if not self.pending.behind:
            return 0
        late = self.pending.entries()
        for entry in late:  # not part of the turn that happens to record them (its Undo)
            if entry.put:  # a change a process was making when it stopped: made whole now
                self.vault.put({rel: None if blob is None else
                                self.repo.data(ObjectID(blob.encode()))
                                for rel, blob in entry.put})
            self.record_now(replace(entry, summary=entry.summary + LATE, put=()),
                            when=entry.at, collect=False)
        self.pending.done()
        log.info("history: %d change(s) recorded late", len(late))
        return len(late)

    @property
    def trouble(self) -> str | None:
        """Why some changes are not in the history yet, or None when none are waiting."""
        if not self.pending.behind:
            return None
        count = self.pending.count()
        return (f"{count} change(s) not recorded yet: {self.pending.reason() or 'unknown'}")

    def _fell_behind(self, late: Late | None, exc: Exception) -> None:
        reason = why(exc)
        if late is not None:
            self.pending.add(late, reason)
        told, at = self._told
        if reason != told or time.monotonic() - at > RETELL_SECONDS:  # not every rescan
            self._told = (reason, time.monotonic())
            log.warning("history of %s cannot be written: %s; the change is kept and "
                        "recorded once it can be", self.vault.root.name, reason)

    def _commit(self, files: dict[str, bytes | None], action: str, summary: str, *,
                who: str, source: str, moved: tuple[tuple[str, str], ...] = (),
                undoes: str | None = None, when: int | None = None,
                new_folders: tuple[str, ...] = (), collect: bool = True) -> Change:
        at = datetime.now(UTC) if when is None else datetime.fromtimestamp(when, UTC)
        meta = {"action": action, "who": who, "source": source, "summary": summary,
                "paths": sorted(files), "moved": [list(m) for m in moved], "undoes": undoes,
                "new_folders": list(new_folders)}
        message = f"{action}: {summary}\n\n{TRAILER}{json.dumps(meta, ensure_ascii=False)}\n"
        safe_who = "".join(c for c in who if c not in "<>\n") or "unknown"
        first = self.repo.head() is None
        commit = self.repo.commit(files, message, f"{safe_who} <{safe_who}@second-brain>",
                                  when=int(at.timestamp()))
        change = Change(id=commit.decode(), at=at.isoformat(timespec="seconds"), who=who,
                        source=source, action=action, summary=summary,
                        paths=tuple(sorted(files)), moved=moved, undoes=undoes,
                        new_folders=new_folders)
        self._append(change, first=first)
        if collect and action not in (OUTSIDE, START):
            collected(change.id)
        return change

    # --- the list of changes ---------------------------------------------------------------

    def _append(self, change: Change, *, first: bool) -> None:
        """The change added to the list; a list that is gone (the database store's mirror
        drops it when another machine's commits arrive) is left to be rebuilt from the
        commits, not begun again with this change alone."""
        self.path.mkdir(parents=True, exist_ok=True)
        if not first and not self._log_path.exists():
            return
        with self._log_path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(change.to_dict(), ensure_ascii=False) + "\n")

    def _log_lines(self) -> list[str]:
        try:
            return self._log_path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []

    def _rebuild(self) -> list[Change]:
        """The list from the commits themselves (oldest first), written back to the cache."""
        found = []
        for commit in self.repo.walk():
            meta: dict[str, Any] = {}
            for line in reversed(commit.message.splitlines()):
                if line.startswith(TRAILER):
                    with contextlib.suppress(ValueError):
                        meta = json.loads(line[len(TRAILER):])
                    break
            at = datetime.fromtimestamp(commit.at, UTC).isoformat(timespec="seconds")
            found.append(Change.from_dict({"id": commit.id, "at": at, **meta}))
        found.reverse()
        tmp = self._log_path.with_suffix(".tmp")
        tmp.write_text("".join(json.dumps(c.to_dict(), ensure_ascii=False) + "\n"
                               for c in found), encoding="utf-8")
        os.replace(tmp, self._log_path)
        return found

    def _lines(self) -> list[str]:
        """The cache's lines (one change each, oldest first), rebuilt from the commits when
        it lags the repository (another process committed, or it was lost)."""
        if not (self.path / "repo.git" / "HEAD").is_file():
            return []
        head = self.repo.head()
        if head is None:
            return []
        lines = self._log_lines()
        last = _parsed(lines[-1]) if lines else None
        if last is None or last.id != head.decode():
            try:
                self._rebuild()
            except Exception as exc:  # noqa: BLE001 (damaged: list what the cache holds)
                log.warning("history of %s cannot be read: %s", self.vault.root.name, why(exc))
                return lines
            lines = self._log_lines()
        return lines

    def changes(self) -> list[Change]:
        """Every change, oldest first."""
        return [c for line in self._lines() if (c := _parsed(line)) is not None]

    def of_note(self, rel: str | None, limit: int = 50) -> list[Change]:
        """Newest first; with `rel`, the changes to that note, following it through moves.
        Only the lines that can matter are parsed (a path is looked for as the line spells
        it): listing stays fast in a long history."""
        wanted = {rel} if rel else None
        spelled = {_spelled(rel)} if rel else set()
        out = []
        for line in reversed(self._lines()):
            if wanted is not None and not any(s in line for s in spelled):
                continue
            change = _parsed(line)
            if change is None:
                continue
            if wanted is not None:
                if not wanted.intersection(change.paths):
                    continue
                for old, new in change.moved:
                    if new in wanted and old not in wanted:
                        wanted.add(old)
                        spelled.add(_spelled(old))
            out.append(change)
            if len(out) >= limit:
                break
        return out

    def find(self, ref: str | None) -> Change:
        """The change `ref` names (an id or its first 7+ characters); by default the app's
        last change."""
        changes = self.changes()
        if ref is None or not ref.strip():
            # The newest change by the app that is in effect: repeated undos walk back.
            undone: set[str] = set()
            for change in reversed(changes):
                if change.id in undone:
                    continue
                if change.action == UNDO and change.undoes:
                    undone.add(change.undoes)
                elif change.action not in (OUTSIDE, START):
                    return change
            raise NotFound("no change by the app is left to undo in this vault")
        ref = ref.strip().lower()
        if len(ref) < 7 or any(c not in "0123456789abcdef" for c in ref):
            raise InvalidValue(f"{ref!r} is not a change id: give 7 or more of its hex "
                               "characters (`brain history` lists them)")
        matches = [c for c in changes if c.id.startswith(ref)]
        if not matches:
            raise NotFound(f"no change {ref!r} in this vault's history")
        return matches[0]

    def files(self) -> list[tuple[Path, str]]:
        """(file, name inside the history) of everything kept: `brain export` zips them."""
        if not self.path.is_dir():
            return []
        return sorted((path, path.relative_to(self.path).as_posix())
                      for path in self.path.rglob("*") if path.is_file())

    def erase(self) -> None:
        """`brain forget`: the history goes with the vault."""
        self.close()
        shutil.rmtree(self.path, ignore_errors=True)

    def close(self) -> None:
        if self._repo is not None:
            self._repo.close()
            self._repo = None


def _parsed(line: str) -> Change | None:
    try:
        return Change.from_dict(json.loads(line))
    except (ValueError, KeyError, TypeError):
        return None


def _spelled(path: str) -> str:
    """A path as a line of the cache spells it (JSON, non-ASCII kept)."""
    return json.dumps(path, ensure_ascii=False)
