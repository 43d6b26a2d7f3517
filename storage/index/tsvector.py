"""Word search on PostgreSQL: weighted tsvectors (migration 0004), GIN, ts_rank_cd.

Same contract as fts5.py: every word must match (the last one also as a prefix); when no note
has them all, any word may (stopwords aside). Accents fold (`unaccent` in the `brain_search`
configuration) and words match whole: "art" never finds "start".

What costs on PostgreSQL is touching rows: counting or ranking a match means reading its row
(MVCC) and its tsvector (ts_rank_cd, ~10 us a note). So a search touches few notes: it
counts matches up to RANK_ALL_LIMIT + 1; a set that small is ranked whole and its total is
exact. A larger one is ranked within the fields (`fields`: name, one-liner, context, next
action) when few notes have the words there, then filled with the newest of the matches it
counted (a plain `ORDER BY nid DESC` would read every row of a word found only in old notes);
its total is the planner's estimate (column statistics, refreshed after large index changes),
never below what was counted.

ts_rank_cd knows nothing of how rare a word is, and counts every repeat of a word in full in a
note of any length. So when any word may match, a set small enough to rank whole is ranked by
bm25 built from its parts: each word's count in the note (one word's ts_rank_cd with the field
weights is its weighted count: a name counts 10, the body 1, as FTS5's column weights),
saturated and weighed by the note's length against the set's mean (k1 1.2, b 0.75), times the
word's rarity in the vault (idf): "add something new" ranks a note with "developers" above the
many with "new", and a long chat that says "Kade" once no longer loses to one that repeats
"Tobias", as with FTS5.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import bindparam, text
from sqlalchemy.ext.asyncio import AsyncSession

from storage.index.words import (
    PREFIX_MIN_CHARS,
    STOPWORDS,
    WordHits,
    content_words,
    required_words,
)

CONFIG = "brain_search"
# ts_rank_cd weights for D (body), C (context, next action), B (one-liner), A (name): the
# proportions of FTS5's bm25 column weights (1, 3, 5, 10).
RANK_WEIGHTS = "{0.1, 0.3, 0.5, 1.0}"
RANK_ALL_LIMIT = 400
BM25_K1, BM25_B = 1.2, 0.75
# One word's ts_rank_cd with RANK_WEIGHTS is 0.1 per occurrence in the body: x 10 is a count.
_TO_COUNT = 10
ALL = "search"  # every field, weighted
FIELDS = "fields"  # name, one-liner, context, next action (no body)
STEMS = "stems"  # every field, weighted, words reduced to their stems (migration 0017)
STEMS_CONFIG = "brain_stems"  # `english` after `unaccent`


def tsquery_terms(tokens: Sequence[str]) -> list[str]:
    """Each word as a tsquery lexeme (quoted: tokens are letters and digits only, so they hold
    no quote), the last one also as a prefix."""
    parts = [f"'{t}'" for t in tokens]
    if parts and len(tokens[-1]) >= PREFIX_MIN_CHARS:
        parts[-1] += ":*"
    return parts


@dataclass(frozen=True)
class _Query:
    """One word query within a vault and its filters, over one tsvector column."""

    key: str
    tsquery: str
    category: str | None
    status: str | None
    column: str = ALL
    config: str = CONFIG
    weights: tuple[float, ...] = ()  # with `terms`: rank by bm25, these the words' idf
    terms: tuple[str, ...] = ()
    mean_length: float = 1.0  # of the matching notes, in distinct words (bm25's avgdl)

    @property
    def params(self) -> dict[str, Any]:
        params: dict[str, Any] = {"v": self.key, "q": self.tsquery}
        if self.category is not None:
            params["category"] = self.category
        if self.status is not None:
            params["status"] = self.status
        return params

    @property
    def where(self) -> str:
        sql = f"n.vault = :v AND n.{self.column} @@ to_tsquery('{self.config}', :q)"
        if self.category is not None:
            sql += " AND n.category = :category"
        if self.status is not None:
            sql += " AND n.status = :status"
        return sql

    async def first(self, session: AsyncSession, cap: int) -> list[int]:
        """Up to `cap` matching nids, in the order the index yields them (no row beyond)."""
        result = await session.execute(text(
            f"SELECT n.nid FROM index_notes n WHERE {self.where} LIMIT {int(cap)}"),
            self.params)
        return [r[0] for r in result]

    async def first_scored(self, session: AsyncSession, cap: int) -> list[tuple[int, float]]:
        """Up to `cap` matching nids with their ts_rank_cd."""
        result = await session.execute(text(
            f"SELECT n.nid, ts_rank_cd('{RANK_WEIGHTS}', n.{self.column}, "
            f"to_tsquery('{self.config}', :q)) FROM index_notes n WHERE {self.where} "
            f"LIMIT {int(cap)}"), self.params)
        return [(r[0], float(r[1])) for r in result]

    async def estimate(self, session: AsyncSession) -> int:
        """The planner's estimate of how many notes match (no row is read)."""
        return await _planned_rows(session, f"SELECT 1 FROM index_notes n WHERE {self.where}",
                                   self.params)

    async def ranked(self, session: AsyncSession, depth: int) -> list[tuple[int, float]]:
        """(nid, score) of the best `depth` matches."""
        if self.terms:
            return await self._bm25(session, depth)
        result = await session.execute(text(
            f"SELECT n.nid, ts_rank_cd('{RANK_WEIGHTS}', n.{self.column}, "
            f"to_tsquery('{self.config}', :q)) AS s FROM index_notes n WHERE {self.where} "
            f"ORDER BY s DESC, n.nid LIMIT {int(depth)}"), self.params)
        return [(r[0], float(r[1])) for r in result]

    async def _bm25(self, session: AsyncSession, depth: int) -> list[tuple[int, float]]:
        counts = ", ".join(
            f"{_TO_COUNT} * ts_rank_cd('{RANK_WEIGHTS}', n.{self.column}, "
            f"to_tsquery('{self.config}', :t{i})) AS f{i}" for i in range(len(self.terms)))
        norm = (f"{BM25_K1} * (1 - {BM25_B} + {BM25_B} * length(n.{self.column}) / "
                f"{max(self.mean_length, 1.0)!r})")
        score = " + ".join(f"{w!r} * f{i} * {BM25_K1 + 1} / (f{i} + k)"
                           for i, w in enumerate(self.weights))
        params = self.params | {f"t{i}": t for i, t in enumerate(self.terms)}
        result = await session.execute(text(
            f"SELECT nid, {score} AS s FROM (SELECT n.nid, {norm} AS k, {counts} "
            f"FROM index_notes n WHERE {self.where}) m ORDER BY s DESC, nid LIMIT {int(depth)}"),
            params)
        return [(r[0], float(r[1])) for r in result]

    async def by_rarity(self, session: AsyncSession, terms: Sequence[str],
                        found: Sequence[int]) -> _Query:
        """This any-word query, ranked by bm25: each word weighted by its idf (how many of
        the `found` notes have it, against the vault's size, the planner's estimate), each
        note's length against the mean of `found`."""
        counts = ", ".join(f"count(*) FILTER (WHERE n.{self.column} @@ to_tsquery("
                           f"'{self.config}', :t{i}))" for i in range(len(terms)))
        row = (await session.execute(
            text(f"SELECT avg(length(n.{self.column})), {counts} FROM index_notes n "
                 "WHERE n.nid IN :ids").bindparams(bindparam("ids", expanding=True)),
            {"ids": list(found), **{f"t{i}": t for i, t in enumerate(terms)}})).one()
        size = max(await _planned_rows(session, "SELECT 1 FROM index_notes WHERE vault = :v",
                                       {"v": self.key}), len(found))
        weights = tuple(math.log(1 + (size - df + 0.5) / (df + 0.5)) for df in row[1:])
        return replace(self, terms=tuple(terms), weights=weights,
                       mean_length=float(row[0] or 1.0))


