"""Slack's AI-app surface and an admin's controls, end to end: the assistant panel gets the
suggested prompts, a status while the turn runs and the answer (the model's prose as a markdown
block, through the real OpenAI SDK against a local fake); uninstalling the app or revoking a
token stops scheduled work and keeps every note."""

from __future__ import annotations

import copy
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from bot.digest import DigestScheduler
from bot.schedule.reminders import ReminderScheduler
from bot.slack.assistant import SUGGESTED_PROMPTS
from storage.repositories import slack_state
from tests.bot.fake_llm_server import FakeLLMServer, openai_text, openai_tool_calls
from tests.e2e.bot_harness import Harness, running_bot
from tests.e2e.slack_harness import (
    AUTHOR,
    DM,
    SAVED_TEXT,
    USER,
    payload,
    save_shortcut,
    vault_files,
)
from tools.capture.fence import RULE

THREAD = "1767262300.000700"  # the assistant thread of the fixtures
TOKYO = ZoneInfo("Asia/Tokyo")


async def test_the_assistant_thread_gets_prompts_a_status_and_an_answer(
        tmp_path: Path) -> None:
    llm = FakeLLMServer().start()
    llm.script([openai_text("**Nothing is due** this week. See [your plan](https://x.test/p).")])
    try:
        async with running_bot(tmp_path, BRAIN_LLM="openai", OPENAI_API_KEY="sk-test",
                               OPENAI_BASE_URL=llm.openai_base_url) as h:
            status, _ = await h.send.event(
                payload("event_callback_assistant_thread_started.json"))
            assert status == 200
            (prompts,) = await h.fake.wait_for("assistant.threads.setSuggestedPrompts")
            await h.settle()
            assert (prompts.body["channel_id"], prompts.body["thread_ts"]) == (DM, THREAD)
            assert prompts.body["prompts"] == SUGGESTED_PROMPTS
            assert h.fake.calls_to("chat.postMessage") == []  # the prompts are the greeting

            message = payload("event_callback_message_im_assistant_thread.json")
            assert (await h.send.event(message))[0] == 200
            (answer,) = await h.fake.wait_for("chat.postMessage")
            await h.settle()
            (status_call,) = h.fake.calls_to("assistant.threads.setStatus")
            assert status_call.body["thread_ts"] == THREAD and status_call.body["status"]
            assert (answer.body["channel"], answer.body["thread_ts"]) == (DM, THREAD)
            (prose,) = [b for b in answer.body["blocks"] if b["type"] == "markdown"]
            assert prose["text"].startswith("**Nothing is due** this week.")
            assert "[your plan](https://x.test/p)" in prose["text"]
            sent = llm.bodies()[-1]["messages"][-1]["content"]
            assert "vendor contract" in sent  # the panel's message ran the same turn
            h.check_cards()
    finally:
        llm.stop()


async def test_a_saved_message_is_classified_by_the_model(tmp_path: Path) -> None:
    llm = FakeLLMServer().start()
    hints = {"category": "admin", "confidence": 0.9, "name": "Vendor contract renewal",
             "due_date": "2027-01-30", "next_action": "get legal's redlines"}
    llm.script([openai_tool_calls([("c1", "classify_and_capture",
                                    {"text": "(the model's retelling)", "hints": hints})])])
    try:
        async with running_bot(tmp_path, BRAIN_LLM="openai", OPENAI_API_KEY="sk-test",
                               OPENAI_BASE_URL=llm.openai_base_url) as h:
            h.fake.names[AUTHOR] = "Dana"
            await h.send.action(save_shortcut(trigger="T1", response_url=h.fake.hook_url("s")))
            await h.fake.wait_for("hook:s")
            await h.settle()
            (note,) = vault_files(h.vault)
            text = (h.vault / note).read_text()
            assert note.startswith("admin/")
            assert "2027-01-30" in text and "get legal's redlines" in text
            assert SAVED_TEXT in text  # the message as written, not the model's retelling
            request = llm.bodies()[0]
            assert request["tool_choice"]["function"]["name"] == "classify_and_capture"
            # someone else's words reach the model fenced as data, and the rule says so
            sent = request["messages"][-1]["content"]
            begin, inside, end = sent.split("\n")
            code = begin.split()[1]
            assert begin == f"<<<captured-data {code} begin: Slack message by Dana>>>"
            assert inside == SAVED_TEXT and end == f"<<<captured-data {code} end>>>"
            assert RULE in request["messages"][0]["content"]
    finally:
        llm.stop()


