"""A note's body cut into passages: what search finds, ranks and shows (pure, no I/O).

A passage is a span of the body: a paragraph, a message of a saved chat, a list, a section's
start under its heading, or a few of them together while they stay short; a paragraph too long
for one passage is cut between sentences. A short note is one passage. The passages of a body
cover every character of it that is not whitespace, in order, each exactly once
(tests/storage/test_passages.py), so whatever a note says, some passage says it.

Each passage gets its own words (searched beside the whole note's) and its own sentence vector,
so the 600th word of a long chat is as findable as the first; a note ranks by its best
passages, and the hit shows the passage that matched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Blocks are packed into one passage while it holds fewer than PACK_WORDS words, and never
# past MAX_WORDS; a block longer than MAX_WORDS is cut between sentences. MAX_WORDS keeps a
# passage, with the note's title before it, within the model's 256 tokens (~1.3 tokens a
# word of English prose). Measured in docs/performance.md ("Recall on long notes").
PACK_WORDS = 40
MAX_WORDS = 150
# A body of at most this many words is one passage, whatever its shape: as long as one
# passage may be, so a note the model reads whole costs one vector (80 split the bot's own
# notes in two: 1.6 vectors a note at 50k notes and a third more time for each search by
# meaning, for no recall measured; docs/performance.md "Search at 50k notes").
SHORT_WORDS = MAX_WORDS
# A note gets at most this many passages, the last holding the rest of its body without a
# vector (its words still find it): ~6,000 words have meaning, and a 300-page PDF or a pasted
# log costs seconds of embedding, not minutes. Only the first SPLIT_CHARS are cut at all.
MAX_PASSAGES = 64
SPLIT_CHARS = 200_000

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+\S")
# The start of a message in a saved chat, as people paste them: "Ana, 9 Feb 2025 19:02: ...",
# "[06/03/2025, 20:14] Ana: ...", "Ana · 8 Sep 2025 · 19:58", "Ana: ..." (a transcript's
# speaker), "**Ana** 10:02".
_MESSAGE = re.compile(
    r"^\s*(?:\[[^\]\n]{4,40}\]\s*[^\s:][^:\n]{0,40}:\s"
    r"|[A-Z][\w'.-]*(?: [A-Z][\w'.-]*)?,? \d{1,2} [A-Za-z]{3,9}\.? \d{4}[ ,]+\d{1,2}:\d{2}"
    r"|[A-Z][\w'.-]*(?: [A-Z][\w'.-]*)? · "
    r"|\*\*[^*\n]{1,40}\*\*"
    r"|[A-Z][\w'.-]*(?: [A-Z][\w'.-]*)?: \S)")
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"'”’)\]]*\s+(?=\S)")
_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Passage:
    start: int  # offsets into the body: body[start:end] is the passage's text
    end: int
    heading: str  # the heading of the section it is in ("" before the first)
    words: int


@dataclass
class _Block:
    start: int
    end: int
    heading: str
    words: int
    is_heading: bool = False


def _lines(body: str) -> list[tuple[int, int]]:
    """(start, end) of each line, the newline left out."""
    out, at = [], 0
    for line in body.splitlines(keepends=True):
        out.append((at, at + len(line.rstrip("\r\n"))))
        at += len(line)
    return out


def _count(text: str) -> int:
    return len(_WORD.findall(text))


def _heading_text(line: str) -> str:
    return line.strip().lstrip("#").strip()


def _blocks(body: str) -> list[_Block]:
    """Runs of non-blank lines; a heading, a fenced block and each chat message stand alone."""
    cut = _Cutter(body)
    for start, end in _lines(body):
        cut.line(start, end)
    cut.close()
    return cut.blocks


class _Cutter:
    """`_blocks`' state as it reads a body line by line."""

    def __init__(self, body: str) -> None:
        self.body = body
        self.blocks: list[_Block] = []
        self.heading = ""
        self.current: list[int] = []  # [start, end] of the open block
        self.fenced = False

    def close(self) -> None:
        if self.current:
            start, end = self.current
            self.blocks.append(_Block(start, end, self.heading, _count(self.body[start:end])))
            self.current.clear()

    def line(self, start: int, end: int) -> None:
        line = self.body[start:end]
        if self.fenced:
            self.current[1] = end
            if _FENCE.match(line):
                self.fenced = False
                self.close()
        elif _FENCE.match(line):
            self.close()
            self.current[:] = [start, end]
            self.fenced = True
        elif not line.strip():
            self.close()
        elif _HEADING.match(line):
            self.close()
            self.heading = _heading_text(line)
            self.blocks.append(_Block(start, end, self.heading, _count(line), is_heading=True))
        elif self.current and _MESSAGE.match(line):
            self.close()  # a message that starts on the line after the last one's
            self.current[:] = [start, end]
        elif self.current:
            self.current[1] = end
        else:
            self.current[:] = [start, end]


def _pieces(body: str, block: _Block, limit: int) -> list[_Block]:
    """A block of more than `limit` words cut between sentences (or, for a sentence that is
    longer still, between words) into pieces of at most `limit` words."""
    if block.words <= limit:
        return [block]
    text = body[block.start:block.end]
    cuts = [0] + [m.end() for m in _SENTENCE_END.finditer(text)] + [len(text)]
    units: list[tuple[int, int]] = []
    for a, b in zip(cuts, cuts[1:], strict=False):
        words = list(_WORD.finditer(text, a, b))
        for i in range(0, len(words), limit):
            chunk = words[i:i + limit]
            if chunk:
                units.append((chunk[0].start(), chunk[-1].end()))
    out: list[_Block] = []
    for a, b in units:
        n = _count(text[a:b])
        if out and out[-1].words + n <= limit:
            last = out[-1]
            out[-1] = _Block(last.start, block.start + b, block.heading, last.words + n)
        else:
            out.append(_Block(block.start + a, block.start + b, block.heading, n))
    return out


def split(body: str, *, pack: int = PACK_WORDS, limit: int = MAX_WORDS,
          short: int = SHORT_WORDS) -> list[Passage]:
    """The passages of a note's body, in order (none for a body of whitespace)."""
    total = _count(body)
    if total == 0:
        return []
    if total <= short:
        first = len(body) - len(body.lstrip())
        return [Passage(first, len(body.rstrip()), "", total)]
    out: list[Passage] = []
    open_: _Block | None = None

    def flush() -> None:
        nonlocal open_
        if open_ is not None:
            out.append(Passage(open_.start, open_.end, open_.heading, open_.words))
            open_ = None

    for block in _blocks(body):
        if block.is_heading:
            flush()
            open_ = block  # a heading opens its section's first passage
            continue
        for piece in _pieces(body, block, limit):
            if open_ is not None and (open_.words >= pack or open_.words + piece.words > limit
                                      or open_.heading != piece.heading):
                flush()
            if open_ is None:
                open_ = piece
            else:
                open_ = _Block(open_.start, piece.end, piece.heading, open_.words + piece.words)
    flush()
    return out
