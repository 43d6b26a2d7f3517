"""Slack's agent surface: assistant threads (`assistant_thread_started`,
`assistant_thread_context_changed`, `message.im`), beside the Messages tab of agent messaging
(`app_home_opened`, bot.slack.listeners).

Bolt's `AsyncAssistant` routes the thread's events, each a job in the thread's lane: a thread
opened gets the suggested prompts (`assistant.threads.setSuggestedPrompts` with its thread)
and its context is kept; a context change (the person moved to another channel) is kept on
the thread's conversation, and the turns after it name that channel to the model; the
person's messages run the same turn as a DM (a `turn` job: Slack's "is thinking…" status
while it runs, the answer streamed or as a card), and the thread's first one titles it
(`assistant.threads.setTitle`). Bolt sends every DM thread reply through the assistant's
`user_message`, assistant thread or not; both are the same turn.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.middleware.assistant.async_assistant import AsyncAssistant

from bot.jobs.queue import JobKind
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
    async def context_changed(body: dict[str, Any], event: dict[str, Any]) -> None:
        await take(lambda: assistant_spec(body, event, kind=JobKind.THREAD_CONTEXT),
                   "assistant context", body)

    app.assistant(assistant)
    return assistant
