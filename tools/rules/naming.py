"""Names for notes: the person a thought is about ("Dr. Patel", not "Dr"), and the subject of
anything else ("Website redesign", not the whole sentence).

Pure string rules, no I/O. A subject is found by taking the text's head (the part before
"Label: ..." or before the first clause break), dropping date phrases, filler leads ("I need
to", "Could we", "What if we") and trailing connectors, then shortening a long head at a
connector word ("with", "that", "where", ...), so the name reads like a title.
"""

from __future__ import annotations

import re
from datetime import date

from storage.text import BIDI_CONTROLS, given_name, name_text
from storage.types import mix_said
from tools.rules.dates import MONTHS, WEEKDAYS, strip_dates

MAX_NAME = 60
MAX_WORDS = 7  # a longer head is shortened at a connector word
MODIFIER_WORDS = 4  # a head longer than this loses its "with ..." / "that ..." tail

HONORIFIC = r"(?:Dr|Mr|Mrs|Ms|Mx|Prof|Professor|Sir|Dame|Rev|Fr|Sr|Jr)"
_WORD = r"[A-Z][a-zA-Z]*(?:['’\-][A-Za-z]+)*"
# A person's name: an optional honorific, then one or two capitalised words.
PERSON = r"((?:" + HONORIFIC + r"\.?\s+)?" + _WORD + r"(?:\s+" + _WORD + r")?)"

# Capitalised words that start sentences or name things, never people. Month names that are
# also first names (April, May, June, August) are allowed as names where a name is expected.
NOT_NAMES = frozenset(
    {"the", "a", "an", "my", "our", "your", "their", "his", "her", "this", "that", "i", "we",
     "you", "they", "he", "she", "it", "me", "us", "them", "team", "everyone", "someone",
     "today", "tomorrow", "tonight", "next", "last", "about", "re", "q1", "q2", "q3", "q4",
     "mom", "dad", "mum", "back", "him", "again", "asap", "soon", "later", "all", "some", "any",
     "doctor", "dentist", "bank", "support", "sales", "hr", "ops", "legal", "finance", "it's",
     "up", "in", "on", "for", "with", "to", "and", "or", "but", "if", "what", "how", "why",
     "when", "where", "who", "could", "should", "would", "maybe", "idea", "note", "todo",
     "project", "admin", "reminder", "thought", "someday", "please", "also", "then", "there",
     "here", "yes", "no", "ok", "okay", "hi", "hello", "thanks", "slack", "email", "zoom"}
    | set(WEEKDAYS) | (set(MONTHS) - {"april", "may", "june", "august"})
)

_LABEL = re.compile(r"^\s*(?:idea|note|todo|to-do|thought|project|admin|reminder|someday|"
                    r"random|fyi|q)\s*[:\-–]\s*", re.I)
_FILLER = re.compile(
    r"^(?:(?:i|we)\s+(?:really\s+)?(?:need|have|want|ought|got)\s+to|(?:i|we)\s+(?:should|must|"
    r"could|might|will)|(?:i'm|we're)\s+going\s+to|need\s+to|have\s+to|got\s+to|must|"
    r"remember\s+(?:to|that)|don'?t\s+forget\s+(?:to|that)|remind\s+me\s+to|note\s+to\s+self:?|"
    r"let'?s|please|maybe\s+we\s+(?:could|should)|maybe|perhaps|"
    r"(?:could|should|can|shall)\s+we|what\s+if\s+we|what\s+if|what\s+about|how\s+about|"
    r"why\s+don'?t\s+we|why\s+not|wouldn'?t\s+it\s+be\s+\w+\s+(?:to|if\s+we)|"
    r"it\s+would\s+be\s+\w+\s+(?:to|if\s+we)|would\s+be\s+\w+\s+to|we\s+could|imagine|"
    r"someday|one\s+day)\s+", re.I)
_WORK_VERB = re.compile(r"^(?:kick\s+off|start|finish|complete|wrap\s+up|work\s+on|continue|"
                        r"plan|get\s+started\s+on|do)\s+(?=\S)", re.I)
# After "what if we" / "wouldn't it be cool to": a light verb before the real subject.
_LIGHT_VERB = re.compile(r"^(?:used?|had|have|got|get|made|make|built|build|create|created|"
                         r"start(?:ed)?|try|tried|ran|run|hold|held|do|did)\s+(?=\S)", re.I)
_ARTICLE = re.compile(r"^(?:the|a|an|our|my|some)\s+", re.I)
# "The hiring pipeline project is blocked ..." -> "Hiring pipeline project"
_STATE = re.compile(r"^(?:the|our|my)\s+(?P<np>(?:\S+\s+){0,4}?\S+)\s+(?:is|are|was|were|"
                    r"has|have|needs?|keeps?|feels?|looks?)\b", re.I)
_CLAUSE_BREAK = re.compile(r"(?:[.!?;:]\s|[,(]\s*|\s+[-–—]\s+|\s+(?:because|since|so\s+that|"
                           r"once|which|while|although|but)\s+|\s+(?:before|after|until|when|"
                           r"if)\s+(?:it|i|we|you|they|he|she|the|my|our|legal)\b)", re.I)
