"""The Slack app served over real HTTP on 127.0.0.1 (in-process aiohttp server), with the real
Brain (offline LLM, real SQLite, real vault files) and a recording fake Slack Web API.
"""

from __future__ import annotations

import json
import logging
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa
from aiohttp.test_utils import TestServer

import bot.brain as brain_module
import bot.slack.app as app_module
from storage import repositories
from tests.e2e.bot_harness import DM_TS, Harness, make_settings, posted_ts
from tests.e2e.fake_slack import FakeSlack
from tests.e2e.slack_harness import (
    CHANNEL,
    DM,
    OTHER_USER,
    USER,
    SlackSender,
    button_press,
    home_opened,
    message_event,
    payload,
    posted_entry_id,
    vault_files,
)


async def test_dm_is_filed_and_the_card_goes_in_its_thread(slack: Harness) -> None:
    body = await slack.file_dm()
    assert body["channel"] == DM and body["thread_ts"] == DM_TS
    entry_id = posted_entry_id(body["blocks"])
    files = vault_files(slack.vault)
    assert len(files) == 1
    assert entry_id in (slack.vault / files[0]).read_text()
    # Slack's "is thinking…" under the thread while the turn runs (the reply clears it)
    methods = [c.method for c in slack.fake.web_api_calls()]
    assert methods == ["assistant.threads.setStatus", "chat.postMessage"]
    status = slack.fake.calls_to("assistant.threads.setStatus")[0].body
    assert (status["channel_id"], status["thread_ts"]) == (DM, DM_TS) and status["status"]
    async with slack.bot.brain.core.db.session() as s:
        capture = await repositories.receipt_for_entry(s, entry_id)
    assert capture is not None and capture.user_id == USER and capture.thread_ts == DM_TS
    # the receipt remembers its card, so a later correction can update it in place
    assert capture.message_ts == posted_ts(slack.fake)
    slack.check_cards()


async def test_a_retried_delivery_changes_nothing(slack: Harness) -> None:
    await slack.file_dm()
    event = message_event("Call the dentist about the crown next Tuesday", ts=DM_TS,
                          event_id="Ev0SB0000001")
    status, _ = await slack.send.event(event, retry=1)
    assert status == 200
    await slack.settle()
    assert len(slack.fake.calls_to("chat.postMessage")) == 1
    assert len(vault_files(slack.vault)) == 1


async def test_owner_button_moves_the_note_and_updates_the_card(slack: Harness) -> None:
    card = await slack.file_dm()
    entry_id = posted_entry_id(card["blocks"])
    target = next(json.loads(b["value"])["to"] for block in card["blocks"]
                  if block["type"] == "actions" for b in block["elements"]
                  if b["action_id"].startswith("move_entry:"))
    message_ts = posted_ts(slack.fake)
    press = button_press(entry_id, target, user=USER, channel=DM, message_ts=message_ts,
                         thread_ts=DM_TS, response_url=slack.fake.hook_url("button"))
    status, _ = await slack.send.action(press)
    assert status == 200
    updates = await slack.fake.wait_for("chat.update")
    await slack.settle()
    assert updates[0].body["ts"] == message_ts and updates[0].body["channel"] == DM
    assert f"Moved to *{target.capitalize()}*" in json.dumps(updates[0].body["blocks"])
    files = vault_files(slack.vault)
    assert len(files) == 1 and files[0].startswith(f"{target}/")
    async with slack.bot.brain.core.db.session() as s:
        capture = await repositories.receipt_for_entry(s, entry_id)
    assert capture is not None and capture.status == "fixed"
    slack.check_cards()


async def test_another_users_button_changes_nothing(slack: Harness) -> None:
    card = await slack.file_dm()
    entry_id = posted_entry_id(card["blocks"])
    before = {p: (slack.vault / p).read_text() for p in vault_files(slack.vault)}
    press = button_press(entry_id, "ideas", user=OTHER_USER, channel=DM,
                         message_ts=posted_ts(slack.fake), thread_ts=DM_TS,
                         response_url=slack.fake.hook_url("button"))
    status, _ = await slack.send.action(press)
    assert status == 200
    ephemerals = await slack.fake.wait_for("chat.postEphemeral")
    await slack.settle()
    assert ephemerals[0].body["user"] == OTHER_USER
    assert "Only <@U0SBUSR01> can change this note" in ephemerals[0].body["text"]
    assert slack.fake.calls_to("chat.update") == []
    assert {p: (slack.vault / p).read_text() for p in vault_files(slack.vault)} == before


