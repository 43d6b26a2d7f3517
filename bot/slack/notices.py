"""What the bot tells a person about their work waiting (issue 31), each said once:

- `slow_down`: the SLOW_DOWN job the intake records when someone sends faster than
  BRAIN_USER_RATE (bot/jobs/queue.py): a DM saying their messages wait their turn and none is lost.
- `waiting`: the worker's hook when a job cannot be done because storage cannot be written
  (bot/jobs/worker.py): where they asked, that it is kept and will be done when storage is back.
"""

from __future__ import annotations

import logging

from slack_sdk.web.async_client import AsyncWebClient

from bot.jobs.queue import JobContext, JobKind
from bot.slack import cards, web
from bot.tenancy.people import slack_user

log = logging.getLogger(__name__)

WAITING = ("I can't save notes right now: the server's storage is not taking writes. I've "
           "kept your message and will file it as soon as storage is back; there's no need "
           "to send it again.")


def period_words(seconds: int) -> str:
    """60 -> "a minute", 3600 -> "an hour", 10 -> "10 seconds", 300 -> "5 minutes"."""
    for size, one, many in ((3600, "an hour", "hours"), (60, "a minute", "minutes")):
        if seconds % size == 0:
            n = seconds // size
            return one if n == 1 else f"{n} {many}"
    return f"{seconds} seconds"


def slow_down_text(rate: int, seconds: int) -> str:
    return (f"You're sending me messages faster than I take them from one person ({rate} "
            f"in {period_words(seconds)}). Nothing is lost: I'll answer each one in turn, "
            "the later ones a little later, so that everyone else gets answers too.")


class Notices:
    def __init__(self, client: AsyncWebClient) -> None:
        self.client = client

    async def slow_down(self, job: JobContext) -> None:
        """The SLOW_DOWN job: one DM (a user id as the channel opens the bot's DM)."""
        p = job.job.payload
        text = slow_down_text(int(p.get("rate") or 0), int(p.get("seconds") or 60))
        await web.post_once(self.client, job, slack_user(job.job.user_id), None,
                            cards.message([cards.section(text)], text))

    async def waiting(self, job: JobContext, reason: str) -> None:
        """A job that waits for storage says so where the person asked, once (the worker
        records that it did)."""
        log.info("job %s waits for storage; telling its person", job.job.id)
        msg = cards.message([cards.section(f":hourglass: {WAITING}")], WAITING)
        p = job.job.payload if isinstance(job.job.payload, dict) else {}
        kind = job.job.kind
        if kind == JobKind.TURN:
            await web.post_once(self.client, job, p["channel"], p["thread_ts"], msg,
                                slot="waiting")
            await web.set_status(self.client, p["channel"], p["thread_ts"], "")
        elif kind == JobKind.CAPTURE and p.get("response_url"):
            await web.respond(p["response_url"], msg)
        elif kind == JobKind.CAPTURE:
            await web.ephemeral(self.client, p["channel"], p["user"], WAITING)
        elif kind in (JobKind.BUTTON, JobKind.REMINDER_BUTTON, JobKind.HOME_ACTION) and \
                isinstance(p.get("press"), dict):
            press = p["press"]
            await web.ephemeral(self.client, press["channel"], press["user"],
                                WAITING.replace("file it", "do it"), press.get("thread_ts"))
