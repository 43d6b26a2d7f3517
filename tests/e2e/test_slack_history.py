"""The vault's history through the served Slack app (issue 20): a change made from a thread is
recorded as the person's, from that Slack message, and the reply's "Undo changes" puts the
files back exactly."""

from __future__ import annotations

import json

from tests.e2e.bot_harness import DM_TS, Harness, posted_ts
from tests.e2e.slack_harness import DM, USER, button_press, message_event, vault_files


def _snapshot(h: Harness) -> dict[str, bytes]:
    return {rel: (h.vault / rel).read_bytes() for rel in vault_files(h.vault)}


async def test_a_fix_in_a_thread_is_recorded_and_its_undo_puts_the_note_back(
        slack: Harness) -> None:
    await slack.file_dm("Idea: a lending library for the office")
    filed = _snapshot(slack)
    before = len(slack.fake.calls_to("chat.postMessage"))
    await slack.send.event(message_event("fix: projects", ts="1767261720.000300",
                                         event_id="Ev-fix", thread_ts=DM_TS))
    posts = await slack.fake.wait_for("chat.postMessage", before + 1)
    await slack.settle()
    assert [p.split("/")[0] for p in vault_files(slack.vault)] == ["projects"]
    reply = posts[-1].body
    (undo,) = [b for b in json.loads(json.dumps(reply["blocks"]))
               if b.get("type") == "actions"
               and b["elements"][0]["action_id"] == "undo_changes"]
    value = undo["elements"][0]["value"]

    changes = await slack.brain.store_for(USER).changes(limit=10)
    assert [c.action for c in changes[:2]] == ["move", "create"]
    assert changes[0].who == USER and changes[0].source.startswith(
        "slack https://slack.com/archives/")

    press = button_press("", "", user=USER, channel=DM, message_ts=posted_ts(slack.fake),
                         thread_ts=DM_TS, response_url=slack.fake.hook_url("x"),
                         action_id="undo_changes", value=value)
    assert (await slack.send.action(press))[0] == 200
    await slack.settle()
    assert _snapshot(slack) == filed  # byte for byte, back in ideas/
    last = (await slack.brain.store_for(USER).changes(limit=1))[0]
    assert last.action == "undo" and last.undoes == changes[0].id

    # Someone else pressing it finds none of those changes in their own vault.
    other = button_press("", "", user="U0OTHER01", channel=DM, message_ts="1.2",
                         thread_ts=DM_TS, response_url=slack.fake.hook_url("y"),
                         action_id="undo_changes", value=value)
    await slack.send.action(other)
    await slack.settle()
    assert _snapshot(slack) == filed
