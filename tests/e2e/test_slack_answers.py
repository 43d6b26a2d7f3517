"""Questions asked in Slack (signed events, the offline provider, the fake Slack at the edge):
the answer quotes the note it came from, each source has a button that opens the note in a
modal, a question about nothing in the vault says so, and nobody opens another person's note.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.bot_harness import DM_TS, Harness
from tests.e2e.slack_harness import DM, OTHER_USER, USER, button_press, message_event


def _buttons(blocks: list[dict]) -> list[dict]:
    return [e for b in blocks if b["type"] == "actions" for e in b["elements"]]


async def _ask(slack: Harness, text: str, ts: str, event_id: str) -> dict:
    before = len(slack.fake.replies())
    status, _ = await slack.send.event(message_event(text, ts=ts, event_id=event_id))
    assert status == 200
    posts = await slack.fake.wait_for_reply(before + 1)
    await slack.settle()
    return posts[-1]


async def test_a_question_is_answered_with_its_source_and_the_button_opens_the_note(
        slack: Harness) -> None:
    await slack.file_dm("We decided to hold the spring offsite in Sintra because the venue "
                        "fits all 60 people")
    (note,) = [p for p in slack.vault.rglob("*.md")]
    body = await _ask(slack, "What did we decide about the offsite?", "1767261700.000200",
                      "Ev-ask-1")
    text = json.dumps(body["blocks"])
    assert "Sintra" in text and "Sources" in text
    (button,) = _buttons(body["blocks"])
    assert button["action_id"].startswith("open_note")
    slack.check_cards()

    status, _ = await slack.send.action(button_press(
        "", "", user=USER, channel=DM, message_ts="1767261700.000300", thread_ts=DM_TS,
        response_url=slack.fake.hook_url("b"), action_id=button["action_id"],
        value=button["value"], trigger="trig-open-1"))
    assert status == 200
    (opened,) = await slack.fake.wait_for("views.open")
    await slack.settle()
    view = opened.body["view"]
    view = json.loads(view) if isinstance(view, str) else view
    assert opened.body["trigger_id"] == "trig-open-1"
    assert opened.response is not None and opened.response["ok"], opened.response
    assert "Sintra" in json.dumps(view["blocks"])
    assert note.relative_to(slack.vault).as_posix() in json.dumps(view["blocks"])


async def test_a_question_about_nothing_in_the_vault_says_so(slack: Harness) -> None:
    await slack.file_dm()
    body = await _ask(slack, "What is my wifi password?", "1767261700.000200", "Ev-ask-2")
    assert "Nothing in your notes about that" in body["text"]
    assert "Sources" not in json.dumps(body["blocks"])


async def test_someone_else_pressing_a_source_button_opens_nothing_of_the_askers(
        slack: Harness) -> None:
    await slack.file_dm("Priya is moving to Lisbon in January and will work remotely")
    body = await _ask(slack, "Where is Priya moving?", "1767261700.000200", "Ev-ask-3")
    (button,) = _buttons(body["blocks"])
    status, _ = await slack.send.action(button_press(
        "", "", user=OTHER_USER, channel=DM, message_ts="1767261700.000300", thread_ts=DM_TS,
        response_url=slack.fake.hook_url("b"), action_id=button["action_id"],
        value=button["value"], trigger="trig-open-2"))
    assert status == 200
    told = await slack.fake.wait_for("chat.postEphemeral")
    await slack.settle()
    assert slack.fake.calls_to("views.open") == []
    assert told[-1].body["user"] == OTHER_USER and "can't open" in told[-1].body["text"]
    assert "Lisbon" not in json.dumps(told[-1].body)


def _long_chat(vault: Path) -> None:
    messages = [f"Tobias, 13 Apr 2025 10:{i:02d}: We talked about the weather and the trains "
                f"again, message {i}, nothing new to say about either of them." for i in range(30)]
    messages[23] = "Tobias, 13 Apr 2025 10:23: The interview at Maasstad is on Thursday at ten."
    note = vault / "people" / "chat-with-tobias.md"
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text("---\nname: Chat with Tobias\ncreated: '2025-04-13'\n---\n"
                    + "\n\n".join(messages) + "\n", encoding="utf-8")


@pytest.mark.files_store
async def test_a_search_card_shows_the_passage_that_matched_and_the_date(
        slack: Harness) -> None:
    await slack.file_dm()
    _long_chat(slack.vault)
    body = await _ask(slack, "find Maasstad interview", "1767261700.000200", "Ev-find-1")
    text = json.dumps(body["blocks"])
    assert "Chat with Tobias" in text and "2025-04-13" in text
    assert "The *interview* at *Maasstad* is on Thursday" in text  # the message, words bold
    assert "message 0," not in text  # not the chat's first lines
    slack.check_cards()


@pytest.mark.files_store
async def test_an_answer_quotes_the_passage_that_holds_it_with_the_notes_date(
        slack: Harness) -> None:
    await slack.file_dm()
    _long_chat(slack.vault)
    body = await _ask(slack, "When is the interview at Maasstad?", "1767261700.000200",
                      "Ev-ask-long")
    text = json.dumps(body["blocks"])
    assert "The interview at Maasstad is on Thursday at ten" in text
    assert "Sources" in text and "2025-04-13" in text
    slack.check_cards()
