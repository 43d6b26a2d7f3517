"""Apps distributed outside the Marketplace get `conversations.history`/`.replies` at one
request a minute (Slack, 2025-05-29): no normal path may need them. A thought, a correction in
its thread, a button on its card and a question each run without one; only a job that runs
again after it may have posted looks once (tests/e2e/test_slack_faults.py)."""

from __future__ import annotations

from tests.e2e.bot_harness import Harness
from tests.e2e.slack_harness import DM, USER, button_press, message_event, posted_entry_id

HISTORY_READS = ("conversations.history", "conversations.replies")


async def test_a_normal_turn_reads_no_history(slack: Harness) -> None:
    await slack.send.event(message_event("Idea: a podcast about urban gardening",
                                         ts="1767263000.000100", event_id="EvH1"))
    (card,) = await slack.fake.wait_for("chat.postMessage")
    await slack.send.event(message_event("fix: projects", ts="1767263001.000100",
                                         event_id="EvH2", thread_ts="1767263000.000100"))
    await slack.fake.wait_for("chat.postMessage", count=2)
    card_ts = str((card.response or {})["ts"])
    await slack.send.action(button_press(
        posted_entry_id(card.body["blocks"]), "ideas", user=USER, channel=DM,
        message_ts=card_ts, thread_ts="1767263000.000100",
        response_url=slack.fake.hook_url("b1")))
    await slack.send.event(message_event("what do I have about gardening?",
                                         ts="1767263002.000100", event_id="EvH3"))
    await slack.fake.wait_for_reply(3)
    await slack.settle()
    assert [c.method for c in slack.fake.calls if c.method in HISTORY_READS] == []
    assert len(slack.fake.replies()) == 3  # each answered once (the question streamed)
