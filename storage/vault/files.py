"""The markdown files of one vault: read, create, update, move, trash; atomic writes.

Reading never writes. A changed note goes through `_write_atomic` (temp file in the same
folder, then os.replace) and a new one through `_write_new` (temp file, then a hard link to a
free name), so a reader, the mtime-based index or a `kill -9` never leaves half a file.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import uuid
from collections.abc import Collection, Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from storage.errors import InvalidValue, NotFound, UnsafePath
from storage.text import clean, clean_value, given_name, name_text
from storage.types import (
    ATTACHMENTS,
    CATEGORIES,
    CATEGORY_FIELDS,
    DEFAULT_STATUS,
    STATUS_VALUES,
    TRASH_DIR,
    Entry,
    MoveResult,
)
from storage.vault.atomic import (
    TEMP_MAX_AGE,
    TEMP_NAME,
    clean_temp,
    first_free,
    name_sep,
    relocate,
    remove_old,
    write_all,
    write_atomic,
    write_new,
)
from storage.vault.fields import checked_fields, default_value
from storage.vault.note_edits import apply_changes
from storage.vault.note_text import (
    ParsedNote,
    normalise_scalar,
    parse_note,
    render_note,
)
from storage.vault.paths import resolve_in_vault, slugify

_MAX_SUFFIX = 10_000
_PROTECTED = ("id", "created")  # set once by create(); update() refuses to change them


def new_id() -> str:
    return "e_" + uuid.uuid4().hex[:12]


def now_iso() -> str:
    """Local time with seconds and UTC offset, e.g. 2026-01-05T09:30:00+01:00."""
    return dt.datetime.now().astimezone().isoformat(timespec="seconds")


class Vault:
    def __init__(self, root: Path, key: str | None = None) -> None:
        root = Path(root)
        root.mkdir(parents=True, exist_ok=True)
        self.root = root.resolve()
        # The vault's name in the shared database (index rows, vectors, the write lock): its
        # path, or, in the database store, a name every machine gives it (`db:<person>`)
        # whatever folder holds its mirror there.
        self.logical = key is not None
        self.key = key if key is not None else str(self.root)
        # Temp files of ours seen by scan(): a crashed writer's, or one being written now.
        self.leftovers: list[Path] = []

    # --- paths -----------------------------------------------------------------------------

    def resolve(self, rel: str) -> Path:
        return resolve_in_vault(self.root, rel)

    def relpath(self, path: Path) -> str:
        path = Path(path)
        if not path.is_absolute():
            path = self.root / path
        try:
            return PurePosixPath(path.relative_to(self.root)).as_posix()
        except ValueError:
            raise UnsafePath(f"{path} is not inside the vault") from None

    def _existing(self, rel: str) -> Path:
        path = self.resolve(rel)
        if path.is_file():
            return path
        if not rel.lower().endswith(".md"):
            with_md = self.resolve(rel + ".md")
            if with_md.is_file():
                return with_md
        raise NotFound(f"no note at {rel!r}")

    # --- reading ---------------------------------------------------------------------------

    def scan(self) -> Iterator[tuple[str, int, int]]:
        """(rel, mtime_ns, size) of every *.md, skipping dot-folders, `attachments/` and
        symlinks out.

        Symlinked folders are not entered: outside ones would leave the vault and inside ones
        would list the same notes twice (and may loop). Files kept in `attachments/` are
        other people's files as they shared them: never notes, whatever their name, so a
        shared `minutes.md` cannot bring its frontmatter (an id of yours, a due date) in.
        """
        stack: list[tuple[str, str]] = [(str(self.root), "")]
        while stack:
            folder, prefix = stack.pop()
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue  # vanished or unreadable: the next scan sees it
            for entry in entries:
                if entry.name.startswith("."):
                    if TEMP_NAME.match(entry.name):
                        self.leftovers.append(Path(entry.path))
                    continue
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if not prefix and entry.name == ATTACHMENTS:
                            continue
                        stack.append((entry.path, prefix + entry.name + "/"))
                    elif (entry.name.lower().endswith(".md") and entry.is_file()
                          and (not entry.is_symlink() or self._inside(entry.path))):
                        info = entry.stat()
                        yield prefix + entry.name, info.st_mtime_ns, info.st_size
                except OSError:
                    continue

    def _inside(self, path: str) -> bool:
        try:
            return Path(path).resolve().is_relative_to(self.root)
        except (OSError, RuntimeError):
            return False

    def read_text(self, rel: str) -> str:
        return self._existing(rel).read_bytes().decode("utf-8", errors="replace")

    def read(self, rel: str) -> Entry:
        path = self._existing(rel)
        text = path.read_bytes().decode("utf-8", errors="replace")
        return self._entry(self.relpath(path), parse_note(text))

    def broken_notes(self) -> list[tuple[str, str]]:
        """(rel, why) of every note whose frontmatter is not read (broken YAML, aliases, too
        big or deep) or that is not UTF-8 text: such notes are indexed as text (`brain doctor`)."""
        found = []
        for rel, _mtime, _size in self.scan():
            try:
                data = (self.root / rel).read_bytes()
            except OSError:
                continue  # gone since the scan
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                found.append((rel, "not UTF-8 text"))
                continue
            error = parse_note(text).frontmatter_error
            if error is not None:
                found.append((rel, error))
        return sorted(found)

    def _read_strict(self, path: Path) -> str:
        try:
            return path.read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidValue(f"{self.relpath(path)} is not UTF-8 text; it was not changed") \
                from exc

    def _entry(self, rel: str, parsed: ParsedNote) -> Entry:
        fields = parsed.frontmatter
        raw_id = fields.get("id")
        entry_id = str(raw_id) if isinstance(raw_id, str | int) and str(raw_id) else None
        name = fields.get("name") or fields.get("title")
        name = name_text(name) if isinstance(name, str) else ""  # as the index has it
        if not name:
            name = name_text(PurePosixPath(rel).stem) or PurePosixPath(rel).stem
        category = fields.get("category")
        if category not in CATEGORIES:
            top = rel.split("/", 1)[0] if "/" in rel else None
            category = top if top in CATEGORIES else None
        return Entry(rel, entry_id, name, category, dict(fields), parsed.body)

    # --- writing ---------------------------------------------------------------------------

    def create(self, category: str, name: str, fields: dict[str, Any], body: str,
               *, entry_id: str | None = None, taken: Collection[str] = ()) -> Entry:
        """A new note. `entry_id` (else a new random one) lets a retried capture give the
        note the id the first attempt would have given it, so it can find that one. Its file
        stem avoids `taken` (the vault's other stems), so `[[stem]]` names it alone; its name
        is also in `aliases`, so Obsidian offers it when `[[` is typed with the name."""
        if category not in CATEGORIES:
            raise InvalidValue(f"unknown category {category!r}; use one of: "
                               f"{', '.join(CATEGORIES)}")
        name, body = given_name(name), clean(body)
        given = checked_fields(category, clean_value(fields))
        stamp = now_iso()
        front: dict[str, Any] = {"id": entry_id or new_id(), "category": category,
                                 "name": name.strip()}
        stem = slugify(name)
        if name.strip() != stem and "aliases" not in given:
            front["aliases"] = [name.strip()]
        for field in CATEGORY_FIELDS[category]:
            front[field] = given[field] if field in given else default_value(field, category)
        for field in ("confidence", "source"):
            if field in given:
                front[field] = given[field]
        front["created"] = stamp
        front["updated"] = stamp
        for key, value in given.items():
            front.setdefault(key, value)  # id/category/name/created/updated are ours
        text = render_note(front, body)
        path = write_new(self.root / category, stem, text, taken)
        return self._entry(self.relpath(path), parse_note(text))

    def path_for(self, category: str, name: str, taken: Collection[str] = ()) -> str:
        """The path `create` would give a note of this name now (it may still take another if
        the name is taken before it writes)."""
        return self.relpath(first_free(self.root / category, slugify(given_name(name)), taken))

    def update(self, rel: str, changes: dict[str, Any], append_body: str | None = None) -> Entry:
        changes = clean_value(changes)
        if "name" in changes:  # invisible characters out, the length capped
            changes["name"] = given_name(changes["name"])
        append_body = clean(append_body) if append_body is not None else None
        path = self._existing(rel)
        text = self._read_strict(path)
        parsed = parse_note(text)
        if parsed.frontmatter_error is not None:
            raise InvalidValue(f"{self.relpath(path)} has frontmatter that cannot be read "
                               f"({parsed.frontmatter_error}); fix it by hand first")
        current = self._entry(self.relpath(path), parsed)
        for key in _PROTECTED:
            if key in changes and normalise_scalar(changes[key]) != parsed.frontmatter.get(key):
                raise InvalidValue(f"{key!r} cannot be changed")
        if "category" in changes and changes["category"] != current.category:
            raise InvalidValue("use move to change a note's category")
        wanted = checked_fields(current.category, changes)
        wanted = {key: value for key, value in wanted.items()
                  if key != "updated" and (key not in parsed.frontmatter
                                           or normalise_scalar(value) != parsed.frontmatter[key])}
        if not wanted and append_body is None:
            return current  # nothing to change: leave the file (and its mtime) alone
        wanted["updated"] = now_iso()
        new_text = apply_changes(text, wanted, append_body=append_body)
        write_atomic(path, new_text)
        return self._entry(current.path, parse_note(new_text))

    def move(self, rel: str, category: str, taken: Collection[str] = ()) -> MoveResult:
        if category not in CATEGORIES:
            raise InvalidValue(f"unknown category {category!r}; use one of: "
                               f"{', '.join(CATEGORIES)}")
        path = self._existing(rel)
        text = self._read_strict(path)
        parsed = parse_note(text)
        old_rel = self.relpath(path)
        current = self._entry(old_rel, parsed)
        if current.category == category and old_rel.split("/", 1)[0] == category:
            return MoveResult(old_rel, old_rel, category, current, changed=False)
        front = parsed.frontmatter
        changes: dict[str, Any] = {}
        if current.id is None:
            changes["id"] = new_id()  # buttons and threads refer to notes by id
        changes["category"] = category
        if not isinstance(front.get("name"), str) and not isinstance(front.get("title"), str):
            changes["name"] = current.name  # the file name may change; keep the shown name
        for field in CATEGORY_FIELDS[category]:
            if field not in front:
                changes[field] = default_value(field, category)
        allowed = STATUS_VALUES.get(category)
        status = front.get("status")
        if allowed and "status" in front and (not isinstance(status, str)
                                              or status.lower() not in allowed):
            # e.g. admin `todo` -> projects: carry `done` over, otherwise start at the default.
            is_done = isinstance(status, str) and status.lower() == "done"
            changes["status"] = "done" if is_done else DEFAULT_STATUS[category]
        changes["updated"] = now_iso()
        new_text = apply_changes(text, changes)
        if path.parent == self.root / category:  # already in the folder: fix the fields only
            write_atomic(path, new_text)
            return MoveResult(old_rel, old_rel, category, self._entry(old_rel,
                                                                      parse_note(new_text)))
        # The file keeps its name (slugs are for the notes the app makes), or the first of
        # `Name 2`, `Name 3`, ... that is not `taken` (storage/vault/relink.py `names_blocked`).
        target = write_new(self.root / category, path.stem, new_text, taken,
                           suffix=path.suffix, sep=name_sep(path.stem))
        path.unlink()
        new_rel = self.relpath(target)
        return MoveResult(old_rel, new_rel, category, self._entry(new_rel, parse_note(new_text)))

    def attach(self, name: str, data: bytes) -> str:
        """Keep a shared file in the vault's `attachments/` under a free name (never over
        another); returns its path, for an `![[embed]]` in the note."""
        pure = PurePosixPath(name.replace("\\", "/")).name
        suffix = "".join(c for c in PurePosixPath(pure).suffix.lower() if c.isalnum() or c == ".")
        stem = slugify(PurePosixPath(pure).stem) or "file"
        return self.relpath(write_new(self.root / ATTACHMENTS, stem, data,
                                      suffix=suffix[:9] or ".bin"))

    def trash(self, rel: str) -> str:
        path = self._existing(rel)
        old_rel = self.relpath(path)
        if old_rel.split("/", 1)[0] == TRASH_DIR:
            raise InvalidValue(f"{old_rel} is already in the trash")
        return self._relocate(path, self.root / TRASH_DIR / old_rel)

    def put(self, files: dict[str, bytes | None]) -> list[str]:
        """Each file set to its bytes, atomically (None: removed; removals first, so a file
        may give way to a folder); returns the folders it had to make (an undo, a push)."""
        made: list[str] = []
        writes: list[tuple[Path, bytes]] = []
        for rel, data in sorted(files.items(), key=lambda item: item[1] is not None):
            path = self.resolve(rel)
            if data is None:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                continue
            made.extend(f for f in self.absent_folders(rel) if f not in made)
            path.parent.mkdir(parents=True, exist_ok=True)
            writes.append((path, data))
        write_all(writes)
        return made

    def absent_folders(self, rel: str) -> list[str]:
        """The folders above `rel` that do not exist yet, outermost first (a change that
        makes them says so, and its undo removes them again when they are left empty)."""
        parts = PurePosixPath(rel).parts[:-1]
        folders = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]
        return [f for f in folders if not (self.root / f).is_dir()]

    def _relocate(self, path: Path, target: Path) -> str:
        return self.relpath(relocate(path, target))

    def clean_temp(self, max_age: float = TEMP_MAX_AGE) -> list[str]:
        """Remove temp files a killed writer left behind; returns what was removed."""
        return clean_temp(self.root, self.relpath, max_age)

    def clean_seen_temp(self, max_age: float = TEMP_MAX_AGE) -> list[str]:
        """Like clean_temp, for the temp files the last scans saw (no walk of its own)."""
        seen, self.leftovers = self.leftovers, []
        return remove_old(seen, self.relpath, max_age)