async def _planned_rows(session: AsyncSession, sql: str, params: dict[str, Any]) -> int:
    """How many rows the planner expects `sql` to return (column statistics; none is read)."""
    plan = (await session.execute(text(f"EXPLAIN (FORMAT JSON) {sql}"), params)).scalar()
    data: Any = json.loads(plan) if isinstance(plan, str) else plan
    return int(data[0]["Plan"]["Plan Rows"])


async def _search(session: AsyncSession, key: str, tokens: Sequence[str], category: str | None,
                  status: str | None, depth: int) -> WordHits:
    query = _Query(key, " & ".join(tsquery_terms(required_words(tokens))), category, status)
    found = await query.first(session, RANK_ALL_LIMIT + 1)
    if not found and len(tokens) > 1:
        terms = tsquery_terms(tokens)
        terms = [t for t, w in zip(terms, tokens, strict=True)
                 if w.lower() not in STOPWORDS] or terms
        query = _Query(key, " | ".join(terms), category, status)
        return await _any(session, query, terms, depth)
    return await _ranked_hits(session, query, found, depth)


async def _any(session: AsyncSession, query: _Query, terms: list[str],
               depth: int) -> WordHits:
    """Any of `terms`: when few notes match, each word's rank weighed by its rarity."""
    found = await query.first(session, RANK_ALL_LIMIT + 1)
    if 0 < len(found) <= RANK_ALL_LIMIT:
        query = await query.by_rarity(session, terms, found)
    return await _ranked_hits(session, query, found, depth)


