"""No thought is lost to a bad model reply: every malformed reply, through both real SDKs
against a local server speaking their wire formats, ends with the thought in the vault
(searchable) and a reply that says where it went."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.brain import Brain
from bot.config import Settings
from tests.bot.fake_llm_server import FakeLLMServer
from tests.bot.llm_faults import FAULTS, THOUGHT, WORD, Fault, script_for, settings_env
from tests.databases import database_env


@pytest.fixture(scope="module")
def server():
    with FakeLLMServer(validate=False) as srv:
        yield srv


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("fault", FAULTS, ids=[f.name for f in FAULTS])
async def test_a_malformed_reply_never_loses_the_thought(
        tmp_path: Path, server: FakeLLMServer, provider: str, fault: Fault) -> None:
    base = server.openai_base_url if provider == "openai" else server.anthropic_base_url
    env = {**database_env(tmp_path), **settings_env(provider, base)}
    brain = await Brain.start(Settings(BRAIN_DATA_DIR=tmp_path / "data", **env))  # type: ignore[call-arg]
    server._script.clear()
    server.script(script_for(fault, provider))
    try:
        result = await brain.turns.handle(conversation_key="cli:u1:faults", user_id="u1",
                                    text=THOUGHT)
        store = brain.store_for("u1")
        notes = list(store.vault.root.rglob("*.md"))
        assert len(notes) == 1, [n.name for n in notes]  # filed exactly once
        assert THOUGHT in notes[0].read_text(encoding="utf-8")
        found = await store.search(WORD)
        assert [e.path for e in found.entries] == [store.vault.relpath(notes[0])]
        reply = result.text
        assert reply.strip() not in ("", "Done.", "Done")
        if fault.expect == "inbox":
            assert notes[0].parent.name == "inbox"
            assert "inbox" in reply and str(store.vault.relpath(notes[0])) in reply
            assert result.rescued or result.outage
        elif fault.expect == "rules":
            # The model answered without filing: the rules file it where they are sure, and
            # the reply says so (issue 24), with the real path.
            assert notes[0].parent.name == "admin"
            assert "filed it by my rules" in reply and "Sure, noted" not in reply
            assert str(store.vault.relpath(notes[0])) in reply and result.rescued
        else:
            assert notes[0].parent.name != "inbox"
            assert "left out" in reply and "due_date" in reply
    finally:
        server._script.clear()
        await brain.close()


async def test_a_question_the_model_cannot_answer_files_nothing(
        tmp_path: Path, server: FakeLLMServer) -> None:
    """The rescue is for thoughts: a question that meets a broken model is answered honestly
    and nothing is filed."""
    env = {**database_env(tmp_path), **settings_env("openai", server.openai_base_url)}
    brain = await Brain.start(Settings(BRAIN_DATA_DIR=tmp_path / "data", **env))  # type: ignore[call-arg]
    server._script.clear()
    server.script(script_for(FAULTS[0], "openai"))  # unknown tool, again and again
    try:
        result = await brain.turns.handle(conversation_key="cli:u1:q", user_id="u1",
                                    text="what is on my plate this week?")
        assert not list(brain.store_for("u1").vault.root.rglob("*.md"))
        assert result.text.strip() and result.rescued is None
    finally:
        server._script.clear()
        await brain.close()