async def test_undo_moves_the_note_to_the_trash_not_deleted(slack: Harness) -> None:
    card = await slack.file_dm()
    entry_id = posted_entry_id(card["blocks"])
    press = button_press(entry_id, "", user=USER, channel=DM, message_ts=posted_ts(slack.fake),
                         thread_ts=DM_TS, response_url=slack.fake.hook_url("b"),
                         action_id="undo_entry")
    await slack.send.action(press)
    updates = await slack.fake.wait_for("chat.update")
    await slack.settle()
    files = vault_files(slack.vault)
    assert len(files) == 1 and files[0].startswith(".trash/")
    assert "Undone" in updates[0].body["text"]


async def test_thread_fix_moves_the_note_and_refreshes_its_card(slack: Harness) -> None:
    card = await slack.file_dm()
    first_category = vault_files(slack.vault)[0].split("/")[0]
    target = "people" if first_category != "people" else "projects"
    reply = message_event(f"fix: {target}", ts="1767261720.000300", event_id="Ev0SB0000002",
                          thread_ts=DM_TS)
    status, _ = await slack.send.event(reply)
    assert status == 200
    posts = await slack.fake.wait_for("chat.postMessage", 2)
    await slack.settle()
    files = vault_files(slack.vault)
    assert len(files) == 1 and files[0].startswith(f"{target}/")
    assert posts[1].body["thread_ts"] == DM_TS
    assert "Moved" in posts[1].body["text"]
    # the original card now shows where the note went
    updates = slack.fake.calls_to("chat.update")
    assert len(updates) == 1 and f"Moved to *{target.capitalize()}*" in json.dumps(
        updates[0].body["blocks"])
    assert posted_entry_id(card["blocks"]) in json.dumps(updates[0].body["blocks"])
    slack.check_cards()


async def test_digest_answers_privately_through_response_url(slack: Harness) -> None:
    await slack.file_dm()
    fields = payload("slash_command_digest_weekly.json")
    fields["response_url"] = slack.fake.hook_url("digest")
    status, text = await slack.send.command(fields)
    assert status == 200 and "weekly" in text.lower()
    hooks = await slack.fake.wait_for("hook:digest")
    await slack.settle()
    assert hooks[0].body["response_type"] == "ephemeral"
    assert hooks[0].body["text"].strip()
    slack.check_cards()


async def test_digest_with_an_unknown_argument_gets_usage_help(slack: Harness) -> None:
    fields = payload("slash_command_digest_weekly.json")
    fields.update(text="fortnightly", response_url=slack.fake.hook_url("digest"))
    status, text = await slack.send.command(fields)
    assert status == 200 and "Usage" in text and "fortnightly" in text
    await slack.settle()
    assert slack.fake.calls_to("hook:digest") == []


async def test_digest_status_off_and_unsubscribe_work_in_slack(slack: Harness) -> None:
    """The same words as `brain digest`: status, subscribe, off and its synonym unsubscribe."""
    async def command(text: str, hook: str) -> str:
        fields = payload("slash_command_digest_weekly.json")
        fields.update(text=text, response_url=slack.fake.hook_url(hook),
                      trigger_id=f"trig-{hook}")
        status, _ = await slack.send.command(fields)
        assert status == 200
        hooks = await slack.fake.wait_for(f"hook:{hook}")
        await slack.settle()
        return str(hooks[0].body["text"])

    assert "No scheduled digests" in await command("status", "s1")
    assert "daily at 07:30" in await command("subscribe daily 07:30", "s2")
    assert "daily at 07:30" in await command("status", "s3")
    assert "turned off" in await command("off", "s4")
    assert "weekly" in await command("subscribe weekly", "s5")
    assert "turned off" in await command("unsubscribe", "s6")
    assert "No scheduled digests" in await command("status", "s7")
    slack.check_cards()