# Where a long head is cut, in order of preference.
_CONNECTORS = (re.compile(r"\s+(?:with|where|that|which|who|whose|so|based|and|but|while|"
                          r"using|via|because)\s+", re.I),
               re.compile(r"\s+(?:for|about|to|on|in|at|from|into|by)\s+", re.I))
_TRAILING = re.compile(r"(?:\s+(?:to|on|at|for|by|of|in|with|and|or|is|are|the|a|an|"
                       r"before|after|until|from|it|its|due))+\s*$", re.I)


_ABBREVIATED = re.compile(r"(?:Dr|Mr|Mrs|Ms|Mx|Prof|Rev|Fr|Sr|Jr)\.?")


def clean_person(raw: str) -> str | None:
    """A person's name from a match of PERSON: capitalised words only, no non-names;
    "Tom's" -> "Tom", "Dr Patel" -> "Dr. Patel"."""
    words = raw.split()
    title = None
    if words and re.fullmatch(HONORIFIC + r"\.?", words[0]):
        title = words.pop(0).rstrip(".")
        if _ABBREVIATED.fullmatch(title):
            title += "."
    kept: list[str] = []
    for word in words:
        possessive = re.search(r"['’]s$", word) is not None
        word = re.sub(r"['’]s$", "", word)
        if not word or not word[0].isupper() or word.lower() in NOT_NAMES:
            break
        kept.append(word)
        if possessive:  # "Tom's birthday": the name ends at the possessive
            break
    if not kept:
        return None
    return " ".join([title, *kept] if title else kept)


def _cut_long(head: str) -> str:
    """A long head, cut at a connector that leaves at least two words: one that starts a
    modifier ("with", "that", "where", ...) past MODIFIER_WORDS words, a preposition past
    MAX_WORDS; else its first MAX_WORDS words."""
    for connector, limit in zip(_CONNECTORS, (MODIFIER_WORDS, MAX_WORDS), strict=True):
        if len(head.split()) <= limit:
            continue
        for match in connector.finditer(head):
            candidate = head[:match.start()]
            if len(_ARTICLE.sub("", candidate).split()) >= 2:
                return _cut_long(candidate)
    if len(head.split()) <= MAX_WORDS:
        return head
    return " ".join(head.split()[:MAX_WORDS])


def _head(line: str, today: date | None) -> str:
    """"Website redesign: finish ..." -> "Website redesign"; else the first clause; without
    its date phrases."""
    label = re.match(r"^(?P<head>[^:]{3,80}?)\s*:\s+\S", line)
    if label and not re.search(r"[,;!?]", label["head"]):
        head = strip_dates(label["head"], today)
        if 0 < len(head.split()) <= 7:
            return head
    return strip_dates(_CLAUSE_BREAK.split(line, maxsplit=1)[0], today)


def _trim(text: str) -> str:
    """Without edge punctuation or whitespace of any kind (a no-break space too)."""
    while (trimmed := text.strip().strip(" ,;:-–—.!?\"'")) != text:
        text = trimmed
    return text


def subject(text: str, today: date | None = None, *, keep_verb: bool = True) -> str:
    """The subject of a thought, as a short title. `keep_verb` False also drops generic work
    verbs ("Finish", "Kick off", "Plan"): a project is named by what it is, a task by what
    to do."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    # One space between words: the patterns below start with \s+, tried from every position
    # of a long run of spaces (no-break ones too), which was quadratic.
    line = " ".join(line.split())
    line = _LABEL.sub("", line).strip()
    proposal = False
    for _ in range(3):  # "Maybe we could ..." -> "..."
        stripped = _FILLER.sub("", line)
        if stripped == line or not stripped.strip():
            break
        line, proposal = stripped, True
    if proposal:  # "what if we used X" -> "X"
        line = _LIGHT_VERB.sub("", line)
    head = _trim(_head(line, today))
    if not keep_verb:
        head = _WORK_VERB.sub("", head) or head
    state = _STATE.match(head)
    if state:
        head = state["np"]
    head = _TRAILING.sub("", _cut_long(head))
    head = _trim(_ARTICLE.sub("", head))
    if not head:
        fallback = strip_dates(line, today) or line
        head = " ".join(fallback.split()[:MAX_WORDS]).strip(" ,;:.!?") or "Untitled"
    head = head[0].upper() + head[1:]
    if len(head) > MAX_NAME:
        head = head[: MAX_NAME - 1].rsplit(" ", 1)[0].rstrip(" ,;:-") + "…"
    return head


def given(name: str) -> str:
    """A name someone gives a note (`brain add --name`, `--set name=`), checked before anything
    is written, by storage's rule (storage/text.py `given_name`): without invisible characters,
    InvalidValue when empty or longer than MAX_NAME."""
    return given_name(name)


def shown_name(name: str) -> str:
    """A name as a card or a listing shows it: as written, without invisible characters (bidi
    controls, zero-width ones: storage/text.py `name_text`), and when a word of it mixes
    look-alike scripts, saying so, so "Pаypal" cannot pass for "Paypal"."""
    name = name_text(name)
    return f"{name} {mix_said(name)}".rstrip()


def unreordered(text: str) -> str:
    """`text` without the bidi controls that reorder what follows them (embeddings,
    overrides, isolates): any text a card shows, so none of it reads other than it is."""
    return BIDI_CONTROLS.sub("", text)
