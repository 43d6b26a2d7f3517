"""Threads are per person: in a shared channel thread, one user's words never reach another
user's history, prompt or notes, and a reply never names another user's note.

The model is a real SDK (OpenAI) against the local fake server, so the test reads exactly what
each turn sent to the model.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp.test_utils import TestServer

from bot.brain import Brain
from bot.slack.app import SlackBot
from tests.bot.fake_llm_server import FakeLLMServer
from tests.e2e.fake_slack import FakeSlack
from tests.e2e.slack_harness import CHANNEL, OTHER_USER, USER, SlackSender, message_event, payload
from tests.e2e.test_slack_app import Harness, make_settings

SECRET_WORDS = "the vault combination is 4-8-15-16"


@pytest.fixture
async def shared(tmp_path: Path) -> AsyncIterator[tuple[Harness, FakeLLMServer]]:
    fake = await FakeSlack().start()
    llm = FakeLLMServer().start()
    settings = make_settings(tmp_path, fake, BRAIN_LLM="openai", OPENAI_API_KEY="sk-test",
                             OPENAI_BASE_URL=llm.openai_base_url)
    brain = await Brain.start(settings)
    bot = SlackBot(brain, settings, poll=0.05)
    bot.start(scheduler=False)
    server = TestServer(bot.web_app(), host="127.0.0.1")
    await server.start_server()
    h = Harness(fake, bot, SlackSender(str(server.make_url("/"))), tmp_path)
    try:
        yield h, llm
    finally:
        await h.send.close()
        await server.close()
        await bot.close(drain_timeout=5)
        await brain.close()
        llm.stop()
        await fake.stop()


def _said(body: dict) -> str:
    return json.dumps(body["messages"], ensure_ascii=False)


async def test_another_users_words_never_reach_the_owners_turns(shared) -> None:
    h, llm = shared
    mention = payload("event_callback_app_mention.json")  # USER files a note in a channel
    thread = mention["event"]["ts"]
    assert (await h.send.event(mention))[0] == 200
    await h.fake.wait_for("chat.postMessage")
    await h.settle()
    owner_notes = sorted(p.relative_to(h.data_dir).as_posix()
                         for p in (h.data_dir / "vaults" / USER).rglob("*.md"))
    assert len(owner_notes) == 1
    owner_note = owner_notes[0]
    owner_text = (h.data_dir / owner_note).read_text(encoding="utf-8")
    entry_id = owner_text.split("id: ", 1)[1].split("\n", 1)[0]

    # Another member of the channel replies in that thread: a correction and a secret.
    for i, text in enumerate(["fix: ideas", f"note that {SECRET_WORDS}"]):
        event = message_event(text, ts=f"1767262100.00010{i}", event_id=f"Ev-o{i}",
                              user=OTHER_USER, channel=CHANNEL, channel_type="channel",
                              thread_ts=thread)
        assert (await h.send.event(event))[0] == 200
    await h.fake.wait_for("chat.postMessage", 3)
    await h.settle()
    # The owner's note was not moved or touched by the other user's `fix:`.
    assert (h.data_dir / owner_note).read_text(encoding="utf-8") == owner_text
    # Replies to the other user name none of the owner's notes.
    for post in h.fake.calls_to("chat.postMessage")[1:]:
        shown = json.dumps(post.body)
        assert entry_id not in shown and owner_note.split("/", 3)[-1] not in shown

    # The owner speaks again in the same thread: their turn carries only their own words.
    before = len(llm.requests)
    event = message_event("and also book the room", ts="1767262200.000100",
                          event_id="Ev-owner2", user=USER, channel=CHANNEL,
                          channel_type="channel", thread_ts=thread)
    assert (await h.send.event(event))[0] == 200
    await h.fake.wait_for("chat.postMessage", 4)
    await h.settle()
    owner_requests = [r.body for r in llm.requests[before:]]
    assert owner_requests
    for body in owner_requests:
        said = _said(body) + json.dumps(body.get("tools"))
        assert SECRET_WORDS not in said and "fix: ideas" not in said
        assert "Q3 planning doc" in said  # the owner's own history is there
    # And the other user's own vault holds their words; the owner's does not.
    other_vault = h.data_dir / "vaults" / OTHER_USER
    assert any(SECRET_WORDS in p.read_text(encoding="utf-8") for p in other_vault.rglob("*.md"))
    assert not any(SECRET_WORDS in p.read_text(encoding="utf-8")
                   for p in (h.data_dir / "vaults" / USER).rglob("*.md"))


async def test_model_text_cannot_ping_the_channel_or_forge_a_link(shared) -> None:
    from tests.bot.fake_llm_server import openai_text

    h, llm = shared
    llm.script([openai_text("Done <!channel> <!here> <!subteam^S123> <@U999> "
                            "<https://evil.example|your bank>")])
    await h.send.event(message_event("what is new?", ts="1767262300.000100", event_id="Ev-p"))
    posts = await h.fake.wait_for("chat.postMessage")
    await h.settle()
    body = json.dumps(posts[0].body)
    for raw in ("<!channel>", "<!here>", "<!subteam", "<@U999>", "<https://evil"):
        assert raw not in body
    assert "&lt;!channel&gt;" in posts[0].body["text"]
