"""Word search on PostgreSQL: the weighted `search` tsvector (migration 0004), GIN, ts_rank_cd.

Same contract as fts5.py: all words must match (the last one also as a prefix); when no note
has them all, any word may (stopwords aside); words in very many notes rank by the fields
(weights A-C), then the name (A), then newest first, so ts_rank_cd never scores more than
RANK_ALL_LIMIT notes. Accents fold (`unaccent` in the `brain_search` configuration) and words
match whole: "art" never finds "start".
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import bindparam, text
from sqlalchemy.ext.asyncio import AsyncSession

from storage.index.fts5 import RANK_ALL_LIMIT, WordHits
from storage.index.words import PREFIX_MIN_CHARS, STOPWORDS

CONFIG = "brain_search"
# ts_rank_cd weights for D (body), C (context, next action), B (one-liner), A (name): the
# proportions of FTS5's bm25 column weights (1, 3, 5, 10).
RANK_WEIGHTS = "{0.1, 0.3, 0.5, 1.0}"
FIELDS = "ABC"
NAME = "A"


def tsquery_terms(tokens: Sequence[str], weights: str = "") -> list[str]:
    """Each word as a tsquery lexeme (quoted: tokens are letters and digits only, so they hold
    no quote), the last one also as a prefix; `weights` limits them to those fields."""
    parts = []
    for i, token in enumerate(tokens):
        prefix = i == len(tokens) - 1 and len(token) >= PREFIX_MIN_CHARS
        label = ("*" if prefix else "") + weights
        parts.append(f"'{token}'" + (f":{label}" if label else ""))
    return parts


def _where(category: str | None, status: str | None, params: dict[str, Any]) -> str:
    sql = f"n.vault = :v AND n.search @@ to_tsquery('{CONFIG}', :q)"
    if category is not None:
        sql += " AND n.category = :category"
        params["category"] = category
    if status is not None:
        sql += " AND n.status = :status"
        params["status"] = status
    return sql


async def _count(session: AsyncSession, key: str, query: str, category: str | None,
                 status: str | None) -> int:
    params: dict[str, Any] = {"v": key, "q": query}
    where = _where(category, status, params)
    result = await session.execute(text(f"SELECT count(*) FROM index_notes n WHERE {where}"),
                                   params)
    return int(result.scalar() or 0)


async def _ranked(session: AsyncSession, key: str, query: str, category: str | None,
                  status: str | None, depth: int) -> list[int]:
    params: dict[str, Any] = {"v": key, "q": query, "k": depth}
    where = _where(category, status, params)
    result = await session.execute(text(
        f"SELECT n.nid FROM index_notes n WHERE {where} "
        f"ORDER BY ts_rank_cd('{RANK_WEIGHTS}', n.search, to_tsquery('{CONFIG}', :q)) DESC, "
        f"n.nid LIMIT :k"), params)
    return [r[0] for r in result]


async def search_words(session: AsyncSession, key: str, tokens: Sequence[str],
                       category: str | None, status: str | None, depth: int,
                       alone: bool) -> WordHits:
    """The best `depth` nids, how many notes match in all, and the tsquery used (`alone` is
    FTS5's concern: here the vault is a plain column)."""
    terms = tsquery_terms(tokens)
    query = " & ".join(terms)
    total = await _count(session, key, query, category, status)
    words = list(tokens)
    if total == 0 and len(tokens) > 1:
        kept = [(t, w) for t, w in zip(terms, tokens, strict=True)
                if w.lower() not in STOPWORDS] or list(zip(terms, tokens, strict=True))
        terms, words = [t for t, _ in kept], [w for _, w in kept]
        query = " | ".join(terms)
        total = await _count(session, key, query, category, status)
    if total == 0:
        return WordHits([], 0, query)
    if total <= RANK_ALL_LIMIT:
        return WordHits(await _ranked(session, key, query, category, status, depth), total,
                        query)
    joiner = " | " if " | " in query else " & "
    ranked: list[int] = []
    for weights in (FIELDS, NAME):
        narrow = joiner.join(tsquery_terms(words, weights))
        if await _count(session, key, narrow, category, status) <= RANK_ALL_LIMIT:
            ranked = await _ranked(session, key, narrow, category, status, depth)
            break
    if len(ranked) < depth:
        params: dict[str, Any] = {"v": key, "q": query, "k": depth + len(ranked)}
        where = _where(category, status, params)
        newest = await session.execute(text(
            f"SELECT n.nid FROM index_notes n WHERE {where} ORDER BY n.nid DESC LIMIT :k"),
            params)
        seen = set(ranked)
        ranked += [r[0] for r in newest if r[0] not in seen][:depth - len(ranked)]
    return WordHits(ranked, total, query)


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
