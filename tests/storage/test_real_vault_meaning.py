"""Fused search over the real vault (the Obsidian Tasks docs), read-only: rare words and typos
still come first, and questions in a user's own words that share no word with their note now
find it. The two questions of issue 11 are kept here as the measure of what the shipped model
does not reach (bench/bench_retrieval.py has the figures for the whole query set).

One vault embedding for the module (~389 notes, 10-25 s on this machine), kept in pytest's
cache between runs by the vectors' own keys (model id, and a hash of the recipe and of the
texts embedded), so a run with another model or other note texts embeds them again."""

from __future__ import annotations

import hashlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest
import pytest_asyncio

from storage.db import Database
from storage.index.indexer import embed_pending
from storage.meaning.shared_model import Meaning
from storage.vault.files import Vault
from storage.vault.store import Store
from tests.databases import fresh_url
from tests.shared import REAL_VAULT

MEANING = Meaning.load(threads=os.cpu_count() or 1)
pytestmark = [pytest.mark.skipif(not REAL_VAULT.is_dir(), reason="real vault not present"),
              pytest.mark.skipif(not MEANING.available, reason="no embedding model"),
              pytest.mark.asyncio(loop_scope="module")]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def store(tmp_path_factory: pytest.TempPathFactory,
                request: pytest.FixtureRequest) -> AsyncIterator[Store]:
    from storage.meaning import vector_rows

    db = await Database.open(fresh_url(tmp_path_factory.mktemp("real-meaning")))
    fused = Store(Vault(REAL_VAULT), db, meaning=MEANING)
    await fused.refresh()
    # pytest's cache keeps the vectors between runs; without it (-p no:cacheprovider) a
    # temporary folder does.
    cached = getattr(request.config, "cache", None)
    folder = cached.mkdir("real-vault-vectors") if cached is not None \
        else tmp_path_factory.mktemp("real-vault-vectors")
    cache = folder / (
        hashlib.sha256(MEANING.model.encode()).hexdigest()[:16] + ".npz")
    key, model = fused.index.key, MEANING.model
    if cache.is_file():
        with np.load(cache) as saved:
            async with db.session() as session:
                notes = await vector_rows.pending(session, key, model, 100_000)
                await vector_rows.write(session, key, model, [
                    (n.key, 0, saved[n.key]) for n in notes if n.key in saved.files])
                await session.commit()
    await embed_pending(db, key, MEANING)  # what the cache did not have (RECIPE: one text)
    async with db.session() as session:
        loaded = await vector_rows.load(session, key, model)
    np.savez(cache, **dict(zip(loaded.keys, loaded.matrix, strict=True)))
    yield fused
    await db.close()


async def _rank(store: Store, query: str, note: str) -> int | None:
    found = await store.search(query, limit=10)
    names = [Path(e.path).name for e in found.entries]
    return names.index(note) + 1 if note in names else None


@pytest.mark.parametrize(("query", "note"), [
    ("taskwarrior", "Urgency.md"),  # a rare word: words find it, meaning must not bury it
    ("lookbehind", "Regular Expressions.md"),
    ("Urgancy", "Urgency.md"),  # typos: fuzzy names
    ("Kanbam plugin", "Kanban Plugin.md"),
])
async def test_rare_words_and_typos_still_come_first(store: Store, query: str, note: str) -> None:
    assert await _rank(store, query, note) == 1


@pytest.mark.parametrize(("query", "note"), [
    ("this job can't begin until that other one is finished", "Task Dependencies.md"),
    ("turn on more verbose diagnostic messages", "Console logging facilities in Tasks.md"),
    ("a chore that comes back each week by itself", "Recurring Tasks.md"),
    ("take pictures of the screen for the user guide", "Screenshots in documentation.md"),
])
async def test_questions_in_a_users_own_words_find_their_note(
        store: Store, query: str, note: str) -> None:
    rank = await _rank(store, query, note)
    assert rank is not None and rank <= 3


@pytest.mark.xfail(strict=True, reason=(
    "all-MiniLM-L6-v2 does not connect these words: 'on my plate this week' vs 'coming 7 "
    "days' has cosine 0.22, below unrelated pages (not in the first 50); the calendar page "
    "is 20th (cosine under the 0.3 floor; 5th with a floor of 0.2, which found no more "
    "overall). docs/performance.md, 'Search by meaning'"))
@pytest.mark.parametrize(("query", "note"), [
    ("what's on my plate this week", "Find tasks for coming 7 days.md"),
    ("lay my to-dos out on a month grid", "Show tasks in a calendar.md"),
])
async def test_the_issue_examples_in_the_top_3(store: Store, query: str, note: str) -> None:
    rank = await _rank(store, query, note)
    assert rank is not None and rank <= 3
