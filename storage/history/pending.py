"""Changes the history could not record when they were made (its lock held by a writer that
died, an object missing, a full disk). The vault's change stands; only its commit is late:
each is kept here, beside the repository and in order, and recorded as soon as the history
can be written again (the next change, rescan, `brain history` or undo). Read and cleared
under the vault's lock, as the history is written.
"""

from __future__ import annotations

import contextlib
import json
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path

from dulwich.errors import ObjectFormatException
from dulwich.file import FileLocked

PENDING_NAME = "pending.jsonl"


@dataclass(frozen=True)
class Late:
    """One change the app made that its history has not recorded yet."""

    action: str
    summary: str
    paths: tuple[str, ...]
    who: str
    source: str
    at: int  # seconds since the epoch, when the change was made
    moved: tuple[tuple[str, str], ...] = ()
    undoes: str | None = None
    new_folders: tuple[str, ...] = ()
    # A change being made (a pushed commit, storage/sync/apply.py): each path and the blob it
    # is set to in the history's objects (None: removed), put again before it is recorded.
    put: tuple[tuple[str, str | None], ...] = ()

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> Late:
        def strings(key: str) -> tuple[str, ...]:
            value = data.get(key) or ()
            return tuple(str(v) for v in value) if isinstance(value, list | tuple) else ()

        moved = data.get("moved") or ()
        pairs = tuple((str(a), str(b)) for a, b in moved) if isinstance(moved, list) else ()
        at = data.get("at")
        undoes = data.get("undoes")
        put = data.get("put") or ()
        files = tuple((str(a), None if b is None else str(b)) for a, b in put) \
            if isinstance(put, list) else ()
        return cls(str(data.get("action", "")), str(data.get("summary", "")), strings("paths"),
                   str(data.get("who", "")), str(data.get("source", "")),
                   at if isinstance(at, int) else 0, pairs,
                   undoes if isinstance(undoes, str) else None, strings("new_folders"), files)


def why(exc: BaseException) -> str:
    """What went wrong with the history, in words for a person (no traceback, no path
    outside the repository: `/health` shows it)."""
    if isinstance(exc, FileLocked):
        lock = exc.lockfilename
        name = (lock.decode(errors="replace") if isinstance(lock, bytes) else lock)
        name = name.replace("\\", "/").rsplit(".git/", 1)[-1]
        return (f"lock file {name} is held (by a writer now, or left by one that stopped: "
                "cleared once it is a minute old)")
    if isinstance(exc, KeyError):
        missing = exc.args[0] if exc.args else b""
        if isinstance(missing, bytes):
            missing = missing.decode(errors="replace")
        return f"object {str(missing)[:12]} is missing (the repository is damaged)"
    if isinstance(exc, ObjectFormatException | zlib.error):
        return f"an object cannot be read ({exc}; the repository is damaged)"
    if isinstance(exc, OSError):
        return f"a file cannot be written ({exc.strerror or type(exc).__name__})"
    return f"{type(exc).__name__}: {exc}"


class Pending:
    """The late changes of one vault's history (a file, and in memory what the file could
    not take)."""

    def __init__(self, folder: Path, vault: Path | None = None) -> None:
        self.path = folder / PENDING_NAME
        self.vault = vault  # kept with each line: a process that starts finds the vault
        self._unsaved: list[Late] = []
        self._why: str | None = None

    def add(self, late: Late, reason: str) -> None:
        self._why = reason
        line = {**asdict(late), "why": reason, "vault": str(self.vault or "")}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(line, ensure_ascii=False) + "\n")
        except OSError:  # the disk refuses this too: this process still records it later
            self._unsaved.append(late)

    def _lines(self) -> list[dict[str, object]]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except (FileNotFoundError, UnicodeDecodeError):
            return []
        out = []
        for line in text.splitlines():
            with contextlib.suppress(ValueError):
                data = json.loads(line)
                if isinstance(data, dict):
                    out.append(data)
        return out

    def entries(self) -> list[Late]:
        return [Late.from_dict(d) for d in self._lines()] + list(self._unsaved)

    def paths(self) -> list[str]:
        """The files the late changes touched (moved ones at both ends), each once."""
        return list(dict.fromkeys(
            rel for late in self.entries() for rel in (
                *late.paths, *(r for pair in late.moved for r in pair),
                *(r for r, _blob in late.put))))

    @property
    def unsaved(self) -> bool:
        """Are some kept only in this process's memory (the file could not be written)?"""
        return bool(self._unsaved)

    @property
    def behind(self) -> bool:
        return bool(self._unsaved) or self.path.is_file()

    def count(self) -> int:
        return len(self._lines()) + len(self._unsaved)

    def vault_named(self) -> Path | None:
        """The vault whose changes wait here, as the lines name it."""
        lines = self._lines()
        named = lines[-1].get("vault") if lines else None
        return Path(named) if isinstance(named, str) and named else None

    def reason(self) -> str | None:
        """Why the history fell behind (this process's last failure, else the file's)."""
        if self._why is not None:
            return self._why
        lines = self._lines()
        last = lines[-1].get("why") if lines else None
        return str(last) if last else None

    def done(self) -> None:
        """Every late change is recorded now."""
        self._unsaved.clear()
        self._why = None
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
