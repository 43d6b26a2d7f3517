"""Keyword classifier for captured thoughts: category, honest confidence, name, fields.

Pure and deterministic (no I/O). Used when the model gives no hints, by the offline provider
and by the capture tool. Scoring: every category collects points from its signals (strong
signals 2, weak ones 1; a contact verb followed by a name is 4 and "<Name> said" or "Dr. X" 3,
because a thought about doing something with a named person is first of all about that
person; a proposal lead such as "Could we ..." or "What if ..." is 4 for ideas). The best score
wins; ties go to the first of people > admin > projects > ideas with a confidence below 0.5,
so the capture tool files to the inbox for review. When the rules are unsure, an optional
`similar` callable (nearest labelled examples, e.g. by sentence vectors) may vote.

Dates come from `tools.rules.dates` (relative to the user's `today`), names from `tools.rules.naming`.
"""

from __future__ import annotations

import inspect
import logging
import math
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, tzinfo
from typing import Any

from storage.types import CATEGORIES, CATEGORY_FIELDS, DEFAULT_STATUS, FILED_CATEGORIES
from tools.rules.categories import CATEGORY_WORDS
from tools.rules.dates import due_date, strip_dates, today_in
from tools.rules.naming import MAX_NAME, NOT_NAMES, PERSON, clean_person, subject

__all__ = ["FIELDS", "MAX_NAME", "PRIORITY", "UNSURE", "AnySimilar", "Classification",
           "Similar", "ask_similar", "classify", "classify_async", "due_date", "make_title", "neighbour_vote", "strip_dates", "subject", "today_in"]

log = logging.getLogger(__name__)

MAX_ACTION = 200  # the capture schema's limit for a follow-up
UNSURE = 0.6  # below this the rules ask `similar` (the capture tool's default threshold)
# Tie-break order, and the order signals are reported in.
PRIORITY: tuple[str, ...] = ("people", "admin", "projects", "ideas")
assert set(PRIORITY) == set(FILED_CATEGORIES)
# The fields a classification may fill: its category's, plus a due date whatever the category
# (a person note with "follow up by Friday" has one too, so reminders and digests see it).
FIELDS: dict[str, tuple[str, ...]] = {
    c: CATEGORY_FIELDS[c] + (("due_date",) if "due_date" not in CATEGORY_FIELDS[c]
                             and c != "inbox" else ())
    for c in CATEGORIES
}

# (category, score) of the nearest labelled examples of a text; score in 0..1, higher is closer.
Similar = Callable[[str], Sequence[tuple[str, float]]]
# The same, possibly async (nearest notes by vectors in the database): `classify_async`.
Neighbours = Sequence[tuple[str, float]]
AnySimilar = Callable[[str], "Neighbours | Awaitable[Neighbours]"]

_MONTH_NAMES = frozenset({"april", "may", "june", "august"})  # names where a name is expected
# Verbs of contact followed by a name: the thought is about a person.
_CONTACT = re.compile(
    r"\b(?:call|phone|ring|meet(?:ing)?(?:\s+with)?|met(?:\s+with)?|email|e-mail|text|ping|"
    r"message|dm|talk(?:ed)?\s+(?:to|with)|speak\s+(?:to|with)|spoke\s+(?:to|with)|"
    r"catch(?:ing)?\s+up\s+with|caught\s+up\s+with|lunch\s+with|coffee\s+with|dinner\s+with|"
    r"drinks\s+with|check\s+in\s+with|checked\s+in\s+with|sync\s+with|1:1\s+with|"
    r"remind|ask|asked|tell|thank|invite|introduce|congratulate|visit)\s+" + PERSON,
    re.IGNORECASE,
)
_FOLLOW_UP = re.compile(r"\bfollow[\s-]+up\s+(?:with|on)\s+" + PERSON, re.IGNORECASE)
_PERSON_VERBS = (r"said|says|mentioned|told\s+me|wants|asked|likes|loves|hates|prefers|offered|"
                 r"agreed|promised|owes|recommended|suggested|introduced|thinks|needs|"
                 r"is\s+moving|is\s+leaving|is\s+joining|just\s+(?:started|joined|moved|left)")
# "<Name> said / offered / prefers ..." at the start of the thought.
_NAME_SAYS = re.compile(r"^\s*" + PERSON + r"\s+(?:" + _PERSON_VERBS + r")\b")
_TITLED = re.compile(r"\b((?:Dr|Mr|Mrs|Ms|Mx|Prof|Professor)\.?\s+[A-Z][a-zA-Z'’\-]+)")
_FAMILY = re.compile(r"\b([A-Z][a-zA-Z\-]+)['’]s\s+(?:birthday|wife|husband|partner|kids?|"
                     r"daughter|son|mom|mum|dad|family|anniversary|wedding|new\s+job|baby)\b")

