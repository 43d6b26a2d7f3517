"""Paths from tools and users, kept inside the vault; file names from note names."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

from storage.errors import UnsafePath

MAX_SLUG = 60
_DRIVE_RE = re.compile(r"^[A-Za-z]:")
# Names Windows refuses as files; a vault may be synced to a Windows machine.
_RESERVED = frozenset({"con", "prn", "aux", "nul", *(f"com{i}" for i in range(1, 10)),
                       *(f"lpt{i}" for i in range(1, 10))})


def resolve_in_vault(root: Path, rel: str) -> Path:
    """The absolute path of `rel` inside `root`; UnsafePath if it could point anywhere else.

    The result is lexically under the resolved root (a symlink inside the vault that points
    inside the vault is allowed and kept as the link's path).
    """
    _check_written(rel)
    parts = [part for part in rel.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise UnsafePath(f"'..' is not allowed in a vault path: {rel!r}")
    if not parts:
        raise UnsafePath(f"the path names the vault itself, not a note: {rel!r}")
    base = root.resolve()
    candidate = base.joinpath(*parts)
    try:
        real = candidate.resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop
        raise UnsafePath(f"the path cannot be resolved: {rel!r} ({exc})") from exc
    if not real.is_relative_to(base):
        raise UnsafePath(f"the path leads outside the vault (through a symlink): {rel!r}")
    return candidate


def _check_written(rel: str) -> None:
    """UnsafePath when `rel` is not written as a vault path: not text, a NUL byte, empty,
    backslashes, a drive letter, absolute."""
    if not isinstance(rel, str):
        raise UnsafePath(f"a path must be text, got {type(rel).__name__}")
    if "\x00" in rel:
        raise UnsafePath("the path contains a NUL byte")
    if not rel.strip():
        raise UnsafePath("the path is empty")
    if "\\" in rel:
        raise UnsafePath(f"use / in vault paths, not backslashes: {rel!r}")
    if _DRIVE_RE.match(rel):
        raise UnsafePath(f"a drive letter is not a vault path: {rel!r}")
    if rel.startswith("/"):
        raise UnsafePath(f"an absolute path is not a vault path: {rel!r}")


def check_person_folder(root: Path, folder: Path) -> Path:
    """`folder` (a person's vault, `<root>/<user id>`) if it is safe to read, change and erase:
    a real folder (or none yet) that resolves to exactly `<root>/<its name>`. A symlink, or a
    folder that resolves anywhere else, would let one person's commands read or delete another
    person's notes (or anything on the machine): UnsafePath, with what to do about it."""
    expected = root.resolve() / folder.name
    if folder.is_symlink():
        try:
            target = str(folder.readlink())
        except OSError:
            target = "?"
        raise UnsafePath(f"the vault folder {folder} is a symlink (to {target}); a person's "
                         f"vault must be a real folder at {expected}. Nothing was read or "
                         "changed: replace the link with the folder it should be")
    if folder.exists():
        try:
            real = folder.resolve(strict=True)
        except (OSError, RuntimeError) as exc:
            raise UnsafePath(f"the vault folder {folder} cannot be resolved ({exc})") from exc
        if real != expected:
            raise UnsafePath(f"the vault folder {folder} resolves to {real}, not {expected}; "
                             "nothing was read or changed")
        if not real.is_dir():
            raise UnsafePath(f"the vault folder {folder} is not a folder")
    return folder


def slugify(name: str) -> str:
    """A short lowercase file name for a note name; never empty, never '.' or '..'."""
    text = unicodedata.normalize("NFKD", name)
    # Drop accents (combining marks) but keep letters of any script.
    text = "".join(ch for ch in text if not unicodedata.combining(ch))
    text = unicodedata.normalize("NFC", text).lower()
    slug = re.sub(r"[^\w]+|_+", "-", text).strip("-")
    if len(slug) > MAX_SLUG:
        cut = slug[:MAX_SLUG]
        # Prefer cutting at a word boundary when one is not too far back.
        boundary = cut.rfind("-")
        slug = (cut[:boundary] if boundary >= MAX_SLUG // 2 else cut).strip("-")
    if not slug or slug in (".", ".."):
        return "note"
    if slug in _RESERVED:
        return f"{slug}-note"
    return slug
