"""Slack's AI-app surface: the assistant panel (manifest `assistant_view`).

Bolt's `AsyncAssistant` routes the panel's events: a thread opened gets the suggested prompts
(a job: `assistant.threads.setSuggestedPrompts`), and the person's messages in it run the same
turn as a DM (a `turn` job: Slack's "is thinking…" status while it runs, the answer as a
markdown block with the cards). Bolt sends every DM thread reply through the assistant's
`user_message`, assistant panel or not; both are the same turn.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.middleware.assistant.async_assistant import AsyncAssistant

from bot.slack.intake import JobSpec, assistant_spec, is_from_a_bot, turn_spec

log = logging.getLogger(__name__)

PROMPTS_TITLE = "Try one of these:"
# The same prompts as manifest.yml's agent_view (a test keeps them in step).
SUGGESTED_PROMPTS: list[dict[str, str]] = [
    {"title": "What's due this week?", "message": "What's due this week?"},
    {"title": "Review my inbox", "message": "Show my inbox notes to review"},
    {"title": "Find…", "message": "Find my notes about the budget"},
]

Take = Callable[[Callable[[], JobSpec], str, dict[str, Any]], Awaitable[bool]]


def register(app: AsyncApp, take: Take, logger: logging.Logger) -> AsyncAssistant:
    assistant = AsyncAssistant(logger=logger)

    @assistant.thread_started
    async def started(body: dict[str, Any], event: dict[str, Any]) -> None:
        await take(lambda: assistant_spec(body, event), "assistant thread", body)

    @assistant.user_message
    async def message(body: dict[str, Any], event: dict[str, Any]) -> None:
        if is_from_a_bot(event) or not event.get("user"):
            return
        text = str(event.get("text") or "").strip()
        if text:
            await take(lambda: turn_spec(body, event, text), "assistant message", body)

    @assistant.thread_context_changed
    async def context_changed() -> None:
        return None  # the channel being viewed does not change what the brain does

    app.assistant(assistant)
    return assistant
