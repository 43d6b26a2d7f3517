"""Typo-tolerant name matching (rapidfuzz) over a per-vault, per-process vocabulary cache."""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from rapidfuzz import fuzz, process
from rapidfuzz.utils import default_process
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from storage.index.words import MAX_QUERY_TOKENS, STOPWORDS

FUZZY_CUTOFF = 80.0
FUZZY_MIN_TOKEN = 3  # shorter words are all "similar" to something; word search handles them
FUZZY_MAX_MATCHES = 200


@dataclass
class NameCache:
    """The words of every name in a vault, for typo-tolerant name matching."""

    generation: int
    meta: dict[int, tuple[str | None, str | None]]  # nid -> (category, status)
    by_length: dict[int, list[str]]  # vocabulary by word length
    word_nids: dict[str, list[int]]
    sizes: dict[int, int]  # nid -> how many words its name has

    @classmethod
    def build(cls, generation: int, rows: Iterable[Sequence[Any]]) -> NameCache:
        meta: dict[int, tuple[str | None, str | None]] = {}
        word_nids: dict[str, list[int]] = {}
        sizes: dict[int, int] = {}
        for nid, name, category, status in rows:
            meta[nid] = (category, status)
            words = list(dict.fromkeys(default_process(name).split()))
            sizes[nid] = len(words)
            for word in words:
                word_nids.setdefault(word, []).append(nid)
        by_length: dict[int, list[str]] = {}
        for word in word_nids:
            by_length.setdefault(len(word), []).append(word)
        return cls(generation, meta, by_length, word_nids, sizes)

    def closeness(self, scores: dict[int, float], query_words: int) -> dict[int, float]:
        """`match`'s scores with names of more words than the query a little lower: of
        "Urgency" and "Urgency Scores Examples", "urgancy" means the first."""
        return {nid: score - 0.5 * max(0, self.sizes.get(nid, 0) - query_words)
                for nid, score in scores.items()}

    def match(self, query: str, category: str | None, status: str | None) -> dict[int, float]:
        """nid -> score (>= FUZZY_CUTOFF) of names whose words match the query's words.

        Each query word scores its best WRatio against the name's words; a name's score is the
        mean over the query words, so every word must be close for a name to count.
        """
        tokens = [t for t in dict.fromkeys(default_process(query).split())
                  if len(t) >= FUZZY_MIN_TOKEN and t not in STOPWORDS][:MAX_QUERY_TOKENS]
        if not tokens:
            return {}
        totals: dict[int, float] = {}
        for token in tokens:
            # A score >= 80 needs lengths within 2/3..3/2 of each other; WRatio would score a
            # longer word by partial match (substring), which is the word search's prefix job.
            low, high = math.ceil(len(token) * 2 / 3), len(token) * 3 // 2
            words = [w for n in range(low, high + 1) for w in self.by_length.get(n, ())]
            hits = process.extract(token, words, scorer=fuzz.WRatio, processor=None,
                                   score_cutoff=FUZZY_CUTOFF, limit=None)
            best: dict[int, float] = {}
            for word, score, _ in hits:
                for nid in self.word_nids[word]:
                    if score > best.get(nid, 0.0):
                        best[nid] = score
            for nid, score in best.items():
                totals[nid] = totals.get(nid, 0.0) + score
        out: dict[int, float] = {}
        needed = FUZZY_CUTOFF * len(tokens)
        for nid, total in totals.items():
            if total < needed:
                continue
            cat, stat = self.meta[nid]
            if (category is None or cat == category) and (status is None or stat == status):
                out[nid] = total / len(tokens)
        return out


# Caches are only caches: a generation number in the database says when they are stale, so
# several processes (or replicas) may share one database safely. The vaults searched lately
# only: a process serving thousands of people keeps NAMES_KEPT of them.
NAMES_KEPT = 512
_NAME_CACHES: OrderedDict[str, NameCache] = OrderedDict()


@dataclass(frozen=True)
class VaultState:
    generation: int  # bumped by every change to the vault's note rows
    vector_generation: int  # bumped when its vectors change
    alone: bool  # the only vault in the index


async def vault_state(session: AsyncSession, key: str) -> VaultState:
    """The vault's generations, and whether it is the only vault in the index (its own row
    and at most one other: two primary-key probes, whatever the number of vaults)."""
    rows = (await session.execute(text(
        "SELECT vault, generation, vector_generation FROM index_vaults WHERE vault = :v "
        "UNION ALL SELECT * FROM (SELECT vault, 0, 0 FROM index_vaults WHERE vault <> :v "
        "LIMIT 1) AS other"), {"v": key})).all()
    mine = [(int(g), int(vg)) for v, g, vg in rows if v == key]
    generation, vectors = mine[0] if mine else (0, 0)
    return VaultState(generation, vectors, len(rows) == len(mine))


async def joined(session: AsyncSession, key: str) -> bool:
    """Whether a vault other than `key` is in the index now (one probe): a search that found
    the vault alone asks again after its word search, as on SQLite its reads are not one
    snapshot and a vault indexed meanwhile would slip into a search without the vault term."""
    return (await session.execute(text(
        "SELECT 1 FROM index_vaults WHERE vault <> :v LIMIT 1"), {"v": key})).first() is not None


async def names_for(session: AsyncSession, key: str, generation: int) -> NameCache:
    """The vault's name vocabulary, rebuilt when its generation moved on."""
    cache = _NAME_CACHES.get(key)
    if cache is None or cache.generation != generation:
        result = await session.execute(
            text("SELECT nid, name, category, status FROM index_notes WHERE vault = :v"),
            {"v": key})
        cache = NameCache.build(generation, result.all())
        _NAME_CACHES[key] = cache
    _NAME_CACHES.move_to_end(key)
    while len(_NAME_CACHES) > NAMES_KEPT:
        _NAME_CACHES.popitem(last=False)
    return cache
