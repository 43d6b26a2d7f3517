"""Saving a message from anywhere: the Save-to-brain shortcut and the capture reaction.

The shortcut brings the message with it; the reaction names it only, so the worker reads it
(conversations.history, else .replies for a reply in a thread). The Brain files it once per
message and person; the confirmation, a card with the usual buttons, goes to that person only
(through the shortcut's response_url, or an ephemeral message where they reacted). A second
reaction on a message already saved says nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from slack_sdk.errors import SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.brain import Brain
from bot.config import Settings
from bot.jobs.queue import Handler, JobContext, JobKind
from bot.slack import cards, shared_files, web
from bot.slack.intake import permalink, plain_text, shared_text
from bot.slack.shared_files import files_of
from tools.capture.limits import refusal
from tools.web.links import unfurls_of

log = logging.getLogger(__name__)

SAVE_HINT = "use the buttons to re-file it"


def saved_message(saved: dict[str, Any]) -> cards.SlackMessage:
    head = ("This message is already in your brain." if saved["already"]
            else "Saved to your brain.")
    blocks = [cards.section(head), *cards.capture_blocks(saved["data"], hint=SAVE_HINT)]
    return cards.message(blocks, cards.escape(f"{head} {saved['text']}"))


class CaptureWork:
    def __init__(self, brain: Brain, client: AsyncWebClient, settings: Settings,
                 refresh_home: Callable[[str], Awaitable[None]]) -> None:
        self.brain = brain
        self.client = client
        self.settings = settings
        self.refresh_home = refresh_home

    def handlers(self) -> dict[str, Handler]:
        return {JobKind.CAPTURE: self.save}

    async def save(self, job: JobContext) -> None:
        p = job.job.payload
        user, channel = p["user"], p["channel"]
        if job.result.get("told"):
            return
        saved = job.result.get("saved")
        if saved is None:
            saved = await self._save(job)
            if saved is None:
                return
        if saved["already"] and p["via"] == "reaction":
            await job.remember(told=True)  # reacting again: nothing new, so no message
            return
        msg = saved_message(saved)
        if p.get("response_url"):
            if not await web.respond(p["response_url"], msg):
                raise RuntimeError("the confirmation did not reach the response_url")
        else:
            await web.ephemeral(self.client, channel, user, "", job.result.get("thread_ts"),
                                msg=msg)
        await job.remember(told=True)
        await self.refresh_home(user)

    async def _save(self, job: JobContext) -> dict[str, Any] | None:
        """Read the message if needed, file it through the Brain, remember the outcome."""
        p = job.job.payload
        user, channel, ts = p["user"], p["channel"], p["message_ts"]
        text, thread_ts, author = p.get("text"), p.get("thread_ts"), p.get("author")
        files, unfurls = p.get("files") or [], p.get("unfurls") or []
        if p["via"] == "reaction":
            try:
                message = await web.fetch_message(self.client, channel, ts)
            except SlackClientError as exc:
                if not web.permanent(exc):
                    raise  # worth another try
                log.warning("could not read %s/%s to save it: %s", channel, ts,
                            web.error_code(exc))
                await self._tell(job, "I couldn't read that message (is the app in this "
                                      "channel?); nothing was saved.")
                return None
            if message is None:
                await self._tell(job, "That message is gone; nothing was saved.")
                return None
            text, thread_ts = message.get("text"), message.get("thread_ts")
            author = message.get("user") or message.get("username") or author
            files, unfurls = files_of(message), unfurls_of(message)
        text = plain_text(str(text or "")).strip() or shared_text({"files": files})
        if not text:
            await self._tell(job, "That message has no text or files to save.")
            return None
        refused = refusal(text)  # too long, or not text: the limit of every door
        if refused is not None:
            await self._tell(job, refused)
            return None
        shared = await shared_files.files_download(
            self.client.token or "", self.settings.slack_api_url, files,
            int(self.settings.max_file_mb * 2**20)) if files else []
        name = await web.user_name(self.client, author) if author else None
        result = await self.brain.captures.capture(
            user_id=user, text=text, channel=channel, message_ts=ts,
            source=permalink(channel, ts, thread_ts), author=name, job_id=job.job.id,
            files=shared, unfurls=unfurls)
        saved = {"data": result.data, "text": result.text, "already": result.already}
        await job.remember(saved=saved, thread_ts=thread_ts)
        return saved

    async def _tell(self, job: JobContext, text: str, *, escape: bool = True) -> None:
        p = job.job.payload
        shown = cards.escape(text) if escape else text
        if p.get("response_url"):
            await web.respond(p["response_url"], cards.message([cards.section(shown)], shown))
        else:
            await web.ephemeral(self.client, p["channel"], p["user"], shown,
                                job.result.get("thread_ts"), escape=False)
        await job.remember(told=True)

    async def give_up(self, job: JobContext, msg: cards.SlackMessage) -> None:
        p = job.job.payload
        if p.get("response_url"):
            await web.respond(p["response_url"], msg)
        else:
            await web.ephemeral(self.client, p["channel"], p["user"], msg.text, escape=False)
