"""Answers stream into their thread (chat.startStream / appendStream / stopStream against the
fake Slack): the lookup shows as steps, the checked answer arrives as text, the sources and
feedback end the message, and the reply is one message whatever Slack refuses on the way.
A turn that only files a note answers with its card, as before.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from tests.e2e.bot_harness import Harness
from tests.e2e.slack_harness import DM, USER, message_event, payload

QUESTION = "What did we decide about the offsite?"
FACT = ("We decided to hold the spring offsite in Sintra because the venue fits all 60 "
        "people")


def steps(fake: Any) -> list[dict[str, Any]]:
    return [c for call in fake.calls if call.method in ("chat.startStream", "chat.appendStream")
            for c in call.body.get("chunks") or [] if c["type"] == "task_update"]


async def ask(slack: Harness, text: str = QUESTION, **where: Any) -> dict[str, Any]:
    before = len(slack.fake.replies())
    event = message_event(text, ts="1767261700.000200", event_id="Ev-stream-1", **where)
    assert (await slack.send.event(event))[0] == 200
    replies = await slack.fake.wait_for_reply(before + 1)
    await slack.settle()
    return replies[-1]


async def test_a_question_streams_its_steps_then_the_answer_and_its_sources(
        slack: Harness) -> None:
    await slack.file_dm(FACT)
    assert slack.fake.calls_to("chat.startStream") == []  # filing a thought: its card
    answer = await ask(slack)

    (start,) = slack.fake.calls_to("chat.startStream")
    assert start.body["channel"] == DM and start.body["thread_ts"] == "1767261700.000200"
    assert start.body["recipient_user_id"] == USER
    shown = steps(slack.fake)
    assert shown[0]["status"] == "in_progress" and "your notes" in shown[0]["title"]
    assert {s["id"] for s in shown if s["status"] == "complete"} == {s["id"] for s in shown}
    # the text comes after the steps, then the stop carries sources, feedback and the key
    (stop,) = slack.fake.calls_to("chat.stopStream")
    assert "Sintra" in answer["text"]
    blocks = json.dumps(stop.body["blocks"])
    assert "Sources" in blocks and "open_note" in blocks and "feedback_buttons" in blocks
    assert "Sintra" not in json.dumps([b for b in stop.body["blocks"]
                                       if b["type"] == "markdown"])  # the text is not twice
    assert stop.body["metadata"]["event_type"] == "brain_reply"
    assert slack.fake.calls_to("chat.postMessage")[1:] == []  # one reply: the stream
    slack.check_cards()


async def test_a_mention_in_a_channel_streams_to_its_asker(slack: Harness) -> None:
    mention = copy.deepcopy(payload("event_callback_app_mention.json"))
    mention["event"]["text"] = "<@U0SBBOT01> remember: the offsite is in Sintra in May"
    assert (await slack.send.event(mention))[0] == 200
    await slack.fake.wait_for_reply(1)
    await slack.settle()
    question = copy.deepcopy(mention)
    question["event_id"] = "Ev-stream-channel"
    question["event"].update(text="<@U0SBBOT01> where is the offsite?", ts="1767262400.000100",
                             event_ts="1767262400.000100", client_msg_id="msg-stream-c")
    assert (await slack.send.event(question))[0] == 200
    replies = await slack.fake.wait_for_reply(2)
    await slack.settle()
    (start,) = slack.fake.calls_to("chat.startStream")
    assert start.response and start.response["ok"], start.response
    assert start.body["recipient_team_id"] == mention["team_id"]
    assert start.body["recipient_user_id"] == mention["event"]["user"]
    assert "Sintra" in replies[-1]["text"]


async def test_slack_refusing_to_stream_gets_the_reply_posted(slack: Harness) -> None:
    await slack.file_dm(FACT)
    slack.fake.fail_next("chat.startStream", error="not_allowed_token_type")
    answer = await ask(slack)
    assert "Sintra" in json.dumps(answer["blocks"])
    assert slack.fake.calls_to("chat.appendStream") == []
    assert slack.fake.calls_to("chat.stopStream") == []
    assert len(slack.fake.calls_to("chat.postMessage")) == 2  # the card, then the answer


async def test_a_stream_slack_will_not_finish_is_completed_in_place(slack: Harness) -> None:
    """The stop is refused, then the update too (a 500): the job runs again and updates the
    message it streamed; nothing is posted twice and no second stream starts."""
    await slack.file_dm(FACT)
    slack.fake.fail_next("chat.stopStream", error="internal_error")
    slack.fake.fail_next("chat.update", status=500, error="internal_error")
    answer = await ask(slack)
    assert len(slack.fake.calls_to("chat.startStream")) == 1
    updates = slack.fake.calls_to("chat.update")
    assert len(updates) == 2 and updates[-1].body["ts"] == answer["ts"]
    assert "Sintra" in json.dumps(updates[-1].body["blocks"])
    assert updates[-1].body["metadata"]["event_type"] == "brain_reply"
    assert len(slack.fake.calls_to("chat.postMessage")) == 1  # only the filing's card
    assert len(slack.fake.replies()) == 2


async def test_a_stream_that_is_gone_gets_the_reply_posted_once(slack: Harness) -> None:
    await slack.file_dm(FACT)
    slack.fake.fail_next("chat.stopStream", error="message_not_in_streaming_state")
    slack.fake.fail_next("chat.update", error="message_not_found")
    await ask(slack)
    posts = slack.fake.calls_to("chat.postMessage")
    assert len(posts) == 2 and "Sintra" in json.dumps(posts[1].body["blocks"])
