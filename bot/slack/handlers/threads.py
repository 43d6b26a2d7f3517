"""The work of Slack's assistant threads (bot.slack.assistant says which events they are): the
suggested prompts of a thread opened (or of the Messages tab, agent messaging), the thread's
context kept on its conversation, and the title its first message gives it.
"""

from __future__ import annotations

import logging

from slack_sdk.errors import SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.brain import Brain
from bot.jobs.queue import Handler, JobContext, JobKind
from bot.slack import web
from bot.slack.assistant import PROMPTS_TITLE, SUGGESTED_PROMPTS
from bot.slack.intake import conversation_key

log = logging.getLogger(__name__)


class ThreadWork:
    def __init__(self, brain: Brain, client: AsyncWebClient) -> None:
        self.brain = brain
        self.client = client

    def handlers(self) -> dict[str, Handler]:
        return {JobKind.THREAD_STARTED: self.started, JobKind.THREAD_CONTEXT: self.context}

    async def started(self, job: JobContext) -> None:
        """Suggested prompts: in a new assistant thread (its context kept first), or on the
        DM when its Messages tab opens (agent messaging, where a thread_ts would make the
        call fail silently)."""
        if job.result.get("prompted"):
            return
        p = job.job.payload
        if p.get("thread_ts"):
            await self.context(job)
        where = {"thread_ts": p["thread_ts"]} if p.get("thread_ts") else {}
        try:
            await self.client.assistant_threads_setSuggestedPrompts(
                channel_id=p["channel"], title=PROMPTS_TITLE, prompts=SUGGESTED_PROMPTS,
                **where)
        except SlackClientError as exc:
            log.warning("assistant.threads.setSuggestedPrompts failed on %s/%s: %s",
                        p["channel"], p["thread_ts"], web.error_code(exc))
            if not web.permanent(exc):
                raise
        await job.remember(prompted=True)

    async def context(self, job: JobContext) -> None:
        """The channel the person is viewing beside an assistant thread, kept on the thread's
        conversation (the turns after it name it to the model); no call to Slack. Jobs of
        one lane run in order, so a message sent after the change sees it."""
        p = job.job.payload
        await self.brain.conversations.viewing(
            conversation_key(p["channel"], p["thread_ts"], p["user"]), p["user"],
            channel=p["channel"], thread_ts=p["thread_ts"],
            context=dict(p.get("context") or {}))

    async def title(self, job: JobContext, key: str) -> None:
        """An assistant thread's first message titles it (Slack's list of threads shows it);
        a nicety: a failure is logged and the turn stands. Other threads get no title."""
        p = job.job.payload
        if job.result.get("titled") or p["thread_ts"] == p["ts"] \
                or not str(p["channel"]).startswith("D"):
            return  # a message that starts a thread, or not in a DM: no assistant thread
        title = job.result.get("title") or await self.brain.conversations.title_once(
            key, p["text"])
        if not title:
            return
        await job.remember(title=title)  # a run after a crash sets the same title again
        try:
            await self.client.assistant_threads_setTitle(
                channel_id=p["channel"], thread_ts=p["thread_ts"], title=title)
        except SlackClientError as exc:
            log.warning("assistant.threads.setTitle failed on %s/%s: %s", p["channel"],
                        p["thread_ts"], web.error_code(exc))
        await job.remember(titled=True)
