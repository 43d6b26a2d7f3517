"""Corrections to a note, read by rules: `fix: <category>` (the one that needs no LLM call),
and, in the thread of a turn that filed, moved or updated a note, "rename it to ...",
"actually it's due the 20th", "make it a project", "mark it done". A correction is applied to
that note when the model does not apply it, and is never filed as a new note; a reply that
sounds like a change but says no change the rules can read gets a question back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from tools.rules.categories import category_of
from tools.rules.dates import due_date
from tools.rules.intent import route
from tools.rules.note_changes import STATUS_WORDS  # one vocabulary for a note's status

_FIX = re.compile(r"^\s*fix\s*:\s*([a-z]+)\s*[.!]?\s*$", re.IGNORECASE)

_LEAD = r"^(?:(?:no|nope|oops|sorry|wait|actually|correction|update)\b[,:!.]?\s*)*"
_IT = r"(?:it|that|this|the\s+(?:note|task|title|name|one))"
_RENAME = re.compile(
    _LEAD + r"(?:please\s+)?(?:rename|retitle|call|name)\s+" + _IT + r"\s+(?:to\s+|as\s+)?"
    r"(?P<name>.+?)\s*[.!]?$|"
    + _LEAD + r"(?:change|set)\s+the\s+(?:name|title)\s+to\s+(?P<name2>.+?)\s*[.!]?$|"
    + _LEAD + r"(?:it'?s|it\s+is|that'?s|that\s+is)\s+(?:called|named|titled)\s+"
    r"(?P<name3>.+?)\s*[.!]?$", re.IGNORECASE)
_DUE = re.compile(
    _LEAD + r"(?:(?:it'?s|it\s+is|that'?s|that\s+is|it\s+should\s+be|make\s+it)\s+)?"
    r"(?:actually\s+)?(?:due|(?:change|move|set|push)\s+(?:the\s+)?(?:due\s+)?(?:date|deadline)"
    r"(?:\s+to)?|(?:change|move|push)\s+" + _IT + r"\s+to)\b(?P<when>.*)$", re.IGNORECASE)
_DONE = re.compile(
    _LEAD + r"(?:(?:mark|set)\s+" + _IT + r"\s+(?:as\s+)?(?P<status>done|finished|complete|"
    r"completed|active|waiting|blocked|someday|todo)|(?:it'?s|it\s+is|that'?s|that\s+is)\s+"
    r"(?P<status2>done|finished|complete|completed|blocked|waiting))\s*[.!]?$", re.IGNORECASE)
# Sounds like a change to the last note, whatever the rest says.
_SOUNDS_LIKE = re.compile(
    r"^(?:(?:actually|correction|nope|oops|rename|change\s+" + _IT + r"|update\s+" + _IT
    + r"|(?:it|that)\s+should\s+(?:be|say))\b|no,|wait,)", re.IGNORECASE)
_PRONOUN = re.compile(r"\b(?:it|it's|that|that's|this|the\s+note)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Correction:
    """A change to the thread's note: a move (`category`) or field `updates`."""

    category: str | None = None
    updates: dict[str, Any] = field(default_factory=dict)

    def call(self, ref: str) -> tuple[str, dict[str, Any]]:
        """The tool call that applies it to note `ref`."""
        if self.category is not None:
            return "move_entry", {"path": ref, "target_category": self.category}
        return "update_entry", {"path": ref, "updates": dict(self.updates)}


def parse_fix(text: str) -> str | None:
    """The target category of a `fix: <category>` message, else None."""
    match = _FIX.match(text)
    if not match:
        return None
    return category_of(match.group(1))


def read(text: str, *, today: date) -> Correction | None:
    """The change a reply asks of the thread's note, by rules; None when it asks none."""
    plain = " ".join(text.strip().split())
    if not plain or len(plain) > 200:
        return None
    match = _RENAME.match(plain)
    if match:
        name = (match.group("name") or match.group("name2") or match.group("name3") or "")
        name = name.strip(" \"'“”‘’")
        if name and len(name) <= 80:
            return Correction(updates={"name": name})
    match = _DONE.match(plain)
    if match:
        word = (match.group("status") or match.group("status2")).lower()
        return Correction(updates={"status": STATUS_WORDS.get(word, word)})
    match = _DUE.match(plain)
    if match:
        when = due_date(match.group("when") or plain, today)
        if when is not None:
            return Correction(updates={"due_date": when})
    moved = route(plain, filed="it", today=today)
    if moved.tool == "move_entry" and moved.arguments:
        return Correction(category=str(moved.arguments["target_category"]))
    return None


def sounds_like_change(text: str) -> bool:
    """Does a reply open like a change to the last note ("actually ...", "no, ...") and
    speak of it ("it", "that")? "Actually I need to call Bob" is a new thought."""
    plain = text.strip()
    return bool(_SOUNDS_LIKE.match(plain)) and bool(_PRONOUN.search(" ".join(
        plain.split()[:6])))


def question(note_name: str) -> str:
    return (f"Did you mean to change \u201c{note_name}\u201d? I couldn't tell what to change, "
            "so I left it as it is and saved nothing new. Say e.g. \u201crename it to \u2026\u201d,"
            " \u201cit's due Friday\u201d, \u201cmake it a project\u201d or \u201cmark it "
            "done\u201d \u2014 or send it again as a new thought.")
