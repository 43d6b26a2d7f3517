"""Slack's agent surface through a real `brain serve --http` process, signed requests and the
fake Slack: an assistant thread opened gets the suggested prompts on that thread; the
channel the person moves to (`assistant_thread_context_changed`) is kept in the database,
across a restart, and named to the model in the turn of the next message; that message is
answered in the thread and titles it."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from bot.slack.assistant import SUGGESTED_PROMPTS
from tests.bot.fake_llm_server import FakeLLMServer, openai_text
from tests.databases import database_env
from tests.e2e.drive_checks import Server, wait_until
from tests.e2e.fake_slack import FakeSlack
from tests.e2e.slack_harness import DM, payload

THREAD = "1767262300.000700"  # the assistant thread of the fixtures
VIEWED = "C0SBCHN77"  # the channel the person moves to while the thread is open


def context_changed(channel: str, event_id: str) -> dict[str, Any]:
    """Slack's `assistant_thread_context_changed`: the thread-started event's shape (as its
    documentation gives it) with the new context."""
    body = copy.deepcopy(payload("event_callback_assistant_thread_started.json"))
    body["event"]["type"] = "assistant_thread_context_changed"
    body["event"]["assistant_thread"]["context"]["channel_id"] = channel
    body["event_id"] = event_id
    return body


def requests(llm: FakeLLMServer) -> list[str]:
    """What the model was sent, request by request (the prompt's context part may travel as
    a message of its own: bot/llm/dialects.py)."""
    return [json.dumps(b.get("messages")) for b in llm.bodies()]


async def test_an_assistant_thread_gets_prompts_its_context_and_a_title(tmp_path: Path) -> None:
    llm = FakeLLMServer().start()
    llm.script([openai_text("Nothing about the vendor contract yet.")])
    fake = await FakeSlack().start()
    server = Server(fake, tmp_path / "data")
    (tmp_path / "data").mkdir()
    env = {"BRAIN_LLM": "openai", "OPENAI_API_KEY": "sk-test",
           "OPENAI_BASE_URL": llm.openai_base_url, **database_env(tmp_path)}
    try:
        send = await server.start(**env)
        status, _ = await send.event(payload("event_callback_assistant_thread_started.json"))
        assert status == 200
        assert await wait_until(
            lambda: bool(fake.calls_to("assistant.threads.setSuggestedPrompts")))
        (prompts,) = fake.calls_to("assistant.threads.setSuggestedPrompts")
        assert (prompts.body["channel_id"], prompts.body["thread_ts"]) == (DM, THREAD)
        assert prompts.body["prompts"] == SUGGESTED_PROMPTS

        status, _ = await send.event(context_changed(VIEWED, "EvAGENTCTX1"))
        assert status == 200
        await send.close()
        await server.stop()  # SIGTERM: the acknowledged context job is finished first

        send = await server.start(**env)  # a new process: the context is in the database
        message = payload("event_callback_message_im_assistant_thread.json")
        status, _ = await send.event(message)
        assert status == 200
        assert await wait_until(lambda: any(m.get("thread_ts") == THREAD
                                            for m in fake.replies()))
        assert await wait_until(lambda: bool(fake.calls_to("assistant.threads.setTitle")))
        (title,) = fake.calls_to("assistant.threads.setTitle")
        assert (title.body["channel_id"], title.body["thread_ts"]) == (DM, THREAD)
        assert title.body["title"] == message["event"]["text"]
        (answer,) = [m for m in fake.replies() if m.get("thread_ts") == THREAD]
        assert "vendor contract" in json.dumps(answer)
        sent = requests(llm)
        assert sent and all(f"<#{VIEWED}>" in r for r in sent)
        assert "C0SBCHN01" not in sent[0]  # the first context was replaced

        # The thread's second message: answered, and the title stays the first one.
        again = copy.deepcopy(message)
        again["event"].update(text="Thanks, and what is due this week?",
                              ts="1767262320.000900", client_msg_id="agent-2")
        again["event_id"] = "EvAGENTMSG2"
        await send.event(again)
        assert await wait_until(lambda: len([m for m in fake.replies()
                                             if m.get("thread_ts") == THREAD]) == 2)
        assert len(fake.calls_to("assistant.threads.setTitle")) == 1
        await send.close()
    finally:
        await server.stop()
        await fake.stop()
        llm.stop()
