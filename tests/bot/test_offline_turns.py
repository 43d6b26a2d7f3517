"""Whole turns through the real Brain with the offline provider (no key): a question-shaped
idea is filed, a real question is not, and a natural correction in the next turn moves the
note filed before, found from the conversation's own history."""

from __future__ import annotations

from pathlib import Path

from bot.brain import Brain
from bot.config import Settings
from bot.llm.offline import OfflineProvider


async def test_offline_turns_capture_ask_and_correct(tmp_path: Path) -> None:
    settings = Settings(BRAIN_DATA_DIR=tmp_path / "data")  # type: ignore[call-arg]
    brain = await Brain.start(settings, provider=OfflineProvider(tz="UTC"))
    try:
        key = "cli:offline:1"
        filed = await brain.turns.handle(conversation_key=key, user_id="u1",
                                   text="Could we gamify code reviews with points?")
        (capture,) = filed.executions
        assert capture.tool == "classify_and_capture" and capture.output is not None
        assert capture.output.data["path"] == "ideas/gamify-code-reviews.md"

        moved = await brain.turns.handle(conversation_key=key, user_id="u1",
                                   text="actually that's a project")
        (move,) = moved.executions
        assert move.tool == "move_entry" and move.status == "ok", move.content
        assert move.output is not None
        assert move.output.data["new_path"] == "projects/gamify-code-reviews.md"

        asked = await brain.turns.handle(conversation_key=key, user_id="u1",
                                   text="find the note about code reviews")
        assert [e.tool for e in asked.executions] == ["search_entries"]
        assert "Gamify code reviews" in asked.text
    finally:
        await brain.close()


async def test_fix_with_every_category_word_moves_without_a_model(tmp_path: Path) -> None:
    """`fix: todo`, `fix: errand`, `fix: people`...: one vocabulary (tools/rules/categories.py) for
    every rule that reads a category, and the direct `fix:` path never calls the model."""
    from tools.rules.categories import CATEGORY_WORDS

    settings = Settings(BRAIN_DATA_DIR=tmp_path / "data")  # type: ignore[call-arg]
    brain = await Brain.start(settings, provider=OfflineProvider(tz="UTC"))
    try:
        for n, (word, category) in enumerate(sorted(CATEGORY_WORDS.items())):
            key = f"cli:fix:{n}"
            # A thought the rules file outside `category` (an idea, or a person for ideas).
            thought = (f"Maybe we could try a standing desk rota {n}" if category != "ideas"
                       else f"Call Priya Natarajan about the rota {n}")
            filed = await brain.turns.handle(conversation_key=key, user_id="u1", text=thought)
            assert filed.filed, filed.text
            before = filed.filed[0].output.data["category"]  # type: ignore[union-attr]
            assert before != category, (word, before)
            fixed = await brain.turns.handle(conversation_key=key, user_id="u1",
                                             text=f"fix: {word}")
            assert fixed.llm_calls == 0, word
            (move,) = fixed.executions
            assert move.tool == "move_entry" and move.status == "ok", (word, move.content)
            assert move.output is not None and move.output.data["category"] == category, word
    finally:
        await brain.close()
