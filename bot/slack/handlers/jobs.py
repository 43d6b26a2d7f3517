"""The work of every Slack job kind, run by the worker after the ack: each kind's handler
(a message, a button, `/digest`, a captured message, the App Home, reminders, assistant
threads: one module each beside this one), checked for the owner and run in its workspace
with its person named in the history; and what a person is told when a job fails for good or
waits for storage.
"""

from __future__ import annotations

import logging

from slack_sdk.web.async_client import AsyncWebClient

from bot.brain import Brain
from bot.config import Settings
from bot.jobs.queue import Handler, JobContext, JobKind, JobRow
from bot.slack import cards, web
from bot.slack.handlers.buttons import ButtonWork
from bot.slack.handlers.captures import CaptureWork
from bot.slack.handlers.digests import DigestWork
from bot.slack.handlers.home import HomeWork
from bot.slack.handlers.reminders import ReminderWork
from bot.slack.handlers.threads import ThreadWork
from bot.slack.handlers.turns import TurnWork
from bot.slack.installs import NotInstalled, TokenFor, Workspaces
from bot.slack.intake import permalink
from bot.slack.notices import Notices
from bot.slack.owner import owner_only

log = logging.getLogger(__name__)


class SlackWork:
    def __init__(self, brain: Brain, client: AsyncWebClient, settings: Settings, *,
                 token_for: TokenFor | None = None) -> None:
        self.brain = brain
        self.client = client
        self.settings = settings
        # many workspaces: each job answers with its workspace's token (bot/slack/installs.py)
        self.workspaces = Workspaces(token_for)
        self.digests = DigestWork(brain, client, self.workspaces, self._refresh_home)
        self.home = HomeWork(brain, client, settings, self.digests.user_tz)
        self.captures = CaptureWork(brain, client, settings, self.home.refresh)
        self.reminders = ReminderWork(brain, client, self.home.refresh)
        self.threads = ThreadWork(brain, client)
        self.buttons = ButtonWork(brain, client, self.home.refresh)
        self.turns = TurnWork(brain, client, settings, title=self.threads.title,
                              refresh_home=self.home.refresh)
        self.notices = Notices(client)
        # what the reminder scheduler calls (bot/slack/app.py)
        self.user_tz = self.digests.user_tz

    async def _refresh_home(self, user: str) -> None:
        await self.home.refresh(user)

    def handlers(self) -> dict[str, Handler]:
        handlers = owner_only(self.settings.owner, self.client, {
            JobKind.TURN: self.turns.turn, JobKind.BUTTON: self.buttons.button,
            JobKind.DIGEST: self.digests.digest,
            JobKind.SCHEDULED_DIGEST: self.digests.scheduled, JobKind.OPEN_NOTE: self.buttons.open_note,
            **self.threads.handlers(), JobKind.SLOW_DOWN: self.notices.slow_down,
            **self.captures.handlers(), **self.home.handlers(), **self.reminders.handlers()})
        return {kind: self.workspaces.wrap(_with_origin(self.brain, handler))
                for kind, handler in handlers.items()}

    # -- when a job fails for good ------------------------------------------------------------

    async def give_up(self, job: JobContext, reason: str) -> None:
        """Tell the user plainly, in the job's workspace; the message they sent is in the
        journal (and, for a thought, the turn's rescue already put it in the inbox when the
        turn itself ran)."""
        ref = cards.new_ref()
        log.error("job %s given up (ref %s): %s", job.job.id, ref, reason)
        try:
            workspace = await self.workspaces.of_job(job)
        except NotInstalled:
            return  # nothing can reach a workspace that uninstalled the app
        with workspace:
            await self._tell_given_up(job, ref)

    async def waiting(self, job: JobContext, reason: str) -> None:
        """The job waits for storage (bot/jobs/worker.py): said once, in the job's workspace."""
        try:
            workspace = await self.workspaces.of_job(job)
        except NotInstalled:
            return
        with workspace:
            await self.notices.waiting(job, reason)

    async def ready(self, job: JobRow) -> str | None:
        """Whether a job that files notes may start: not while the vault cannot be written
        (it would spend a model call and fail); other work goes on."""
        if job.kind not in (JobKind.TURN, JobKind.CAPTURE):
            return None
        return await self.brain.storage_health.vault()

    async def _tell_given_up(self, job: JobContext, ref: str) -> None:
        p = job.job.payload
        msg = cards.error_message(ref, "I could not finish this; please send it again.")
        if job.job.kind == JobKind.TURN:
            streamed = job.result.get("stream_ts")  # an unfinished stream ends with the error
            if "reply_ts" not in job.result and not (
                    streamed and await web.update(self.client, p["channel"], streamed, msg)):
                await web.post_once(self.client, job, p["channel"], p["thread_ts"], msg)
            await web.set_status(self.client, p["channel"], p["thread_ts"], "")
        elif job.job.kind == JobKind.CAPTURE:
            await self.captures.give_up(job, msg)
        elif job.job.kind == JobKind.DIGEST:
            await web.respond(p["response_url"], msg)
        elif job.job.kind in (JobKind.BUTTON, JobKind.REMINDER_BUTTON, JobKind.OPEN_NOTE):
            press = p["press"]
            await web.ephemeral(self.client, press["channel"], press["user"], msg.text,
                                press.get("thread_ts"))


def _with_origin(brain: Brain, handler: Handler) -> Handler:
    """The history records a job's changes as its person's, from its Slack message."""
    async def run(job: JobContext) -> None:
        p = job.job.payload if isinstance(job.job.payload, dict) else {}
        channel, ts = p.get("channel"), p.get("ts") or p.get("message_ts")
        where = permalink(channel, ts) if isinstance(channel, str) and isinstance(ts, str) \
            else job.job.kind
        with brain.acting_as(job.job.user_id, f"slack {where}"):
            await handler(job)
    return run
