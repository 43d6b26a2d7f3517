"""Which passage of a hit to show, and its text cut to a snippet with the query's words marked
(pure, no I/O).

The passage shown is the one that matched: the one with most of the query's words (by their
stems, so "researching" marks for "research"), the passage nearest by meaning breaking ties
and standing alone when no word matched. The snippet is a window of that passage around its
first marked word; `marks` are (start, end) offsets of the marked words in the snippet, for
each door to show its own way (`brain search` in **bold**, Slack in *bold*, JSON as offsets).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from storage.index.words import FRAMING, stem

SNIPPET_CHARS = 240
PASSAGE_CHARS = 1200  # of a passage's text in a result (JSON, MCP): a passage is ~150 words
_WORD = re.compile(r"[^\W_]+")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Span:
    seq: int
    start: int
    end: int
    heading: str


def query_stems(query: str) -> frozenset[str]:
    """The stems of the query's words worth marking (not "how", "did", "the")."""
    return frozenset(stem(w) for w in _WORD.findall(query.lower())
                     if w not in FRAMING and len(w) > 1)


def found_words(text: str, stems: frozenset[str]) -> set[str]:
    """The query's stems that words of `text` have (only words that start as one of them
    does are stemmed: a search shows ten passages, and stemming every word costs)."""
    starts = {s[:3] for s in stems}
    return {s for w in _WORD.findall(text.lower()) if w[:3] in starts and (s := stem(w)) in stems}


def choose(spans: Sequence[Span], body: str, stems: frozenset[str],
           nearest: int | None) -> Span | None:
    """The passage that matched: most distinct query words, then the one nearest by
    meaning, then the first."""
    if len(spans) < 2:
        return spans[0] if spans else None
    by_seq = {s.seq: s for s in spans}

    def rank(span: Span) -> tuple[int, int, int]:
        words = len(found_words(body[span.start:span.end] + " " + span.heading, stems))
        return (-words, 0 if span.seq == nearest else 1, span.seq)

    best = min(spans, key=rank)
    if nearest in by_seq and not found_words(body[best.start:best.end] + " " + best.heading, stems):
        return by_seq[nearest]
    return best


def marked(text: str, stems: frozenset[str], width: int = SNIPPET_CHARS,
           ) -> tuple[str, list[tuple[int, int]]]:
    """`text` on one line, cut to about `width` characters around its first word of the
    query ("…" where cut), and the (start, end) of each query word in what is returned."""
    flat = _SPACE.sub(" ", text).strip()
    starts = {s[:3] for s in stems}
    spots = [(m.start(), m.end()) for m in _WORD.finditer(flat)
             if m.group(0)[:3].lower() in starts and stem(m.group(0)) in stems]
    start = 0
    if len(flat) > width and spots:
        start = max(0, spots[0][0] - width // 4)
        if start:
            space = flat.find(" ", start)
            start = space + 1 if 0 <= space < spots[0][0] else start
    end = min(len(flat), start + width)
    if end < len(flat):
        space = flat.rfind(" ", start, end)
        end = space if space > start else end
    head = "…" if start else ""
    tail = "…" if end < len(flat) else ""
    shift = len(head) - start
    marks = [(a + shift, b + shift) for a, b in spots if a >= start and b <= end]
    return head + flat[start:end] + tail, marks
