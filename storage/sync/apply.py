"""A checked push applied to the vault: each pushed commit a change of its own in the history
("git push by <person>: <its message>"), made as the app makes its own changes, under the
vault's lock (storage/sync/remote.py holds it around the whole push).

What each commit changes: the files it changed from its parents, where the vault still has
what a parent had (a commit of a branch that was merged later leaves alone a file the brain
changed meanwhile; the merge says how the two meet). The last commit brings the vault to the
pushed tree, as the client, being up to date, meant it.

As the app does it: a deleted file goes to the vault's trash (a deletion inside `.trash/` is
a deletion); a note moved (the same file or the same `id` at another path) is a move, and the
links elsewhere that would no longer reach it are rewritten (storage/relink.py). What the
vault keeps differently from the pushed tree is said in the commit the next pull brings.

A `kill -9` half-way through a commit's files leaves its plan in the history's list of late
changes (storage/history/pending.py, with each file's blob), so the next writer of the vault
puts the rest and records it: no change is left half made.
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from dulwich.diff_tree import tree_changes
from dulwich.objects import Commit, ObjectID

from storage.history import Change, History
from storage.history.context import wrote
from storage.history.pending import Late
from storage.history.repo import HistoryRepo
from storage.text import clean
from storage.types import TRASH_DIR
from storage.vault import relink
from storage.vault.atomic import name_sep, numbered
from storage.vault.note_text import parse_note

if TYPE_CHECKING:
    from storage.vault.store import Store

SOURCE = "git"
SUBJECT_CHARS = 120
APPLYING = "a git push was being applied when the process stopped"


@dataclass
class Applied:
    changes: list[Change] = field(default_factory=list)
    adjusted: set[str] = field(default_factory=set)  # kept otherwise than pushed
    trashed: int = 0
    relinked: int = 0

    def said(self) -> str:
        """What the vault keeps otherwise than pushed, for the commit that says so."""
        parts = ([f"{self.trashed} deleted file(s) kept in {TRASH_DIR}/ (brain undo brings "
                  "them back)"] if self.trashed else []) + \
            ([f"links in {self.relinked} note(s) rewritten to follow a move"]
             if self.relinked else [])
        return "the vault after the push: " + ("; ".join(parts) or "as pushed")


@dataclass
class Plan:
    put: dict[str, bytes | None] = field(default_factory=dict)
    moved: list[tuple[str, str]] = field(default_factory=list)


def own_paths(repo: HistoryRepo, commit: Commit) -> set[str]:
    """The paths a commit changed from any of its parents."""
    store = repo.repo.object_store
    trees = [store[p].tree for p in commit.parents] or [None]  # type: ignore[attr-defined]
    found: set[str] = set()
    for tree in trees:
        for change in tree_changes(store, tree, commit.tree):
            for entry in (change.old, change.new):
                if entry is not None and entry.path is not None:
                    found.add(entry.path.decode())
    return found


def wanted(repo: HistoryRepo, commit: Commit, last: bool,
           adjusted: set[str]) -> dict[str, ObjectID | None]:
    """path -> the blob the vault takes from this commit (None: removed)."""
    head = repo.head()
    own = own_paths(repo, commit)
    out: dict[str, ObjectID | None] = {}
    if last:
        store = repo.repo.object_store
        before = store[head].tree if head is not None else None  # type: ignore[attr-defined]
        for change in tree_changes(store, before, commit.tree):
            new = change.new.sha if change.new is not None and change.new.path else None
            entry = change.new if change.new is not None and change.new.path else change.old
            path = entry.path.decode()  # type: ignore[union-attr]
            if (path not in adjusted or path in own) and repo.blob_at(head, path) != new:
                out[path] = new
        return out
    for path in sorted(own):
        want, now = repo.blob_at(commit.id, path), repo.blob_at(head, path)
        if now != want and (not commit.parents
                            or any(repo.blob_at(p, path) == now for p in commit.parents)):
            out[path] = want
    return out


def _note_id(data: bytes) -> str | None:
    try:
        found = parse_note(data.decode("utf-8")).frontmatter.get("id")
    except UnicodeDecodeError:
        return None
    return str(found) if isinstance(found, str | int) and str(found) else None


def _moves(repo: HistoryRepo, files: dict[str, ObjectID | None]) -> list[tuple[str, str]]:
    """Notes removed at one path and added at another: the same bytes, or the same id."""
    head = repo.head()
    gone = {p: b for p in files if files[p] is None and p.lower().endswith(".md")
            and (b := repo.blob_at(head, p)) is not None}
    new = {p: b for p, b in files.items() if b is not None and p.lower().endswith(".md")
           and repo.blob_at(head, p) is None}
    by_blob = {b: p for p, b in new.items()}
    by_id: dict[str, str] | None = None  # read only when some note did not move whole
    pairs: list[tuple[str, str]] = []
    for old, blob in gone.items():
        match = by_blob.get(blob)
        if match is None or match not in new:
            if by_id is None:
                by_id = {}
                for path, added in new.items():
                    key = _note_id(repo.data(added))
                    if key is not None:
                        by_id.setdefault(key, path)
            key = _note_id(repo.data(blob))
            match = by_id.get(key) if key is not None else None
        if match is not None and match in new:
            pairs.append((old, match))
            del new[match]
    return pairs


def _trash_path(root: str, rel: str, taken: dict[str, bytes | None]) -> str:
    """Where a deleted file goes: `.trash/<its path>`, numbered as the app's trash does."""
    pure = PurePosixPath(TRASH_DIR) / rel
    for number in range(1, 10_000):
        name = numbered(pure.stem, number, pure.suffix, name_sep(pure.stem))
        candidate = str(pure.parent / name)
        if candidate not in taken and not os.path.lexists(os.path.join(root, candidate)):
            return candidate
    raise ValueError(f"too many files named {pure.name} in the trash")


