"""The digest's structure: the data it is made from and the digest itself.

Notes are referred to by `ref`: the note's stable id, or its vault path for hand-written notes
without one. Every digest item names the refs it is about, so nothing is shown that the data
does not hold.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import Any

KINDS: tuple[str, ...] = ("daily", "weekly")

# Section keys in display order; the LLM's output schema uses the same keys.
DAILY_SECTIONS: tuple[str, ...] = ("top_actions", "people", "watch_out", "small_win")
WEEKLY_SECTIONS: tuple[str, ...] = (
    "suggested_focus", "moved_forward", "open_loops", "patterns", "needs_review",
)
SECTIONS: dict[str, tuple[str, ...]] = {"daily": DAILY_SECTIONS, "weekly": WEEKLY_SECTIONS}
# When the digest is too long, items are dropped from the first section here first.
TRIM_ORDER: dict[str, tuple[str, ...]] = {
    "daily": ("small_win", "watch_out", "people", "top_actions"),
    "weekly": ("patterns", "needs_review", "moved_forward", "open_loops", "suggested_focus"),
}
MAX_ITEMS: dict[str, int] = {
    "top_actions": 3, "people": 3, "watch_out": 3, "small_win": 1,
    "suggested_focus": 3, "moved_forward": 5, "open_loops": 5, "patterns": 3, "needs_review": 5,
}
TITLES: dict[str, str] = {
    "top_actions": "Top actions",
    "people": "People to connect with",
    "watch_out": "Watch out for",
    "small_win": "Small win",
    "suggested_focus": "Suggested focus",
    "moved_forward": "What moved forward",
    "open_loops": "Open loops",
    "patterns": "Patterns",
    "needs_review": "Needs review",
}
WORD_LIMITS: dict[str, int] = {"daily": 150, "weekly": 250}

# Bounds on the data, so the prompt stays small whatever the vault's size.
MAX_PROJECTS = 20
MAX_PEOPLE = 10
MAX_ADMIN = 10
MAX_INBOX = 10
MAX_CAPTURES = 50
MAX_LOOPS = 10
MAX_CHANGED = 10
MAX_REVIEW = 10


@dataclass(frozen=True)
class NoteRef:
    """One note as the digest sees it."""

    ref: str  # the note's id, or its path when it has none
    name: str
    path: str
    category: str | None
    status: str | None = None
    next_action: str | None = None
    due_date: str | None = None  # YYYY-MM-DD
    detail: str | None = None  # context / one_liner / inbox reason, trimmed
    follow_ups: tuple[str, ...] = ()
    updated: str | None = None  # ISO date of the last change

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.ref, "name": self.name, "category": self.category}
        for key in ("status", "next_action", "due_date", "detail", "updated"):
            value = getattr(self, key)
            if value:
                out[key] = value
        if self.follow_ups:
            out["follow_ups"] = list(self.follow_ups)
        return out


@dataclass(frozen=True)
class CaptureRef:
    """A capture receipt: what the user sent and where it was filed."""

    ref: str  # the id of the note it was filed to
    name: str  # that note's name, or the start of the text when the note is gone
    text: str  # the original text, trimmed
    category: str
    status: str  # filed | needs_review | fixed
    created_at: str  # ISO, in the user's time zone

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.ref, "name": self.name, "text": self.text,
                "category": self.category, "status": self.status, "at": self.created_at}


@dataclass(frozen=True)
class DigestData:
    """Everything a digest may mention, already filtered and bounded. Built without an LLM."""

    kind: str
    user_id: str
    today: date
    tz: str
    # daily
    projects: tuple[NoteRef, ...] = ()  # active projects (with their next actions)
    people: tuple[NoteRef, ...] = ()  # people with open follow-ups
    admin: tuple[NoteRef, ...] = ()  # todo, due today or overdue
    inbox: tuple[NoteRef, ...] = ()  # waiting for review
    captures: tuple[CaptureRef, ...] = ()  # daily: yesterday's; weekly: the last 7 days
    # weekly
    capture_counts: dict[str, int] = field(default_factory=dict)  # last 7 days, by category
    changed_projects: tuple[NoteRef, ...] = ()
    open_loops: tuple[NoteRef, ...] = ()
    needs_review: tuple[NoteRef, ...] = ()  # inbox notes + notes of needs_review captures
    # how many matched before the bounds, per list
    totals: dict[str, int] = field(default_factory=dict)

    def notes(self) -> list[NoteRef]:
        return [*self.projects, *self.people, *self.admin, *self.inbox,
                *self.changed_projects, *self.open_loops, *self.needs_review]

    def names(self) -> dict[str, str]:
        """ref -> name of every note the data holds (the only refs a digest may use)."""
        out = {c.ref: c.name for c in self.captures}
        out.update({n.ref: n.name for n in self.notes()})
        return out

    def is_empty(self) -> bool:
        return not self.notes() and not self.captures

    def to_prompt(self) -> dict[str, Any]:
        """The compact JSON the LLM reads."""
        out: dict[str, Any] = {"kind": self.kind, "today": self.today.isoformat(),
                               "weekday": self.today.strftime("%A")}
        lists: dict[str, tuple[Any, ...]] = {
            "active_projects": self.projects, "people_with_follow_ups": self.people,
            "admin_due": self.admin, "inbox_waiting": self.inbox,
            "captures": self.captures, "projects_changed": self.changed_projects,
            "open_loops": self.open_loops, "needs_review": self.needs_review,
        }
        for key, items in lists.items():
            if items:
                out[key] = [i.to_dict() for i in items]
        if self.capture_counts:
            out["capture_counts"] = dict(self.capture_counts)
        return out


@dataclass(frozen=True)
class Item:
    text: str
    ids: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "ids": list(self.ids)}


@dataclass(frozen=True)
class Digest:
    kind: str
    date: date
    sections: dict[str, tuple[Item, ...]]  # in display order; empty sections kept
    names: dict[str, str]  # ref -> note name, for every ref the items use
    source: str  # "llm" or "offline"
    gaps: tuple[str, ...] = ()  # refs the LLM named that the data does not hold (dropped)
    counts: dict[str, int] = field(default_factory=dict)  # weekly: captures by category
    text: str = ""  # plain text rendering
    blocks: list[dict[str, Any]] = field(default_factory=list)  # Block Kit rendering
    words: int = 0  # words of `text`

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "date": self.date.isoformat(),
            "source": self.source,
            "sections": {k: [i.to_dict() for i in v] for k, v in self.sections.items()},
            "names": dict(self.names),
            "counts": dict(self.counts),
            "gaps": list(self.gaps),
            "words": self.words,
            "text": self.text,
        }
