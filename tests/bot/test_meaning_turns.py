"""Meaning in a turn, through the real Brain and the offline provider: a thought is filed with
its related notes (in the body as wikilinks, on the card, in the tool result the model sees),
and the offline classifier, unsure by its rules, files a thought where the user's nearest
filed notes are. Without the model both quietly do nothing more than before."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.brain import Brain
from bot.config import Settings
from bot.slack.turn_reply import turn_message
from bot.turn.reply import reply_of
from storage.index.indexer import embed_pending
from storage.meaning.shared_model import Meaning
from tests.databases import database_env
from tests.tools.conftest import write_note

pytestmark = pytest.mark.skipif(not Meaning.load().available, reason="no embedding model")

VAULT = {
    "people/sara-chen.md": "---\nname: Sara Chen\ncategory: people\n---\nFinance lead; "
                           "reviews every spending request.\n",
    "projects/q3-budget.md": "---\nname: Q3 budget\ncategory: projects\nstatus: active\n---\n"
                             "How much each team gets from July to September.\n",
    "projects/revenue-forecast.md": "---\nname: Revenue forecast\ncategory: projects\n"
                                    "status: active\n---\nQuarterly revenue numbers and the "
                                    "forecast for next year.\n",
    "projects/quarterly-report.md": "---\nname: Quarterly report\ncategory: projects\n"
                                    "status: active\n---\nCollect the quarter's figures for "
                                    "the board.\n",
    "admin/dentist.md": "---\nname: Dentist\ncategory: admin\nstatus: todo\n---\nMove the "
                        "check-up to a morning slot.\n",
    "ideas/garden.md": "---\nname: Garden beds\ncategory: ideas\n---\nRaised beds for "
                       "tomatoes and herbs behind the shed.\n",
    "projects/offsite.md": "---\nname: Team offsite\ncategory: projects\nstatus: active\n---\n"
                           "Book a venue for May.\n",
}


async def _brain(tmp_path: Path, **env: str) -> Brain:
    settings = Settings(BRAIN_DATA_DIR=tmp_path / "data", BRAIN_LLM="offline",  # type: ignore[call-arg]
                        **{**database_env(tmp_path), **env})
    brain = await Brain.start(settings)
    store = brain.store_for("u1")
    for rel, text in VAULT.items():
        write_note(store.vault.root, rel, text)
    await store.refresh()
    await embed_pending(brain.core.db, store.index.key, store.meaning)  # what the indexer does
    return brain


async def test_a_thought_is_filed_with_its_related_notes(tmp_path: Path) -> None:
    brain = await _brain(tmp_path)
    try:
        result = await brain.turns.handle(conversation_key="cli:u1:r", user_id="u1",
                                    text="Call Sara about the Q3 budget")
        capture = result.filed[0].output
        assert capture is not None
        related = [r["name"] for r in capture.data["related"]]
        assert {"Sara Chen", "Q3 budget"} <= set(related) and len(related) <= 3
        assert "Dentist" not in related and "Garden beds" not in related
        assert '"related"' in result.filed[0].content  # what the model sees

        body = (brain.store_for("u1").vault.root / capture.data["path"]).read_text("utf-8")
        section = body.split("## Related\n", 1)[1]
        assert "[[sara-chen|Sara Chen]]" in section and "[[q3-budget|Q3 budget]]" in section

        blocks = turn_message(reply_of(result)).blocks
        lines = [b for b in blocks if b.get("block_id", "").startswith("related-")]
        assert len(lines) == 1
        shown = lines[0]["elements"][0]["text"]
        assert shown.startswith("Related: ") and "*Sara Chen*" in shown
    finally:
        await brain.close()


async def test_unsure_rules_ask_the_nearest_filed_notes(tmp_path: Path) -> None:
    thought = "Quarterly numbers look off"
    brain = await _brain(tmp_path)
    try:
        result = await brain.turns.handle(conversation_key="cli:u1:c", user_id="u1", text=thought)
        capture = result.filed[0].output
        assert capture is not None and capture.data["category"] == "projects"
    finally:
        await brain.close()

    # Without the model: the rules alone, unsure, so the inbox; no related notes either.
    brain = await _brain(tmp_path / "off", BRAIN_EMBEDDING_MODEL=str(tmp_path / "nowhere"))
    try:
        result = await brain.turns.handle(conversation_key="cli:u1:c", user_id="u1", text=thought)
        capture = result.filed[0].output
        assert capture is not None and capture.data["category"] == "inbox"
        assert "related" not in capture.data
        found = await brain.store_for("u1").search("Sara")
        assert [e.name for e in found.entries] == ["Sara Chen"]
    finally:
        await brain.close()
