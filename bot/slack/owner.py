"""A brain with one owner (BRAIN_OWNER) serves that person only. Every job kind passes
through one check (`owner_only`) before its handler runs: someone else gets one plain line
where they asked (the thread, the shortcut, `/digest`, their Home), and nothing of the
owner's vault is read, shown or changed for them.
"""

from __future__ import annotations

import logging

from slack_sdk.web.async_client import AsyncWebClient

from bot.jobs.queue import Handler, JobContext, JobKind
from bot.slack import cards, web
from bot.tenancy.people import slack_user

log = logging.getLogger(__name__)


def owner_only(owner: str | None, client: AsyncWebClient,
               handlers: dict[str, Handler]) -> dict[str, Handler]:
    """`handlers`, each run only for `owner` (all of them unchanged when there is none)."""
    if not owner:
        return handlers
    return {kind: _checked(owner, client, kind, handler) for kind, handler in handlers.items()}


def _checked(owner: str, client: AsyncWebClient, kind: str, handler: Handler) -> Handler:
    async def run(job: JobContext) -> None:
        if job.job.user_id == owner:
            await handler(job)
            return
        if job.result.get("refused"):
            return
        log.info("%s job %s from %s refused: this brain belongs to %s", kind, job.job.id,
                 job.job.user_id, owner)
        await _refuse(client, job, owner)
        await job.remember(refused=True)
    return run


async def _refuse(client: AsyncWebClient, job: JobContext, owner: str) -> None:
    text = f"This brain belongs to <@{owner}>; it only keeps notes for them."
    msg = cards.message([cards.section(text)], text)
    p = job.job.payload
    kind = job.job.kind
    if kind == JobKind.TURN:
        await web.post_once(client, job, p["channel"], p["thread_ts"], msg)
    elif kind in (JobKind.HOME, JobKind.HOME_ACTION):
        await client.views_publish(user_id=slack_user(job.job.user_id), view={
            "type": "home", "blocks": cards.validate_message([cards.section(text)], "home")})
    elif p.get("response_url"):  # /digest, the shortcut
        await web.respond(p["response_url"], msg)
    elif kind in (JobKind.BUTTON, JobKind.REMINDER_BUTTON):
        press = p["press"]
        await web.ephemeral(client, press["channel"], press["user"], text,
                            press.get("thread_ts"), escape=False)
    # A reaction, an assistant thread opened, a reminder: nothing to answer.
