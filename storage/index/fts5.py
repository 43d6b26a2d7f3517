"""Word search on SQLite: FTS5 with bm25 column weights, filters inside the FTS5 expression.

`index_fts` (migration 0002) is keyed by the note's nid (its rowid); its `meta` column holds
hashed vault / category / status tokens (extract.meta_token), so a filter never joins per row.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from storage.index.extract import meta_token
from storage.index.words import (
    PREFIX_MIN_CHARS,
    STOPWORDS,
    WordHits,
    content_words,
    required_words,
)

# bm25 column weights: name, one_liner, context, next_action, body, meta (filter tokens only).
BM25_WEIGHTS = (10.0, 5.0, 3.0, 3.0, 1.0, 0.0)
TEXT_COLUMNS = "{name one_liner context next_action body}"
FIELD_COLUMNS = "{name one_liner context next_action}"
# bm25 costs ~2 us per matching note; a word in more notes than this (a stopword, in effect)
# ranks the notes that have it in a field, then the newest others, so 50k notes stay fast.
RANK_ALL_LIMIT = 2500


def fts_terms(tokens: Sequence[str]) -> list[str]:
    """Each word as an FTS5 string; the last one also as a prefix (the user may still type)."""
    parts = [f'"{t}"' for t in tokens]
    if parts and len(tokens[-1]) >= PREFIX_MIN_CHARS:
        parts[-1] += "*"
    return parts


def fts_expression(tokens: Sequence[str], operator: str = "AND") -> str:
    return f" {operator} ".join(fts_terms(tokens))


def match_expression(key: str, core: str, category: str | None, status: str | None,
                     columns: str = TEXT_COLUMNS, *, alone: bool = False) -> str:
    """An FTS5 expression: the user's words in `columns`, within this vault and filters.

    `alone`: no other vault has rows, so the vault term (a costly intersection with every
    note) can go.
    """
    parts = [] if alone else [f'meta : "{meta_token("v", key)}"']
    if category is not None:
        parts.append(f'meta : "{meta_token("c", category)}"')
    if status is not None:
        parts.append(f'meta : "{meta_token("s", status)}"')
    parts.append(f"{columns} : ({core})")
    return " AND ".join(parts)


EXACT = "index_fts"  # words as written (unicode61)
STEMS = "index_stems"  # the same columns, words reduced to their stems (porter, migration 0017)


async def _count(session: AsyncSession, expression: str, table: str = EXACT) -> int:
    result = await session.execute(
        text(f"SELECT count(*) FROM {table} WHERE {table} MATCH :q"), {"q": expression})
    return int(result.scalar() or 0)


async def _ranked(session: AsyncSession, expression: str, depth: int,
                  table: str = EXACT) -> list[tuple[int, float]]:
    """(nid, bm25 as a positive score) of the best `depth` matches."""
    weights = ", ".join(str(w) for w in BM25_WEIGHTS)
    result = await session.execute(text(
        f"SELECT rowid, bm25({table}, {weights}) AS s FROM {table} WHERE {table} MATCH :q "
        f"ORDER BY s, rowid LIMIT :k"),
        {"q": expression, "k": depth})
    return [(r[0], -float(r[1])) for r in result]


def _hits(ranked: list[tuple[int, float]], total: int, expression: str,
          complete: bool = True, any_word: bool = False) -> WordHits:
    return WordHits([nid for nid, _ in ranked], total, expression, complete,
                    dict(ranked), any_word)


async def search_stems(session: AsyncSession, key: str, tokens: Sequence[str],
                       category: str | None, status: str | None, depth: int,
                       alone: bool) -> WordHits:
    """Any of the query's words, by their stems ("researching" meets "research"), ranked by
    bm25: a note scores by the words it has, each weighed by its rarity, as a textbook
    BM25 does (framing words such as "how much did" left out)."""
    terms = [f'"{t}"' for t in content_words(list(tokens))]
    return await _search(session, key, terms, category, status, depth, alone, STEMS,
                         any_word=True)


async def search_words(session: AsyncSession, key: str, tokens: Sequence[str],
                       category: str | None, status: str | None, depth: int,
                       alone: bool) -> WordHits:
    """The best `depth` nids, how many notes match in all, and the expression used.

    All words must match; when no note has them all, any word may (stopwords aside).
    Words in very many notes rank by the fields, then the name, then newest first, so
    bm25 never scores more than RANK_ALL_LIMIT notes.
    """
    # (A required stopword also made FTS5's bm25 weigh its doclist: every note.)
    core = fts_expression(required_words(tokens))
    expression = match_expression(key, core, category, status, alone=alone)
    total = await _count(session, expression)
    if total == 0 and len(tokens) > 1:
        terms = fts_terms(tokens)
        terms = [t for t, w in zip(terms, tokens, strict=True)
                 if w.lower() not in STOPWORDS] or terms
        return await _search(session, key, terms, category, status, depth, alone, EXACT,
                             any_word=True)
    if total == 0:
        return WordHits([], 0, expression)
    return await _search(session, key, [core], category, status, depth, alone, EXACT, total)


async def _search(session: AsyncSession, key: str, terms: list[str], category: str | None,
                  status: str | None, depth: int, alone: bool, table: str,
                  total: int | None = None, any_word: bool = False) -> WordHits:
    """`terms` OR-ed (one term: as it is) in `table`, ranked whole when few notes match."""
    core = " OR ".join(terms)
    expression = match_expression(key, core, category, status, alone=alone)
    if total is None:
        total = await _count(session, expression, table)
    if total == 0:
        return WordHits([], 0, expression, any_word=any_word)
    if total <= RANK_ALL_LIMIT:
        return _hits(await _ranked(session, expression, depth, table), total, expression,
                     any_word=any_word)
    # (total stays exact: FTS5 counts from its index)
    narrowings = [(core, FIELD_COLUMNS), (core, "name")]
    if len(terms) > 1:
        rare = await _rare_terms(session, key, terms, category, status, alone, table)
        if rare:
            narrowings.insert(0, (" OR ".join(rare), TEXT_COLUMNS))
    ranked: list[tuple[int, float]] = []
    for narrow_core, columns in narrowings:
        narrow = match_expression(key, narrow_core, category, status, columns, alone=alone)
        if await _count(session, narrow, table) <= RANK_ALL_LIMIT:
            ranked = await _ranked(session, narrow, depth, table)
            break
    if len(ranked) < depth:
        ranked += await _newest(session, expression, table, depth, ranked)
    return _hits(ranked, total, expression, complete=False, any_word=any_word)


async def _rare_terms(session: AsyncSession, key: str, terms: list[str], category: str | None,
                      status: str | None, alone: bool, table: str) -> list[str]:
    """The rarest of `terms` that together match few enough notes to rank whole (what bm25
    would weigh most anyway)."""
    counts = [(await _count(session, match_expression(key, t, category, status, alone=alone),
                            table), t) for t in terms]
    rare: list[str] = []
    seen_count = 0
    for count, term in sorted(counts):
        if seen_count + count > RANK_ALL_LIMIT:
            break
        rare.append(term)
        seen_count += count
    return rare


async def _newest(session: AsyncSession, expression: str, table: str, depth: int,
                  ranked: list[tuple[int, float]]) -> list[tuple[int, float]]:
    """The newest matching notes not in `ranked`, up to `depth` in all (a zero score)."""
    newest = await session.execute(text(
        f"SELECT rowid FROM {table} WHERE {table} MATCH :q ORDER BY rowid DESC "
        "LIMIT :k"), {"q": expression, "k": depth + len(ranked)})
    seen = {nid for nid, _ in ranked}
    return [(r[0], 0.0) for r in newest if r[0] not in seen][:depth - len(ranked)]


async def members(session: AsyncSession, hits: WordHits, nids: Iterable[int]) -> set[int]:
    """Which of `nids` the words match (one rowid-range scan: FTS5 seeks ranges, while
    `rowid IN (...)` would re-run the match per id)."""
    ids = set(nids)
    if not ids:
        return set()
    result = await session.execute(text(
        "SELECT rowid FROM index_fts WHERE index_fts MATCH :q "
        "AND rowid >= :low AND rowid <= :high"),
        {"q": hits.expression, "low": min(ids), "high": max(ids)})
    return {r[0] for r in result} & ids
