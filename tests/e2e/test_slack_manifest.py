"""manifest.yml is a valid Slack manifest and asks for exactly the scopes the code needs."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from tests.shared import SLACK_FIXTURES

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "tests" / "fixtures" / "slack" / "manifest.schema.json"  # SOURCE.md there

# Web API method (as the SDK names it) -> the bot scope it needs (None: no scope).
METHOD_SCOPES: dict[str, str | None] = {
    "chat_postMessage": "chat:write",
    "chat_update": "chat:write",
    "chat_postEphemeral": "chat:write",
    # An answer streamed into its thread (bot.slack.streaming): steps, text, sources.
    "chat_startStream": "chat:write",
    "chat_appendStream": "chat:write",
    "chat_stopStream": "chat:write",
    "views_publish": None,  # the App Home
    "views_open": None,  # a source of an answer, opened in a modal
    "assistant_threads_setStatus": "chat:write",  # "is thinking…" while a turn runs
    "assistant_threads_setSuggestedPrompts": "assistant:write",
    "assistant_threads_setTitle": "assistant:write",  # an assistant thread's title
    "auth_test": None,
    "users_info": "users:read",
    "conversations_open": "im:write",
    "chat_getPermalink": None,
    # Looking for a reply an interrupted job may have posted (bot.slack.web.find_posted), and
    # reading a message reacted to (bot.slack.web.fetch_message; channels:history in channels).
    "conversations_replies": "im:history",
    "conversations_history": "im:history",
    "apps_connections_open": None,  # the app-level token (Socket Mode), not a bot scope
    # A shared file's bytes (bot.slack.shared_files.files_download: url_private_download).
    "files_download": "files:read",
}
EVENT_SCOPES: dict[str, str | None] = {
    "message.im": "im:history", "app_mention": "app_mentions:read",
    "message.channels": "channels:history", "message.groups": "groups:history",
    "message.mpim": "mpim:history", "reaction_added": "reactions:read",
    "assistant_thread_started": "assistant:write",
    "assistant_thread_context_changed": "assistant:write",
    "app_home_opened": None, "app_uninstalled": None, "tokens_revoked": None}
# `client.chat_postMessage(` or a method name in quotes (`getattr(client, "reactions_add")`).
API_CALL = re.compile(r"""(?:\.|["'])((?:chat|reactions|users|conversations|auth|views|files|"""
                      r"apps|assistant)_[A-Za-z_]+)\b")


def manifest() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / "manifest.yml").read_text(encoding="utf-8"))
    return data


# Names the scan matches that are fields of Slack's payloads, not Web API methods.
PAYLOAD_FIELDS = {"assistant_thread"}


def methods_used() -> set[str]:
    found: set[str] = set()
    for path in (ROOT / "bot" / "slack").rglob("*.py"):
        found |= set(API_CALL.findall(path.read_text(encoding="utf-8")))
    return found - PAYLOAD_FIELDS


def test_manifest_is_valid_against_slacks_schema() -> None:
    jsonschema.validate(manifest(), json.loads(SCHEMA.read_text(encoding="utf-8")))
    shared = SLACK_FIXTURES / "manifest.schema.json"  # the shared fixtures' copy, when present
    if shared.exists():
        jsonschema.validate(manifest(), json.loads(shared.read_text(encoding="utf-8")))


def test_the_manifest_subscribes_to_slacks_agent_events() -> None:
    """Slack's agent documentation asks an agent app for these three (Bolt's Assistant
    handles them), beside app_home_opened for the Messages tab of agent messaging."""
    events = set(manifest()["settings"]["event_subscriptions"]["bot_events"])
    assert {"assistant_thread_started", "assistant_thread_context_changed", "message.im",
            "app_home_opened"} <= events
    assert "assistant:write" in manifest()["oauth_config"]["scopes"]["bot"]


def test_the_manifest_uses_agent_messaging_not_the_retiring_assistant_view() -> None:
    features = manifest()["features"]
    assert "assistant_view" not in features
    assert len(features["agent_view"]["agent_description"]) <= 300  # the schema's limit
    assert features["app_home"]["messages_tab_enabled"] is True


def test_manifest_turns_on_what_the_app_listens_to() -> None:
    m = manifest()
    assert m["settings"]["socket_mode_enabled"] is True
    assert m["settings"]["interactivity"]["is_enabled"] is True
    events = set(m["settings"]["event_subscriptions"]["bot_events"])
    assert {"message.im", "app_mention", "message.channels", "message.groups"} <= events
    digest = [c for c in m["features"]["slash_commands"] if c["command"] == "/digest"]
    assert digest and digest[0]["usage_hint"]


def test_the_scan_finds_the_calls_the_code_makes() -> None:
    used = methods_used()
    assert {"chat_postMessage", "chat_update", "assistant_threads_setStatus",
            "views_publish"} <= used  # guard: the scan works


def test_bot_scopes_are_exactly_what_the_code_uses() -> None:
    used = methods_used()
    unknown = used - set(METHOD_SCOPES)
    assert not unknown, f"add the scopes of {sorted(unknown)} to METHOD_SCOPES and the manifest"
    m = manifest()
    needed = {METHOD_SCOPES[u] for u in used} - {None}
    needed |= {EVENT_SCOPES[e] for e in m["settings"]["event_subscriptions"]["bot_events"]}
    needed.discard(None)
    if m["features"].get("slash_commands") or m["features"].get("shortcuts"):
        needed.add("commands")
    assert set(m["oauth_config"]["scopes"]["bot"]) == needed


def test_the_manifest_declares_every_entry_point_the_code_listens_to() -> None:
    from bot.slack.assistant import SUGGESTED_PROMPTS
    from bot.slack.listeners import SAVE_SHORTCUT

    m = manifest()
    events = set(m["settings"]["event_subscriptions"]["bot_events"])
    assert {"reaction_added", "app_home_opened", "app_uninstalled", "tokens_revoked"} <= events
    assert m["features"]["app_home"]["home_tab_enabled"] is True
    shortcuts = {s["callback_id"]: s for s in m["features"]["shortcuts"]}
    assert shortcuts[SAVE_SHORTCUT]["type"] == "message"
    assert m["features"]["agent_view"]["suggested_prompts"] == SUGGESTED_PROMPTS
    assert "reactions:write" not in m["oauth_config"]["scopes"]["bot"]  # no hourglass any more


def test_the_long_description_tells_an_admin_where_data_lives_and_for_how_long() -> None:
    text = manifest()["display_information"]["long_description"]
    assert 175 <= len(text) <= 4000
    for words in ("markdown files", "database", "Anthropic or OpenAI", "BRAIN_RETENTION_DAYS",
                  "brain export", "brain forget", "Uninstalling"):
        assert words in text, words
