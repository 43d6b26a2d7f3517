"""A push read and checked before anything of it is applied: which pushed commits the
history does not have (parents first), and every file they change, each checked as the app
would check it. One problem refuses the whole push, with a message naming the file.

Refused: a symbolic link or a submodule (files and folders only); a path that could leave
the vault or reach a `.git` folder (`..`, `.`, an empty name, backslashes, a drive letter, a
name that is not UTF-8 or longer than a file system takes, `.git` in any case); a name the
app keeps for its own temp files; a file over BRAIN_MAX_FILE_MB; a note (`.md`) that is not
UTF-8 text or whose frontmatter the app would not read (broken YAML, aliases, over 512 KB:
storage/yaml_bounds.py); more files, or more commits, than BRAIN_SYNC_MAX_FILES.
"""

from __future__ import annotations

import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, field

from dulwich.diff_tree import tree_changes
from dulwich.object_store import BaseObjectStore
from dulwich.objects import Blob, Commit, ObjectID

from storage.vault.atomic import TEMP_NAME
from storage.vault.note_text import parse_note

FILE_MODES = (0o100644, 0o100755)
MAX_NAME_BYTES = 255  # what common file systems take for one name
_DRIVE = re.compile(r"^[A-Za-z]:")


class PushRefused(Exception):
    """The push is refused whole; the message says why (shown by the git client)."""


@dataclass(frozen=True)
class PushLimits:
    max_files: int  # distinct paths a push may change (and commits it may bring)
    max_file_bytes: int  # one file (BRAIN_MAX_FILE_MB)
    max_push_bytes: int  # the pack as sent (BRAIN_SYNC_MAX_PUSH_MB)


@dataclass
class Pushed:
    commits: list[Commit]  # the ones the history does not have, parents first
    paths: set[str] = field(default_factory=set)  # every path they change


def _commit(store: BaseObjectStore, sha: ObjectID) -> Commit:
    try:
        found = store[sha]
    except KeyError:
        raise PushRefused(f"commit {sha.decode()[:12]} was not sent") from None
    if not isinstance(found, Commit):
        raise PushRefused(f"{sha.decode()[:12]} is not a commit")
    return found


def new_commits(store: BaseObjectStore, tip: ObjectID, known: Callable[[ObjectID], bool],
                limit: int) -> list[Commit]:
    """The commits reachable from `tip` that are not `known`, each after its parents."""
    order: list[Commit] = []
    seen: set[ObjectID] = set()
    stack: list[tuple[ObjectID, Commit | None]] = [(tip, None)]
    while stack:
        sha, done = stack.pop()
        if done is not None:
            order.append(done)
            continue
        if sha in seen or known(sha):
            continue
        seen.add(sha)
        if len(seen) > limit:
            raise PushRefused(f"more than {limit} commits in one push (BRAIN_SYNC_MAX_FILES); "
                              "push fewer at a time")
        commit = _commit(store, sha)
        stack.append((sha, commit))
        stack.extend((parent, None) for parent in reversed(commit.parents))
    return order


def descends(store: BaseObjectStore, tip: ObjectID, ancestor: ObjectID) -> bool:
    """Is `ancestor` reachable from `tip` (a fast-forward)?"""
    todo, seen = [tip], set()
    while todo:
        sha = todo.pop()
        if sha == ancestor:
            return True
        if sha in seen:
            continue
        seen.add(sha)
        todo.extend(_commit(store, sha).parents)
    return False


def path_problem(path: str) -> str | None:
    """Why a pushed path may not be written in the vault, or None."""
    parts = path.split("/")
    if _DRIVE.match(path):
        return f"{path!r} names a drive"
    for part in parts:
        if part in ("", ".", ".."):
            return f"{path!r} leads outside the vault"
        if "\\" in part:
            return f"{path!r} has a backslash in a name (a folder separator elsewhere)"
        if part.rstrip(". ").lower() == ".git":
            return f"{path!r} reaches into a .git folder"
        if len(part.encode()) > MAX_NAME_BYTES:
            return f"{path!r} has a name longer than {MAX_NAME_BYTES} bytes"
    if TEMP_NAME.match(parts[-1]):
        return f"{path!r} is named like the app's own temp files"
    return None


def _decoded(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise PushRefused(f"{raw.decode('utf-8', errors='replace')!r} is not a UTF-8 "
                          "name") from None


def _check_file(store: BaseObjectStore, path: str, mode: int, sha: ObjectID,
                limits: PushLimits) -> None:
    if stat.S_ISLNK(mode):
        raise PushRefused(f"{path} is a symbolic link (a push may hold files and folders "
                          "only)")
    if mode not in FILE_MODES:
        raise PushRefused(f"{path} is not a plain file (mode {mode:o}: a submodule?)")
    blob = store[sha]
    if not isinstance(blob, Blob):
        raise PushRefused(f"{path} is not a file")
    data = blob.as_raw_string()
    if len(data) > limits.max_file_bytes:
        raise PushRefused(f"{path} is {len(data) / 1e6:.1f} MB, over BRAIN_MAX_FILE_MB "
                          f"({limits.max_file_bytes / 1e6:.0f} MB)")
    if path.lower().endswith(".md"):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise PushRefused(f"{path} is not UTF-8 text") from None
        error = parse_note(text).frontmatter_error
        if error is not None:
            raise PushRefused(f"{path}: the app would not read its frontmatter ({error}); "
                              "fix it and push again")


def check(store: BaseObjectStore, commits: list[Commit], limits: PushLimits) -> Pushed:
    """Every file the commits change, checked (PushRefused names the first problem)."""
    pushed = Pushed(commits)
    checked: set[tuple[str, bytes]] = set()
    for commit in commits:
        before = _commit(store, commit.parents[0]).tree if commit.parents else None
        for change in tree_changes(store, before, commit.tree):
            for entry in (change.old, change.new):
                if entry is None or entry.path is None:
                    continue
                path = _decoded(entry.path)
                problem = path_problem(path)
                if problem is not None:
                    raise PushRefused(problem)
                pushed.paths.add(path)
                if entry is change.new and entry.sha is not None and entry.mode is not None \
                        and (path, entry.sha) not in checked:
                    _check_file(store, path, entry.mode, entry.sha, limits)
                    checked.add((path, entry.sha))
            if len(pushed.paths) > limits.max_files:
                raise PushRefused(f"more than {limits.max_files} files in one push "
                                  "(BRAIN_SYNC_MAX_FILES); push them in parts")
    return pushed