_PROPOSAL = re.compile(
    r"^\s*(?:could\s+we|should\s+we|shall\s+we|can\s+we|what\s+if|what\s+about\s+(?:a|an|"
    r"using|making|having)|how\s+about|why\s+don'?t\s+we|why\s+not|wouldn'?t\s+it\s+be|"
    r"would\s+it\s+be\s+(?:cool|nice|fun|great|worth)|maybe\s+we\s+(?:could|should)|"
    r"we\s+could|it\s+would\s+be\s+(?:cool|nice|fun|great)|imagine\s+(?:if|a)|"
    r"maybe\s+(?:a|an|some)\s)\b", re.I)
_INVENTION = re.compile(r"^\s*(?:an?|some)\s+(?:\w+\s+){0,3}?(?:app|tool|extension|plugin|"
                        r"bot|service|game|platform|product|startup|business|newsletter|"
                        r"podcast|book|course|site|website|device|gadget|feature|workshop)s?\b"
                        r"(?:\s+(?:that|which|to|for|where|with)\b)", re.I)
# "Idea: ...", "Task - ...": a label naming the category, in the one vocabulary of category
# words (tools/rules/categories.py) plus the labels that only open a thought.
_LABEL_CATEGORY = {**{w: c for w, c in CATEGORY_WORDS.items() if c != "inbox"},
                   "thought": "ideas", "someday": "ideas", "maybe": "ideas", "what if": "ideas",
                   "to-do": "admin", "reminder": "admin"}
_LABELLED = re.compile(
    r"^\s*(?P<label>" + "|".join(re.escape(w).replace(r"\ ", r"\s+")
                                 for w in sorted(_LABEL_CATEGORY, key=len, reverse=True))
    + r")\s*[:\-–]", re.I)

# A thought that tells what happened: "today" in it is when, not a due date.
_PAST = re.compile(r"\b(?:met|had|was|were|did|saw|heard|talked|spoke|ran\s+into|went|got|"
                   r"interesting|noticed|learned|learnt|finished|sent|called)\b", re.I)

# (pattern, points) per category.
_RULES: dict[str, tuple[tuple[re.Pattern[str], int], ...]] = {
    "admin": (
        (re.compile(r"\b(?:pay|paid|bills?|renew(?:al)?|appointment|dentist|doctor|taxe?s?|"
                    r"invoices?|insurance|passport|visa|rent|mortgage|subscription|refund|"
                    r"vet|dmv|license|licence|receipt|expenses?|lease|membership|"
                    r"prescription|pharmacy|dry\s+cleaning|groceries|plumber|oil\s+change|"
                    r"haircut|domain\s+name|bank\s+account)\b", re.I), 2),
        (re.compile(r"\b(?:schedule|forms?|due|file|sign|cancel|register|errands?|"
                    r"order|buy|pick\s+up|drop\s+off|return|submit|fill\s+(?:in|out))\b|"
                    r"(?:^|\b(?:to|and|please)\s+)book\s+(?:a|an|the|my)\b", re.I), 1),
        # "get the car serviced", "have the boiler checked": an errand
        (re.compile(r"\b(?:get|have)\s+(?:the\s+|my\s+|our\s+)?\w+\s+(?:serviced|fixed|"
                    r"repaired|cleaned|checked|inspected|replaced)\b", re.I), 2),
    ),
    "projects": (
        (re.compile(r"\b(?:projects?|launch(?:ing)?|deadline|next\s+steps?|milestones?|"
                    r"roadmap|sprint|deliverables?|redesign|revamp|overhaul|renovation|"
                    r"migration|kick(?:\s+|-)?off|beta|mvp|pilot|rollout|refactor(?:ing)?)\b",
                    re.I), 2),
        (re.compile(r"\b(?:build(?:ing)?|ship(?:ping)?|plan(?:ning)?|release|q[1-4]|"
                    r"draft|finish|migrate|prototype|budget|proposal|grant|audit|"
                    r"pipeline|dashboard|v\d+|mockups?|runbook|party|venue|conference\s+talk|"
                    r"quotes?|deck|fundraising|campaign|initiative|program(?:me)?|offsite|"
                    r"hackathon|workshop|website|feature|rewrite)\b", re.I), 1),
    ),
    "ideas": (
        (re.compile(r"\b(?:ideas?|what\s+if|maybe\s+we\s+could|concept|brainstorm)\b", re.I), 2),
        (re.compile(r"\b(?:could\s+we|imagine|wonder|someday|might\s+be\s+cool|"
                    r"would\s+be\s+(?:cool|nice|fun|easier|better)|how\s+about|thought:)\b",
                    re.I), 1),
    ),
}


