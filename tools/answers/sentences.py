"""A note cut into the sentences an answer may quote, and the words that score them.

A quote is always a span of the note's own text (its body, or a frontmatter value such as a
one-liner or next action), trimmed of list markers, so it can be checked against the note
(`quote_in`) after whitespace and case are normalised. Code blocks, tables and comments are
not quoted.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from storage.types import Entry

MAX_QUOTE = 280  # characters of one quote; longer sentences are cut at a word
QUOTED_FIELDS = ("one_liner", "next_action", "context", "follow_ups", "reason")

_FENCE = re.compile(r"^\s*(```|~~~)")
_SKIP_LINE = re.compile(r"^\s*(?:\||<!--|%%|!\[\[|---\s*$|\[\^)"
                        r"|^\s*(?:[-*+]\s+)?(?:\[\[[^\]]*\]\]|\[[^\]]*\]\([^)]*\))\s*$")
_HEADING = re.compile(r"^\s*#{1,6}\s+(.*)$")
_ITEM = re.compile(r"^\s*(?:[-*+]\s+(?:\[.\]\s+)?|\d+[.)]\s+|>\s*)")
_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[\"'“(\[A-Z0-9])")
_WORD = re.compile(r"[A-Za-z0-9]+")
_SPACE = re.compile(r"\s+")
_STOP = """a an and are as at be been but by can could did do does for from had has
have how i if in into is it its me my of on or our so than that the their them then there these
they this to was we were what when where which who whom why will with would you your about
any some all also just not no yes up out more most very much many such only own same too s t
should may might must shall let lets get got"""
STOPWORDS = frozenset(_STOP.split())


@dataclass(frozen=True)
class Sentence:
    quote: str  # as it stands in the note
    heading: str  # the section it is under ("" at the top)
    position: int  # 0 = the note's first sentence


def normalise(text: str) -> str:
    """Whitespace runs to one space, lower case: how quotes are compared with notes."""
    return _SPACE.sub(" ", text).strip().lower()


def note_text(entry: Entry) -> str:
    """What a quote may come from: the string values of the frontmatter and the body."""
    values = [f"{k}: {v}" for k, v in entry.fields.items() if isinstance(v, str | int | float)]
    values += [str(x) for v in entry.fields.values() if isinstance(v, list) for x in v]
    return "\n".join([entry.name, *values, entry.body])


def quote_in(quote: str, entry: Entry) -> bool:
    """Does `quote` appear in the note (whitespace and case normalised)?"""
    wanted = normalise(quote)
    return bool(wanted) and wanted in normalise(note_text(entry))


def words(text: str) -> list[str]:
    """Content words, lower case, lightly stemmed (plural and verb endings)."""
    return [_stem(w) for w in (m.group(0).lower() for m in _WORD.finditer(text))
            if w not in STOPWORDS and len(w) > 1]


def _stem(word: str) -> str:
    for suffix, keep in (("ations", ""), ("ation", ""), ("ies", "y"), ("ing", ""), ("ed", ""),
                         ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + keep
    return word


def _cut(text: str) -> str:
    text = text.strip()
    if len(text) <= MAX_QUOTE:
        return text
    return text[:MAX_QUOTE].rsplit(" ", 1)[0]


def sentences(entry: Entry) -> list[Sentence]:
    """The note's quotable sentences: its frontmatter's descriptive fields, then the body's
    list items and prose sentences, in order."""
    out: list[Sentence] = []
    for key in QUOTED_FIELDS:
        value = entry.fields.get(key)
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str) and item.strip():
                out.append(Sentence(_cut(item.splitlines()[0]), key, len(out)))
    for quote, heading in _body_sentences(entry.body):
        if len(words(quote)) >= 2:
            out.append(Sentence(quote, heading, len(out)))
    return out


def _body_sentences(body: str) -> Iterator[tuple[str, str]]:
    heading = ""
    fenced = False
    paragraph: list[str] = []

    def flush() -> Iterator[tuple[str, str]]:
        text = " ".join(paragraph)
        paragraph.clear()
        for part in _SPLIT.split(text):
            if part.strip():
                yield _cut(part), heading

    for line in body.splitlines():
        if _FENCE.match(line):
            yield from flush()
            fenced = not fenced
            continue
        if fenced or _SKIP_LINE.match(line):
            continue
        match = _HEADING.match(line)
        if match:
            yield from flush()
            heading = match.group(1).strip()
            continue
        if not line.strip():
            yield from flush()
            continue
        item = _ITEM.match(line)
        if item:
            yield from flush()
            paragraph.append(line[item.end():].strip())
            yield from flush()
            continue
        paragraph.append(line.strip())
    yield from flush()
