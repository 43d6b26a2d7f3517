"""`/digest`'s work (a digest shown, or its schedule set) and a scheduled digest's DM, each
in its person's workspace and time zone.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import date

from slack_sdk.web.async_client import AsyncWebClient

from bot.brain import Brain
from bot.digest import DigestRequest
from bot.jobs.queue import JobContext
from bot.slack import cards, web
from bot.slack.installs import Workspaces
from bot.tenancy.people import slack_user

log = logging.getLogger(__name__)


class DigestWork:
    def __init__(self, brain: Brain, client: AsyncWebClient, workspaces: Workspaces,
                 refresh_home: Callable[[str], Awaitable[None]]) -> None:
        self.brain = brain
        self.client = client
        self.workspaces = workspaces
        self.refresh_home = refresh_home

    async def digest(self, job: JobContext) -> None:
        if job.result.get("responded"):
            return
        p = job.job.payload
        request = DigestRequest(**p["request"])
        user = p["user"]
        if request.action == "show":
            digest = await self.brain.digests.make(user_id=user, kind=request.kind or "daily")
            msg = cards.digest_message(digest)
        else:
            tz = await self.user_tz(user) if request.action == "subscribe" else None
            reply = await self.brain.digests.settings(user_id=user, request=request,
                                                     channel=p.get("channel"), tz=tz)
            msg = cards.message([cards.section(cards.escape(reply))], cards.escape(reply))
        if not await web.respond(p["response_url"], msg):
            raise RuntimeError("the answer did not reach the response_url")
        await job.remember(responded=True)
        if request.sets_schedule:
            await self.refresh_home(user)

    async def user_tz(self, user_id: str) -> str | None:
        """The user's Slack time zone (users.info), for scheduling in their own morning."""
        try:
            with await self.workspaces.of_person(user_id):  # the reminder scheduler's too
                info = await self.client.users_info(user=slack_user(user_id))
            tz = (info.get("user") or {}).get("tz")
            return str(tz) if tz else None
        except Exception as exc:  # a missing scope or a network error: fall back, say so
            log.warning("users.info for %s failed, using BRAIN_TZ: %s", user_id, exc)
            return None

    async def scheduled(self, job: JobContext) -> None:
        """A subscribed digest's slot (claimed by bot/digest/schedule.py), as a DM or in the
        channel it was asked in, posted once; in the job's workspace (its handler's wrap)."""
        p = job.job.payload
        user = p["user"]
        if job.result.get("reply_ts"):
            return
        if await self.brain.accounts.stopped_for(user):
            log.info("digest for %s not sent: the app or the user is paused", user)
            return
        channel = p.get("channel") or await web.job_dm(self.client, job, user)
        if not channel:
            return
        digest = await self.brain.digests.make(user_id=user, kind=p["kind"],
                                               today=date.fromisoformat(p["day"]), tz=p["tz"])
        await web.post_once(self.client, job, channel, None, cards.digest_message(digest))