@dataclass(frozen=True)
class Classification:
    category: str  # one of CATEGORIES
    confidence: float  # 0..1, honest: < 0.5 means "unsure, review me"
    name: str  # short title, <= 60 chars: the person, or the subject
    fields: dict[str, Any] = field(default_factory=dict)  # category fields (JSON-safe)
    signals: tuple[str, ...] = ()  # why, e.g. ("people: call Sara", "projects: Q3")

    def hints(self) -> dict[str, Any]:
        """The `hints` object of `classify_and_capture` (category, confidence, name, fields)."""
        return {"category": self.category, "confidence": self.confidence, "name": self.name,
                **self.fields}


def _person(text: str) -> tuple[str | None, str | None, int]:
    """The person a thought is about, the phrase that says so, and its points."""
    for pattern in (_FOLLOW_UP, _CONTACT):
        for match in pattern.finditer(text):
            name = _name_after_verb(match.group(1))
            if name:
                return name, match.group(0), 4
    for pattern in (_NAME_SAYS, _TITLED, _FAMILY):
        found = pattern.search(text)
        if found:
            name = clean_person(found.group(1))
            if name:
                return name, found.group(0), 3
    return None, None, 0


def _name_after_verb(raw: str) -> str | None:
    # After "talk to" a month that is also a first name ("June") is the name.
    first = raw.split()[0].lower().strip("'’")
    if first in _MONTH_NAMES and raw[0].isupper():
        rest = clean_person(" ".join(raw.split()[1:])) if len(raw.split()) > 1 else None
        return raw.split()[0] + (f" {rest}" if rest and rest.lower() not in NOT_NAMES else "")
    return clean_person(raw)


