"""A message that names a note and a change to it, read by rules: "mark the passport as done",
"the passport is done", "push the dentist to Friday", "the offsite moved to March 3",
"rename the passport to Passport renewal", "move the offsite to projects".

The words that name the note ("passport") are not looked up here: the tools resolve them
(`Store.resolve(..., by_words=True)`: exactly one note, else the candidates to ask from).
A request ("mark ... as done") is a change whatever the vault holds; a statement ("the
passport is done") is one only when a note is named so, else a thought to file (`statement`).
A phrasing that is about a note but whose change cannot be read ("mark the passport as
urgent", "rename the passport") gets a question back (`question`), never a new note.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from tools.rules.categories import category_of
from tools.rules.dates import as_date

# The words for a note's status, as people say them -> the value kept.
STATUS_WORDS: dict[str, str] = {
    "done": "done", "finished": "done", "complete": "done", "completed": "done",
    "active": "active", "waiting": "waiting", "on hold": "waiting", "blocked": "blocked",
    "someday": "someday", "todo": "todo", "to do": "todo",
}
_STATUS = "|".join(sorted((re.escape(w).replace(r"\ ", r"\s+") for w in STATUS_WORDS),
                          key=len, reverse=True))
# A statement only says these: "the passport is done", "the launch is blocked".
_STATED = r"done|finished|complete|completed|blocked|waiting|on\s+hold"
_ASK = r"^(?:please\s+|(?:can|could|would|will)\s+you\s+(?:please\s+)?)?"
_PLEASE = r"(?:,?\s+please)?$"
_WHEN = r"(?:back\s+|out\s+)?(?:to|until|till|til)\s+(?P<when>.+?)"
_DUE_WORDS = r"(?:due\s+date|deadline)"

_MARK_AS = re.compile(_ASK + r"(?P<verb>mark|set|flag)\s+(?P<note>.+?)\s+(?:as|to)\s+(?P<what>.+?)"
                      + _PLEASE, re.I)
_MARK = re.compile(_ASK + r"(?P<verb>mark)\s+(?P<note>.+?)\s+(?P<what>" + _STATUS + r")" + _PLEASE, re.I)
_STATUS_STATEMENT = re.compile(
    r"^(?P<note>.+?)(?:\s+(?:is|are|was|has\s+been|have\s+been)|'s)\s+(?:now\s+|all\s+|"
    r"finally\s+)?(?P<what>" + _STATED + r")$", re.I)
_SHIFT = re.compile(_ASK + r"(?P<verb>push|move|postpone|reschedule|delay|bump|shift|defer)\s+"
                    r"(?P<note>.+?)\s+" + _WHEN + _PLEASE, re.I)
_DUE_OF = re.compile(_ASK + r"(?:set|change|move|push|update)\s+(?:the\s+)?" + _DUE_WORDS
                     + r"\s+(?:of|for|on)\s+(?P<note>.+?)\s+to\s+(?P<when>.+?)" + _PLEASE, re.I)
_DUE_S = re.compile(_ASK + r"(?:set|change|move|push|update)\s+(?P<note>.+?)'s\s+" + _DUE_WORDS
                    + r"\s+to\s+(?P<when>.+?)" + _PLEASE, re.I)
_SHIFTED = re.compile(
    r"^(?P<note>.+?)\s+(?:has\s+been\s+|have\s+been\s+|was\s+|were\s+|is\s+|are\s+|got\s+)?"
    r"(?:moved|pushed|postponed|rescheduled|delayed|bumped|shifted|slipped|deferred)\s+"
    + _WHEN + r"$", re.I)
_DUE_NOW = re.compile(r"^(?P<note>.+?)\s+(?:is|are)\s+(?:now\s+)?due\s+(?P<when>.+?)$", re.I)
_FILE_UNDER = re.compile(_ASK + r"(?:file|put|refile|re-file)\s+(?P<note>.+?)\s+(?:in|into|under|"
                         r"as)\s+(?:a\s+|an\s+|the\s+|my\s+)?(?P<what>[a-z]+)" + _PLEASE, re.I)
_RENAME = re.compile(_ASK + r"rename\s+(?P<note>.+?)(?:\s+(?:to|as)\s+(?P<name>.+?))?" + _PLEASE,
                     re.I)
_EDIT = re.compile(_ASK + r"(?:update|change|edit|modify)\s+(?:the\s+|my\s+)(?P<note>.+?)\s+"
                   r"(?:note|entry)" + _PLEASE, re.I)

# Words a message may open with that are not part of what it says ("ok, the launch is done").
_OPENING = re.compile(r"^(?:(?:(?:actually|also|btw|fyi|ok|okay|oh|so|and)\b[,:!.\-]*|"
                      r"(?:update|news|good\s+news)\s*[,:!.\-]+)\s+)+", re.I)
_ARTICLE = re.compile(r"^(?:the|my|our)\s+", re.I)
_NOUN = re.compile(r"\s+(?:note|entry|task|todo|item)$", re.I)
# Words that name no note: the thread's note ("mark it done": tools/rules/corrections.py) or people.
_NOT_A_NAME = frozenset({
    "it", "that", "this", "these", "those", "them", "one", "note", "task", "everything", "all",
    "i", "we", "you", "he", "she", "they", "me", "us", "everyone", "nothing", "something",
    "i'm", "we're", "you're", "it's", "that's", "he's", "she's", "they're"})
MAX_NAME_WORDS = 6
MAX_NAME = 80


@dataclass(frozen=True)
class NamedChange:
    """The note's words and the tool call that changes it; or, with `question`, what to ask
    (the change could not be read)."""

    note: str
    tool: str | None = None
    arguments: dict[str, Any] = field(default_factory=dict)
    statement: bool = False  # "the passport is done": a thought when no note is named so
    question: str | None = None


def note_words(words: str) -> str | None:
    """The words that name a note ("the passport note" -> "passport"), or None when they name
    none (a pronoun, a person, a whole sentence)."""
    name = _NOUN.sub("", _ARTICLE.sub("", " ".join(words.split()).strip(" \"'“”‘’,")))
    if not name or name.lower() in _NOT_A_NAME or len(name) > MAX_NAME:
        return None
    if len(name.split()) > MAX_NAME_WORDS or re.search(r"[.!?;:]", name):
        return None
    return name


def read_named(text: str, *, today: date) -> NamedChange | None:
    """The change a message asks of a note it names, by rules; None when it asks none."""
    plain = _OPENING.sub("", " ".join(text.split()).rstrip(".!"))
    if not plain or len(plain) > 200:
        return None
    for read in (_due, _status, _move, _rename, _edit):
        found = read(plain, today)
        if found is not None:
            return found
    return None


def _update(note: str, updates: dict[str, Any], *, statement: bool = False) -> NamedChange:
    return NamedChange(note, "update_entry", {"path": note, "updates": updates},
                       statement=statement)


def _status(plain: str, today: date) -> NamedChange | None:
    match = _MARK_AS.match(plain) or _MARK.match(plain)
    if match:
        note = note_words(match.group("note"))
        what = " ".join(match.group("what").lower().split())
        if note is None:
            return None
        if what in STATUS_WORDS:
            return _update(note, {"status": STATUS_WORDS[what]})
        if match.group("verb").lower() == "set":  # "set the offsite to Friday"
            when = _day(what, today)
            return _update(note, {"due_date": when}) if when else None
        return NamedChange(note, question=(
            f"Which status should \u201c{note}\u201d get? A note can be done, active, waiting, "
            "blocked, someday or todo. Nothing was changed or saved."))
    match = _STATUS_STATEMENT.match(plain)
    if match:
        note = note_words(match.group("note"))
        what = " ".join(match.group("what").lower().split())
        if note is not None:
            return _update(note, {"status": STATUS_WORDS[what]}, statement=True)
    return None


def _day(words: str, today: date) -> str | None:
    """The day a whole phrase names ("Friday", "March 3", "next week"), or None."""
    try:
        return as_date("due_date", words.strip(" ,"), today)
    except ValueError:
        return None


def _due(plain: str, today: date) -> NamedChange | None:
    match = _DUE_OF.match(plain) or _DUE_S.match(plain)
    if match:
        note, when = note_words(match.group("note")), _day(match.group("when"), today)
        return _update(note, {"due_date": when}) if note and when else None
    match = _SHIFT.match(plain)
    if match:
        note, when = note_words(match.group("note")), _day(match.group("when"), today)
        if note and when:
            return _update(note, {"due_date": when})
        category = category_of(re.sub(r"^(?:the|my|a|an)\s+", "", match.group("when"), flags=re.I))
        if note and category and match.group("verb").lower() == "move":
            return NamedChange(note, "move_entry", {"path": note, "target_category": category})
        return None
    match = _SHIFTED.match(plain) or _DUE_NOW.match(plain)
    if match:
        note, when = note_words(match.group("note")), _day(match.group("when"), today)
        return _update(note, {"due_date": when}, statement=True) if note and when else None
    return None


def _move(plain: str, today: date) -> NamedChange | None:
    match = _FILE_UNDER.match(plain)
    if not match:
        return None
    note, category = note_words(match.group("note")), category_of(match.group("what"))
    if note and category:
        return NamedChange(note, "move_entry", {"path": note, "target_category": category})
    return None


def _rename(plain: str, today: date) -> NamedChange | None:
    match = _RENAME.match(plain)
    if not match:
        return None
    note = note_words(match.group("note"))
    name = (match.group("name") or "").strip(" \"'“”‘’")
    if note is None:
        return None
    if name and len(name) <= MAX_NAME:
        return _update(note, {"name": name})
    return NamedChange(note, question=(
        f"Which new name should \u201c{note}\u201d get? Say \u201crename {note} to \u2026\u201d. "
        "Nothing was changed or saved."))


def _edit(plain: str, today: date) -> NamedChange | None:
    match = _EDIT.match(plain)
    note = note_words(match.group("note")) if match else None
    if note is None:
        return None
    return NamedChange(note, question=(
        f"What should change in \u201c{note}\u201d? Say e.g. \u201cmark {note} as done\u201d, "
        f"\u201cpush {note} to Friday\u201d or \u201crename {note} to \u2026\u201d. Nothing was "
        "changed or saved."))