async def test_subscribed_digest_arrives_as_a_dm_in_the_users_time_zone_once(
        slack: Harness) -> None:
    from datetime import datetime
    from zoneinfo import ZoneInfo

    await slack.file_dm()
    fields = payload("slash_command_digest_weekly.json")
    fields.update(text="subscribe daily 07:30", response_url=slack.fake.hook_url("sub"))
    status, _ = await slack.send.command(fields)
    assert status == 200
    hooks = await slack.fake.wait_for("hook:sub")
    await slack.settle()
    assert "07:30" in hooks[0].body["text"]
    async with slack.bot.brain.core.db.session() as s:
        (sub,) = await repositories.list_subscriptions(s)
    assert sub.tz == "Asia/Tokyo" and (sub.hour, sub.minute) == (7, 30)  # from users.info

    tokyo = ZoneInfo("Asia/Tokyo")
    now = datetime(2027, 1, 5, 7, 31, tzinfo=tokyo)  # a minute after the slot, user's time
    posts_before = len(slack.fake.calls_to("chat.postMessage"))
    digests = slack.bot.brain.digests
    scheduler = digests.scheduler(wake=slack.bot.wake, clock=lambda: now)
    assert len(await scheduler.tick()) == 1
    await slack.settle()  # the journal's worker makes and posts it
    posts = slack.fake.calls_to("chat.postMessage")[posts_before:]
    assert len(posts) == 1 and posts[0].body["channel"] == DM
    assert "daily digest" in posts[0].body["text"].lower()
    assert "Tue 5 Jan 2027" in str(posts[0].body["blocks"])  # the slot's day, the person's
    # never twice: the same tick again, and a restarted scheduler, send nothing
    assert await scheduler.tick() == []
    restarted = digests.scheduler(wake=slack.bot.wake, clock=lambda: now)
    assert await restarted.tick() == []
    await slack.settle()
    assert len(slack.fake.calls_to("chat.postMessage")) == posts_before + 1
    slack.check_cards()


async def test_a_scheduled_digest_slack_refused_is_posted_once_later(slack: Harness) -> None:
    """A digest's slot is claimed with its delivery job: Slack failing the post does not
    lose the digest (it used to be logged and dropped), and it still comes only once."""
    from datetime import datetime
    from zoneinfo import ZoneInfo

    await slack.file_dm()
    async with slack.bot.brain.core.db.session() as s:
        await repositories.upsert_subscription(s, USER, "daily", 7, 30, None, "Asia/Tokyo", None)
        await s.commit()
    now = datetime(2027, 1, 5, 7, 31, tzinfo=ZoneInfo("Asia/Tokyo"))
    slack.fake.fail_next("chat.postMessage", status=200, error="fatal_error")  # no SDK retry
    posts_before = len(slack.fake.calls_to("chat.postMessage"))
    assert len(await slack.bot.brain.digests.scheduler(wake=slack.bot.wake,
                                                       clock=lambda: now).tick()) == 1
    await slack.fake.wait_for("chat.postMessage", posts_before + 2, timeout=60)
    await slack.settle()
    posts = [c for c in slack.fake.calls_to("chat.postMessage")[posts_before:]]
    delivered = [c for c in posts if c.response and c.response.get("ok")]
    assert len(posts) == 2 and len(delivered) == 1
    assert delivered[0].body["channel"] == "D" + USER[1:]  # the DM conversations.open gave
    assert "daily digest" in delivered[0].body["text"].lower()


async def test_finished_jobs_are_forgotten_after_a_day_open_ones_never(slack: Harness) -> None:
    await slack.file_dm()
    jobs = slack.bot.brain.jobs
    await jobs.record(key="event:EvOpen", kind="nothing", user_id=USER, lane="x",
                      payload={})
    async with slack.bot.brain.core.db.engine.begin() as conn:  # two days pass
        await conn.execute(sa.text("UPDATE jobs SET finished_at = :t WHERE state = 'done'"),
                           {"t": datetime.now(UTC) - timedelta(days=2)})
    assert await jobs.prune() == 1  # the DM's finished job; the open one stays
    assert await jobs.by_key("event:EvOpen") is not None
    assert await jobs.by_key("event:Ev0SB0000001") is None


async def test_bad_signature_and_stale_timestamp_are_refused(slack: Harness) -> None:
    event = message_event("hello", ts=DM_TS, event_id="Ev1")
    assert (await slack.send.event(event, secret="wrong-secret"))[0] == 401
    assert (await slack.send.event(event, timestamp=int(time.time()) - 301))[0] == 401
    await slack.settle()
    assert slack.fake.calls == [] and vault_files(slack.vault) == []


async def test_url_verification_and_health(slack: Harness) -> None:
    body = payload("url_verification.json")
    status, text = await slack.send.event(body)
    assert status == 200 and body["challenge"] in text
    assert (await slack.send.health())["ok"] is True


@pytest.mark.parametrize("fixture", [
    "event_callback_message_im_own_bot_reply.json",
    "event_callback_message_changed_own_bot.json",
    "event_callback_message_bot_message_subtype.json",
])
async def test_bot_messages_and_edits_are_ignored(slack: Harness, fixture: str) -> None:
    status, _ = await slack.send.event(payload(fixture))
    assert status == 200
    await slack.settle()
    assert slack.fake.web_api_calls() == []
    assert not slack.vault.exists() or vault_files(slack.vault) == []


