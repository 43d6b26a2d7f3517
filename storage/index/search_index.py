"""`SearchIndex`: one vault's view of the index: refresh, search, list, lookup, backlinks,
summary. Search fuses word matches (FTS5 on SQLite, a weighted tsvector on PostgreSQL) with
typo-tolerant names (rapidfuzz).

Text from users reaches SQL through `clean_text`, as notes do when indexed (a query with a NUL
is a query, not a database error)."""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import Awaitable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from storage.index import backlinks as _backlinks
from storage.index import fts5, fusion, tsvector
from storage.index import refresh as _refresh
from storage.index.extract import text_key
from storage.index.fuzzy_names import FUZZY_MAX_MATCHES, VaultState, names_for, vault_state
from storage.index.words import WordHits, query_tokens
from storage.text import clean_text, name_text, visible_name
from storage.types import (
    CATEGORIES,
    BacklinkList,
    EntryList,
    EntrySummary,
    RefreshStats,
    VaultSummary,
)
from storage.vault.files import Vault
from storage.vault.links import link_key

if TYPE_CHECKING:
    from storage.meaning.vectors import Matrix

MAX_LIMIT = 200
# A note found by meaning alone is shown only this close to the query (cosine): below it
# the nearest notes are not about the query at all (calibrated on the real vault, see
# docs/performance.md), and "no match" is the honest answer.
MEANING_FLOOR = 0.3
SNIPPET_CHARS = 140
_SUMMARY_COLUMNS = (
    "n.nid, n.path, n.id, n.name, n.category, n.status, n.one_liner, n.next_action, "
    "n.context, substr(n.body, 1, 400), n.updated"
)


def _filters(category: str | None, status: str | None, params: dict[str, Any]) -> str:
    sql = ""
    if category is not None:
        sql += " AND n.category = :category"
        params["category"] = clean_text(category)
    if status is not None:
        sql += " AND n.status = :status"
        params["status"] = clean_text(status)
    return sql


@dataclass(frozen=True)
class MeaningQuery:
    """What search by meaning needs: the model the vectors were made with, and the query's
    vector (a task, so the embedding runs while the words are searched; None: no model)."""

    model: str
    vector: Awaitable[Matrix | None]
    floor: float = MEANING_FLOOR  # for notes found by meaning alone


async def _by_meaning(session: AsyncSession, key: str, state: VaultState,
                      meaning: MeaningQuery | None, category: str | None, status: str | None,
                      depth: int, floor: float) -> list[tuple[int, float]]:
    probe = await _start_meaning(session, key, state, meaning, category, status, depth)
    return await _finish_meaning(session, key, probe, category, status, depth, floor)


async def _start_meaning(session: AsyncSession, key: str, state: VaultState,
                         meaning: MeaningQuery | None, category: str | None,
                         status: str | None, depth: int) -> asyncio.Task[Any] | None:
    """The nearest keys by meaning, as a task: the query's embedding and the matrix product
    run in worker threads while the words are searched (the matrix is loaded first, on this
    session; the task itself touches no database)."""
    if meaning is None or not meaning.model:
        return None
    from storage.meaning import cache

    matrix = await cache.matrix_for(session, key, meaning.model, state.vector_generation)
    want = cache.depth_for(depth, category is not None or status is not None)

    async def nearest() -> list[tuple[str, float]]:
        return await cache.top_keys(matrix, await meaning.vector, want)

    return asyncio.ensure_future(nearest())


async def _finish_meaning(session: AsyncSession, key: str, probe: asyncio.Task[Any] | None,
                          category: str | None, status: str | None, depth: int,
                          floor: float) -> list[tuple[int, float]]:
    if probe is None:
        return []
    from storage.meaning import cache

    return await cache.notes_of(session, key, await probe, depth=depth, floor=floor,
                                       category=category, status=status)


class WordSearch(Protocol):
    """What fts5.py (SQLite) and tsvector.py (PostgreSQL) both provide."""

    async def search_words(self, session: AsyncSession, key: str, tokens: Sequence[str],
                           category: str | None, status: str | None, depth: int,
                           alone: bool) -> WordHits: ...

    async def members(self, session: AsyncSession, hits: WordHits,
                      nids: Iterable[int]) -> set[int]: ...


def _words(session: AsyncSession) -> WordSearch:
    """The word search of the session's database."""
    return fts5 if session.get_bind().dialect.name == "sqlite" else tsvector