async def _ranked_hits(session: AsyncSession, query: _Query, found: list[int],
                       depth: int) -> WordHits:
    any_word = " | " in query.tsquery or query.column == STEMS
    if len(found) <= RANK_ALL_LIMIT:
        best = await query.ranked(session, depth) if found else []
        return WordHits([nid for nid, _ in best], len(found), query.tsquery,
                        complete=True, scores=dict(best), any_word=any_word)
    total = max(len(found), await query.estimate(session))
    # Too many to rank whole: the notes with the words in their fields first (ranked, when
    # they are few), then the newest of the first matches the index gave.
    fields = replace(query, column=FIELDS, config=CONFIG)
    scored = await fields.first_scored(session, RANK_ALL_LIMIT + 1)
    ranked: list[int] = []
    if len(scored) <= RANK_ALL_LIMIT:
        ranked = [nid for nid, _ in sorted(scored, key=lambda s: (-s[1], s[0]))][:depth]
    scores = {nid: score for nid, score in scored if nid in set(ranked)}
    seen = set(ranked)
    ranked += [nid for nid in sorted(found, reverse=True) if nid not in seen][:depth - len(ranked)]
    scores.update({nid: 0.0 for nid in ranked if nid not in scores})  # the newest, unranked
    return WordHits(ranked, total, query.tsquery, complete=False, scores=scores,
                    any_word=any_word)


async def search_words(session: AsyncSession, key: str, tokens: Sequence[str],
                       category: str | None, status: str | None, depth: int,
                       alone: bool) -> WordHits:
    """The best `depth` nids, how many notes match (exact when `complete`), and the tsquery
    used (`alone` is FTS5's concern: here the vault is a plain column)."""
    # The planner would rather scan the table for a common word and stop at the LIMIT; the
    # GIN bitmap finds the same rows without reading the others, whatever the word.
    # (On an error the transaction is rolled back, and the SET LOCAL with it.)
    await session.execute(text("SET LOCAL enable_seqscan = off"))
    hits = await _search(session, key, tokens, category, status, depth)
    await session.execute(text("RESET enable_seqscan"))
    return hits


async def search_stems(session: AsyncSession, key: str, tokens: Sequence[str],
                       category: str | None, status: str | None, depth: int,
                       alone: bool) -> WordHits:
    """Any of the query's words by their stems ("researching" meets "research"), each word's
    rank weighed by its rarity when few notes match (framing words left out)."""
    terms = [f"'{t}'" for t in content_words(list(tokens))]
    query = _Query(key, " | ".join(terms), category, status, column=STEMS, config=STEMS_CONFIG)
    await session.execute(text("SET LOCAL enable_seqscan = off"))
    hits = await _any(session, query, terms, depth)
    await session.execute(text("RESET enable_seqscan"))
    return hits


async def members(session: AsyncSession, hits: WordHits, nids: Iterable[int]) -> set[int]:
    """Which of `nids` the words match."""
    ids = sorted(set(nids))
    if not ids:
        return set()
    result = await session.execute(
        text(f"SELECT nid FROM index_notes WHERE nid IN :ids "
             f"AND search @@ to_tsquery('{CONFIG}', :q)")
        .bindparams(bindparam("ids", expanding=True)),
        {"ids": ids, "q": hits.expression})
    return {r[0] for r in result}
