"""The long-note retrieval set (issue 33): the notes in bench/long_notes/ (a vault) and the
questions in bench/long_note_questions.yaml, written by reading the notes.

Each question has a kind (fact, time, paraphrase, multi), its text, and the passages that
answer it: a note's vault-relative path and a short exact quote from that note. A multi
question needs all of its passages; any other question lists one passage, or several where
notes repeat the answer (each of them answers alone). `problems`
checks the set mechanically (bench/bench_long_notes.py refuses to run on a broken set, and
tests/test_bench_long_notes.py keeps it whole):

- every note reads as frontmatter with an `id`, `name`, `category` and `created`, and a body;
- every relevant note exists and every quoted passage is in it (whitespace-normalised);
- a `paraphrase` question shares no content word with its passage nor with its note's title,
  compared after a crude stemming, so "researching" counts as "research" too;
- a `multi` question lists two passages or more;
- every series of saved chats is whole (see `series`).

A *series* is the sessions of one long chat between the same two people, a note per session
titled "Chat with <name>, <day month year>" (people/chat-with-*.md): at least 10 sessions, each
dated as its title, with 20-30 messages all of that day between the same two people, and
600-1,200 words. A question belongs to the series when the passage it was written for (its
first) is in a session; bench/bench_long_notes.py reports those questions as a group.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path

import yaml

from storage.types import Entry
from storage.vault.files import Vault

ROOT = Path(__file__).resolve().parents[1]
NOTES = ROOT / "bench" / "long_notes"
QUESTIONS = ROOT / "bench" / "long_note_questions.yaml"
KINDS = ("fact", "time", "paraphrase", "multi")

# Function words and question words; everything else in a question counts as content.
_STOPWORDS = """
a about above after again against all also am an and any are aren as at be because been before
being below between both but by can cannot could couldn d did didn do does doesn doing don down
during each else ever few for from further get got had hadn has hasn have haven having he her
here hers herself him himself his how i if in into is isn it its itself just ll m me might more
most must mustn my myself no nor not now of off on once only or other ought our ours ourselves
out over own re s same shall shan she should shouldn so some such t than that the their theirs
them themselves then there these they this those through to too under until up upon us ve very
was wasn we were weren what whatever when whenever where which while who whom whose why will
with won would wouldn y yet you your yours yourself yourselves
"""
STOPWORDS = frozenset(_STOPWORDS.split())
_WORD = re.compile(r"[a-z0-9]+")
_SUFFIXES = ("ations", "ation", "ments", "ment", "ings", "ing", "ers", "er", "ies", "ied",
             "es", "ed", "s", "ly")


# A saved chat's message header, in the three forms people paste: a line per message
# ("Tobias, 9 Feb 2025 19:02: text"), a WhatsApp export ("[06/03/2025, 20:14] Ines: text") and a
# copy from Slack ("Yara · 8 Sep 2025 · 19:58", the text on the next line).
_MESSAGE_FORMS = (
    (re.compile(r"^(?P<who>[A-Z][\w-]*), (?P<day>\d{1,2} [A-Z][a-z]{2} \d{4}) \d{2}:\d{2}: ",
                re.MULTILINE), "%d %b %Y"),
    (re.compile(r"^\[(?P<day>\d{2}/\d{2}/\d{4}), \d{2}:\d{2}\] (?P<who>[A-Z][\w-]*): ",
                re.MULTILINE), "%d/%m/%Y"),
    (re.compile(r"^(?P<who>[A-Z][\w-]*) · (?P<day>\d{1,2} [A-Z][a-z]{2} \d{4}) · \d{2}:\d{2}$",
                re.MULTILINE), "%d %b %Y"),
)
SESSION_TITLE = re.compile(r"^Chat with (?P<who>[A-Z][\w-]*), (?P<day>\d{1,2} [A-Z][a-z]+ \d{4})$")
SERIES_SESSIONS = 10  # at least
SESSION_MESSAGES = (20, 30)
SESSION_WORDS = (600, 1200)


def stem(word: str) -> str:
    """A crude stem, only for checking paraphrases: it errs towards calling words the same."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:-1] if len(word) > 3 and word[-1] in "ey" else word


def content_stems(text: str) -> set[str]:
    return {stem(w) for w in _WORD.findall(text.lower()) if w not in STOPWORDS}


def normalise(text: str) -> str:
    return " ".join(text.split()).lower()


@dataclass(frozen=True)
class Passage:
    note: str  # vault-relative path
    quote: str  # short exact quote from the note


@dataclass(frozen=True)
class Question:
    kind: str
    text: str
    passages: tuple[Passage, ...]

    @property
    def relevant(self) -> frozenset[str]:
        return frozenset(p.note for p in self.passages)


def load_questions(path: Path = QUESTIONS) -> list[Question]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return [Question(str(item["kind"]), str(item["q"]),
                     tuple(Passage(str(r["note"]), str(r["passage"])) for r in item["relevant"]))
            for item in data["questions"]]


def read_notes(root: Path = NOTES) -> dict[str, Entry]:
    vault = Vault(root)
    return {rel: vault.read(rel) for rel, _mtime, _size in sorted(vault.scan())}


def note_text(entry: Entry) -> str:
    """What a reader sees of a note: its title and its body."""
    return f"{entry.name}\n{entry.body}"


