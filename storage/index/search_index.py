"""`SearchIndex`: one vault's view of the index: refresh, search, list, lookup, backlinks,
summary. Search fuses words as written and by their stems (FTS5 on SQLite, weighted tsvectors
on PostgreSQL), typo-tolerant names (rapidfuzz) and the meaning of each note's passages
(fusion.py); each hit carries its date and the passage that matched (summaries.py).

Text from users reaches SQL through `clean_text`, as notes do when indexed (a query with a NUL
is a query, not a database error)."""

from __future__ import annotations

import asyncio
import builtins
import dataclasses
import datetime as dt
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, Protocol

from sqlalchemy import bindparam, text
from sqlalchemy.ext.asyncio import AsyncSession

from storage.index import backlinks as _backlinks
from storage.index import fts5, fusion, summaries, tsvector
from storage.index import refresh as _refresh
from storage.index.extract import text_key
from storage.index.fuzzy_names import (
    FUZZY_MAX_MATCHES,
    VaultState,
    joined,
    names_for,
    vault_state,
)
from storage.index.meaning_probe import (
    MeaningQuery,
    by_meaning,
    finish_meaning,
    start_meaning,
)
from storage.index.summaries import Shown
from storage.index.time_words import TimeRange, time_range
from storage.index.words import WordHits, content_words, query_tokens
from storage.text import clean_text, visible_name
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

MAX_LIMIT = 200
# Notes asked of meaning: enough that its nearest and farthest frame a fair 0..1 (fusion.py).
MEANING_DEPTH = 30


def _filters(category: str | None, status: str | None, params: dict[str, Any]) -> str:
    sql = ""
    if category is not None:
        sql += " AND n.category = :category"
        params["category"] = clean_text(category)
    if status is not None:
        sql += " AND n.status = :status"
        params["status"] = clean_text(status)
    return sql


