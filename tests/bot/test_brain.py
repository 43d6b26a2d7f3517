"""One turn through the Brain: prompt, persistence, corrections, outage."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from bot.brain import Brain
from bot.config import Settings
from bot.core import OPEN_STORES
from bot.llm.configs import make_provider, select_config
from storage import repositories
from tests.bot.scripted import ScriptedProvider, call, text, tools
from tests.databases import database_env
from tools.registry import tool_specs


def _settings(tmp_path: Path, **env: str) -> Settings:
    env = {**database_env(tmp_path), **env}
    return Settings(BRAIN_DATA_DIR=tmp_path / "data", **env)  # type: ignore[call-arg]


@pytest.fixture
async def scripted(tmp_path: Path):
    provider = ScriptedProvider()
    brain = await Brain.start(_settings(tmp_path), provider=provider)
    yield brain, provider
    await brain.close()


async def _messages(brain: Brain, key: str) -> list[list[repositories.MessageRow]]:
    async with brain.core.db.session() as s:
        conv = await repositories.get_conversation(s, key)
        assert conv is not None
        return await repositories.recent_turn_messages(s, conv.id, 20)


async def test_capture_stores_assistant_message_with_path_and_confidence(scripted) -> None:
    brain, provider = scripted
    provider.answers = [tools(call("classify_and_capture", {
        "text": "Q3 budget review with finance",
        "hints": {"category": "projects", "confidence": 0.82, "name": "Q3 budget"}}))]
    result = await brain.turns.handle(conversation_key="cli:t:1", user_id="u1",
                                text="Q3 budget review with finance")
    assert result.llm_calls == 1
    turns = await _messages(brain, "cli:t:1")
    last = turns[-1][-1]
    assert last.role == "assistant"
    assert "projects/q3-budget.md" in last.content and "0.82" in last.content
    async with brain.core.db.session() as s:
        runs = (await repositories.turns_for_log(s, None, limit=1))[0].tool_runs
    assert [r.tool for r in runs] == ["classify_and_capture"] and runs[0].status == "ok"


async def test_system_prompt_names_tools_and_carries_summary_and_history(scripted) -> None:
    brain, provider = scripted
    store = brain.store_for("u1")
    await store.create("projects", "Offsite planning", {"status": "active"}, "")
    provider.answers = [tools(call("classify_and_capture", {
        "text": "Book the venue", "hints": {"category": "admin", "confidence": 0.9}})),
        text("You have 1 active project.")]
    await brain.turns.handle(conversation_key="cli:t:2", user_id="u1", text="Book the venue")
    await brain.turns.handle(conversation_key="cli:t:2", user_id="u1", text="what's active?")
    request = provider.requests[-1]
    guidance = request.system
    for spec in tool_specs():
        assert spec["name"] in guidance, f"the system prompt never says when to use {spec['name']}"
    assert {t.name for t in request.tools} == {s["name"] for s in tool_specs()}
    assert "Offsite planning" in guidance  # bounded vault summary
    assert "Notes filed in this conversation:" in guidance and "admin/" in guidance
    # history: the first turn, whole, before the new user message
    roles = [m.role for m in request.messages]
    assert roles == ["user", "assistant", "tool", "assistant", "user"]


async def test_fix_command_moves_the_thread_note_without_an_llm_call(scripted) -> None:
    brain, provider = scripted
    provider.answers = [tools(call("classify_and_capture", {
        "text": "Call Sara about the Q3 budget",
        "hints": {"category": "people", "confidence": 0.8, "name": "Sara"}}))]
    await brain.turns.handle(conversation_key="cli:t:3", user_id="u1",
                       text="Call Sara about the Q3 budget")
    calls_before = len(provider.requests)
    result = await brain.turns.handle(conversation_key="cli:t:3", user_id="u1", text="fix: projects")
    assert len(provider.requests) == calls_before  # no LLM call
    assert result.llm_calls == 0
    root = brain.store_for("u1").vault.root
    assert (root / "projects" / "sara.md").exists() and not (root / "people" / "sara.md").exists()
    async with brain.core.db.session() as s:
        conv = await repositories.get_conversation(s, "cli:t:3")
        captures = await repositories.receipts_for_conversation(s, conv.id)
    assert captures[-1].status == "fixed" and captures[-1].path == "projects/sara.md"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_llm_down_a_thought_still_lands_in_the_inbox(tmp_path: Path) -> None:
    settings = _settings(tmp_path, BRAIN_LLM="openai", OPENAI_API_KEY="x",
                         OPENAI_BASE_URL=f"http://127.0.0.1:{_closed_port()}/v1",
                         BRAIN_LLM_MAX_RETRIES="0", BRAIN_LLM_TIMEOUT="2")
    brain = await Brain.start(settings, provider=make_provider(select_config(settings), settings))
    try:
        result = await brain.turns.handle(conversation_key="cli:t:4", user_id="u1",
                                    text="Renew the car insurance before March")
        assert result.outage is not None
        assert "inbox" in result.text
        notes = list((brain.store_for("u1").vault.root / "inbox").glob("*.md"))
        assert len(notes) == 1
        body = notes[0].read_text()
        assert "Renew the car insurance before March" in body and "language model is unreachable" in body
        # a question is not filed, and says so
        answer = await brain.turns.handle(conversation_key="cli:t:4", user_id="u1",
                                    text="what are my projects?")
        assert answer.outage is not None and "nothing was saved" in answer.text
        assert len(list((brain.store_for("u1").vault.root / "inbox").glob("*.md"))) == 1
    finally:
        await brain.close()


async def test_hostile_user_id_is_refused(scripted) -> None:
    brain, _ = scripted
    from storage.errors import InvalidValue

    with pytest.raises(InvalidValue):
        brain.store_for("../../etc")


async def test_turn_is_stored_whole_with_usage(scripted) -> None:
    brain, provider = scripted
    provider.answers = [tools(call("list_entries", {})), text("Nothing yet.")]
    await brain.turns.handle(conversation_key="cli:t:5", user_id="u1", text="list my notes")
    async with brain.core.db.session() as s:
        turn = (await repositories.turns_for_log(s, None, limit=1))[0]
    # Prose about notes is only shown cited; the list returned none, so nothing was found.
    assert turn.llm_calls == 2 and turn.input_tokens == 150
    assert turn.reply_text == "I could not find that in your notes."
    turns = await _messages(brain, "cli:t:5")
    assert [m.role for m in turns[-1]] == ["user", "assistant", "tool", "assistant"]
    assert json.loads(turns[-1][2].tool_results[0]["content"])["ok"] is True


async def test_a_long_paste_reaches_the_model_shortened_and_is_filed_whole(scripted) -> None:
    brain, provider = scripted
    paste = "Offsite notes: " + " ".join(f"point {i} about the agenda." for i in range(400))
    assert len(paste) > 8000

    def capture_what_you_saw(request):
        seen = request.messages[-1].content
        return tools(call("classify_and_capture", {
            "text": seen, "hints": {"category": "projects", "confidence": 0.9,
                                    "name": "Offsite notes"}}))

    provider.answers = [capture_what_you_saw]
    result = await brain.turns.handle(conversation_key="cli:t:long", user_id="u1", text=paste)
    sent = provider.requests[0].messages[-1].content
    assert len(sent) < 2200 and "more characters not shown" in sent
    assert result.executions[0].status == "ok"
    note = brain.store_for("u1").vault.root / "projects" / "offsite-notes.md"
    assert paste in note.read_text()  # nothing of the paste is lost


async def test_a_tool_run_records_when_the_tool_started_not_when_the_turn_did(scripted) -> None:
    """`brain log` times each tool: a tool called after a slow model answer started later
    than its turn, and the second of two calls later than the first."""
    import time

    brain, provider = scripted

    def slow(answer):  # the model takes 0.3 s to answer
        def later(_request):
            time.sleep(0.3)
            return answer
        return later

    provider.answers = [slow(tools(call("search_entries", {"query": "budget"}))),
                        slow(tools(call("list_entries", {}, "c2"))), text("Nothing yet.")]
    await brain.turns.handle(conversation_key="cli:t:started", user_id="u1",
                             text="what about the budget?")
    async with brain.core.db.session() as s:
        (turn,) = await repositories.turns_for_log(s, None, limit=1)
    first, second = turn.tool_runs
    assert (first.started_at - turn.created_at).total_seconds() >= 0.25
    assert (second.started_at - first.started_at).total_seconds() >= 0.25


async def test_a_process_holds_a_bounded_number_of_peoples_stores(tmp_path: Path) -> None:
    """A process that has served many people keeps the Stores of the latest OPEN_STORES only
    (each one watched by the indexer, and its caches): its memory does not grow with the
    people it ever served. Someone served again gets a Store of the same vault."""
    brain = await Brain.start(_settings(tmp_path), with_llm=False)
    try:
        first = brain.store_for("U0")
        await first.create("ideas", "Kites", {}, "Kites over the bay\n")
        for n in range(1, OPEN_STORES + 40):
            brain.store_for(f"U{n}")
        assert brain.stores.open == OPEN_STORES
        again = brain.store_for("U0")
        assert again is not first and again.vault.root == first.vault.root
        assert [e.name for e in (await again.search("kites")).entries] == ["Kites"]
        assert brain.stores.open == OPEN_STORES
    finally:
        await brain.close()
