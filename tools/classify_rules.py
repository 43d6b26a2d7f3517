"""Keyword classifier for captured thoughts: category, honest confidence, title, fields.

Pure and deterministic (no I/O). Used when the model gives no hints, by the offline provider
and by the capture tool. Scoring: every category collects points from its signals (strong
signals 2, weak ones 1; a contact verb followed by a capitalised name is 4 and "<Name> said" 3,
because a thought about doing something with a named person is first of all about that
person). The best score wins; ties go to the first of people > admin > projects > ideas, with a confidence below 0.5 so
the capture tool files to the inbox for review.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from storage.types import CATEGORIES, DEFAULT_STATUS

MAX_NAME = 60
MAX_ACTION = 200  # the capture schema's limit for a follow-up
# Tie-break order, and the order signals are reported in.
PRIORITY: tuple[str, ...] = ("people", "admin", "projects", "ideas")
assert set(PRIORITY) <= set(CATEGORIES)

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
           "september", "october", "november", "december")

# Capitalised words that start sentences or name things, never people.
_NOT_NAMES = frozenset(
    {"the", "a", "an", "my", "our", "your", "their", "his", "her", "this", "that", "i", "we",
     "you", "they", "he", "she", "it", "me", "us", "them", "team", "everyone", "someone",
     "today", "tomorrow", "tonight", "next", "last", "about", "re", "q1", "q2", "q3", "q4",
     "mom", "dad", "back", "him", "again", "asap", "soon", "later", "all", "some", "any",
     "doctor", "dentist", "bank", "support", "sales", "hr", "ops", "legal"}
    | set(WEEKDAYS) | set(_MONTHS)
)

_NAME = r"([A-Z][a-zA-Z'\-]+(?:\s+[A-Z][a-zA-Z'\-]+)?)"
# Verbs of contact followed by a name: the thought is about a person.
_CONTACT = re.compile(
    r"\b(?:call|phone|ring|meet(?:ing)?(?:\s+with)?|met(?:\s+with)?|email|e-mail|text|ping|"
    r"message|talk(?:ed)?\s+(?:to|with)|speak\s+(?:to|with)|spoke\s+(?:to|with)|"
    r"catch(?:ing)?\s+up\s+with|caught\s+up\s+with|lunch\s+with|coffee\s+with|"
    r"check\s+in\s+with|remind|ask|tell|thank)\s+" + _NAME,
    re.IGNORECASE,
)
_FOLLOW_UP = re.compile(r"\bfollow[\s-]+up\s+with\s+" + _NAME, re.IGNORECASE)
# "<Name> said / mentioned / wants ..." at the start of the thought.
_NAME_SAYS = re.compile(
    r"^\s*" + _NAME + r"\s+(?:said|says|mentioned|told\s+me|wants|asked|likes|loves|prefers|"
    r"is\s+moving|just\s+(?:started|joined|moved)|recommended|suggested)\b"
)

# (pattern, points) per category.
_RULES: dict[str, tuple[tuple[re.Pattern[str], int], ...]] = {
    "admin": (
        (re.compile(r"\b(?:pay|paid|bills?|renew(?:al)?|appointment|dentist|doctor|taxe?s?|"
                    r"invoices?|insurance|passport|visa|rent|mortgage|subscription|refund|"
                    r"vet|dmv|license|licence|receipt|expenses?)\b", re.I), 2),
        (re.compile(r"\b(?:book|schedule|forms?|due|file|sign|cancel|register|errands?)\b",
                    re.I), 1),
    ),
    "projects": (
        (re.compile(r"\b(?:projects?|launch(?:ing)?|deadline|next\s+steps?|milestones?|"
                    r"roadmap|sprint|deliverables?)\b", re.I), 2),
        (re.compile(r"\b(?:build(?:ing)?|ship(?:ping)?|plan(?:ning)?|release|q[1-4]|"
                    r"draft|finish|migrate|migration|prototype|budget|rollout|kickoff)\b",
                    re.I), 1),
    ),
    "ideas": (
        (re.compile(r"\b(?:ideas?|what\s+if|maybe\s+we\s+could|concept|brainstorm)\b", re.I), 2),
        (re.compile(r"\b(?:could\s+we|imagine|wonder|someday|might\s+be\s+cool|"
                    r"would\s+be\s+(?:cool|nice|fun)|how\s+about|thought:)\b", re.I), 1),
    ),
}

_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_WEEKDAY = re.compile(r"\b(?:(next|this|on|by|until)\s+)?(" + "|".join(WEEKDAYS) + r")\b", re.I)
_IN_DAYS = re.compile(r"\bin\s+(\d{1,3})\s+days?\b", re.I)
# Date phrases removed from titles and actions ("... next week" -> "...").
_DATE_PHRASE = re.compile(
    r"\s*,?\s*\b(?:(?:on|by|before|until|due|for)\s+)?(?:today|tonight|tomorrow|next\s+week|"
    r"this\s+week|end\s+of\s+(?:the\s+)?(?:week|month)|in\s+\d{1,3}\s+days?|"
    r"(?:next|this)\s+(?:" + "|".join(WEEKDAYS) + r")|" + "|".join(WEEKDAYS)
    + r"|\d{4}-\d{2}-\d{2})\b",
    re.I,
)
_LEADING_LABEL = re.compile(r"^\s*(?:idea|note|todo|thought|project|admin|reminder)\s*[:\-]\s*",
                            re.I)


@dataclass(frozen=True)
class Classification:
    category: str  # one of CATEGORIES
    confidence: float  # 0..1, honest: < 0.5 means "unsure, review me"
    name: str  # short title, <= 60 chars
    fields: dict[str, Any] = field(default_factory=dict)  # category fields (JSON-safe)
    signals: tuple[str, ...] = ()  # why, e.g. ("people: call Sara", "projects: Q3")

    def hints(self) -> dict[str, Any]:
        """The `hints` object of `classify_and_capture` (category, confidence, name, fields)."""
        return {"category": self.category, "confidence": self.confidence, "name": self.name,
                **self.fields}


def _person(text: str) -> tuple[str | None, str | None]:
    """The person a thought is about, and the phrase that says so."""
    for pattern in (_FOLLOW_UP, _CONTACT):
        for match in pattern.finditer(text):
            name = _clean_name(match.group(1))
            if name:
                return name, match.group(0)
    says = _NAME_SAYS.match(text)
    if says:
        name = _clean_name(says.group(1))
        if name:
            return name, says.group(0)
    return None, None


def _clean_name(raw: str) -> str | None:
    words = raw.split()
    kept: list[str] = []
    for word in words:
        # The name pattern is case-insensitive only for the verb; names must be capitalised.
        if not word[0].isupper() or word.lower().strip("'") in _NOT_NAMES:
            break
        kept.append(word[:-2] if word.endswith("'s") else word)
    return " ".join(kept) or None


def due_date(text: str, today: date) -> str | None:
    """The first date the text names, as YYYY-MM-DD relative to `today`.

    "next week" is the Monday of next week; a weekday ("Friday", "next Friday", "by Friday")
    is its next occurrence after today (1..7 days ahead).
    """
    candidates: list[tuple[int, date]] = []
    for match in _ISO.finditer(text):
        try:
            candidates.append((match.start(), date(*(int(g) for g in match.groups()))))
        except ValueError:
            continue
    lowered = text.lower()
    for word, days in (("today", 0), ("tonight", 0), ("tomorrow", 1)):
        for match in re.finditer(rf"\b{word}\b", lowered):
            candidates.append((match.start(), today + timedelta(days=days)))
    for match in re.finditer(r"\bnext\s+week\b", lowered):
        candidates.append((match.start(), today + timedelta(days=7 - today.weekday())))
    for match in re.finditer(r"\bend\s+of\s+(?:the\s+)?week\b", lowered):
        candidates.append((match.start(), today + timedelta(days=(4 - today.weekday()) % 7)))
    for match in _IN_DAYS.finditer(lowered):
        candidates.append((match.start(), today + timedelta(days=int(match.group(1)))))
    for match in _WEEKDAY.finditer(lowered):
        ahead = (WEEKDAYS.index(match.group(2).lower()) - today.weekday()) % 7 or 7
        candidates.append((match.start(), today + timedelta(days=ahead)))
    if not candidates:
        return None
    return min(candidates, key=lambda c: c[0])[1].isoformat()


def strip_dates(text: str) -> str:
    """The text without its date phrases and trailing punctuation."""
    out = _DATE_PHRASE.sub("", text)
    return re.sub(r"\s+", " ", out).strip(" ,;:.!-")


def make_title(text: str, limit: int = MAX_NAME) -> str:
    """A short title: the first line without labels and dates, cut at a word boundary."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    line = _LEADING_LABEL.sub("", line)
    line = strip_dates(line) or line.strip()
    line = re.split(r"(?<=[.!?])\s", line, maxsplit=1)[0].rstrip(".!?")
    if not line:
        return "Untitled"
    line = line[0].upper() + line[1:]
    if len(line) <= limit:
        return line
    cut = line[: limit - 1].rsplit(" ", 1)[0] if " " in line[: limit - 1] else line[: limit - 1]
    return cut.rstrip(" ,;:-") + "…"


