"""A message's work, run by the worker after the ack: the turn (the Brain's), its reply
posted once (streamed when it answers), the cards it showed before updated, its thread titled,
the App Home refreshed when a note changed. Everything comes from the job's payload, so any
process can run it, and each effect is recorded as it is made, so a job that runs again does
not repeat it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from urllib.parse import urlparse

from slack_sdk.web.async_client import AsyncWebClient

from bot.brain import Brain
from bot.config import Settings
from bot.jobs.queue import JobContext, Session
from bot.slack import cards, shared_files, turn_reply, web
from bot.slack.intake import conversation_key, permalink
from bot.slack.streaming import ReplyStream
from bot.tenancy.people import slack_user
from bot.turn.conversations import Shown
from bot.turn.result import TurnResult
from storage.errors import UnsafePath
from tools.web.links import mostly_links, urls_in

log = logging.getLogger(__name__)


class TurnWork:
    def __init__(self, brain: Brain, client: AsyncWebClient, settings: Settings, *,
                 title: Callable[[JobContext, str], Awaitable[None]],
                 refresh_home: Callable[[str, bool | None], Awaitable[None]]) -> None:
        self.brain = brain
        self.client = client
        self.settings = settings
        self.title = title  # the assistant thread's title, from its first message
        self.refresh_home = refresh_home

    async def turn(self, job: JobContext) -> None:
        p = job.job.payload
        channel, ts, thread_ts, user = p["channel"], p["ts"], p["thread_ts"], p["user"]
        if "reply_ts" not in job.result:
            await web.set_status(self.client, channel, thread_ts, web.THINKING)
        shared = []
        if mostly_links(p["text"]) and "turn" not in job.result:  # the turn reads the page
            await web.set_status(self.client, channel, thread_ts,
                                 f"Reading {urlparse(urls_in(p['text'])[0]).hostname}…"[:80])
        if p.get("files") and "turn" not in job.result:  # read while Slack shows it
            await web.set_status(self.client, channel, thread_ts,
                                 f"Reading {p['files'][0]['name']}…"[:80])
            shared = await shared_files.files_download(
                self.client.token or "", self.settings.slack_api_url, p["files"],
                int(self.settings.max_file_mb * 2**20))
        stream = ReplyStream(self.client, job, channel=channel, thread_ts=thread_ts,
                             user=slack_user(user), team=p.get("team"))
        try:
            reply = await self.brain.replies.reply(
                conversation_key=conversation_key(channel, thread_ts, user), user_id=user,
                text=p["text"], source=permalink(channel, ts), channel=channel,
                thread_ts=thread_ts, job=job.job, files=shared, unfurls=p.get("unfurls"),
                progress=stream.progress)
        except UnsafePath as exc:  # the person's vault folder is a link or elsewhere: no retry
            ref = cards.new_ref()
            log.error("turn refused (ref %s): %s", ref, exc)
            await web.post_once(self.client, job, channel, thread_ts, cards.error_message(
                ref, "I can't open your notes: your vault folder on the server is not a plain "
                     "folder. Nothing was read or changed; please ask whoever runs this brain "
                     "to fix it."))
            await web.set_status(self.client, channel, thread_ts, "")
            return
        # The turn is stored before its reply is posted: only a run of a job whose turn was
        # already stored (by an earlier run) can find its reply posted.
        shown = turn_reply.turn_message(reply)
        posted = await stream.finish(shown) or await web.post_once(
            self.client, job, channel, thread_ts, shown, may_be_posted="turn" in job.result)
        if not posted:  # a reply clears the status; without one, clear it here
            await web.set_status(self.client, channel, thread_ts, "")
        await self.title(job, conversation_key(channel, thread_ts, user))
        if posted and not job.result.get("linked"):
            self._link_at_end(job, reply.result, channel, posted, user, reply.changed)
        elif reply.changed:  # the turn changed a note: an open Home shows it
            await self.refresh_home(user, None)  # (not known: the refresh reads it)

    def _link_at_end(self, job: JobContext, result: TurnResult, channel: str, posted: str,
                     user: str, changed: bool) -> None:
        """Which message shows each new note, written with the job's end; the cards of notes
        the turn moved, and an open Home, brought up to date once it has ended."""
        job.note(linked=True)
        seen: list[Shown] = []

        async def link(s: Session) -> None:
            seen[:] = [await self.brain.conversations.shown_at(s, result, channel, posted,
                                                               user)]

        job.at_end(link, lambda: self._shown(seen[0], user, changed))

    async def _shown(self, shown: Shown, user: str, changed: bool) -> None:
        for ch, card_ts, data, text in shown.stale:
            await web.update(self.client, ch, card_ts,
                             cards.message(cards.moved_blocks(data), cards.escape(text)))
        if changed:  # the turn changed a note: an open Home shows it
            await self.refresh_home(user, shown.home_watched)
