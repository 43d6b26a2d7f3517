"""Small frozen domain types shared by storage, tools and the bot.

Every result a tool or CLI verb prints is one of these; `to_dict()` gives the JSON shape.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import asdict, dataclass, field, replace
from typing import Any, NamedTuple

CATEGORIES: tuple[str, ...] = ("people", "projects", "ideas", "admin", "inbox")
# Categories the classifier files into; inbox is where unsure captures wait for review.
FILED_CATEGORIES: tuple[str, ...] = ("people", "projects", "ideas", "admin")
TRASH_DIR = ".trash"
# Shared files kept beside the notes (Obsidian embeds them); never notes themselves.
ATTACHMENTS = "attachments"

CATEGORY_FIELDS: dict[str, tuple[str, ...]] = {
    "people": ("context", "follow_ups", "last_touched", "tags"),
    "projects": ("status", "next_action", "due_date", "tags"),
    "ideas": ("one_liner", "tags"),
    "admin": ("status", "due_date", "next_action"),
    "inbox": ("original_text", "suggested_category", "reason"),
}
STATUS_VALUES: dict[str, tuple[str, ...]] = {
    "projects": ("active", "waiting", "blocked", "someday", "done"),
    "admin": ("todo", "done"),
}
DEFAULT_STATUS: dict[str, str] = {"projects": "active", "admin": "todo"}
# Fields whose value is a list of strings.
LIST_FIELDS: frozenset[str] = frozenset({"follow_ups", "tags"})
# Fields whose value is a day, YYYY-MM-DD (writers read natural phrases first: tools/rules/dates.py).
DATE_FIELDS: frozenset[str] = frozenset({"due_date", "last_touched"})
# The longest name a note may have, in characters (storage/text.py `given_name`; README).
MAX_NAME = 120


@dataclass(frozen=True)
class Entry:
    """One note as it is on disk."""

    path: str  # vault-relative POSIX path, e.g. "projects/q3-budget.md"
    id: str | None  # stable id from the frontmatter; None for hand-written notes without one
    name: str  # frontmatter `name`, else the file stem
    category: str | None  # a CATEGORIES value, or None for notes outside the category folders
    fields: dict[str, Any]  # the whole frontmatter, JSON-safe (dates as ISO strings)
    body: str

    @property
    def status(self) -> str | None:
        value = self.fields.get("status")
        return value if isinstance(value, str) else None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "id": self.id, "name": self.name,
                               "category": self.category}
        for key, value in self.fields.items():
            out.setdefault(key, value)
        out["body"] = self.body
        return out


@dataclass(frozen=True)
class EntrySummary:
    """A row of a list or search result."""

    path: str
    id: str | None
    name: str
    category: str | None
    status: str | None = None
    snippet: str | None = None  # one_liner / next_action / context / start of the body
    updated: str | None = None
    score: float | None = None  # search relevance, higher is better
    # Search: which signals found the note, with its rank in each ("words", "name",
    # "meaning"; "exact" when its name is the query).
    signals: dict[str, int] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "id": self.id, "name": self.name,
                               "category": self.category, "status": self.status,
                               "snippet": self.snippet, "updated": self.updated}
        if self.score is not None:
            out["score"] = round(self.score, 4)
        if self.signals is not None:
            out["signals"] = dict(self.signals)
        return out


@dataclass(frozen=True)
class EntryList:
    entries: list[EntrySummary]
    total: int  # how many matched before the limit

    def to_dict(self) -> dict[str, Any]:
        return {"entries": [e.to_dict() for e in self.entries], "total": self.total}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EntryList:
        """The list `to_dict` made (a result that crossed a socket)."""
        names = EntrySummary.__dataclass_fields__
        return cls([EntrySummary(**{k: v for k, v in e.items() if k in names})
                    for e in data["entries"]], int(data["total"]))


@dataclass(frozen=True)
class MoveResult:
    old_path: str
    new_path: str
    category: str
    entry: Entry
    changed: bool = True  # False: the note was already there, as it was asked to be

    def to_dict(self) -> dict[str, Any]:
        return {"old_path": self.old_path, "new_path": self.new_path, "category": self.category,
                "id": self.entry.id, "name": self.entry.name, "changed": self.changed}


@dataclass(frozen=True)
class Backlink:
    path: str  # the note that links
    name: str
    context: str  # the line holding the link, trimmed


@dataclass(frozen=True)
class BacklinkList:
    target: str  # path of the note linked to
    backlinks: list[Backlink] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "total": len(self.backlinks),
                "backlinks": [{"path": b.path, "name": b.name, "context": b.context}
                              for b in self.backlinks]}


@dataclass(frozen=True)
class VaultSummary:
    """A short, bounded picture of a vault for the system prompt."""

    counts: dict[str, int]  # per category, plus "other" for notes outside them
    total: int
    active_projects: list[str]  # a few names, never the whole index
    inbox_waiting: int


@dataclass(frozen=True)
class RefreshStats:
    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    seconds: float = 0.0
    changed: tuple[str, ...] = ()  # the paths added, updated or removed


@dataclass(frozen=True)
class Change:
    """One change to a vault, as its history keeps it (storage/history)."""

    id: str
    at: str  # ISO 8601, UTC
    who: str
    source: str
    action: str  # capture, update, move, trash, restore, link, undo, outside edit, ...
    summary: str
    paths: tuple[str, ...]
    moved: tuple[tuple[str, str], ...] = ()
    undoes: str | None = None
    new_folders: tuple[str, ...] = ()  # folders the change made (its undo removes them if empty)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["paths"] = list(self.paths)
        out["moved"] = [list(m) for m in self.moved]
        out["new_folders"] = list(self.new_folders)
        out.pop("extra")
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Change:
        return cls(id=str(data["id"]), at=str(data["at"]), who=str(data.get("who", "")),
                   source=str(data.get("source", "")), action=str(data.get("action", "")),
                   summary=str(data.get("summary", "")),
                   paths=tuple(str(p) for p in data.get("paths", ())),
                   moved=tuple((str(a), str(b)) for a, b in data.get("moved", ())),
                   undoes=data.get("undoes"),
                   new_folders=tuple(str(f) for f in data.get("new_folders", ())))


# A person's id is also their vault folder's name (`<root>/<id>`), so it may not name any
# other path.
_USER_ID = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")


def is_user_id(value: str) -> bool:
    """Can `value` be a person's id (and so their vault folder's name)?"""
    return bool(_USER_ID.match(value)) and value not in {".", ".."}


# Scripts whose letters pass for one another's ("а" Cyrillic, "a" Latin, "α" Greek): one word
# that mixes them is how a look-alike name is made. Other mixes (Japanese kana with kanji) are
# ordinary writing.
_LOOKALIKE_SCRIPTS = frozenset({"LATIN", "CYRILLIC", "GREEK", "ARMENIAN", "CHEROKEE"})


def _script(ch: str) -> str | None:
    folded = unicodedata.normalize("NFKC", ch)[:1]  # fullwidth and mathematical letters: Latin
    try:
        first = unicodedata.name(folded).split()[0]
    except (ValueError, IndexError):
        return None
    return first if first in _LOOKALIKE_SCRIPTS else None


def mixed_scripts(name: str) -> list[str]:
    """The look-alike scripts mixed inside one word of `name` ("Pаypal" with a Cyrillic "а":
    ["Cyrillic", "Latin"]); [] when no word mixes them."""
    if name.isascii():
        return []
    found: set[str] = set()
    for word in re.findall(r"\w+", name):
        scripts = {s for ch in word if ch.isalpha() and (s := _script(ch)) is not None}
        if len(scripts) > 1:
            found |= scripts
    return sorted(s.capitalize() for s in found)


def mix_said(name: str) -> str:
    """"(mixes Cyrillic and Latin letters)" when a word of `name` mixes look-alike scripts,
    else ""."""
    scripts = mixed_scripts(name)
    return f"(mixes {' and '.join(scripts)} letters)" if scripts else ""


@dataclass(frozen=True)
class ReceiptDraft:
    """What a capture's receipt records besides its note's id and path: who, the words, where
    the note was filed and how surely, and where the capture came from."""

    user_id: str
    original_text: str
    category: str
    status: str  # filed | needs_review
    confidence: float | None = None
    conversation_id: int | None = None
    turn_id: int | None = None
    channel: str | None = None
    thread_ts: str | None = None
    job_id: int | None = None

    def moved(self, category: str, status: str) -> ReceiptDraft:
        return replace(self, category=category, status=status)


class Created(NamedTuple):
    """What `Store.create_once` did: the note, whether this call made it (else an earlier run
    had), and whether its receipt is kept (False: it could not be written; logged)."""

    entry: Entry
    made: bool
    receipt_kept: bool = True