def _confidence(best: int, runner_up: int) -> float:
    if best == 0:
        return 0.3  # nothing fired: a guess
    if best == runner_up:
        return 0.45  # two categories tie: unsure
    if runner_up == 0:
        return 0.9 if best >= 2 else 0.65
    if best - runner_up >= 2:
        return 0.8
    return 0.6


def classify(text: str, today: date | None = None) -> Classification:
    """Classify one captured thought. Never raises; the category is always in CATEGORIES."""
    today = today or date.today()
    text = text if isinstance(text, str) else str(text)
    try:
        due = due_date(text, today)
    except OverflowError:  # "tomorrow" on date.max
        due = None
    scores: dict[str, int] = dict.fromkeys(PRIORITY, 0)
    signals: list[str] = []

    person, phrase = _person(text)
    if person:
        # A contact verb with a name outweighs one strong signal of another category.
        scores["people"] += 4 if phrase and not _NAME_SAYS.match(phrase) else 3
        signals.append(f"people: {phrase}")
    for category, rules in _RULES.items():
        for pattern, points in rules:
            for match in pattern.finditer(text):
                scores[category] += points
                signals.append(f"{category}: {match.group(0)}")

    ranked = sorted(PRIORITY, key=lambda c: (-scores[c], PRIORITY.index(c)))
    best, second = ranked[0], ranked[1]
    confidence = _confidence(scores[best], scores[second])
    category = best if scores[best] > 0 else "ideas"  # an unsignalled thought reads as an idea
    action = strip_dates(text.strip().splitlines()[0]) if text.strip() else ""
    action = _LEADING_LABEL.sub("", action)
    if len(action) > MAX_ACTION:  # a pasted paragraph is no next action; keep its start
        action = action[:MAX_ACTION - 1].rsplit(" ", 1)[0] + "…"

    fields: dict[str, Any] = {}
    if category == "people":
        name = person or make_title(text)
        fields["context"] = text.strip()[:500]
        if action and phrase and not _NAME_SAYS.match(phrase):
            fields["follow_ups"] = [action[0].upper() + action[1:]]
    else:
        name = make_title(text)
        if category in DEFAULT_STATUS:
            fields["status"] = DEFAULT_STATUS[category]
        if category in ("projects", "admin"):
            if action:
                fields["next_action"] = action[0].upper() + action[1:]
            if due:
                fields["due_date"] = due
        if category == "ideas" and action:
            fields["one_liner"] = make_title(text, 200)
    return Classification(category=category, confidence=confidence, name=name[:MAX_NAME],
                          fields=fields, signals=tuple(signals))
