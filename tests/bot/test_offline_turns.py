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
        filed = await brain.handle(conversation_key=key, user_id="u1",
                                   text="Could we gamify code reviews with points?")
        (capture,) = filed.executions
        assert capture.tool == "classify_and_capture" and capture.output is not None
        assert capture.output.data["path"] == "ideas/gamify-code-reviews.md"

        moved = await brain.handle(conversation_key=key, user_id="u1",
                                   text="actually that's a project")
        (move,) = moved.executions
        assert move.tool == "move_entry" and move.status == "ok", move.content
        assert move.output is not None
        assert move.output.data["newPath"] == "projects/gamify-code-reviews.md"

        asked = await brain.handle(conversation_key=key, user_id="u1",
                                   text="find the note about code reviews")
        assert [e.tool for e in asked.executions] == ["search_entries"]
        assert "Gamify code reviews" in asked.text
    finally:
        await brain.close()