async def test_mention_is_answered_in_its_thread_and_then_the_thread_is_followed(
        slack: Harness) -> None:
    mention = payload("event_callback_app_mention.json")
    status, _ = await slack.send.event(mention)
    assert status == 200
    posts = await slack.fake.wait_for("chat.postMessage")
    assert posts[0].body["channel"] == CHANNEL
    assert posts[0].body["thread_ts"] == mention["event"]["ts"]
    await slack.settle()
    files = vault_files(slack.vault)
    assert len(files) == 1 and "<@U0SBBOT01>" not in (slack.vault / files[0]).read_text()
    # a plain reply in that thread is answered; one in a thread the bot is not in is not
    known = message_event("fix: ideas", ts="1767262100.000100", event_id="Ev-c1",
                          channel=CHANNEL, channel_type="channel",
                          thread_ts=mention["event"]["ts"])
    unknown = message_event("what about this?", ts="1767262200.000100", event_id="Ev-c2",
                            channel=CHANNEL, channel_type="channel",
                            thread_ts="1767000000.000001")
    top_level = message_event("chatter", ts="1767262300.000100", event_id="Ev-c3",
                              channel=CHANNEL, channel_type="channel")
    for event in (unknown, top_level, known):
        assert (await slack.send.event(event))[0] == 200
    await slack.fake.wait_for("chat.postMessage", 2)
    await slack.settle()
    posts = slack.fake.calls_to("chat.postMessage")
    assert len(posts) == 2 and posts[1].body["thread_ts"] == mention["event"]["ts"]
    assert vault_files(slack.vault)[0].startswith("ideas/")


async def test_turns_of_one_thread_are_answered_in_arrival_order(slack: Harness) -> None:
    await slack.file_dm()
    texts = [f"Remember to buy item number {i} for the office" for i in range(5)]
    for i, text in enumerate(texts):
        event = message_event(text, ts=f"1767261700.00010{i}", event_id=f"Ev-o{i}",
                              thread_ts=DM_TS)
        assert (await slack.send.event(event))[0] == 200
    posts = await slack.fake.wait_for("chat.postMessage", 6)
    await slack.settle()
    replies = [p.body for p in posts[1:]]
    assert all(r["thread_ts"] == DM_TS for r in replies)
    # Each reply by the note it filed, named before any related note it lists (an earlier
    # item's note is related once its vectors are made, at once in the database store).
    order = [min((i for i in range(5) if f"number {i}" in json.dumps(r)),
                 key=lambda i, r=r: json.dumps(r).find(f"number {i}")) for r in replies]
    assert order == [0, 1, 2, 3, 4]


async def test_slack_api_failures_are_survived(slack: Harness,
                                               caplog: pytest.LogCaptureFixture) -> None:
    slack.fake.fail_next("assistant.threads.setStatus", error="missing_scope")
    slack.fake.fail_next("chat.postMessage", status=429, error="ratelimited",
                         headers={"Retry-After": "1"})
    caplog.set_level(logging.WARNING)
    await slack.file_dm()
    # the 429 was waited out and retried; the status failure was only logged
    assert len(slack.fake.calls_to("chat.postMessage")) == 2
    assert "assistant.threads.setStatus failed" in caplog.text
    assert len(vault_files(slack.vault)) == 1


