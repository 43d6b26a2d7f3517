"""The App Home: published when opened, after a press on it, and after any change the person
makes elsewhere (a capture, a card's button, a reminder's), once they have opened it.

Its buttons are the card's (move, undo), acting on the presser's own vault; its selects carry
`/digest` words, parsed and applied exactly as the command's.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from slack_sdk.errors import SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.brain import Brain
from bot.config import Settings
from bot.digest import parse_digest_request
from bot.jobs.queue import Handler, JobContext, JobKind
from bot.slack import cards, web
from bot.slack.home_view import (
    DIGEST_DAILY,
    DIGEST_WEEKLY,
    MODEL,
    SYNC,
    UNDO_CHANGE,
    home_blocks,
)
from bot.slack.intake import parse_button_value  # the card's buttons: the same values
from bot.slack.sync_card import sync_message
from bot.tenancy.people import slack_user
from storage.errors import StorageError

log = logging.getLogger(__name__)

TzLookup = Callable[[str], Awaitable[str | None]]


class HomeWork:
    def __init__(self, brain: Brain, client: AsyncWebClient, settings: Settings,
                 tz_lookup: TzLookup) -> None:
        self.brain = brain
        self.client = client
        self.settings = settings
        self.tz_lookup = tz_lookup

    def handlers(self) -> dict[str, Handler]:
        return {JobKind.HOME: self.opened, JobKind.HOME_ACTION: self.action}

    async def opened(self, job: JobContext) -> None:
        user = job.job.payload["user"]
        await self.brain.home.opened(user)
        await self.publish(user)

    async def publish(self, user: str, notice: str | None = None) -> None:
        """Build and publish the person's Home; raises when Slack refused (a retry may do)."""
        tz = await self.brain.reminders.tz_for(user, self.tz_lookup)
        blocks = home_blocks(await self.brain.home.data(user, tz=tz))
        if notice:
            blocks = cards.validate_message([cards.context(cards.escape(notice))], "home") \
                + blocks
        await self.client.views_publish(user_id=slack_user(user),
                                        view={"type": "home", "blocks": blocks})

    async def refresh(self, user: str, watched: bool | None = None) -> None:
        """After a change: republish the Home of someone who has opened it (`watched`, read
        here when not given). Never raises."""
        try:
            if watched if watched is not None else await self.brain.home.watched(user):
                await self.publish(user)
        except Exception as exc:  # the change itself is done; the Home catches up next open
            log.warning("refreshing the App Home of %s failed: %s", user,
                        web.error_code(exc) if isinstance(exc, SlackClientError) else exc)

    async def action(self, job: JobContext) -> None:
        p = job.job.payload
        user, action_id, value = p["user"], p["action_id"], p["value"]
        notice = job.result.get("notice")
        if "notice" not in job.result:
            notice = await self._apply(user, action_id, value)
            await job.remember(notice=notice)
        await self.publish(user, notice)

    async def _sync(self, user: str) -> str:
        """Their remote and a new token, in an ephemeral message to them alone."""
        try:
            link = await self.brain.remotes.link(user)
        except StorageError as exc:
            return f"Sync with Obsidian is not available to you here: {exc.message}"
        channel = await web.open_dm(self.client, user)
        if not await web.ephemeral(self.client, channel, user, "",
                                   msg=sync_message(link.url, link.token,
                                                  self.settings.sync_token_days)):
            return "Slack did not take the message with your token; press the button again."
        return ("I sent you the address and a new token in our messages (only you can see "
                "them).")

    async def _apply(self, user: str, action_id: str, value: str) -> str | None:
        """Carry out a press; what to say at the top of the Home (None: the Home says it)."""
        if action_id in (DIGEST_DAILY, DIGEST_WEEKLY):
            request = parse_digest_request(value)
            if request.action not in ("subscribe", "off"):
                log.warning("a Home digest control sent %r (%s)", request.action, action_id)
                return "That setting did not work; try /digest instead."
            tz = await self.brain.reminders.tz_for(user, self.tz_lookup)
            reply: str = await self.brain.digests.settings(user_id=user, request=request,
                                                          channel=None, tz=tz)
            return reply
        if action_id == MODEL:
            chosen: str = await self.brain.home.choose_model(user, value)
            return chosen
        if action_id == SYNC:
            return await self._sync(user)
        if action_id == UNDO_CHANGE:
            try:
                done = await self.brain.store_for(user).undo(value)
            except StorageError as exc:
                return f"Couldn't undo it: {exc.message}"
            return f"Undone: {done.summary}"
        return await self._card_button(user, action_id, value)

    async def _card_button(self, user: str, action_id: str, value: str) -> str:
        """A note card's button pressed on the Home: its note trashed or moved."""
        try:
            ref, target = parse_button_value(value)
        except ValueError as exc:
            return f"That button doesn't work any more ({exc})."
        try:
            if action_id == cards.UNDO_ACTION:
                path = await self.brain.note_actions.trash(user_id=user, ref=ref)
                return f"Moved to the trash: {path} (restorable)"
            if target is not None and action_id == f"{cards.MOVE_ACTION_PREFIX}{target}":
                moved = await self.brain.note_actions.move(user_id=user, ref=ref, category=target)
                return f"Moved to {cards.title(moved.category)}: {moved.entry.name}"
        except StorageError as exc:
            return f"Couldn't change it: {exc.message}"
        return "That button doesn't match its note."