class SearchIndex:
    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        self.key = clean_text(str(vault.root))

    # --- refreshing ---------------------------------------------------------------------------

    async def refresh(self, session: AsyncSession) -> RefreshStats:
        """Bring the rows in line with the files: add, update (by hash), remove."""
        return await _refresh.refresh(session, self.vault, self.key)

    async def refresh_paths(self, session: AsyncSession, rels: list[str]) -> None:
        """Re-index just these paths (after our own writes): present -> indexed, gone -> removed."""
        await _refresh.refresh_paths(session, self.vault, self.key, rels)

    # --- reading ------------------------------------------------------------------------------

    async def _summaries(self, session: AsyncSession, nids: Sequence[int],
                         scores: Mapping[int, float] | None = None,
                         signals: Mapping[int, dict[str, int]] | None = None,
                         ) -> list[EntrySummary]:
        if not nids:
            return []
        result = await session.execute(text(
            f"SELECT {_SUMMARY_COLUMNS} FROM index_notes n "
            f"WHERE n.nid IN ({', '.join(str(int(i)) for i in nids)})"))
        rows = {r[0]: r for r in result}
        out = []
        for nid in nids:
            r = rows.get(nid)
            if r is None:
                continue
            snippet = r[6] or r[7] or r[8] or " ".join((r[9] or "").split())[:SNIPPET_CHARS]
            # (name_text: a row indexed before names were cleaned shows no bidi control)
            out.append(EntrySummary(path=r[1], id=r[2], name=name_text(r[3] or "") or r[1],
                                    category=r[4], status=r[5],
                                    snippet=snippet or None, updated=r[10],
                                    score=None if scores is None else scores.get(nid),
                                    signals=None if signals is None else signals.get(nid)))
        return out

    async def search(self, session: AsyncSession, query: str, *, category: str | None = None,
                     status: str | None = None, limit: int = 10,
                     meaning: MeaningQuery | None = None) -> EntryList:
        """Words (FTS5 bm25 / tsvector ts_rank_cd), typo-tolerant names (rapidfuzz) and, with
        `meaning`, the nearest notes by sentence vectors, fused by reciprocal rank; a note
        named exactly as the query comes first. Each entry says which signals found it."""
        limit = max(0, min(int(limit), MAX_LIMIT))
        tokens = query_tokens(query if isinstance(query, str) else "")
        if not tokens:
            return EntryList([], 0)
        depth = max(limit * 3, 30)
        category = None if category is None else clean_text(category)
        status = None if status is None else clean_text(status)
        state = await vault_state(session, self.key)
        probe = await _start_meaning(session, self.key, state, meaning, category, status, depth)
        floor = meaning.floor if meaning is not None else 0.0
        try:
            return await self._fused(session, query, tokens, category, status, limit, depth,
                                     state, probe, floor)
        finally:
            if probe is not None and not probe.done():
                probe.cancel()

    async def _fused(self, session: AsyncSession, query: str, tokens: list[str],
                     category: str | None, status: str | None, limit: int, depth: int,
                     state: VaultState, probe: asyncio.Task[Any] | None,
                     floor: float) -> EntryList:
        words = _words(session)
        hits = await words.search_words(session, self.key, tokens, category, status, depth,
                                        state.alone)
        ranked, total = hits.ranked, hits.total
        names = await names_for(session, self.key, state.generation)
        fuzzy = names.match(" ".join(tokens), category, status)
        fuzzy_ranked = sorted(fuzzy, key=lambda n: -fuzzy[n])[:FUZZY_MAX_MATCHES]
        # Count fuzzy-only notes once: those the word query did not already match. Exact when
        # the word matches are few; above that, a name with every word exact counts as one of
        # them (checking thousands of ids would cost more than the search).
        outside = set(fuzzy_ranked) - set(ranked)
        if outside and total > len(ranked):
            if hits.complete:
                outside -= await words.members(session, hits, outside)
            else:
                outside = {nid for nid in outside if fuzzy[nid] < 100.0}
        total += len(outside)
        near = await _finish_meaning(session, self.key, probe, category, status, depth, floor)
        lists = {"words": ranked, "name": fuzzy_ranked, "meaning": [nid for nid, _ in near]}
        scores = fusion.fuse(lists.values())
        # Filtered here, not in SQL: with a category in the WHERE, SQLite prefers the category
        # index and scans thousands of rows; by name it is one index probe.
        named = await session.execute(text(
            "SELECT nid, category, status FROM index_notes WHERE vault = :v AND name_key = :q"),
            {"v": self.key, "q": text_key(clean_text(query))})
        exact = [nid for nid, note_category, note_status in named
                 if (category is None or note_category == category)
                 and (status is None or note_status == status)]
        total += sum(1 for nid in exact if nid not in scores)
        fusion.boost(scores, exact)
        order = fusion.order(scores, ranked, fuzzy)[:limit]
        signals = fusion.signals(order, lists, exact)
        entries = await self._summaries(session, order, scores, signals)
        return EntryList(entries, max(total, len(entries)))

    async def nearby(self, session: AsyncSession, meaning: MeaningQuery, *, k: int,
                     floor: float, exclude: Collection[str] = ()) -> builtins.list[EntrySummary]:
        """The k notes nearest a text by meaning (cosine >= floor, as `score`), except the
        notes whose id or path is in `exclude`."""
        state = await vault_state(session, self.key)
        near = await _by_meaning(session, self.key, state, meaning, None, None,
                                 k + len(exclude), floor=floor)
        entries = await self._summaries(session, [nid for nid, _ in near], dict(near))
        return [e for e in entries if e.id not in exclude and e.path not in exclude][:k]

    async def list(self, session: AsyncSession, *, category: str | None = None,
                   status: str | None = None, limit: int = 10) -> EntryList:
        """Newest `updated` first."""
        limit = max(0, min(int(limit), MAX_LIMIT))
        params: dict[str, Any] = {"v": self.key, "k": limit}
        where = "n.vault = :v" + _filters(category, status, params)
        return await self._page(session, where, "n.updated_ts DESC, n.path", params)

    async def due(self, session: AsyncSession, *, after: str | None, until: str | None,
                  category: str | None = None, status: str | None = None,
                  open_only: bool = True, limit: int = 10) -> EntryList:
        """Notes due in [after, until] (ISO days compared on `due_date`'s first ten
        characters; either end may be open), soonest first; with `open_only`, not done."""
        limit = max(0, min(int(limit), MAX_LIMIT))
        params: dict[str, Any] = {"v": self.key, "k": limit}
        where = "n.vault = :v AND n.due_date IS NOT NULL" + _filters(category, status, params)
        if after is not None:
            where += " AND substr(n.due_date, 1, 10) >= :after"
            params["after"] = after
        if until is not None:
            where += " AND substr(n.due_date, 1, 10) <= :until"
            params["until"] = until
        if open_only:
            where += " AND (n.status IS NULL OR n.status <> 'done')"
        return await self._page(session, where, "substr(n.due_date, 1, 10), n.path", params)

    async def _page(self, session: AsyncSession, where: str, order: str,
                    params: dict[str, Any]) -> EntryList:
        """The first `:k` notes matching `where` in `order`, and how many match in all."""
        result = await session.execute(text(
            f"SELECT n.nid FROM index_notes n WHERE {where} ORDER BY {order} LIMIT :k"), params)
        nids = [r[0] for r in result]
        total = await session.execute(text(f"SELECT count(*) FROM index_notes n WHERE {where}"),
                                      params)
        return EntryList(await self._summaries(session, nids), int(total.scalar() or 0))

    async def lookup(self, session: AsyncSession, ref: str) -> builtins.list[EntrySummary]:
        """Every note `ref` names exactly: id, path (.md optional), name or file stem."""
        ref = clean_text(ref).strip() if isinstance(ref, str) else ""
        while ref.startswith("./"):
            ref = ref[2:]
        if not ref:
            return []
        bare = ref[:-3] if ref.lower().endswith(".md") else ref
        params = {"v": self.key, "ref": ref, "p1": ref, "p2": ref + ".md",
                  "name": text_key(visible_name(ref)), "stem": link_key(bare)}
        # One indexed SELECT per way of naming a note: with the four as one OR, SQLite walked
        # every row of the vault (56 ms a lookup at 20k notes, bench/bench_cli.py).
        result = await session.execute(text(
            "SELECT nid, 0, path FROM index_notes WHERE vault = :v AND id = :ref "
            "UNION ALL SELECT nid, 1, path FROM index_notes "
            "WHERE vault = :v AND path IN (:p1, :p2) "
            "UNION ALL SELECT nid, 2, path FROM index_notes WHERE vault = :v AND name_key = :name "
            "UNION ALL SELECT nid, 3, path FROM index_notes WHERE vault = :v AND stem_key = :stem"),
            params)
        best: dict[int, tuple[int, str]] = {}  # each note once, by its closest way
        for nid, way, path in result:
            best[nid] = min(best.get(nid, (way, path)), (way, path))
        nids = sorted(best, key=best.__getitem__)
        closest = min((way for way, _ in best.values()), default=3)
        if closest <= 1:  # an id or a path is exact; names only guess
            nids = [nid for nid in nids if best[nid][0] == closest]
        if closest == 0 and len(nids) > 1:  # an id several files carry: the app's note
            owned = await self._owned(session, ref, [best[nid][1] for nid in nids])
            nids = [nid for nid in nids if best[nid][1] in owned]
        return await self._summaries(session, nids)

    async def _owned(self, session: AsyncSession, entry_id: str,
                     paths: builtins.list[str]) -> builtins.list[str]:
        """Of the files carrying `entry_id`, the one its capture receipt points at when it is
        one of them: the note the app made under that id (a copy made by hand, or a file from
        someone else, may carry the id too). Else all of them."""
        if len(paths) < 2:
            return paths
        from storage.repositories.receipts import receipt_for_entry  # (rare: the ORM loads)

        receipt = await receipt_for_entry(session, entry_id)
        return [receipt.path] if receipt is not None and receipt.path in paths else paths

    async def named(self, session: AsyncSession, words: str) -> builtins.list[EntrySummary]:
        """The notes whose name holds every word of `words` (typos allowed, as the name search
        allows them): the one whose words all match exactly when there is one, else every
        match, closest first. For a person naming a note ("the passport"), never a guess: a
        caller acts only on exactly one."""
        state = await vault_state(session, self.key)
        scores = (await names_for(session, self.key, state.generation)).match(words, None, None)
        exact = [nid for nid, score in scores.items() if score >= 100.0]
        nids = exact or sorted(scores, key=lambda nid: (-scores[nid], nid))
        return await self._summaries(session, nids[:FUZZY_MAX_MATCHES])

    async def paths_with_id(self, session: AsyncSession, entry_id: str) -> builtins.list[str]:
        """The paths of the notes whose id is exactly `entry_id` (the app's own alone, when its
        receipt names one of several: `_owned`): one indexed query (no ORDER BY: SQLite would
        walk the vault's rows in path order instead of using the id index)."""
        result = await session.execute(text(
            "SELECT path FROM index_notes WHERE vault = :v AND id = :id"),
            {"v": self.key, "id": entry_id})
        return await self._owned(session, entry_id, sorted(row[0] for row in result))

    async def stems_taken(self, session: AsyncSession, stem: str) -> set[str]:
        """The file stems (case-folded) of notes named `stem` or `stem-<anything>`: a new
        note's stem is chosen among the free ones, so `[[stem]]` names one note."""
        key = link_key(stem)
        if session.get_bind().dialect.name == "sqlite":
            # SQLite compares bytes: every such stem sorts in [key, key + "."), one index
            # range instead of a substr() over each of the vault's rows ("-" < ".").
            result = await session.execute(text(
                "SELECT stem_key FROM index_notes WHERE vault = :v AND stem_key >= :s "
                "AND stem_key < :e"), {"v": self.key, "s": key, "e": key + "."})
        else:  # a collation may sort punctuation apart from letters: no range is safe
            result = await session.execute(text(
                "SELECT stem_key FROM index_notes WHERE vault = :v AND (stem_key = :s OR "
                "substr(stem_key, 1, :n) = :p)"),
                {"v": self.key, "s": key, "n": len(key) + 1, "p": key + "-"})
        return {row[0] for row in result if row[0] == key or row[0].startswith(key + "-")}

    async def backlinks(self, session: AsyncSession, rel: str) -> BacklinkList:
        """Notes linking to `rel`, links resolved now (Obsidian's rule), with the line."""
        return await _backlinks.backlinks(session, self.key, clean_text(rel))

    async def summary(self, session: AsyncSession, *, max_names: int = 5) -> VaultSummary:
        """Counts per category (+ "other"), a few active projects, the inbox size."""
        result = await session.execute(text(
            "SELECT category, count(*) FROM index_notes WHERE vault = :v GROUP BY category"),
            {"v": self.key})
        counts = {c: 0 for c in CATEGORIES}
        counts["other"] = 0
        for category, count in result:
            counts[category if category in CATEGORIES else "other"] += int(count)
        active = await session.execute(text(
            "SELECT name FROM index_notes WHERE vault = :v AND category = 'projects' "
            "AND status = 'active' ORDER BY updated_ts DESC, path LIMIT :k"),
            {"v": self.key, "k": max(0, max_names)})
        return VaultSummary(counts=counts, total=sum(counts.values()),
                            active_projects=[r[0] for r in active],
                            inbox_waiting=counts["inbox"])
