"""Index rows as the summaries lists and searches return: each with its date and, for a
search, the passage that matched as its snippet (storage/index/snippets.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, text
from sqlalchemy.ext.asyncio import AsyncSession

from storage.index import snippets
from storage.text import name_text
from storage.types import EntrySummary

SNIPPET_CHARS = 140  # a list's snippet: a note's one-liner, or the start of its body
_COLUMNS = (
    "n.nid, n.path, n.id, n.name, n.category, n.status, n.one_liner, n.next_action, "
    "n.context, substr(n.body, 1, 400), n.updated, n.dated"
)


@dataclass(frozen=True)
class Shown:
    """The passage a search shows for a hit: its number and heading, its text, and the
    snippet cut from it with the query's words marked."""

    seq: int
    heading: str
    text: str
    snippet: str
    marks: list[tuple[int, int]]

    def as_dict(self) -> dict[str, Any]:
        return {"n": self.seq, "heading": self.heading, "text": self.text}


def _ids(nids: Sequence[int]) -> str:
    return ", ".join(str(int(i)) for i in nids)


async def passages_shown(session: AsyncSession, nids: Sequence[int], query: str,
                         nearest: Mapping[int, int]) -> dict[int, Shown]:
    """nid -> the passage to show for it: the one with most of the query's words, else the
    one `nearest` by meaning (passage numbers by nid), else the first."""
    if not nids:
        return {}
    rows = await session.execute(text(
        "SELECT nid, seq, start_at, end_at, heading FROM index_passages WHERE nid IN :ids "
        "ORDER BY nid, seq").bindparams(bindparam("ids", expanding=True)),
        {"ids": [int(n) for n in nids]})
    spans: dict[int, list[snippets.Span]] = {}
    for nid, seq, start, end, heading in rows:
        spans.setdefault(nid, []).append(snippets.Span(seq, start, end, heading or ""))
    notes = await session.execute(text(
        f"SELECT nid, body, one_liner, next_action, context FROM index_notes "
        f"WHERE nid IN ({_ids(nids)})"))
    stems = snippets.query_stems(query)
    out: dict[int, Shown] = {}
    for nid, body, *fields in notes:
        body = body or ""
        span = snippets.choose(spans.get(nid, []), body, stems, nearest.get(nid))
        if span is None:
            continue
        passage = body[span.start:span.end]
        # A note of one passage is its own passage: its snippet stays what lists show (its
        # one-liner, next action or context when it has one).
        short = next((f for f in fields if f), None) if len(spans[nid]) == 1 else None
        shown_text = short or passage
        snippet, marks = snippets.marked(shown_text, stems)
        out[nid] = Shown(span.seq, span.heading, passage[:snippets.PASSAGE_CHARS].strip(),
                         snippet, marks)
    return out


async def summaries(session: AsyncSession, key: str, nids: Sequence[int],
                    scores: Mapping[int, float] | None = None,
                    signals: Mapping[int, dict[str, int]] | None = None,
                    shown: Mapping[int, Shown] | None = None) -> list[EntrySummary]:
    """The notes `nids` of vault `key` as summaries, in that order (those gone since, and
    any of another vault, are left out: on SQLite a search's reads are not one snapshot, so
    a vault indexed meanwhile can slip into a search that dropped the vault term)."""
    if not nids:
        return []
    result = await session.execute(text(
        f"SELECT {_COLUMNS} FROM index_notes n WHERE n.nid IN ({_ids(nids)}) "
        "AND n.vault = :v"), {"v": key})
    rows = {r[0]: r for r in result}
    out = []
    for nid in nids:
        r = rows.get(nid)
        if r is None:
            continue
        passage = (shown or {}).get(nid)
        marks: list[tuple[int, int]] | None = None
        if passage is not None:
            snippet: str | None = passage.snippet
            marks = passage.marks
        else:
            snippet = r[6] or r[7] or r[8] or " ".join((r[9] or "").split())[:SNIPPET_CHARS]
        # (name_text: a row indexed before names were cleaned shows no bidi control)
        out.append(EntrySummary(path=r[1], id=r[2], name=name_text(r[3] or "") or r[1],
                                category=r[4], status=r[5],
                                snippet=snippet or None, updated=r[10],
                                score=None if scores is None else scores.get(nid),
                                signals=None if signals is None else signals.get(nid),
                                date=r[11],
                                passage=None if passage is None else passage.as_dict(),
                                marks=marks))
    return out
