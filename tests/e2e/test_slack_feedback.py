"""Feedback buttons on answers (agent messaging): an answer ends with thumbs up/down; the
asker's press is kept with the turn (`brain log` shows it), a thumbs down is told how to put
things right, and someone else's press on the answer records nothing."""

from __future__ import annotations

from typing import Any

from storage import repositories
from tests.e2e.bot_harness import Harness
from tests.e2e.slack_harness import DM, OTHER_USER, USER, button_press, message_event

QUESTION_TS = "1767264000.000100"


def feedback_values(blocks: list[dict[str, Any]]) -> tuple[str, str]:
    (block,) = [b for b in blocks if b["type"] == "context_actions"]
    (buttons,) = block["elements"]
    assert buttons["type"] == "feedback_buttons" and buttons["action_id"] == "turn_feedback"
    return buttons["positive_button"]["value"], buttons["negative_button"]["value"]


async def test_an_answer_takes_feedback_from_its_asker_only(slack: Harness) -> None:
    await slack.file_dm("Idea: a podcast about urban gardening")
    await slack.send.event(message_event("what do I have about gardening?", ts=QUESTION_TS,
                                         event_id="EvQ1"))
    posts = await slack.fake.wait_for_reply(2)
    await slack.settle()
    capture, answer = posts[0], posts[1]
    assert not [b for b in capture["blocks"] if b["type"] == "context_actions"]  # a filing
    good, bad = feedback_values(answer["blocks"])
    slack.check_cards()
    answer_ts = str(answer["ts"])

    def press(value: str, user: str, trigger: str) -> dict[str, Any]:
        body = button_press("", "", user=user, channel=DM, message_ts=answer_ts,
                            thread_ts=QUESTION_TS, response_url=slack.fake.hook_url(trigger),
                            action_id="turn_feedback", value=value, trigger=trigger)
        body["actions"][0]["type"] = "feedback_buttons"
        return body

    await slack.send.action(press(bad, OTHER_USER, "T-other"))  # not theirs: nothing kept
    await slack.settle()
    assert await feedback_of(slack) is None
    await slack.send.action(press(bad, USER, "T-bad"))
    (sorry,) = await slack.fake.wait_for("chat.postEphemeral")
    await slack.settle()
    assert await feedback_of(slack) == "bad"
    assert sorry.body["user"] == USER and "fix: projects" in sorry.body["text"]
    await slack.send.action(press(good, USER, "T-good"))  # changed their mind
    await slack.settle()
    assert await feedback_of(slack) == "good"
    assert len(slack.fake.calls_to("chat.postEphemeral")) == 1


async def feedback_of(slack: Harness) -> str | None:
    async with slack.brain.core.db.session() as s:
        (latest, *_) = await repositories.turns_for_log(s, limit=5)
    return latest.feedback
