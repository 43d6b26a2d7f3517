"""The work a Slack job does, run by the worker after the ack: a turn, a button press, a
`/digest`; the other entry points' work (saves, the App Home, reminders, assistant threads)
lives beside this module and is gathered here. Each handler reads everything it
needs from the job's payload (so any process can run it) and records each effect as it makes
it (so a job that runs again does not repeat it).
"""

from __future__ import annotations

import json
import logging
from typing import Any
from urllib.parse import urlparse

from slack_sdk.errors import SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.brain import Brain
from bot.config import Settings
from bot.digest import DigestRequest
from bot.jobs.queue import Handler, JobContext, JobKind, JobRow
from bot.slack import cards, feedback, shared_files, turn_reply, web
from bot.slack.answer_cards import note_view
from bot.slack.handlers.captures import SaveWork
from bot.slack.handlers.home import HomeWork
from bot.slack.handlers.reminders import ReminderWork
from bot.slack.handlers.threads import ThreadWork
from bot.slack.installs import NotInstalled, TokenFor, Workspaces
from bot.slack.intake import conversation_key, parse_button_value, permalink
from bot.slack.notices import Notices
from bot.slack.owner import owner_only
from bot.slack.streaming import ReplyStream
from bot.tenancy.people import slack_user

# the Brain's expected failures reach adapters as these
from storage.errors import StorageError, UnsafePath
from tools.web.links import mostly_links, urls_in

log = logging.getLogger(__name__)
MAX_UNDO = 50  # changes one Undo button puts back (a turn makes at most 10, plus its files)


class SlackWork:
    def __init__(self, brain: Brain, client: AsyncWebClient, settings: Settings, *,
                 token_for: TokenFor | None = None) -> None:
        self.brain = brain
        self.client = client
        self.settings = settings
        # many workspaces: each job answers with its workspace's token (bot/slack/installs.py)
        self.workspaces = Workspaces(token_for)
        self.home = HomeWork(brain, client, settings, self.user_tz)
        self.saves = SaveWork(brain, client, settings, self.home.refresh)
        self.reminders = ReminderWork(brain, client, self.home.refresh)
        self.threads = ThreadWork(brain, client)
        self.notices = Notices(client)

    def handlers(self) -> dict[str, Handler]:
        handlers = owner_only(self.settings.owner, self.client, {
            JobKind.TURN: self.turn, JobKind.BUTTON: self.button, JobKind.DIGEST: self.digest,
            JobKind.OPEN_NOTE: self.open_note, **self.threads.handlers(),
            JobKind.SLOW_DOWN: self.notices.slow_down,
            **self.saves.handlers(),
            **self.home.handlers(), **self.reminders.handlers()})
        return {kind: self.workspaces.wrap(_with_origin(self.brain, handler))
                for kind, handler in handlers.items()}

    # -- a message -------------------------------------------------------------------------

    async def turn(self, job: JobContext) -> None:
        p = job.job.payload
        channel, ts, thread_ts, user = p["channel"], p["ts"], p["thread_ts"], p["user"]
        if "reply_ts" not in job.result:
            await self.brain.accounts.resumed(user)  # writing to the bot ends a pause
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
            result = await self.brain.turns.handle(
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
        reply = turn_reply.turn_message(result)
        posted = await stream.finish(reply) or await web.post_once(
            self.client, job, channel, thread_ts, reply, may_be_posted="turn" in job.result)
        if not posted:  # a reply clears the status; without one, clear it here
            await web.set_status(self.client, channel, thread_ts, "")
        if posted and not job.result.get("linked"):
            for ch, card_ts, data, text in await self.brain.conversations.shown_at(result, channel, posted):
                await web.update(self.client, ch, card_ts,
                                 cards.message(cards.moved_blocks(data), cards.escape(text)))
            job.note(linked=True)
        await self.threads.title(job, conversation_key(channel, thread_ts, user))
        if result.changed:
            await self.home.refresh(user)  # the turn changed a note: an open Home shows it

    # -- a source under an answer: the note in a modal -----------------------------------------

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

    # -- a button on a card ------------------------------------------------------------------

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
            result = await self.brain.changes.move(user_id=press["user"], ref=entry_id,
                                                 category=target, conversation_key=key)
        except StorageError as exc:
            await self._tell(press, f"Couldn't move it: {exc.message}")
            return
        text = f"Moved to {cards.title(result.category)}: {result.entry.name}"
        await self._show(press, cards.message(cards.moved_blocks(result.to_dict()),
                                              cards.escape(text)))
        await self.home.refresh(press["user"])

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
                path = await self.brain.changes.trash(user_id=press["user"], ref=entry_id,
                                                    conversation_key=key)
            except StorageError as exc:
                await self._tell(press, f"Couldn't undo it: {exc.message}")
                return
            await job.remember(trashed=path, name=name)
        await self._show(press, cards.message(cards.trashed_blocks(str(name), str(path)),
                                              cards.escape(f"Undone: {name} moved to the trash")))
        await self.home.refresh(press["user"])

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
            await self.brain.changes.undo_all(user_id=press["user"], changes=wanted[:MAX_UNDO],
                                              done=tuple(done), undone=undone)
        except StorageError as exc:
            await self._tell(press, f"Couldn't undo it: {exc.message}")
            return
        text = f"Undone: {len(done)} change(s) put back (`brain history` lists them)."
        await self._show(press, cards.message([cards.section(text)], text))
        await self.home.refresh(press["user"])

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

    # -- /digest -----------------------------------------------------------------------------

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
        if request.changes_settings:
            await self.home.refresh(user)

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

    async def deliver_digest(self, sub: Any, slot: Any) -> None:
        """A scheduled digest, as a DM (a user id as the channel opens the bot's DM)."""
        if await self.brain.accounts.stopped_for(sub.user_id):
            log.info("digest for %s not sent: the app or the user is paused", sub.user_id)
            return
        digest = await self.brain.digests.make(user_id=sub.user_id, kind=sub.kind,
                                         today=slot.date(), tz=sub.tz)
        msg = cards.digest_message(digest)
        try:
            workspace = await self.workspaces.of_person(sub.user_id)
        except NotInstalled as exc:
            log.info("digest for %s not sent: %s", sub.user_id, exc)
            return
        with workspace:
            await self.client.chat_postMessage(channel=sub.channel or slack_user(sub.user_id),
                                               text=msg.text, blocks=msg.blocks)

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
        if job.kind not in (JobKind.TURN, JobKind.SAVE):
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
        elif job.job.kind == JobKind.SAVE:
            await self.saves.give_up(job, msg)
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


def _receipt_name(receipt: Any) -> str:
    path = str(receipt.path)
    return path.rsplit("/", 1)[-1].removesuffix(".md") or path
