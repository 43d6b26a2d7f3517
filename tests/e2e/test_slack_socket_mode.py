"""Socket Mode envelopes go through the same Bolt app: retries are deduplicated the same way.

Each envelope is run exactly as AsyncSocketModeHandler runs it (`run_async_bolt_app`, which
also turns `retry_attempt` into the x-slack-retry-num header), against the real Brain.
"""

from __future__ import annotations

import copy
import json

from slack_bolt.adapter.socket_mode.async_internals import run_async_bolt_app
from slack_sdk.socket_mode.request import SocketModeRequest

from tests.e2e.bot_harness import Harness, posted_ts
from tests.e2e.slack_harness import USER, payload, posted_entry_id, vault_files


async def run(h: Harness, envelope: dict) -> dict:
    response = await run_async_bolt_app(h.bot.app, SocketModeRequest.from_dict(envelope))
    assert response.status == 200
    body = response.body
    return json.loads(body) if isinstance(body, str) and body.startswith("{") else {"raw": body}


async def test_socket_mode_event_and_its_retry_are_answered_once(slack: Harness) -> None:
    await run(slack, payload("socket_mode_events_api_envelope.json"))
    posts = await slack.fake.wait_for("chat.postMessage")
    assert posts[0].body["thread_ts"] == "1767261600.000100"
    await run(slack, payload("socket_mode_events_api_envelope_retry.json"))
    await slack.settle()
    assert len(slack.fake.calls_to("chat.postMessage")) == 1
    assert len(vault_files(slack.vault)) == 1


async def test_socket_mode_button_and_command(slack: Harness) -> None:
    await run(slack, payload("socket_mode_events_api_envelope.json"))
    posts = await slack.fake.wait_for("chat.postMessage")
    await slack.settle()
    entry_id = posted_entry_id(posts[0].body["blocks"])
    current = vault_files(slack.vault)[0].split("/")[0]
    target = "ideas" if current != "ideas" else "people"
    envelope = copy.deepcopy(payload("socket_mode_interactive_envelope.json"))
    action = envelope["payload"]["actions"][0]
    action.update(action_id=f"move_entry:{target}",
                  value=json.dumps({"entry_id": entry_id, "to": target}))
    envelope["payload"]["container"]["message_ts"] = posted_ts(slack.fake)
    assert envelope["payload"]["user"]["id"] == USER
    await run(slack, envelope)
    await slack.fake.wait_for("chat.update")
    await slack.settle()
    assert vault_files(slack.vault)[0].startswith(f"{target}/")

    command = copy.deepcopy(payload("socket_mode_slash_commands_envelope.json"))
    command["payload"]["response_url"] = slack.fake.hook_url("digest")
    acked = await run(slack, command)
    assert "weekly" in json.dumps(acked).lower()
    hooks = await slack.fake.wait_for("hook:digest")
    assert hooks[0].body["response_type"] == "ephemeral"
