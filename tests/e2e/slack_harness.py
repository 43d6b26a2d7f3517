"""Shared helpers of the Slack end-to-end tests: fixture payloads, signing, an HTTP client.

Requests are built from ../shared/fixtures/slack/payloads exactly as Slack puts them on the
wire (payloads/README.md) and signed with slack_sdk's SignatureVerifier.
"""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import aiohttp
import pytest
from slack_sdk.signature import SignatureVerifier

from tests.shared import SLACK_FIXTURES

PAYLOADS = SLACK_FIXTURES / "payloads"
SECRET = "test-signing-secret-0123456789"
USER = "U0SBUSR01"
OTHER_USER = "U0SBUSR99"
DM = "D0SBDM001"
CHANNEL = "C0SBCHN01"


def payload(name: str) -> dict[str, Any]:
    path = PAYLOADS / name
    if not path.exists():
        pytest.skip(f"shared Slack fixture {name} not present")
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def message_event(text: str, *, ts: str, event_id: str, user: str = USER, channel: str = DM,
                  channel_type: str = "im", thread_ts: str | None = None) -> dict[str, Any]:
    """The DM fixture with its text, ids and thread changed."""
    body = copy.deepcopy(payload("event_callback_message_im.json"))
    event = body["event"]
    event.update(text=text, ts=ts, event_ts=ts, user=user, channel=channel,
                 channel_type=channel_type)
    event["client_msg_id"] = f"msg-{event_id}"
    event["blocks"][0]["elements"][0]["elements"][0]["text"] = text
    if thread_ts:
        event["thread_ts"] = thread_ts
        event["parent_user_id"] = user
    body["event_id"] = event_id
    return body


def button_press(entry_id: str, to: str, *, user: str, channel: str, message_ts: str,
                 thread_ts: str, response_url: str, action_id: str | None = None,
                 value: str | None = None, ephemeral: bool = False,
                 trigger: str | None = None) -> dict[str, Any]:
    """The block_actions fixture, pointing at a real note and card (an ephemeral one too)."""
    body = copy.deepcopy(payload("block_actions_button.json"))
    if value is None:
        value = json.dumps({"entry_id": entry_id, "to": to} if to else {"entry_id": entry_id})
    if ephemeral:
        body["container"]["is_ephemeral"] = True
    if trigger:
        body["trigger_id"] = trigger
    action = body["actions"][0]
    action.update(action_id=action_id or f"move_entry:{to}", value=value,
                  block_id=f"move-{entry_id}")
    body["user"]["id"] = user
    body["container"].update(message_ts=message_ts, channel_id=channel)
    body["channel"]["id"] = channel
    body["message"].update(ts=message_ts, thread_ts=thread_ts)
    body["response_url"] = response_url
    return body


AUTHOR = "U0SBOTHER"  # who wrote the message that is saved or reacted to
SAVED_TS = "1767261900.000400"  # that message's ts in CHANNEL
SAVED_TEXT = ("Dana says the vendor contract renewal is due on the 30th; legal wants the "
              "redlines first")


def save_shortcut(*, trigger: str, response_url: str, user: str = USER) -> dict[str, Any]:
    """The Save-to-brain message shortcut on AUTHOR's message in CHANNEL."""
    body = copy.deepcopy(payload("message_action_save_to_brain.json"))
    body["trigger_id"] = trigger
    body["response_url"] = response_url
    body["user"]["id"] = user
    return body


def reaction_added(*, event_id: str, user: str = USER, reaction: str = "brain",
                   channel: str = CHANNEL, ts: str = SAVED_TS) -> dict[str, Any]:
    body = copy.deepcopy(payload("event_callback_reaction_added.json"))
    body["event_id"] = event_id
    body["event"].update(user=user, reaction=reaction)
    body["event"]["item"].update(channel=channel, ts=ts)
    return body


def home_opened(*, event_id: str, user: str = USER) -> dict[str, Any]:
    body = copy.deepcopy(payload("event_callback_app_home_opened.json"))
    body["event_id"] = event_id
    body["event"]["user"] = user
    return body


def home_press(action_id: str, value: str, *, trigger: str, user: str = USER,
               select: bool = False) -> dict[str, Any]:
    """A press on the App Home: a button (`value`) or a static select (`selected_option`)."""
    action: dict[str, Any] = {"action_id": action_id, "block_id": "home",
                              "action_ts": "1767262500.000100"}
    if select:
        action.update(type="static_select",
                      selected_option={"text": {"type": "plain_text", "text": value},
                                       "value": value})
    else:
        action.update(type="button", value=value, text={"type": "plain_text", "text": "x"})
    return {"type": "block_actions", "user": {"id": user, "username": "alex",
                                              "team_id": "T0SB00001"},
            "api_app_id": "A0SB00001", "token": "deprecated-verification-token",
            "container": {"type": "view", "view_id": "V0SBHOME1"}, "trigger_id": trigger,
            "team": {"id": "T0SB00001", "domain": "example"}, "is_enterprise_install": False,
            "view": {"id": "V0SBHOME1", "type": "home", "blocks": []}, "actions": [action]}


def signed_headers(raw: str, content_type: str, *, secret: str = SECRET,
                   timestamp: int | None = None, retry: int | None = None) -> dict[str, str]:
    ts = str(int(time.time()) if timestamp is None else timestamp)
    headers = {
        "Content-Type": content_type,
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": SignatureVerifier(secret).generate_signature(timestamp=ts, body=raw),
    }
    if retry is not None:
        headers["X-Slack-Retry-Num"] = str(retry)
        headers["X-Slack-Retry-Reason"] = "http_timeout"
    return headers


class SlackSender:
    """Posts signed requests to a served app, the way Slack does."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url.rstrip("/")
        self.session = aiohttp.ClientSession()

    async def close(self) -> None:
        await self.session.close()

    async def _post(self, raw: str, content_type: str, **sign: Any) -> tuple[int, str]:
        async with self.session.post(f"{self.base_url}/slack/events", data=raw.encode(),
                                     headers=signed_headers(raw, content_type, **sign)) as r:
            return r.status, await r.text()

    async def event(self, body: dict[str, Any], **sign: Any) -> tuple[int, str]:
        return await self._post(json.dumps(body), "application/json", **sign)

    async def action(self, body: dict[str, Any], **sign: Any) -> tuple[int, str]:
        return await self._post(f"payload={quote(json.dumps(body))}",
                                "application/x-www-form-urlencoded", **sign)

    async def command(self, fields: dict[str, str], **sign: Any) -> tuple[int, str]:
        return await self._post(urlencode(fields), "application/x-www-form-urlencoded", **sign)

    async def health(self) -> dict[str, Any]:
        async with self.session.get(f"{self.base_url}/health") as r:
            data: dict[str, Any] = await r.json()
            return data


def posted_entry_id(blocks: list[dict[str, Any]]) -> str:
    """The note id the card's buttons carry (what a user's press sends back)."""
    for block in blocks:
        if block["type"] == "actions":
            return str(json.loads(block["elements"][0]["value"])["entry_id"])
    raise AssertionError(f"no buttons on the card: {blocks}")


def vault_files(root: Path) -> list[str]:
    """Every note under a vault root (relative POSIX paths), including the trash."""
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.md"))
