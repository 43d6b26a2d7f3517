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
- a `multi` question lists two passages or more.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import yaml

from storage.types import Entry
from storage.vault import Vault

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
    out = _note_problems(notes)
    seen = Counter(q.text for q in questions)
    out += [f"question {t!r} is asked {n} times" for t, n in seen.items() if n > 1]
    for q in questions:
        out += _question_problems(q, notes)
    return out
