"""Search by meaning, as one search asks it: the query's vector and the vault's matrix
(storage/meaning/cache.py), started while the words are searched, then the notes of the
nearest passages."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy.ext.asyncio import AsyncSession

from storage.index.fuzzy_names import VaultState

if TYPE_CHECKING:
    from storage.meaning.cache import Near
    from storage.meaning.vectors import Matrix

# A note found by meaning alone is shown only this close to the query (cosine): below it
# the nearest notes are not about the query at all (calibrated on the real vault, see
# docs/performance.md), and "no match" is the honest answer.
MEANING_FLOOR = 0.3


@dataclass(frozen=True)
class MeaningQuery:
    """What search by meaning needs: the model the vectors were made with, and the query's
    vector (a task, so the embedding runs while the words are searched; None: no model)."""

    model: str
    vector: Awaitable[Matrix | None]
    floor: float = MEANING_FLOOR  # for notes found by meaning alone


async def by_meaning(session: AsyncSession, key: str, state: VaultState,
                      meaning: MeaningQuery | None, category: str | None, status: str | None,
                      depth: int, floor: float) -> list[Near]:
    probe = await start_meaning(session, key, state, meaning, category, status, depth)
    return await finish_meaning(session, key, probe, category, status, depth, floor)


async def start_meaning(session: AsyncSession, key: str, state: VaultState,
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


async def finish_meaning(session: AsyncSession, key: str, probe: asyncio.Task[Any] | None,
                          category: str | None, status: str | None, depth: int,
                          floor: float) -> list[Near]:
    if probe is None:
        return []
    from storage.meaning import cache

    return await cache.notes_of(session, key, await probe, depth=depth, floor=floor,
                                       category=category, status=status)