async def _plan(store: Store, files: dict[str, ObjectID | None], applied: Applied) -> Plan:
    repo = store.history.repo  # type: ignore[union-attr]
    head = repo.head()
    plan = Plan({p: None if b is None else repo.data(b) for p, b in files.items()})
    moves = _moves(repo, files)
    moved_from = {old for old, _new in moves}
    for path, blob in files.items():
        before = repo.blob_at(head, path)
        if blob is None and before is not None and path not in moved_from \
                and path.split("/", 1)[0] != TRASH_DIR:
            target = _trash_path(str(store.vault.root), path, plan.put)
            plan.put[target] = repo.data(before)
            plan.moved.append((path, target))
            applied.adjusted.add(target)
            applied.trashed += 1
    for old, new in moves:
        plan.moved.append((old, new))
        rewrite = await relink.rewriter(store.db, store.index.key, old, new)
        sources = await relink.linking(store.db, store.index.key, old)
        for rel in {*sources, new}:
            text = plan.put[rel] if rel in plan.put else store.history.disk(rel)  # type: ignore[union-attr]
            if text is None:
                continue
            try:
                before_text = text.decode("utf-8")
            except UnicodeDecodeError:
                continue
            after = rewrite(before_text)
            if after != before_text:
                plan.put[rel] = after.encode("utf-8")
                if rel not in files:
                    applied.adjusted.add(rel)
                applied.relinked += 1
    return plan


def _made(history: History, plan: Plan, late: Late) -> Change | None:
    """Put the plan's files and record them as one change, its plan kept as a late change
    until recorded (a kill -9 between: the next writer finishes it); if the record fails,
    the files go back as they were."""
    history.before(list(plan.put))  # what changed outside the app in these files, first
    repo = history.repo
    blobs = {rel: None if data is None else repo.add_blob(data).decode()
             for rel, data in plan.put.items()}
    history.pending.add(replace(late, put=tuple(blobs.items())), APPLYING)
    saved = {rel: history.disk(rel) for rel in plan.put}
    try:
        made = history.vault.put(plan.put)
        change = history.record_now(replace(late, new_folders=tuple(made)))
    except BaseException:
        history.vault.put(saved)
        history.pending.done()
        raise
    history.pending.done()
    return change


def subject(commit: Commit) -> str:
    text = commit.message.decode("utf-8", errors="replace").strip()
    first = clean(text.splitlines()[0] if text else "").strip() or "(no message)"
    return first if len(first) <= SUBJECT_CHARS else first[:SUBJECT_CHARS - 1] + "…"


async def apply_push(store: Store, person: str, commits: list[Commit]) -> Applied:
    """Each commit (parents first; the last is the pushed tip) made a change of the vault's;
    the index of each change's notes refreshed before the next (its moves find their links)."""
    history = store.history
    assert history is not None
    applied = Applied()
    for commit in commits:
        last = commit is commits[-1]
        files = await asyncio.to_thread(wanted, history.repo, commit, last, applied.adjusted)
        if not files:
            continue
        plan = await _plan(store, files, applied)
        late = Late(f"git push by {person}", subject(commit), tuple(plan.put), person, SOURCE,
                    int(time.time()), tuple(plan.moved))
        wrote()
        if store.mirror is not None:  # the database store: sent at the push's end
            store.mirror.wrote(list(plan.put))
        change = await asyncio.to_thread(_made, history, plan, late)
        if change is not None:
            applied.changes.append(change)
        await store._touched(list(plan.put))
    return applied
