"""Bolt listeners: which Slack requests become turns, button presses and digests.

Listeners only decide and queue; the work runs after the ack in `bot.runner`, one turn at a
time per thread. Every Web API failure is logged with a reference id, never dropped silently.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from slack_sdk.errors import SlackApiError, SlackClientError

from bot.slack import cards
from bot.slack.cards import MOVE_ACTION_PREFIX, UNDO_ACTION, SlackMessage
from storage import repositories
from storage.errors import StorageError
from storage.types import CATEGORIES

if TYPE_CHECKING:
    from bot.slack.app import SlackBot

log = logging.getLogger(__name__)

PROGRESS_REACTION = "hourglass_flowing_sand"
MENTION = re.compile(r"<@[A-Z0-9]+(?:\|[^>]*)?>")
# Message subtypes that still carry a person's words; every other subtype is ignored.
USER_SUBTYPES = frozenset({None, "file_share", "thread_broadcast"})
DIGEST_KINDS = ("daily", "weekly")
CLAIM_ATTEMPTS = 3
DIGEST_USAGE = ("Usage: `/digest` or `/digest daily` (today), `/digest weekly` (the week), "
                "`/digest subscribe daily|weekly [HH:MM]`, `/digest off`.")


def conversation_key(channel: str, thread_ts: str) -> str:
    return f"slack:{channel}:{thread_ts}"


def is_from_a_bot(event: dict[str, Any]) -> bool:
    return bool(event.get("bot_id")) or event.get("subtype") == "bot_message" \
        or bool(event.get("bot_profile"))


def strip_mentions(text: str) -> str:
    return " ".join(MENTION.sub(" ", text).split())


def permalink(channel: str, ts: str) -> str:
    """Slack's archive link form, built locally (no chat.getPermalink call, no extra scope)."""
    return f"https://slack.com/archives/{channel}/p{ts.replace('.', '')}"


def register(bot: SlackBot) -> None:
    app = bot.app

    @app.event("message")
    async def on_message(event: dict[str, Any], body: dict[str, Any], context: Any) -> None:
        if event.get("subtype") not in USER_SUBTYPES or is_from_a_bot(event) \
                or not event.get("user"):
            return
        text = (event.get("text") or "").strip()
        if not text:
            return
        if event.get("channel_type") == "im":
            submit_turn(bot, body, event, text, known_thread_only=False)
            return
        if context.bot_user_id and f"<@{context.bot_user_id}" in text:
            return  # app_mention delivers this one
        if event.get("thread_ts"):
            submit_turn(bot, body, event, text, known_thread_only=True)

    @app.event("app_mention")
    async def on_mention(event: dict[str, Any], body: dict[str, Any]) -> None:
        if is_from_a_bot(event) or not event.get("user"):
            return
        text = strip_mentions(event.get("text") or "")
        if text:
            submit_turn(bot, body, event, text, known_thread_only=False)

    @app.action(re.compile(rf"^{re.escape(MOVE_ACTION_PREFIX)}"))
    async def on_move(ack: Callable[..., Awaitable[Any]], body: dict[str, Any],
                      action: dict[str, Any]) -> None:
        await ack()
        press = ButtonPress.from_body(body, action)
        bot.runner.submit(press.key, lambda: guarded(bot, press, handle_move))

    @app.action(UNDO_ACTION)
    async def on_undo(ack: Callable[..., Awaitable[Any]], body: dict[str, Any],
                      action: dict[str, Any]) -> None:
        await ack()
        press = ButtonPress.from_body(body, action)
        bot.runner.submit(press.key, lambda: guarded(bot, press, handle_undo))

    @app.command("/digest")
    async def on_digest(ack: Callable[..., Awaitable[Any]], command: dict[str, Any]) -> None:
        await handle_digest_command(bot, ack, command)

    # Events we receive but do not act on are still acked with 200, so Slack does not retry.
    @app.event(re.compile(r".*"))
    async def ignore_other_events() -> None:
        return None


# -- turns -------------------------------------------------------------------------------------


def submit_turn(bot: SlackBot, body: dict[str, Any], event: dict[str, Any], text: str,
                *, known_thread_only: bool) -> None:
    """Queue a turn. No await before `submit`, so turns of a thread keep their arrival order."""
    channel = event["channel"]
    ts = event["ts"]
    thread_ts = event.get("thread_ts") or ts
    key = conversation_key(channel, thread_ts)
    event_id = body.get("event_id") or event.get("client_msg_id") or f"{channel}:{ts}"

    async def work() -> None:
        await run_turn(bot, event_id=event_id, key=key, user_id=event["user"], text=text,
                       channel=channel, ts=ts, thread_ts=thread_ts,
                       known_thread_only=known_thread_only)

    bot.runner.submit(key, work)


