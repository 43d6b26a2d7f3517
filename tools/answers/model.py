"""What an answer is: its text, whether anything was found, and its sources (each a note of
the asker's vault with the quote that backs the answer)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from storage.index.note_dates import written_day
from storage.types import Entry, EntrySummary

NOTHING = "Nothing in your notes about that."
NOT_FOUND_WITH_MODEL = "I could not find that in your notes."
MAX_CLOSEST = 3


@dataclass(frozen=True)
class Source:
    id: str  # the note's id, or its path when it has none (hand-written notes)
    path: str
    name: str
    quote: str
    date: str | None = None  # the note's day (created, a date in its title, its file's time)

    @classmethod
    def of(cls, entry: Entry, quote: str, date: str | None = None) -> Source:
        return cls(entry.id or entry.path, entry.path, entry.name, quote,
                   date or entry_day(entry))

    def to_dict(self) -> dict[str, str]:
        out = {"id": self.id, "path": self.path, "name": self.name, "quote": self.quote}
        if self.date:
            out["date"] = self.date
        return out


@dataclass(frozen=True)
class Answer:
    question: str
    text: str
    found: bool
    sources: list[Source] = field(default_factory=list)
    closest: list[dict[str, str]] = field(default_factory=list)  # when nothing was found
    dropped: list[str] = field(default_factory=list)  # citations that failed their check

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"answer": self.text, "found": self.found,
                               "sources": [s.to_dict() for s in self.sources]}
        if self.closest:
            out["closest"] = self.closest
        if self.dropped:
            out["dropped"] = self.dropped
        return out


def entry_day(entry: Entry) -> str | None:
    """The day the note says it is of (its `created`, else a date in its title); a search
    hit's `date` also knows the file's time for a note that says none."""
    return written_day(entry.fields.get("created"), entry.name)


def closest(hits: list[EntrySummary]) -> list[dict[str, str]]:
    """The notes nearest a question that found nothing: offered, never cited."""
    return [{"id": h.id or h.path, "path": h.path, "name": h.name} for h in hits[:MAX_CLOSEST]]


def nothing_found(question: str, near: list[dict[str, str]], *,
                  what: str = NOTHING) -> Answer:
    text = what
    if near:
        text += " Closest notes: " + ", ".join(n["name"] for n in near) + "."
    return Answer(question=question, text=text, found=False, closest=near)
