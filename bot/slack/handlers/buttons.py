"""A button's work: a card's Move and Undo (only the note's owner may), a turn's *Undo
changes*, an answer's feedback, and a source under an answer opened in a modal (from the
presser's own vault only). Each press updates the card it was on, or says why not.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from slack_sdk.errors import SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.brain import Brain
from bot.jobs.queue import JobContext
from bot.slack import cards, feedback, web
from bot.slack.answer_cards import note_view
from bot.slack.intake import conversation_key, parse_button_value
from bot.tenancy.people import slack_user
from storage.errors import StorageError

log = logging.getLogger(__name__)
MAX_UNDO = 50  # changes one Undo button puts back (a turn makes at most 10, plus its files)


class ButtonWork:
    def __init__(self, brain: Brain, client: AsyncWebClient,
                 refresh_home: Callable[[str], Awaitable[None]]) -> None:
        self.brain = brain
        self.client = client
        self.refresh_home = refresh_home

    async def open_note(self, job: JobContext) -> None:
        """Open the note in a modal, from the presser's own vault only (someone else in the
        thread pressing it opens nothing of the asker's)."""
        if job.result.get("opened"):
            return
        p = job.job.payload
        press = p["press"]
        try:
            entry = await self.brain.store_for(press["user"]).get(press["value"])
        except StorageError as exc:
            await self._tell(press, f"I can't open that note: {exc.message}")
            await job.remember(opened=True)
            return
        try:
            await self.client.views_open(trigger_id=p["trigger_id"], view=note_view(entry))
        except SlackClientError as exc:
            code = web.error_code(exc)
            log.warning("views.open for %s failed: %s", press["user"], code)
            if not web.permanent(exc):
                raise
            await self._tell(press, f"Slack would not open the note ({code}); it is "
                                    f"{entry.path} in your vault.")
        await job.remember(opened=True)

    async def button(self, job: JobContext) -> None:
        press = job.job.payload["press"]
        if press["action_id"] == cards.UNDO_CHANGES_ACTION:
            await self._undo_changes(job, press)
            return
        if press["action_id"] == feedback.FEEDBACK_ACTION:
            await self._feedback(job, press)
            return
        try:
            entry_id, target = parse_button_value(press["value"])
        except ValueError as exc:
            ref = cards.new_ref()
            log.warning("bad button press (ref %s) from %s: %s", ref, press["user"], exc)
            await self._tell(press, f"That button doesn't work any more ({exc}; ref {ref}).")
            return
        key = conversation_key(press["channel"], press["thread_ts"], press["user"])
        owner = await self.brain.conversations.note_owner(entry_id, key)
        if owner != press["user"]:
            log.info("button %s on %s by %s refused: not the owner", press["action_id"],
                     entry_id, press["user"])
            who = f"<@{slack_user(owner)}>" if owner else "its owner"
            await self._tell(press, f"Only {who} can change this note; nothing was changed.",
                             escape=False)
            return
        if press["action_id"] == cards.UNDO_ACTION:
            await self._undo(job, press, entry_id, key)
        elif target is not None and press["action_id"] == f"{cards.MOVE_ACTION_PREFIX}{target}":
            await self._move(press, entry_id, target, key)
        else:
            await self._tell(press, "That button doesn't match its note.")

    async def _move(self, press: dict[str, Any], entry_id: str, target: str, key: str) -> None:
        try:
            result = await self.brain.note_actions.move(user_id=press["user"], ref=entry_id,
                                                 category=target, conversation_key=key)
        except StorageError as exc:
            await self._tell(press, f"Couldn't move it: {exc.message}")
            return
        text = f"Moved to {cards.title(result.category)}: {result.entry.name}"
        await self._show(press, cards.message(cards.moved_blocks(result.to_dict()),
                                              cards.escape(text)))
        await self.refresh_home(press["user"])

    async def _show(self, press: dict[str, Any], msg: cards.SlackMessage) -> None:
        """The pressed card, updated in place (an ephemeral one through its response_url)."""
        if press.get("ephemeral") and press.get("response_url"):
            await web.respond(press["response_url"], msg, replace=True)
        else:
            await web.update(self.client, press["channel"], press["message_ts"], msg)

    async def _undo(self, job: JobContext, press: dict[str, Any], entry_id: str,
                    key: str) -> None:
        name = job.result.get("name")
        path = job.result.get("trashed")
        if path is None:  # not done by an earlier run of this job
            receipt = await self.brain.receipts.for_entry(entry_id)
            name = _receipt_name(receipt) if receipt else entry_id
            try:
                path = await self.brain.note_actions.trash(user_id=press["user"], ref=entry_id,
                                                    conversation_key=key)
            except StorageError as exc:
                await self._tell(press, f"Couldn't undo it: {exc.message}")
                return
            await job.remember(trashed=path, name=name)
        await self._show(press, cards.message(cards.trashed_blocks(str(name), str(path)),
                                              cards.escape(f"Undone: {name} moved to the trash")))
        await self.refresh_home(press["user"])

    async def _undo_changes(self, job: JobContext, press: dict[str, Any]) -> None:
        """A turn's Undo: its changes put back newest first, in the presser's own vault (a
        change of someone else's is not found there)."""
        try:
            wanted = json.loads(press["value"])["changes"]
            assert isinstance(wanted, list) and all(isinstance(c, str) for c in wanted)
        except (ValueError, KeyError, TypeError, AssertionError):
            await self._tell(press, "That button doesn't work any more.")
            return
        done = list(job.result.get("undone") or [])

        async def undone(change: str, _put_back: object) -> None:
            done.append(change)
            await job.remember(undone=done)

        try:
            await self.brain.note_actions.undo_all(user_id=press["user"], changes=wanted[:MAX_UNDO],
                                              done=tuple(done), undone=undone)
        except StorageError as exc:
            await self._tell(press, f"Couldn't undo it: {exc.message}")
            return
        text = f"Undone: {len(done)} change(s) put back (`brain history` lists them)."
        await self._show(press, cards.message([cards.section(text)], text))
        await self.refresh_home(press["user"])

    async def _feedback(self, job: JobContext, press: dict[str, Any]) -> None:
        """The asker's thumbs on an answer, kept with its turn; a thumbs down is told how to
        put it right. Another person's press records nothing."""
        if job.result.get("rated"):
            return
        parsed = feedback.parse(str(press["value"]))
        recorded = parsed is not None and await self.brain.conversations.rate(
            turn_id=parsed[1], user_id=press["user"], verdict=parsed[0])
        await job.remember(rated=True)
        if parsed is not None and recorded and parsed[0] == "bad":
            await self._tell(press, feedback.SORRY)
        elif not recorded:
            log.info("feedback from %s on %r not recorded: not their answer", press["user"],
                     press["value"][:40])

    async def _tell(self, press: dict[str, Any], text: str, *, escape: bool = True) -> None:
        await web.ephemeral(self.client, press["channel"], press["user"], text,
                            press.get("thread_ts"), escape=escape)


def _receipt_name(receipt: Any) -> str:
    path = str(receipt.path)
    return path.rsplit("/", 1)[-1].removesuffix(".md") or path
