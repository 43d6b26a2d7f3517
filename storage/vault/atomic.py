"""Writing note files so that no crash leaves half of one, and cleaning up after a crash.

`write_atomic` replaces a file's content (temp file in the same folder, fsync, os.replace);
`write_new` creates a note under the first free name without ever overwriting one (temp file,
then a hard link); `relocate` renames without overwriting. A `kill -9` at any point leaves the
old file or the whole new one, plus at most a hidden temp file, which `clean_temp` removes.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import tempfile
import time
from collections.abc import Callable, Collection
from pathlib import Path

from storage.errors import InvalidValue

MAX_SUFFIX = 10_000
TEMP_SUFFIX = ".tmp"
# Our temp files: `.<name>.<random>.tmp` beside the note or attachment (write_atomic,
# write_new).
TEMP_NAME = re.compile(r"^\..+\.[A-Za-z0-9]{1,8}\.[A-Za-z0-9_]+\.tmp$")  # notes, attachments
TEMP_MAX_AGE = 60.0  # seconds; a younger temp file may belong to a write in progress


def write_atomic(path: Path, text: str | bytes) -> None:
    """Write `text` (bytes as they are: an undo restores a file exactly) to `path` via a
    hidden temp file in the same folder and os.replace."""
    try:
        mode = path.stat().st_mode & 0o777
    except FileNotFoundError:
        mode = 0o644
    # Dot prefix: scan() skips the temp file if it ever survives a crash.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TEMP_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8") if isinstance(text, str) else text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_all(files: list[tuple[Path, bytes]]) -> None:
    """`write_atomic` for many files at once (a push): every temp file written, then each
    synced (the file system writes them together: a fraction of a sync each), then each
    renamed into place. A crash at any point leaves each file old or whole."""
    temps: list[tuple[str, Path]] = []
    try:
        for path, data in files:
            try:
                mode = path.stat().st_mode & 0o777
            except FileNotFoundError:
                mode = 0o644
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.",
                                       suffix=TEMP_SUFFIX)
            temps.append((tmp, path))
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.chmod(tmp, mode)
        for tmp, _path in temps:
            fd = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        while temps:
            tmp, path = temps[0]
            os.replace(tmp, path)
            temps.pop(0)
    finally:
        for tmp, _path in temps:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)


# A file system without hard links (some network and FAT mounts) says one of these.
_NO_LINKS = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK, errno.ENOSYS}


def _claim_and_replace(folder: Path, stem: str, tmp: str, suffix: str = ".md",
                       sep: str = "-") -> Path:
    """The fallback without hard links: reserve a free name (O_EXCL), then rename the whole
    temp file over it. A crash in between can leave an empty note; it is the best such a file
    system allows."""
    for number in range(1, MAX_SUFFIX):
        path = folder / numbered(stem, number, suffix, sep)
        try:
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
        except FileExistsError:
            continue
        os.replace(tmp, path)
        return path
    raise InvalidValue(f"too many notes named {stem!r} in {folder.name}")


def first_free(folder: Path, stem: str, taken: Collection[str] = (),
               suffix: str = ".md") -> Path:
    """The name `write_new` would give a file now: the first of `stem`, `stem-2`, ... that is
    neither in `taken` (case-folded) nor there."""
    for number in range(1, MAX_SUFFIX):
        path = folder / numbered(stem, number, suffix)
        if not (taken and path.stem.casefold() in taken) and not os.path.lexists(path):
            return path
    raise InvalidValue(f"too many notes named {stem!r} in {folder.name}")


def numbered(stem: str, number: int, suffix: str, sep: str = "-") -> str:
    return f"{stem}{suffix}" if number == 1 else f"{stem}{sep}{number}{suffix}"


def name_sep(stem: str) -> str:
    """How a numbered copy of a name is written in the name's own style: `budget-2` for a
    slug (lowercase, no spaces: the app's), `Combining Filters 2` or `Plan 2` for a name a
    person wrote (as Obsidian numbers them)."""
    return "-" if stem == stem.lower() and " " not in stem else " "


def write_new(folder: Path, stem: str, text: str | bytes, taken: Collection[str] = (),
              suffix: str = ".md", sep: str = "-") -> Path:
    """A new note appears whole or not at all: the text goes to a temp file (fsynced), which is
    then hard-linked to the first free name `stem.md`, `stem-2.md` (`sep`), ... (a link never replaces
    an existing file; a stem in `taken`, case-folded, is skipped too), and the temp name is
    removed. After a `kill -9` at any point there is
    either no note or the whole note, plus at most a hidden temp file that `clean_temp` removes.
    """
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{stem}{suffix}.", suffix=TEMP_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8") if isinstance(text, str) else text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        for number in range(1, MAX_SUFFIX):
            path = folder / numbered(stem, number, suffix, sep)
            if taken and path.stem.casefold() in taken:
                continue
            try:
                os.link(tmp, path)
            except FileExistsError:
                continue
            except OSError as exc:
                if exc.errno not in _NO_LINKS:
                    raise
                return _claim_and_replace(folder, stem, tmp, suffix, sep)
            return path
        raise InvalidValue(f"too many notes named {stem!r} in {folder.name}")
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def relocate(path: Path, target: Path) -> Path:
    """Rename `path` to `target` (or `target-2`, ...) without overwriting anything: a hard
    link to the first free name, then the old name goes (a crash between leaves both names on
    one file, never an empty or a lost one)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    for number in range(1, MAX_SUFFIX):
        candidate = target.parent / numbered(target.stem, number, target.suffix,
                                             name_sep(target.stem))
        try:
            os.link(path, candidate)
        except FileExistsError:
            continue
        path.unlink()
        return candidate
    raise InvalidValue(f"too many notes named {target.stem!r} in {target.parent.name}")


def clean_temp(root: Path, relpath: Callable[[Path], str],
               max_age: float = TEMP_MAX_AGE) -> list[str]:
    """Remove temp files a killed writer left behind (older than `max_age` seconds, so a write
    in progress in another process keeps its own); returns what was removed."""
    found: list[Path] = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in (".git", ".obsidian")]
        found += [Path(folder) / name for name in names if TEMP_NAME.match(name)]
    return remove_old(found, relpath, max_age)


def remove_old(paths: list[Path], relpath: Callable[[Path], str],
               max_age: float = TEMP_MAX_AGE) -> list[str]:
    removed: list[str] = []
    cutoff = time.time() - max_age
    for path in paths:
        try:
            if path.lstat().st_mtime < cutoff:
                path.unlink()
                removed.append(relpath(path))
        except OSError:
            continue
    return removed
