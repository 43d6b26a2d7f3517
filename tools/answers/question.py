"""A question read into what to look for: the words, and the time and status phrases that are
filters rather than words ("what's due this week?", "which projects are blocked?",
"anything overdue?", "what's on my plate?").

Days are the asker's own (the zone they live in): "this week" runs from today to Sunday,
"next week" Monday to Sunday after, "next 7 days" today and the six after.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta

from tools.rules.categories import category_of
from tools.rules.dates import find_dates

STATUSES = ("active", "waiting", "blocked", "someday", "done", "todo")


@dataclass(frozen=True)
class Question:
    text: str  # as asked
    query: str  # what to search for by words, names and meaning ("" when only filters remain)
    due_after: date | None = None  # a due-date range (inclusive; either end may be open)
    due_until: date | None = None
    status: str | None = None
    category: str | None = None

    @property
    def filtered(self) -> bool:
        """Does the question ask for notes by due date or status, rather than by content?"""
        return self.due_after is not None or self.due_until is not None \
            or self.status is not None

    def describe(self) -> str:
        """The filters in words, for the answer's first line."""
        parts = []
        if self.status:
            parts.append(self.status)
        if self.category:
            parts.append(self.category)
        if self.due_after and self.due_until:
            parts.append(f"due {self.due_after.isoformat()} to {self.due_until.isoformat()}")
        elif self.due_until:
            parts.append(f"due by {self.due_until.isoformat()}")
        elif self.due_after:
            parts.append(f"due from {self.due_after.isoformat()}")
        return ", ".join(parts) or "notes"


def _week_end(today: date) -> date:
    return today + timedelta(days=6 - today.weekday())


# Phrase -> (first day, last day) from today; the first that matches wins.
_RANGES: list[tuple[re.Pattern[str], object]] = [
    (re.compile(r"\b(?:overdue|past due|late)\b", re.I),
     lambda t: (None, t - timedelta(days=1))),
    (re.compile(r"\b(?:(?:in the )?(?:next|coming) (?:7|seven) days|coming week)\b", re.I),
     lambda t: (t, t + timedelta(days=6))),
    (re.compile(r"\bthis week\b", re.I), lambda t: (t, _week_end(t))),
    (re.compile(r"\bnext week\b", re.I),
     lambda t: (_week_end(t) + timedelta(days=1), _week_end(t) + timedelta(days=7))),
    (re.compile(r"\bthis month\b", re.I),
     lambda t: (t, (t.replace(day=28) + timedelta(days=4)).replace(day=1) - timedelta(days=1))),
    (re.compile(r"\btoday\b", re.I), lambda t: (t, t)),
    (re.compile(r"\btomorrow\b", re.I),
     lambda t: (t + timedelta(days=1), t + timedelta(days=1))),
]
# What is open for me: overdue included; the next seven days unless a range says otherwise.
_OPEN = re.compile(r"\b(?:on my plate|due soon|coming up|outstanding|to do|i need to do)\b",
                   re.I)
_DUE_WORD = re.compile(r"\bdue\b", re.I)
# "due Friday", "due on the 20th", "due by March 3": the named day (or up to it, with "by").
_DUE_ON = re.compile(r"\bdue\s+(by\s+|before\s+)?(?:on\s+)?(.{2,40})", re.I)
_STATUS = re.compile(r"\b(" + "|".join(STATUSES) + r")\b", re.I)
_LISTING = re.compile(r"\b(?:which|what|list|show|any|my|all)\b", re.I)
_CATEGORY_WORD = re.compile(r"\b([a-z]+)\b", re.I)
# Words that only frame a question, never what it is about.
_FRAME = re.compile(
    r"\b(?:what(?:'s| is| are| was| were)?|which|who|whom|when|where|why|how|do|does|did|is|"
    r"are|was|were|have|has|had|i|we|my|me|our|the|a|an|any|anything|something|stuff|notes?|"
    r"about|on|of|in|for|to|tell|show|list|find|give|please|can|could|you|there|things?|"
    r"decide[ds]?|said|say|note[ds]?|wrote|write|know|remember|should|would|will)\b", re.I)


def read_question(text: str, today: date) -> Question:
    """The question's filters, and the words left to search for."""
    rest, after, until, ranged = _due_range(text, today)
    if _OPEN.search(rest) or (not ranged and re.search(r"\bwhat(?:'s| is) due\b", rest, re.I)):
        rest = _OPEN.sub(" ", rest)
        if ranged:
            after = None  # still open from before the range: overdue is on the plate too
        else:
            after, until, ranged = None, today + timedelta(days=7), True
    if ranged:
        rest = _DUE_WORD.sub(" ", rest)
    status = None
    found = _STATUS.search(rest)
    if found and _LISTING.search(rest):
        status = found.group(1).lower()
        rest = rest[:found.start()] + " " + rest[found.end():]
    category = None
    if status is not None or after is not None or until is not None:
        rest, category = _category_word(rest)
    if status == "todo":
        category = category or "admin"
    if status == "active" and category == "admin":
        status = "todo"  # admin notes are todo or done
    query = " ".join(_FRAME.sub(" ", re.sub(r"[?!.,;:]", " ", rest)).split())
    return Question(text=text, query=query, due_after=after, due_until=until, status=status,
                    category=category)


def _due_range(text: str, today: date) -> tuple[str, date | None, date | None, bool]:
    """The days a question's words name ("this week", "due on Friday"), and its words
    without them; the last item says whether it named any."""
    for pattern, span in _RANGES:
        if pattern.search(text):
            after, until = span(today)  # type: ignore[operator]
            return pattern.sub(" ", text), after, until, True
    due = _DUE_ON.search(text)
    mentions = find_dates(due.group(2), today) if due else []
    if due and mentions and mentions[0].start == 0 and mentions[0].value is not None:
        day = mentions[0].value
        after, until = (None, day) if due.group(1) else (day, day)
        return text[:due.start()] + " " + text[due.start(2) + mentions[0].end:], after, until, True
    return text, None, None, False


def _category_word(rest: str) -> tuple[str, str | None]:
    """The first word naming a category ("projects", "admin"), taken out of the words."""
    for word in _CATEGORY_WORD.findall(rest):
        category = category_of(word)
        if category is not None:
            return re.sub(rf"\b{re.escape(word)}\b", " ", rest, count=1), category
    return rest, None