async def claim(bot: SlackBot, event_id: str) -> bool:
    """First delivery of this event? Committed at once, so a retry after a restart is seen.

    When the database stays busy, the event is treated as new: answering a (rare) duplicate
    is better than dropping what the user sent.
    """
    for attempt in range(CLAIM_ATTEMPTS):
        try:
            async with bot.brain.db.session() as s:
                first = await repositories.claim_event(s, event_id)
                await s.commit()
            return bool(first)
        except Exception as exc:  # the driver's "database is locked" and the like
            if attempt + 1 == CLAIM_ATTEMPTS:
                log.error("could not record event %s (ref %s), handling it anyway: %s",
                          event_id, cards.new_ref(), exc)
                return True
            await asyncio.sleep(0.2 * (attempt + 1))
    return True


async def in_known_thread(bot: SlackBot, key: str) -> bool:
    try:
        async with bot.brain.db.session() as s:
            return await repositories.get_conversation(s, key) is not None
    except Exception as exc:
        log.error("could not look up thread %s (ref %s): %s", key, cards.new_ref(), exc)
        return False


async def run_turn(bot: SlackBot, *, event_id: str, key: str, user_id: str, text: str,
                   channel: str, ts: str, thread_ts: str, known_thread_only: bool) -> None:
    if known_thread_only and not await in_known_thread(bot, key):
        return  # a thread the bot is not part of
    if not await claim(bot, event_id):
        log.info("event %s already handled; skipping the retry", event_id)
        return
    owner = bot.settings.owner
    if owner and user_id != owner:
        await post(bot, channel, thread_ts, cards.message(
            [cards.section(f"This brain belongs to <@{owner}>; I only file notes for them.")],
            "This brain belongs to someone else."))
        return
    await react(bot, "reactions_add", channel, ts)
    try:
        result = await bot.brain.handle(conversation_key=key, user_id=user_id, text=text,
                                        source=permalink(channel, ts), channel=channel,
                                        thread_ts=thread_ts)
        reply = cards.turn_message(result)
    except Exception:
        ref = cards.new_ref()
        log.exception("turn failed (ref %s) in %s", ref, key)
        reply = cards.error_message(ref)
        result = None
    posted_ts = await post(bot, channel, thread_ts, reply)
    await react(bot, "reactions_remove", channel, ts)
    if result is not None and posted_ts:
        await after_post(bot, result, channel, posted_ts)


async def after_post(bot: SlackBot, result: Any, channel: str, posted_ts: str) -> None:
    """Remember which message shows each new receipt; refresh the card of a corrected note."""
    for ex in result.executions:
        if ex.status != "ok" or ex.output is None or not ex.output.data.get("id"):
            continue
        entry_id = str(ex.output.data["id"])
        try:
            async with bot.brain.db.session() as s:
                row = await repositories.capture_for_entry(s, entry_id)
                if row is not None and ex.output.kind == "capture":
                    await repositories.set_capture_message(s, row.id, posted_ts)
                    await s.commit()
        except Exception as exc:  # the answer is posted; only the link to it is lost
            log.warning("could not record the receipt message of %s (ref %s): %s", entry_id,
                        cards.new_ref(), exc)
            continue
        if ex.output.kind == "move" and row is not None and row.message_ts \
                and row.message_ts != posted_ts and row.channel == channel:
            moved = cards.message(cards.moved_blocks(ex.output.data), ex.output.text or "Moved.")
            await update(bot, channel, row.message_ts, moved)


# -- Web API calls (logged, never fatal) ---------------------------------------------------------


async def post(bot: SlackBot, channel: str, thread_ts: str, msg: SlackMessage) -> str | None:
    try:
        resp = await bot.client.chat_postMessage(channel=channel, thread_ts=thread_ts,
                                                 text=msg.text, blocks=msg.blocks)
        return str(resp.get("ts") or "") or None
    except SlackClientError as exc:
        ref = cards.new_ref()
        log.error("chat.postMessage failed (ref %s) in %s/%s: %s; text was: %s", ref, channel,
                  thread_ts, _slack_error(exc), msg.text[:500])
        return None