def make_title(text: str, limit: int = MAX_NAME, today: date | None = None) -> str:
    """The first line without labels and dates, cut at a word boundary (a one-liner)."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    line = _LABELLED.sub("", line).strip()
    line = strip_dates(line, today) or line.strip()
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


def neighbour_vote(neighbours: Sequence[tuple[str, float]]) -> tuple[str, float] | None:
    """The category most of the nearest labelled examples agree on, with a confidence in
    0.6..0.85 by how much they agree; None when they are too few, too far or split."""
    weights: dict[str, float] = {}
    for item in neighbours:
        try:
            category, score = item
            score = float(score)
        except (TypeError, ValueError):
            continue
        if category in FILED_CATEGORIES and math.isfinite(score) and score > 0:
            weights[category] = weights.get(category, 0.0) + min(score, 1.0)
    total = sum(weights.values())
    if total < 0.5:
        return None
    best = max(PRIORITY, key=lambda c: (weights.get(c, 0.0), -PRIORITY.index(c)))
    share = weights.get(best, 0.0) / total
    if share < 0.6:
        return None
    return best, round(0.6 + 0.25 * (share - 0.6) / 0.4, 2)


def _scores(text: str, due: str | None) -> tuple[dict[str, int], list[str], str | None, int]:
    scores: dict[str, int] = dict.fromkeys(PRIORITY, 0)
    signals: list[str] = []
    person, phrase, points = _person(text)
    if person:
        scores["people"] += points
        signals.append(f"people: {phrase}")
    proposal = _PROPOSAL.match(text) or _INVENTION.match(text)
    if proposal:
        scores["ideas"] += 4 if _PROPOSAL.match(text) else 3
        signals.append(f"ideas: {proposal.group(0).strip()}")
    label = _LABELLED.match(text)
    if label:
        category = _LABEL_CATEGORY[re.sub(r"\s+", " ", label["label"].lower())]
        scores[category] += 2
        signals.append(f"{category}: {label.group(0).strip()}")
    for category, rules in _RULES.items():
        for pattern, rule_points in rules:
            for match in pattern.finditer(text):
                scores[category] += rule_points
                signals.append(f"{category}: {match.group(0)}")
    if due and not any(scores.values()):
        scores["admin"] += 1  # a dated thought with no other signal is something to do
        signals.append("admin: has a due date")
    return scores, signals, person, points


def classify(text: str, *, today: date | None = None, tz: str | tzinfo | None = None,
             similar: Similar | None = None) -> Classification:
    """Classify one captured thought. Never raises; the category is always in CATEGORIES.

    today: the user's date, which relative dates are read from; default: today in `tz` (an
    IANA zone name such as "Europe/Berlin"), or in the machine's zone when `tz` is None.
    similar: asked only when the rules are unsure (confidence < 0.6); returns (category,
    score) of the nearest labelled examples; a clear majority picks the category.
    """
    text = text if isinstance(text, str) else str(text)
    if today is None:
        today = today_in(tz)
    due = due_date(text, today)
    if due == today.isoformat() and _PAST.search(text):
        due = None
    scores, signals, person, person_points = _scores(text, due)
    ranked = sorted(PRIORITY, key=lambda c: (-scores[c], PRIORITY.index(c)))
    best, second = ranked[0], ranked[1]
    confidence = _confidence(scores[best], scores[second])
    category = best if scores[best] > 0 else "ideas"  # an unsignalled thought reads as an idea
    if confidence < UNSURE and similar is not None:
        try:
            vote = neighbour_vote(similar(text))
        except Exception:  # the hook is a helper: it can fail, the classification cannot
            log.warning("similar() failed; classifying by rules alone", exc_info=True)
            vote = None
        if vote is not None:
            category, confidence = vote
            signals.append(f"{category}: nearest examples ({confidence:.2f})")
    return Classification(category=category, confidence=confidence,
                          name=_name(text, category, person, today),
                          fields=_fields(text, category, due, person_points == 4, today),
                          signals=tuple(signals))


async def ask_similar(similar: AnySimilar, text: str) -> Neighbours | None:
    """What `similar` answers (awaited when it is async); None when it fails."""
    try:
        found = similar(text)
        if inspect.isawaitable(found):
            found = await found
        return list(found)
    except Exception:  # the hook is a helper: it can fail, the classification cannot
        log.warning("similar() failed; classifying by rules alone", exc_info=True)
        return None


async def classify_async(text: str, *, today: date | None = None,
                         tz: str | tzinfo | None = None,
                         similar: AnySimilar | None = None) -> Classification:
    """`classify`, with a `similar` that may be async: asked only when the rules are unsure."""
    if today is None:
        today = today_in(tz)
    first = classify(text, today=today)
    if similar is None or first.confidence >= UNSURE:
        return first
    found = await ask_similar(similar, text)
    if found is None:
        return first
    return classify(text, today=today, similar=lambda _text: found)


def _name(text: str, category: str, person: str | None, today: date) -> str:
    if category == "people" and person:
        return balanced_quotes(person[:MAX_NAME])
    return balanced_quotes(subject(text, today, keep_verb=category != "projects")[:MAX_NAME])


_QUOTE_PAIRS = (('"', '"'), ("\u201c", "\u201d"))


def balanced_quotes(name: str) -> str:
    """A name never keeps half a quotation: `Phoenix" as a name` (its opening quote was cut
    with a label) becomes `Phoenix as a name`; `Project "Phoenix"` stays as it is."""
    original = name  # a name that is nothing but quotes stays as it is
    for opening, closing in _QUOTE_PAIRS:
        if opening == closing:
            if name.count(opening) % 2:
                name = name.replace(opening, "")
        elif name.count(opening) != name.count(closing):
            name = name.replace(opening, "").replace(closing, "")
    return re.sub(r"\s{2,}", " ", name).strip() or original


def _action(text: str, today: date) -> str:
    """What to do next: the first line without dates; after a "Subject: ..." label, the rest."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    line = _LABELLED.sub("", line).strip()
    labelled = re.match(r"^[^:,;]{3,60}:\s+(?P<rest>\S.*)$", line)
    if labelled and len(line.split(":", 1)[0].split()) <= 5:
        line = labelled["rest"]
    action = strip_dates(line, today)
    if len(action) > MAX_ACTION:  # a pasted paragraph is no next action; keep its start
        action = action[:MAX_ACTION - 1].rsplit(" ", 1)[0] + "…"
    return action[:1].upper() + action[1:]


def _fields(text: str, category: str, due: str | None, contact: bool,
            today: date) -> dict[str, Any]:
    """contact: the thought is about doing something with the person (a follow-up)."""
    fields: dict[str, Any] = {}
    action = _action(text, today)
    if category == "people":
        fields["context"] = text.strip()[:500]
        if contact and action:
            fields["follow_ups"] = [action]
    if category in DEFAULT_STATUS:
        fields["status"] = DEFAULT_STATUS[category]
    if category in ("projects", "admin") and action:
        fields["next_action"] = action
    if category == "ideas" and action:
        fields["one_liner"] = make_title(text, MAX_ACTION, today)
    if due and "due_date" in FIELDS[category]:
        fields["due_date"] = due
    return {k: v for k, v in fields.items() if v not in ("", [])}
