"""Whole turns behind a local server (issue 24), through both real SDKs against the fake server
doing what llama-cpp-python's server and a small model did: replies only say what happened,
the app's receipts are marked in the history, a failed round keeps its record, refusals are
not outages, corrections in the thread change the note and are never filed as new notes."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.brain import Brain
from bot.config import Settings
from bot.turn.messages import RECEIPT_MARK
from tests.bot import local_fakes as lf
from tests.bot.fake_llm_server import (
    FakeLLMServer,
    Reply,
    anthropic_tool_uses,
    openai_tool_calls,
)
from tests.bot.llm_faults import settings_env
from tests.databases import database_env

SDKS = pytest.mark.parametrize("kind", ["openai", "anthropic"])
KEY = "cli:u1:local"


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as srv:
        yield srv


@pytest.fixture
async def brain_for(tmp_path: Path, server: FakeLLMServer) -> AsyncIterator[Any]:
    made: list[Brain] = []

    async def make(kind: str) -> Brain:
        base = server.openai_base_url if kind == "openai" else server.anthropic_base_url
        env = {**database_env(tmp_path), **settings_env(kind, base)}
        brain = await Brain.start(Settings(BRAIN_DATA_DIR=tmp_path / "data", **env))  # type: ignore[call-arg]
        made.append(brain)
        return brain

    server._script.clear()
    server.gate = lf.llama_cpp_gate
    yield make
    server._script.clear()
    server.gate = None
    for brain in made:
        await brain.close()


def call(kind: str, name: str, args: dict[str, Any], cid: str = "c1") -> dict[str, Any]:
    return (openai_tool_calls([(cid, name, args)]) if kind == "openai"
            else anthropic_tool_uses([(cid, name, args)]))


def notes(brain: Brain) -> list[Path]:
    return sorted(p for p in brain.store_for("u1").vault.root.rglob("*.md")
                  if ".trash" not in p.parts)


async def say(brain: Brain, text: str) -> Any:
    return await brain.turns.handle(conversation_key=KEY, user_id="u1", text=text)


async def file_first(brain: Brain, kind: str, server: FakeLLMServer) -> Path:
    server.script([call(kind, "classify_and_capture", {
        "text": "Renew the car insurance before March",
        "hints": {"category": "admin", "confidence": 0.9, "name": "Renew car insurance"}})])
    await say(brain, "Renew the car insurance before March")
    [note] = notes(brain)
    return note


# -- 3. only true sentences ---------------------------------------------------------------------

@SDKS
async def test_a_copied_rescue_sentence_never_reaches_the_user(kind: str, brain_for: Any,
                                                               server: FakeLLMServer) -> None:
    brain = await brain_for(kind)
    server.script([lf.text(kind, lf.COPIED_RESCUE)])
    result = await say(brain, "what's on my plate this week?")
    assert notes(brain) == []  # nothing was filed...
    assert "inbox/car-insurance.md" not in result.text  # ...and the reply does not say so
    assert "in your inbox" not in result.text
    assert "haven't saved or changed anything" in result.text


@SDKS
async def test_the_apps_receipts_are_marked_in_the_history(kind: str, brain_for: Any,
                                                           server: FakeLLMServer) -> None:
    brain = await brain_for(kind)
    await file_first(brain, kind, server)
    server.script([lf.text(kind, "Hi!")])
    await say(brain, "hello there, how are you")
    sent = str(server.requests[-1].body["messages"])
    assert RECEIPT_MARK.strip() in sent and "Filed to admin" in sent


@SDKS
async def test_tool_syntax_in_a_reply_is_never_shown(kind: str, brain_for: Any,
                                                     server: FakeLLMServer) -> None:
    brain = await brain_for(kind)
    server.script([lf.text(kind, "Sure. " + lf.FAKE_RESULT), lf.text(kind, "Sure.")])
    result = await say(brain, "what are my projects?")
    assert "<" not in result.text and "ok" not in result.text.lower().split()
    assert "projects/apollo.md" not in result.text


# -- 4. errors told apart, and the record kept --------------------------------------------------

@SDKS
async def test_a_failed_round_keeps_the_turns_record(kind: str, brain_for: Any,
                                                     server: FakeLLMServer) -> None:
    brain = await brain_for(kind)
    server.script([call(kind, "list_entries", {}), Reply(500, {})])
    result = await say(brain, "what are my projects?")
    [turn] = await brain.conversations.turn_log(KEY)
    assert turn.llm_calls == 1 and [r.tool for r in turn.tool_runs] == ["list_entries"]
    assert result.outage == "unavailable" and "can't reach" in result.text


@SDKS
async def test_a_refused_request_is_not_worded_as_an_outage(
        kind: str, brain_for: Any, server: FakeLLMServer,
        caplog: pytest.LogCaptureFixture) -> None:
    brain = await brain_for(kind)
    refusal = Reply(400, {"error": {"message": "messages[2]: unsupported role 'tool'",
                                    "type": "invalid_request_error"}})
    server.script([refusal] * 4)
    result = await say(brain, "what are my projects?")
    assert "can't reach" not in result.text
    assert "refused my request" in result.text and "unsupported role" in result.text
    assert "unsupported role 'tool'" in caplog.text  # the server's message is logged
    [turn] = await brain.conversations.turn_log(KEY)
    assert turn.status == "refused"


# -- 5. corrections stay corrections -----------------------------------------------------------

@SDKS
@pytest.mark.parametrize(("reply", "check"), [
    ("Rename it to Car insurance", lambda text, path: "name: Car insurance" in text),
    ("actually it's due on the 20th", lambda text, path: "due_date: '20" in text
     or "due_date: 20" in text),
    ("make it a project", lambda text, path: path.parent.name == "projects"),
    ("mark it done", lambda text, path: "status: done" in text),
])
@pytest.mark.parametrize("model", ["chats", "files a new note"])
async def test_a_correction_changes_the_note_and_is_never_filed(
        kind: str, brain_for: Any, server: FakeLLMServer, reply: str, check: Any,
        model: str) -> None:
    brain = await brain_for(kind)
    await file_first(brain, kind, server)
    if model == "chats":
        server.script([lf.text(kind, "Sure, noted!")])
    else:  # the capture is refused (it is a correction), then the model chats
        server.script([call(kind, "classify_and_capture", {"text": reply}),
                       lf.text(kind, "Done!")])
    result = await say(brain, reply)
    [note] = notes(brain)  # still one note: the correction was not filed
    assert check(note.read_text(encoding="utf-8"), note), note.read_text(encoding="utf-8")
    assert "Sure, noted" not in result.text and result.rescued is None
    assert note.stem in result.text or "Updated" in result.text or "Moved" in result.text


@SDKS
async def test_a_reply_that_sounds_like_a_change_but_says_none_asks(
        kind: str, brain_for: Any, server: FakeLLMServer) -> None:
    brain = await brain_for(kind)
    note = await file_first(brain, kind, server)
    before = note.read_text(encoding="utf-8")
    server.script([lf.text(kind, "Okay!")])
    result = await say(brain, "actually change that")
    assert notes(brain) == [note] and note.read_text(encoding="utf-8") == before
    assert "Did you mean to change" in result.text
