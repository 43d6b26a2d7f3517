"""Vectors beside the index: only new or changed text is embedded, removed notes lose their
vectors, another model re-embeds; search fuses words, names and meaning and says which
matched; filters hold; without the model search is what it was. Real model, real database
(SQLite, or PostgreSQL with `BRAIN_TEST_DB=postgres`)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from sqlalchemy import text

from storage.db import Database
from storage.index.indexer import EmbedStats, embed_pending
from storage.meaning.shared_model import Meaning
from storage.vault.files import Vault
from storage.vault.store import Store
from tests.databases import fresh_url
from tests.tools.conftest import write_note

MEANING = Meaning.load()
pytestmark = pytest.mark.skipif(not MEANING.available, reason=f"no model: {MEANING.why}")

NOTES = {
    "projects/quarterly-plan.md": ("---\nname: Quarterly plan\ncategory: projects\nstatus: active\n"
                                   "---\nHow much money each team gets from July to September."
                                   "\n"),
    "people/sara-chen.md": ("---\nname: Sara Chen\ncategory: people\n---\nFinance lead; "
                            "reviews every spending request.\n"),
    "admin/dentist.md": ("---\nname: Dentist\ncategory: admin\nstatus: todo\n---\nMove the "
                         "check-up to a morning slot.\n"),
    "ideas/garden.md": ("---\nname: Garden beds\ncategory: ideas\n---\nRaised beds for "
                        "tomatoes and herbs behind the shed.\n"),
}


async def _store(tmp_path: Path, meaning: Meaning = MEANING, name: str = "b") -> Store:
    root = tmp_path / "vault"
    for rel, body in NOTES.items():
        if not (root / rel).exists():
            write_note(root, rel, body)
    db = await Database.open(fresh_url(tmp_path, name))
    store = Store(Vault(root), db, meaning=meaning)
    await store.refresh()
    return store


async def _embed(store: Store, meaning: Meaning | None = None) -> EmbedStats:
    await store.refresh()
    return await embed_pending(store.db, store.index.key, meaning or store.meaning)


async def _vector_rows(store: Store) -> list[tuple[str, str]]:
    async with store.db.session() as session:
        result = await session.execute(text(
            "SELECT model, key FROM index_vectors WHERE vault = :v ORDER BY vid"),
            {"v": store.index.key})
        return [(r[0], r[1]) for r in result]


async def test_only_new_or_changed_text_is_embedded_and_removed_notes_lose_vectors(
        tmp_path: Path) -> None:
    store = await _store(tmp_path)
    try:
        first = await _embed(store)
        assert (first.notes, first.embedded) == (4, 4)
        assert (await _embed(store)).notes == 0  # resumable: nothing left to do

        (store.vault.root / "ideas/garden.md").write_text(
            NOTES["ideas/garden.md"].replace("tomatoes", "peppers"), encoding="utf-8")
        changed = await _embed(store)
        assert (changed.notes, changed.embedded, changed.pruned) == (1, 1, 1)  # old text's

        # A status change and a move keep the text: the note finds its vectors again.
        await store.update("Quarterly plan", {"status": "waiting"})
        await store.move("Dentist", "projects")
        kept = await _embed(store)
        assert (kept.notes, kept.embedded, kept.pruned) == (0, 0, 0)  # keys computed at index
        assert len(await _vector_rows(store)) == 4

        (store.vault.root / "people/sara-chen.md").unlink()
        gone = await _embed(store)
        assert gone.pruned == 1
        assert len(await _vector_rows(store)) == 3
    finally:
        await store.db.close()


async def test_another_model_re_embeds_every_note(tmp_path: Path) -> None:
    import onnxruntime as ort

    other = tmp_path / "other" / "model.onnx"  # the same network, saved again: other bytes
    other.parent.mkdir()
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = str(other)
    assert MEANING.embedder is not None
    ort.InferenceSession(str(MEANING.embedder.path), sess_options=options,
                         providers=["CPUExecutionProvider"])
    second = Meaning.load(other.parent)
    assert second.available and second.model != MEANING.model

    store = await _store(tmp_path)
    try:
        assert (await _embed(store)).embedded == 4
        again = await _embed(store, second)
        assert again.embedded == 4 and again.pruned == 4  # the first model's rows go
        assert {m for m, _ in await _vector_rows(store)} == {second.model}
    finally:
        await store.db.close()


async def test_search_fuses_words_names_and_meaning_and_keeps_filters(tmp_path: Path) -> None:
    store = await _store(tmp_path)
    try:
        await _embed(store)
        found = await store.search("budget for the summer quarter")
        assert found.entries[0].name == "Quarterly plan"
        assert found.entries[0].signals is not None and "meaning" in found.entries[0].signals

        named = await store.search("Sara Chen")
        assert named.entries[0].name == "Sara Chen"
        assert {"words", "exact"} <= set(named.entries[0].signals or {})

        typo = await store.search("Sarah Chenn")
        assert typo.entries[0].name == "Sara Chen"
        assert "name" in (typo.entries[0].signals or {})

        only = await store.search("budget for the summer quarter", category="people")
        assert all(e.category == "people" for e in only.entries)
        status = await store.search("budget for the summer quarter", status="todo")
        assert all(e.status == "todo" for e in status.entries)

        # A question about nothing in the vault is not padded with unrelated notes.
        assert (await store.search("volcanic eruptions on jupiter's moons")).entries == []
    finally:
        await store.db.close()


async def test_without_the_model_search_is_words_and_names(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        off = Meaning.load(tmp_path / "missing" / "model.onnx")
    assert not off.available and "no model file" in (off.why or "")
    lines = [r for r in caplog.records if "search by meaning is off" in r.getMessage()]
    assert len(lines) == 1

    store = await _store(tmp_path, off)
    try:
        assert await _embed(store) == EmbedStats()
        found = await store.search("Sara")
        assert [e.name for e in found.entries] == ["Sara Chen"]
        assert found.entries[0].signals == {"words": 1, "name": 1}
        assert await store.nearby("Call Sara about the budget") == []
    finally:
        await store.db.close()


async def test_nearby_finds_close_notes_and_leaves_out_the_excluded(tmp_path: Path) -> None:
    store = await _store(tmp_path)
    try:
        await _embed(store)
        near = await store.nearby("tomato seedlings for the raised bed", k=2, floor=0.3)
        assert [e.name for e in near][:1] == ["Garden beds"]
        assert near[0].score is not None and 0.3 <= near[0].score <= 1.0
        garden = next(e for e in near if e.name == "Garden beds")
        without = await store.nearby("tomato seedlings for the raised bed", k=2, floor=0.3,
                                     exclude={garden.path})
        assert "Garden beds" not in [e.name for e in without]
    finally:
        await store.db.close()