@dataclass(frozen=True)
class Message:
    who: str
    day: date


def messages(body: str) -> list[Message]:
    """The messages of a saved chat, by their headers, in the order written."""
    found: list[tuple[int, Message]] = []
    for pattern, day_format in _MESSAGE_FORMS:
        found += [(m.start(), Message(m["who"], datetime.strptime(m["day"], day_format).date()))
                  for m in pattern.finditer(body)]
    return [message for _, message in sorted(found, key=lambda pair: pair[0])]


def series(notes: dict[str, Entry]) -> dict[str, list[str]]:
    """Each chat series by the name in its titles: its sessions' paths, oldest first."""
    out: dict[str, list[tuple[date, str]]] = {}
    for rel, entry in notes.items():
        title = SESSION_TITLE.match(entry.name)
        if title:
            day = datetime.strptime(title["day"], "%d %B %Y").date()
            out.setdefault(title["who"], []).append((day, rel))
    return {who: [rel for _, rel in sorted(sessions)] for who, sessions in out.items()}


def sessions(notes: dict[str, Entry]) -> frozenset[str]:
    return frozenset(rel for rels in series(notes).values() for rel in rels)


def in_series(question: Question, sessions: frozenset[str]) -> bool:
    return bool(question.passages) and question.passages[0].note in sessions


def _session_problems(rel: str, entry: Entry, who: str) -> tuple[list[str], frozenset[str]]:
    title = SESSION_TITLE.match(entry.name)
    assert title is not None
    day = datetime.strptime(title["day"], "%d %B %Y").date()
    out = []
    created = str(entry.fields.get("created", ""))
    if created[:10] != day.isoformat():
        out.append(f"{rel}: created {created!r} is not the day in its title")
    found = messages(entry.body)
    low, high = SESSION_MESSAGES
    if not low <= len(found) <= high:
        out.append(f"{rel}: {len(found)} messages, not {low}-{high}")
    speakers = frozenset(m.who for m in found)
    if len(speakers) != 2 or who not in speakers:
        out.append(f"{rel}: messages from {sorted(speakers)}, not {who} and one other")
    days = sorted({m.day for m in found} - {day})
    if days:
        out.append(f"{rel}: messages dated {days[0]}, not the session's day {day}")
    low, high = SESSION_WORDS
    if not low <= len(entry.body.split()) <= high:
        out.append(f"{rel}: {len(entry.body.split())} words, not {low}-{high}")
    return out, speakers


def _series_problems(notes: dict[str, Entry]) -> list[str]:
    out = []
    for who, rels in series(notes).items():
        if len(rels) < SERIES_SESSIONS:
            out.append(f"the chat with {who} has {len(rels)} sessions, fewer than"
                       f" {SERIES_SESSIONS}")
        pairs = set()
        for rel in rels:
            found, speakers = _session_problems(rel, notes[rel], who)
            out += found
            pairs.add(speakers)
        if len(pairs) > 1:
            out.append(f"the chat with {who} is not between the same two people:"
                       f" {sorted(sorted(p) for p in pairs)}")
        days = Counter(notes[rel].name for rel in rels)
        out += [f"two sessions are titled {name!r}" for name, n in days.items() if n > 1]
    return out


def _note_problems(notes: dict[str, Entry]) -> list[str]:
    out = []
    for rel, entry in notes.items():
        missing = [f for f in ("id", "name", "category", "created") if not entry.fields.get(f)]
        if missing:
            out.append(f"{rel}: frontmatter lacks {', '.join(missing)}")
        if entry.category != rel.split("/", 1)[0]:
            out.append(f"{rel}: category {entry.category!r} is not its folder")
        if not entry.body.strip():
            out.append(f"{rel}: no body")
    ids = Counter(e.id for e in notes.values())
    out += [f"id {i} is used by {n} notes" for i, n in ids.items() if n > 1]
    return out


def _question_problems(q: Question, notes: dict[str, Entry]) -> list[str]:
    out = []
    where = f"{q.kind} question {q.text!r}"
    if q.kind not in KINDS:
        out.append(f"{where}: unknown kind")
    if not q.passages:
        out.append(f"{where}: no relevant passage")
    if q.kind == "multi" and len(q.passages) < 2:
        out.append(f"{where}: a multi question needs two passages or more")
    asked = content_stems(q.text)
    for p in q.passages:
        entry = notes.get(p.note)
        if entry is None:
            out.append(f"{where}: no note {p.note}")
            continue
        if normalise(p.quote) not in normalise(entry.body):
            out.append(f"{where}: {p.note} does not contain {p.quote!r}")
        if q.kind == "paraphrase":
            shared = asked & (content_stems(p.quote) | content_stems(entry.name))
            if shared:
                out.append(f"{where}: shares {sorted(shared)} with its passage or the title"
                           f" of {p.note}")
    return out


def problems(notes: dict[str, Entry], questions: list[Question]) -> list[str]:
    """Everything wrong with the set, one line each; empty when it is whole."""
    out = _note_problems(notes) + _series_problems(notes)
    seen = Counter(q.text for q in questions)
    out += [f"question {t!r} is asked {n} times" for t, n in seen.items() if n > 1]
    for q in questions:
        out += _question_problems(q, notes)
    return out