async def test_a_failed_post_is_logged_with_a_reference(slack: Harness,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    slack.fake.fail_next("chat.postMessage", error="channel_not_found")
    caplog.set_level(logging.ERROR)
    await slack.file_dm()
    assert "chat.postMessage failed (ref " in caplog.text and "channel_not_found" in caplog.text


BROKEN_CONVERSATIONS = {
    "sqlite": ["CREATE TRIGGER broken BEFORE INSERT ON conversations BEGIN "
               "SELECT RAISE(ABORT, 'a bug'); END"],
    "postgresql": ["CREATE FUNCTION broken() RETURNS trigger LANGUAGE plpgsql AS "
                   "$$ BEGIN RAISE EXCEPTION 'a bug'; END $$",
                   "CREATE TRIGGER broken BEFORE INSERT ON conversations FOR EACH ROW "
                   "EXECUTE FUNCTION broken()"],
}


async def test_a_failing_turn_gets_an_error_card_with_a_logged_reference(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    fake = await FakeSlack().start()
    settings = make_settings(tmp_path, fake)
    brain = await brain_module.Brain.start(settings)
    # A turn that fails for a reason of its own (not storage that cannot be written: such a
    # turn waits for it, tests/e2e/test_storage_faults.py): the database refuses its
    # conversation row.
    async with brain.database_engine.begin() as conn:
        for statement in BROKEN_CONVERSATIONS[conn.dialect.name]:
            await conn.exec_driver_sql(statement)
    # Tried again after short pauses, then given up with a card the user can quote.
    bot = app_module.SlackBot(brain, settings, poll=0.05, retry_delays=(0.01,))
    bot.start(scheduler=False)
    server = TestServer(bot.web_app(), host="127.0.0.1")
    await server.start_server()
    send = SlackSender(str(server.make_url("/")))
    caplog.set_level(logging.ERROR)
    try:
        await send.event(message_event("Call the dentist", ts=DM_TS, event_id="Ev-err"))
        posts = await fake.wait_for("chat.postMessage")
        text = posts[0].body["text"]
        assert "something went wrong" in text and "(ref " in text
        ref = text.split("(ref ")[1][:6]
        assert await bot.settle(10)
        assert f"ref {ref}" in caplog.text
        statuses = [c.body["status"] for c in fake.calls_to("assistant.threads.setStatus")]
        assert statuses[-1] == ""  # the "is thinking…" status is cleared anyway
    finally:
        await send.close()
        await server.close()
        await bot.close(drain_timeout=5)
        await brain.close()
        await fake.stop()


async def test_with_a_single_owner_others_are_told_and_nothing_is_filed(tmp_path: Path) -> None:
    fake = await FakeSlack().start()
    settings = make_settings(tmp_path, fake, BRAIN_OWNER="U0SBOWNER")
    brain = await brain_module.Brain.start(settings)
    bot = app_module.SlackBot(brain, settings, poll=0.05)
    bot.start(scheduler=False)
    server = TestServer(bot.web_app(), host="127.0.0.1")
    await server.start_server()
    send = SlackSender(str(server.make_url("/")))
    try:
        await send.event(message_event("Call the dentist", ts=DM_TS, event_id="Ev-own"))
        posts = await fake.wait_for("chat.postMessage")
        assert await bot.settle(10)
        assert "belongs to <@U0SBOWNER>" in json.dumps(posts[0].body["blocks"])
        # Every entry point refuses through the same check: /digest (which once showed a
        # digest and took subscriptions), the Home and its buttons.
        for text, hook in (("daily", "d1"), ("subscribe daily 07:30", "d2")):
            fields = payload("slash_command_digest_weekly.json")
            fields.update(text=text, response_url=fake.hook_url(hook), trigger_id=f"t-{hook}")
            assert (await send.command(fields))[0] == 200
            answer = (await fake.wait_for(f"hook:{hook}"))[0].body
            assert "belongs to <@U0SBOWNER>" in answer["text"], answer
        await send.event(home_opened(event_id="Ev-home"))
        views = await fake.wait_for("views.publish")
        assert "belongs to <@U0SBOWNER>" in json.dumps(views[0].body)
        assert await bot.settle(10)
        assert not any(tmp_path.rglob("*.md"))
        assert not [p for p in tmp_path.rglob("*") if p.is_dir() and p.name == USER]
        async with brain.core.db.session() as s:
            assert await repositories.list_subscriptions(s) == []
    finally:
        await send.close()
        await server.close()
        await bot.close(drain_timeout=5)
        await brain.close()
        await fake.stop()


async def test_thread_fix_needs_no_llm_call(tmp_path: Path) -> None:
    from tests.bot.fake_llm_server import FakeLLMServer

    fake = await FakeSlack().start()
    llm = FakeLLMServer().start()
    settings = make_settings(tmp_path, fake, BRAIN_LLM="openai", OPENAI_API_KEY="sk-test",
                             OPENAI_BASE_URL=llm.openai_base_url)
    brain = await brain_module.Brain.start(settings)
    bot = app_module.SlackBot(brain, settings, poll=0.05)
    bot.start(scheduler=False)
    server = TestServer(bot.web_app(), host="127.0.0.1")
    await server.start_server()
    h = Harness(fake, bot, SlackSender(str(server.make_url("/"))), tmp_path)
    try:
        await h.file_dm("Project: migrate the wiki, next action draft the plan")
        calls = len(llm.requests)
        assert calls >= 1
        current = vault_files(h.vault)[0].split("/")[0]
        target = "ideas" if current != "ideas" else "admin"
        await h.send.event(message_event(f"fix: {target}", ts="1767261720.000300",
                                         event_id="Ev-fix", thread_ts=DM_TS))
        await fake.wait_for("chat.postMessage", 2)
        await h.settle()
        assert vault_files(h.vault)[0].startswith(f"{target}/")
        assert len(llm.requests) == calls  # the correction went straight to the move
    finally:
        await h.send.close()
        await server.close()
        await bot.close(drain_timeout=5)
        await brain.close()
        llm.stop()
        await fake.stop()