async def subscribe_daily(h: Harness) -> None:
    fields = payload("slash_command_digest_weekly.json")
    fields.update(text="subscribe daily 07:30", response_url=h.fake.hook_url("sub"))
    await h.send.command(fields)
    await h.fake.wait_for("hook:sub")
    await h.settle()


def digests(h: Harness) -> DigestScheduler:
    now = datetime(2027, 1, 5, 7, 31, tzinfo=TOKYO)
    return h.brain.digests.scheduler(wake=h.bot.wake, clock=lambda: now)


async def test_uninstalling_stops_scheduled_work_and_keeps_the_data(slack: Harness) -> None:
    await slack.file_dm()
    await subscribe_daily(slack)
    note = await slack.brain.store_for(USER).create(
        "admin", "Renew passport", {"status": "todo", "due_date": "2027-01-05"}, "")
    files = {p: (slack.vault / p).read_bytes() for p in vault_files(slack.vault)}
    posts = len(slack.fake.calls_to("chat.postMessage"))
    assert (await slack.send.event(payload("event_callback_app_uninstalled.json")))[0] == 200
    await slack.settle()
    async with slack.brain.core.db.session() as s:
        assert await slack_state.uninstalled_teams(s) == {"T0SB00001"}
    await digests(slack).tick()
    morning = datetime(2027, 1, 5, 8, 0, tzinfo=TOKYO)
    reminders = ReminderScheduler(slack.brain.reminders, tz_lookup=slack.bot.work.user_tz,
                                  wake=slack.bot.worker.wake,
                                  clock=lambda: morning)
    assert await reminders.tick() == []
    await slack.settle()
    assert len(slack.fake.calls_to("chat.postMessage")) == posts  # nothing was sent
    assert {p: (slack.vault / p).read_bytes() for p in vault_files(slack.vault)} == files
    # installed again (`brain serve` finds the new token good): the reminder goes out
    await slack.brain.accounts.installed()
    assert [r[1] for r in await reminders.tick()] == [note.id]


async def test_a_revoked_users_schedules_pause_until_they_write_again(slack: Harness) -> None:
    await slack.file_dm()
    await subscribe_daily(slack)
    kept = vault_files(slack.vault)
    revoked = copy.deepcopy(payload("event_callback_tokens_revoked.json"))
    revoked["event"]["tokens"]["bot"] = []  # only the person's token
    assert (await slack.send.event(revoked))[0] == 200
    await slack.settle()
    posts = len(slack.fake.calls_to("chat.postMessage"))
    assert len(await digests(slack).tick()) == 1  # its slot claimed, its job run:
    await slack.settle()
    assert len(slack.fake.calls_to("chat.postMessage")) == posts  # paused, nothing posted
    async with slack.brain.core.db.session() as s:
        assert await slack_state.paused_users(s) == {USER}
    await slack.file_dm("Back again: buy printer paper", ts="1767262900.000100",
                        event_id="EvBack")
    async with slack.brain.core.db.session() as s:
        assert await slack_state.paused_users(s) == set()
    assert set(kept) <= set(vault_files(slack.vault))  # their notes were kept throughout


async def test_opening_the_messages_tab_sets_the_prompts_on_the_dm(slack: Harness) -> None:
    """Agent messaging: `app_home_opened` with tab "messages" replaces the assistant thread's
    start; the prompts go to the DM without a thread_ts (with one, Slack drops the call)."""
    from tests.e2e.slack_harness import home_opened

    opened = home_opened(event_id="EvMsgTab")
    opened["event"]["tab"] = "messages"
    assert (await slack.send.event(opened))[0] == 200
    (prompts,) = await slack.fake.wait_for("assistant.threads.setSuggestedPrompts")
    await slack.settle()
    assert prompts.body["channel_id"] == DM and "thread_ts" not in prompts.body
    assert prompts.body["prompts"] == SUGGESTED_PROMPTS
    assert slack.fake.calls_to("views.publish") == []  # the Home tab is not drawn for it