async def update(bot: SlackBot, channel: str, ts: str, msg: SlackMessage) -> bool:
    try:
        await bot.client.chat_update(channel=channel, ts=ts, text=msg.text, blocks=msg.blocks)
        return True
    except SlackClientError as exc:
        log.error("chat.update failed (ref %s) for %s/%s: %s", cards.new_ref(), channel, ts,
                  _slack_error(exc))
        return False


async def ephemeral(bot: SlackBot, channel: str, user: str, text: str,
                    thread_ts: str | None = None) -> None:
    try:
        kwargs: dict[str, Any] = {"thread_ts": thread_ts} if thread_ts else {}
        msg = cards.message([cards.section(cards.escape(text))], text)
        await bot.client.chat_postEphemeral(channel=channel, user=user, text=msg.text,
                                            blocks=msg.blocks, **kwargs)
    except SlackClientError as exc:
        log.error("chat.postEphemeral failed (ref %s) for %s: %s", cards.new_ref(), user,
                  _slack_error(exc))


async def react(bot: SlackBot, method: str, channel: str, ts: str) -> None:
    """The progress reaction is a nicety: failures are logged and the turn goes on."""
    try:
        await getattr(bot.client, method)(channel=channel, timestamp=ts, name=PROGRESS_REACTION)
    except SlackClientError as exc:
        log.warning("%s failed on %s/%s: %s", method.replace("_", "."), channel, ts,
                    _slack_error(exc))


def _slack_error(exc: SlackClientError) -> str:
    if isinstance(exc, SlackApiError):
        return str(exc.response.get("error") or exc)
    return str(exc)


# -- buttons -----------------------------------------------------------------------------------


class ButtonPress:
    def __init__(self, *, user: str, channel: str, message_ts: str, thread_ts: str,
                 action_id: str, value: str) -> None:
        self.user = user
        self.channel = channel
        self.message_ts = message_ts
        self.thread_ts = thread_ts
        self.action_id = action_id
        self.value = value
        self.key = conversation_key(channel, thread_ts)

    @classmethod
    def from_body(cls, body: dict[str, Any], action: dict[str, Any]) -> ButtonPress:
        container = body.get("container") or {}
        message = body.get("message") or {}
        channel = container.get("channel_id") or (body.get("channel") or {}).get("id") or ""
        message_ts = container.get("message_ts") or message.get("ts") or ""
        thread_ts = message.get("thread_ts") or container.get("thread_ts") or message_ts
        return cls(user=(body.get("user") or {}).get("id", ""), channel=channel,
                   message_ts=message_ts, thread_ts=thread_ts,
                   action_id=action.get("action_id", ""), value=action.get("value") or "")

    def entry_and_target(self) -> tuple[str, str | None]:
        """(entry id, target category) from the button value; ValueError when malformed."""
        try:
            value = json.loads(self.value)
        except json.JSONDecodeError as exc:
            raise ValueError("the button value is not JSON") from exc
        if not isinstance(value, dict) or not isinstance(value.get("entry_id"), str) \
                or not value["entry_id"]:
            raise ValueError("the button names no note")
        target = value.get("to")
        if target is not None and target not in CATEGORIES:
            raise ValueError(f"unknown category {target!r}")
        return value["entry_id"], target


async def guarded(bot: SlackBot, press: ButtonPress,
                  handler: Callable[[SlackBot, ButtonPress], Awaitable[None]]) -> None:
    """A press that fails unexpectedly still gets an answer the presser can quote."""
    try:
        await handler(bot, press)
    except Exception:
        ref = cards.new_ref()
        log.exception("button %s failed (ref %s)", press.action_id, ref)
        await ephemeral(bot, press.channel, press.user,
                        f"Sorry, that didn't work (ref {ref}). Nothing was changed.",
                        press.thread_ts)


async def owner_of(bot: SlackBot, entry_id: str, key: str) -> str | None:
    """Whose vault holds the note: its capture row's user, else the thread's user."""
    async with bot.brain.db.session() as s:
        capture = await repositories.capture_for_entry(s, entry_id)
        if capture is not None:
            return capture.user_id
        conversation = await repositories.get_conversation(s, key)
        return conversation.user_id if conversation is not None else None


