"""Due-date reminders in Slack: the DM (claimed by bot.schedule.reminders' scheduler, delivered here
once), and its Done and Snooze-a-day buttons (through the Brain's update tool; the DM then
says what was done)."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from datetime import date, timedelta
from typing import Any

from slack_sdk.models.blocks import ActionsBlock, Block, ButtonElement, SectionBlock
from slack_sdk.web.async_client import AsyncWebClient

from bot.brain import Brain
from bot.jobs.queue import Handler, JobContext, JobKind
from bot.slack import cards, web

log = logging.getLogger(__name__)

DONE_ACTION = "reminder_done"
SNOOZE_ACTION = "reminder_snooze"
ACTIONS = (DONE_ACTION, SNOOZE_ACTION)


def reminder_message(entry: Any, ref: str, day: str) -> cards.SlackMessage:
    name = cards.escape(cards.clip(str(entry.name), 150))
    blocks: list[Block] = [cards.section(f":alarm_clock: Due today: *{name}* "
                                         f"({cards.title(entry.category)})",
                                         block_id="reminder-head")]
    data = {"fields": entry.fields}
    fields = cards._fields(data)
    if fields:
        blocks.append(SectionBlock(fields=fields, block_id="reminder-fields"))
    value = json.dumps({"ref": ref, "day": day})
    blocks.append(ActionsBlock(block_id="reminder-actions", elements=[
        ButtonElement(text="Done", action_id=DONE_ACTION, value=value, style="primary"),
        ButtonElement(text="Snooze a day", action_id=SNOOZE_ACTION, value=value)]))
    blocks.append(cards.context(f"`{cards.escape(entry.path)}`"))
    return cards.message(blocks, f"Due today: {name}")


class ReminderWork:
    def __init__(self, brain: Brain, client: AsyncWebClient,
                 refresh_home: Callable[[str], Awaitable[None]]) -> None:
        self.brain = brain
        self.client = client
        self.refresh_home = refresh_home

    def handlers(self) -> dict[str, Handler]:
        return {JobKind.REMINDER: self.deliver, JobKind.REMINDER_BUTTON: self.button}

    async def deliver(self, job: JobContext) -> None:
        p = job.job.payload
        user, ref, day = p["user"], p["ref"], p["day"]
        if job.result.get("reply_ts"):
            return
        if await self.brain.accounts.stopped_for(user):
            log.info("reminder %s not sent: the app or the user is paused", job.job.id)
            return
        entry = await self.brain.reminders.still_due(user, ref, day)
        if entry is None:
            log.info("reminder %s not sent: the note is no longer due that day", job.job.id)
            return
        channel = await web.job_dm(self.client, job, user)
        if not channel:
            return
        await web.post_once(self.client, job, channel, None, reminder_message(entry, ref, day))

    async def button(self, job: JobContext) -> None:
        press = job.job.payload["press"]
        user = press["user"]
        try:
            value = json.loads(press["value"])
            ref, day = str(value["ref"]), str(value["day"])
            date.fromisoformat(day)
        except (ValueError, KeyError, TypeError):
            log.warning("a reminder button with a bad value from %s", user)
            return
        said = job.result.get("said")
        if said is None:
            if press["action_id"] == DONE_ACTION:
                done = await self.brain.reminders.done(user, ref)
                said = self._said(done, "Done: {name}")
            else:
                later = (date.fromisoformat(day) + timedelta(days=1)).isoformat()
                snoozed = await self.brain.reminders.snooze(user, ref, day)
                said = self._said(snoozed, "Snoozed: {name} is due " + later)
            await job.remember(said=said)
        msg = cards.message([cards.section(cards.escape(said))], cards.escape(said))
        await web.update(self.client, press["channel"], press["message_ts"], msg)
        await self.refresh_home(user)

    @staticmethod
    def _said(execution: Any, template: str) -> str:
        if execution.status == "ok" and execution.output is not None:
            return template.format(name=execution.output.data.get("name") or "the note")
        message = (execution.error or {}).get("message", "unknown error")
        return f"Couldn't change it: {message}"