class WordSearch(Protocol):
    """What fts5.py (SQLite) and tsvector.py (PostgreSQL) both provide."""

    async def search_words(self, session: AsyncSession, key: str, tokens: Sequence[str],
                           category: str | None, status: str | None, depth: int,
                           alone: bool) -> WordHits: ...

    async def search_stems(self, session: AsyncSession, key: str, tokens: Sequence[str],
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
        self.key = clean_text(vault.key)

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
                         shown: Mapping[int, Shown] | None = None,
                         ) -> list[EntrySummary]:
        return await summaries.summaries(session, self.key, nids, scores, signals, shown)

    async def search(self, session: AsyncSession, query: str, *, category: str | None = None,
                     status: str | None = None, limit: int = 10,
                     meaning: MeaningQuery | None = None,
                     today: dt.date | None = None) -> EntryList:
        """Word stems and exact words (FTS5 bm25 / tsvector ts_rank_cd), typo-tolerant names
        (rapidfuzz) and, with `meaning`, the notes whose passages are nearest by sentence
        vectors, fused by score (fusion.py); a note named exactly as the query comes first,
        and when the query names a time ("in May", "last week"), the notes of that time
        come before the others. Each entry says which signals found it, its date, and the
        passage that matched."""
        limit = max(0, min(int(limit), MAX_LIMIT))
        query = query if isinstance(query, str) else ""
        when = time_range(query, today or dt.datetime.now(dt.UTC).date())
        tokens = query_tokens(query)
        if when is not None:  # the time ranks by the notes' days; words and names the rest
            if not content_words(query_tokens(when.rest), strict=True):
                return await self._dated(session, when, category, status, limit)
            tokens = query_tokens(when.rest)
        if not tokens:
            return EntryList([], 0)
        depth = max(limit * 3, 30)
        category = None if category is None else clean_text(category)
        status = None if status is None else clean_text(status)
        state = await vault_state(session, self.key)
        probe = await start_meaning(session, self.key, state, meaning, category, status,
                                     max(depth, MEANING_DEPTH))
        floor = meaning.floor if meaning is not None else 0.0
        try:
            return await self._fused(session, query, tokens, category, status, limit, depth,
                                     state, probe, floor, when)
        finally:
            if probe is not None and not probe.done():
                probe.cancel()

    async def _fused(self, session: AsyncSession, query: str, tokens: list[str],
                     category: str | None, status: str | None, limit: int, depth: int,
                     state: VaultState, probe: asyncio.Task[Any] | None,
                     floor: float, when: TimeRange | None = None) -> EntryList:
        words = _words(session)
        hits = await words.search_words(session, self.key, tokens, category, status, depth,
                                        state.alone)
        if state.alone and words is fts5 and await joined(session, self.key):  # one came since
            state = dataclasses.replace(state, alone=False)
            hits = await words.search_words(session, self.key, tokens, category, status,
                                            depth, alone=False)
        # Stems are asked when the exact words leave room: no note had every word (a
        # question), or few did (a word form: "researching" for "research"); and only where
        # the words are selective (their match was ranked whole): in a large vault a common
        # word's notes are narrowed by the exact search already, at the same cost again.
        stems = WordHits([], 0, "")
        if hits.complete and (hits.any_word or hits.total < depth):
            stems = await words.search_stems(session, self.key, tokens, category, status,
                                             depth, state.alone)
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
        near = await finish_meaning(session, self.key, probe, category, status,
                                     max(depth, MEANING_DEPTH), floor)
        stems_only = fusion.weak(stems.scores, set(ranked) | set(fuzzy_ranked)
                                 | {n.nid for n in near})
        scores = fusion.fuse(fusion.words(stems.scores, hits.scores, leave=stems_only),
                             names.closeness({nid: fuzzy[nid] for nid in fuzzy_ranked},
                                             len(tokens)),
                             fusion.meaning({n.nid: n.score for n in near},
                                            {n.nid: n.second for n in near}))
        # Filtered here, not in SQL: with a category in the WHERE, SQLite prefers the category
        # index and scans thousands of rows; by name it is one index probe.
        named = await session.execute(text(
            "SELECT nid, category, status FROM index_notes WHERE vault = :v AND name_key = :q"),
            {"v": self.key, "q": text_key(clean_text(query))})
        exact = [nid for nid, note_category, note_status in named
                 if (category is None or note_category == category)
                 and (status is None or note_status == status)]
        total += sum(1 for nid in exact if nid not in scores)
        if when is not None:
            fusion.boost(scores, await self._within(session, scores, when), fusion.IN_TIME)
        fusion.boost(scores, exact)
        order = fusion.order(scores, stems.ranked or ranked, fuzzy)[:limit]
        lists = {"words": ranked, "stems": stems.ranked, "name": fuzzy_ranked,
                 "meaning": [n.nid for n in near]}
        signals = fusion.signals(order, lists, exact)
        shown = await summaries.passages_shown(session, order, query,
                                                {n.nid: n.passage for n in near})
        entries = await self._summaries(session, order, scores, signals, shown)
        return EntryList(entries, max(total, len(entries)))

    async def _within(self, session: AsyncSession, nids: Iterable[int],
                      when: TimeRange) -> builtins.list[int]:
        """Of `nids`, the notes whose day is in the range."""
        ids = [int(n) for n in nids]
        if not ids:
            return []
        result = await session.execute(text(
            "SELECT nid FROM index_notes WHERE nid IN :ids AND dated >= :a AND dated <= :b")
            .bindparams(bindparam("ids", expanding=True)),
            {"ids": ids, "a": when.first.isoformat(), "b": when.last.isoformat()})
        return [r[0] for r in result]

    async def _dated(self, session: AsyncSession, when: TimeRange, category: str | None,
                     status: str | None, limit: int) -> EntryList:
        """A query that is only a time ("notes from last week"): the notes of those days,
        newest first."""
        params: dict[str, Any] = {"v": self.key, "k": limit, "a": when.first.isoformat(),
                                  "b": when.last.isoformat()}
        where = "n.vault = :v AND n.dated >= :a AND n.dated <= :b" + _filters(
            category, status, params)
        return await self._page(session, where, "n.dated DESC, n.updated_ts DESC, n.path",
                                params)

    async def nearby(self, session: AsyncSession, meaning: MeaningQuery, *, k: int,
                     floor: float, exclude: Collection[str] = ()) -> builtins.list[EntrySummary]:
        """The k notes nearest a text by meaning (cosine >= floor, as `score`), except the
        notes whose id or path is in `exclude`."""
        state = await vault_state(session, self.key)
        near = await by_meaning(session, self.key, state, meaning, None, None,
                                 k + len(exclude), floor=floor)
        entries = await self._summaries(session, [n.nid for n in near],
                                        {n.nid: n.score for n in near})
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