async def _checked(bot: SlackBot, press: ButtonPress) -> tuple[str, str | None] | None:
    """The press's (entry, target) if the presser owns the note; else tell them why not."""
    try:
        entry_id, target = press.entry_and_target()
    except ValueError as exc:
        ref = cards.new_ref()
        log.warning("bad button press (ref %s) from %s: %s", ref, press.user, exc)
        await ephemeral(bot, press.channel, press.user,
                        f"That button doesn't work any more ({exc}; ref {ref}).", press.thread_ts)
        return None
    owner = await owner_of(bot, entry_id, press.key)
    if owner != press.user:
        who = f"<@{owner}>" if owner else "its owner"
        log.info("button %s on %s by %s refused: owner is %s", press.action_id, entry_id,
                 press.user, owner)
        await ephemeral(bot, press.channel, press.user,
                        f"Only {who} can change this note; nothing was changed.", press.thread_ts)
        return None
    return entry_id, target


async def handle_move(bot: SlackBot, press: ButtonPress) -> None:
    checked = await _checked(bot, press)
    if checked is None:
        return
    entry_id, target = checked
    if target is None or press.action_id != f"{MOVE_ACTION_PREFIX}{target}":
        await ephemeral(bot, press.channel, press.user, "That button doesn't match its note.")
        return
    try:
        result = await bot.brain.move_entry(user_id=press.user, ref=entry_id, category=target,
                                            conversation_key=press.key)
    except StorageError as exc:
        await ephemeral(bot, press.channel, press.user, f"Couldn't move it: {exc.message}",
                        press.thread_ts)
        return
    data = result.to_dict()
    text = f"Moved to {cards.title(result.category)}: {result.entry.name}"
    await update(bot, press.channel, press.message_ts,
                 cards.message(cards.moved_blocks(data), text))


async def handle_undo(bot: SlackBot, press: ButtonPress) -> None:
    checked = await _checked(bot, press)
    if checked is None:
        return
    entry_id, _ = checked
    try:
        async with bot.brain.db.session() as s:
            capture = await repositories.capture_for_entry(s, entry_id)
        name = _capture_name(capture) if capture else entry_id
        new_path = await bot.brain.trash_entry(user_id=press.user, ref=entry_id,
                                               conversation_key=press.key)
    except StorageError as exc:
        await ephemeral(bot, press.channel, press.user, f"Couldn't undo it: {exc.message}",
                        press.thread_ts)
        return
    await update(bot, press.channel, press.message_ts,
                 cards.message(cards.trashed_blocks(name, str(new_path)),
                               f"Undone: {name} moved to the trash"))


def _capture_name(capture: Any) -> str:
    path = str(capture.path)
    return path.rsplit("/", 1)[-1].removesuffix(".md") or path


# -- /digest -----------------------------------------------------------------------------------


async def handle_digest_command(bot: SlackBot, ack: Callable[..., Awaitable[Any]],
                                command: dict[str, Any]) -> None:
    text = " ".join((command.get("text") or "").split())
    words = text.lower().split()
    first = words[0] if words else "daily"
    user = command.get("user_id", "")
    url = command.get("response_url", "")
    if first in ("subscribe", "off", "unsubscribe"):
        await ack(text="Updating your digest settings…")

        async def settle() -> None:
            try:
                tz = await bot.user_tz(user) if words[0] == "subscribe" else None
                reply = await bot.brain.digest_command(user_id=user, text=text,
                                                       channel=command.get("channel_id"), tz=tz)
                msg = cards.message([cards.section(cards.escape(str(reply)))], str(reply))
            except Exception:
                msg = _digest_failure()
            await respond(url, msg)

        bot.runner.submit(f"digest:{user}", settle)
        return
    if len(words) > 1 or first not in DIGEST_KINDS:
        await ack(text=f"I don't know “{text}”. {DIGEST_USAGE}")
        return
    await ack(text=f"Working on your {first} digest…")

    async def deliver() -> None:
        try:
            digest = await bot.brain.digest(user_id=user, kind=first)
            msg = cards.digest_message(digest)
        except Exception:
            msg = _digest_failure()
        await respond(url, msg)

    bot.runner.submit(f"digest:{user}", deliver)


def _digest_failure() -> SlackMessage:
    ref = cards.new_ref()
    log.exception("digest failed (ref %s)", ref)
    return cards.error_message(ref)


async def respond(response_url: str, msg: SlackMessage) -> None:
    """Private answer through the command's response_url."""
    from bot.slack.app import make_webhook

    try:
        resp = await make_webhook(response_url).send(text=msg.text, blocks=msg.blocks,
                                                     response_type="ephemeral")
        if resp.status_code >= 300:
            log.error("response_url answered %s (ref %s): %s", resp.status_code,
                      cards.new_ref(), resp.body)
    except Exception as exc:  # aiohttp/network errors: logged, not silent
        log.error("response_url post failed (ref %s): %s", cards.new_ref(), exc)
