"""The rule-based reading of a message: one user message -> the tool call a model would make,
or a text answer. The offline provider answers with it; a turn asks it whether a message
reads as a thought. Names the tools of our registry; the offline provider checks each
decision against the tool specs it is actually given.

A question-shaped proposal ("Could we gamify code reviews?", "What if we ...?") is a thought
to capture; questions to the brain ("what's on my plate this week?", "who is Priya?") and
commands ("find the note about the offsite") search, list or show. A message that names a
note and a change to it ("mark the passport as done", tools/rules/note_changes.py) changes that
note, and never files a new one; when the change cannot be read, it asks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from typing import Any

from tools.rules.categories import category_of
from tools.rules.classify import Similar, classify
from tools.rules.note_changes import read_named

HELP = ("Hi! Send me a thought and I'll file it (people, projects, ideas, admin). "
        "Ask \"what's active?\", \"find <words>\", \"show note <name>\" or \"digest\"; "
        "reply \"fix: project\" to re-file the last note.")

_CAT = r"(?:a |an |the )?([a-z]+)"

_GREETING = re.compile(
    r"^(?:hi|hello|hey|hiya|yo|good (?:morning|afternoon|evening)|help|what can you do|"
    r"how does this work|who are you)(?: there)?[\s!.?]*$", re.I)
_THANKS = re.compile(r"^(?:thanks|thank you|thx|cheers|ty|great|perfect|ok|okay)"
                     r"(?: (?:a lot|so much|you))?[\s!.]*$", re.I)
_FIX = [
    re.compile(r"^fix\s*:\s*" + _CAT + r"\b", re.I),
    re.compile(r"^actually,?\s+(?:that|it|this)(?:'s|\s+is|\s+should\s+be)\s+(?:in\s+)?"
               + _CAT + r"\b", re.I),
    re.compile(r"^(?:make|file)\s+(?:it|that|this)\s+(?:as\s+|under\s+|in\s+)?" + _CAT + r"\b",
               re.I),
    re.compile(r"^move\s+(?:it|that|this)\s+to\s+" + _CAT + r"\b", re.I),
    re.compile(r"^(?:that|it|this)\s+should\s+be\s+(?:in\s+)?" + _CAT + r"\b", re.I),
]
# "Could you ...", "can you please ...": a request to the bot; the rest says what to do.
_POLITE = re.compile(r"^(?:(?:could|can|would|will)\s+you\s+(?:please\s+)?|please\s+)", re.I)
_BACKLINKS = re.compile(r"^(?:backlinks\s+(?:to|for|of)|what\s+links\s+(?:to|here\s+to)|"
                        r"who\s+links\s+to|what\s+points\s+to)\s+(.+)$", re.I)
_GET = re.compile(r"^(?:show|open|get|read)\s+(?:me\s+)?(?:the\s+)?note\s+(.+)$|^open\s+(.+)$",
                  re.I)
_DIGEST = re.compile(r"^(?:(?:give|show|send)\s+me\s+)?(?:my\s+|the\s+|a\s+)?"
                     r"(?:(daily|weekly)\s+)?(?:digest|review|summary)(?:\s+please)?$", re.I)
# "What's on my plate this week?", "what's due?", "what should I focus on today?"
_PLATE = re.compile(
    r"^(?:what(?:'s|\s+is)\s+(?:on\s+my\s+plate|due|coming\s+up|next)|what\s+do\s+i\s+(?:have|"
    r"need)\s+to\s+do|what\s+should\s+i\s+(?:do|focus\s+on|work\s+on))\b", re.I)
_LIST = re.compile(
    r"^(?:list|show)(?:\s+me)?(?:\s+all)?(?:\s+(?:my|the))?(?:\s+(active|open|done|waiting|"
    r"blocked|todo))?\s+(projects?|people|persons?|ideas?|admin|tasks?|todos?|inbox|notes)\b",
    re.I)
_WHATS_ACTIVE = re.compile(
    r"^what(?:'s|\s+is|\s+are)\s+(?:my\s+|the\s+)?(active|open|in\s+(?:my|the)\s+inbox)"
    r"(?:\s+(projects?|people|ideas?|admin|tasks?|notes))?$", re.I)
# "what are my projects", "who are my people", "what ideas do I have"
_WHAT_LIST = re.compile(
    r"^(?:(?:what|which|who)(?:'s|\s+is|\s+are)\s+(?:all\s+)?(?:my|the)\s+"
    r"(?:(active|open|done|waiting|blocked|todo)\s+)?(projects?|people|ideas?|admin|tasks?|"
    r"todos?|inbox|notes)|(?:what|which)\s+(projects?|people|ideas?|admin|tasks?|notes)\s+"
    r"do\s+i\s+have)$", re.I)
_SEARCH = re.compile(
    r"^(?:find|search(?:\s+for)?|look\s+up|lookup|"
    r"do\s+i\s+have\s+(?:any(?:thing)?\s+)?(?:notes?\s+)?(?:on|about)|anything\s+(?:on|about))"
    r"\s+(.+)$", re.I)
# "what did I note about X": a question whose answer is in the notes, not a listing.
_RECALL = re.compile(r"^what\s+did\s+(?:i|we)\s+(?:note|write|say|save|jot\s+down|decide|"
                     r"agree|learn|hear)\b", re.I)
# A proposal is a thought even when it ends with "?" (it asks the team, not the brain).
_PROPOSAL = re.compile(
    r"^(?:could|should|shall|can)\s+we\b|^what\s+if\b|^how\s+about\b|^what\s+about\s+(?:a|an|"
    r"using|making|having|adding)\b|^why\s+don'?t\s+we\b|^why\s+not\s+(?!\?)\w|"
    r"^wouldn'?t\s+it\s+be\b|^would\s+it\s+be\s+(?:cool|nice|fun|great|worth)\b|"
    r"^maybe\s+we\b|^is\s+it\s+worth\b|^idea\s*[:\-]", re.I)
# A question to the brain opens like one; "Use embeddings for X?" is a thought with a "?".
_ASKS = re.compile(r"^(?:what|who|whom|whose|when|where|which|how|why|do|does|did|is|are|was|"
                   r"were|have|has|had|can|could|would|will|should|shall|any|anything|find|"
                   r"show|list|search|tell\s+me)\b", re.I)
_ARTICLES = re.compile(r"^(?:the|my|a|an|our|any|some)\s+", re.I)
_ABOUT = re.compile(r"^(?:notes?|entries|entry|anything|stuff|info(?:rmation)?)\s+"
                    r"(?:on|about|for|regarding|re|from|of)\s+", re.I)
MAX_COMMAND_WORDS = 12  # "search ..." longer than this, or with a colon, is a thought


@dataclass(frozen=True)
class Route:
    """What the rules decided: a tool call (tool + arguments) or a text answer. `or_else`:
    what to do instead when the note a statement names is not there ("the launch is done"
    with no such note is a thought to file)."""

    tool: str | None = None
    arguments: dict[str, Any] | None = None
    text: str | None = None
    or_else: Route | None = None


def clean_query(text: str) -> str:
    query = text.strip().rstrip("?!. ").strip()
    query = _ARTICLES.sub("", query)
    query = _ARTICLES.sub("", _ABOUT.sub("", query))
    return query.strip(" \"'") or text.strip()


def _status(word: str, category: str | None) -> str:
    word = word.lower()
    if word in ("active", "open"):
        return "todo" if category == "admin" else "active"
    return word


def route(text: str, *, filed: str | None = None, today: date,
          similar: Similar | None = None) -> Route:
    """The rules: one user message -> the tool call a model would make, or a text answer.
    `filed`: the path of the note this conversation filed last (a correction moves it)."""
    stripped = text.strip()
    if not stripped or _GREETING.match(stripped):
        return Route(text=HELP)
    if _THANKS.match(stripped):
        return Route(text="You're welcome!")
    fixed = _correction(stripped.rstrip("!. "), filed)
    if fixed is not None:
        return fixed
    named = read_named(stripped, today=today)
    if named is not None:  # "mark the passport as done": that note, never a new one
        if named.tool is None:
            return Route(text=named.question)
        return Route(tool=named.tool, arguments=named.arguments,
                     or_else=_capture(stripped, today, similar) if named.statement else None)
    if _PROPOSAL.match(stripped):
        return _capture(stripped, today, similar)
    asked = _POLITE.sub("", stripped)
    decided = _command(asked) or _listing(asked.rstrip("?!. "))
    if decided is not None:
        return decided
    if (asked.endswith("?") and _ASKS.match(asked)) or _RECALL.match(asked):
        return Route(tool="ask_notes", arguments={"question": stripped})
    return _capture(stripped, today, similar)


def _capture(text: str, today: date, similar: Similar | None) -> Route:
    hints = classify(text, today=today, similar=similar).hints()
    return Route(tool="classify_and_capture", arguments={"text": text, "hints": hints})


def _correction(plain: str, filed: str | None) -> Route | None:
    for index, pattern in enumerate(_FIX):
        match = pattern.match(plain)
        if not match:
            continue
        target = category_of(match.group(1))
        if target is None:
            if index == 0:
                return Route(text=f"I don't know the category \"{match.group(1)}\"; use "
                                  "people, projects, ideas, admin or inbox.")
            continue  # "make it happen" is not a correction
        if filed is None:
            return Route(text="Which note should I move? I haven't filed anything in this "
                              "conversation yet; tell me its name or path.")
        return Route(tool="move_entry", arguments={"path": filed, "target_category": target})
    return None


def _command(text: str) -> Route | None:
    plain = text.rstrip("!. ")
    match = _BACKLINKS.match(plain.rstrip("?"))
    if match:
        return Route(tool="list_backlinks", arguments={"path": clean_query(match.group(1))})
    match = _GET.match(plain)
    if match:
        return Route(tool="get_entry",
                     arguments={"path": clean_query(match.group(1) or match.group(2))})
    match = _DIGEST.match(plain)
    if match or plain.lower() in ("weekly review", "daily review"):
        kind = "weekly" if "week" in plain.lower() else "daily"
        return Route(tool="generate_digest", arguments={"type": kind})
    if _PLATE.match(plain):  # a due-date filter, answered from the notes
        return Route(tool="ask_notes", arguments={"question": text})
    match = _SEARCH.match(text.rstrip("?"))
    if match and ":" not in text and len(text.split()) <= MAX_COMMAND_WORDS:
        return Route(tool="search_entries", arguments={"query": clean_query(match.group(1))})
    return None


def _listing(plain: str) -> Route | None:
    match = _LIST.match(plain)
    if match:
        args: dict[str, Any] = {}
        category = category_of(match.group(2))
        if category:
            args["category"] = category
        if match.group(1):
            args["status"] = _status(match.group(1), category)
        return Route(tool="list_entries", arguments=args)
    match = _WHATS_ACTIVE.match(plain)
    if match:
        what = match.group(1).lower()
        if "inbox" in what:
            return Route(tool="list_entries", arguments={"category": "inbox"})
        category = category_of(match.group(2) or "")
        args = {"category": category} if category else {}
        args["status"] = _status(what, category)
        return Route(tool="list_entries", arguments=args)
    match = _WHAT_LIST.match(plain)
    if match:
        category = category_of(match.group(2) or match.group(3) or "")
        args = {"category": category} if category else {}
        if match.group(1):
            args["status"] = _status(match.group(1), category)
        return Route(tool="list_entries", arguments=args)
    return None
