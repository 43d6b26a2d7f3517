"""Bolt listeners: they decide what a request is and record it as a job; nothing more.

Entry points: DMs, mentions and threads the bot is in; the card's buttons; `/digest`; the
Save-to-brain message shortcut; the capture reaction; the App Home (opened, its buttons and
selects); reminders' buttons; the assistant panel (bot.slack.assistant). `app_uninstalled`
and `tokens_revoked` are recorded through the Brain at once (they cause no Slack work).

The app runs with `process_before_response=True`, so Slack's ack goes out only after the
listener returned, that is after the job is committed: an acknowledged request is never lost.
The work itself runs in the worker (bot.slack.handlers.turns). Requests we do not act on are acked and
ignored; a request we act on that lacks a field is logged with the reason.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

from slack_bolt.async_app import AsyncApp

from bot.digest import parse_digest_request
from bot.jobs.queue import JobKind
from bot.slack import assistant
from bot.slack.cards import (
    MOVE_ACTION_PREFIX,
    OPEN_NOTE_ACTION,
    UNDO_ACTION,
    UNDO_CHANGES_ACTION,
)
from bot.slack.feedback import FEEDBACK_ACTION
from bot.slack.handlers.reminders import ACTIONS as REMINDER_ACTIONS
from bot.slack.home_view import HOME_PREFIX
from bot.slack.intake import (
    USER_SUBTYPES,
    Intake,
    JobSpec,
    Missing,
    button_spec,
    command_spec,
    home_action_spec,
    home_spec,
    is_from_a_bot,
    messages_tab_spec,
    open_note_spec,
    reaction_spec,
    save_spec,
    shared_text,
    strip_mentions,
    team_id,
    turn_spec,
)
from bot.tenancy.accounts import Accounts

log = logging.getLogger(__name__)

Ack = Callable[..., Awaitable[Any]]
ThreadKnown = Callable[[str, str], Awaitable[bool]]


SAVE_SHORTCUT = "save_to_brain"  # the message shortcut's callback_id (manifest.yml)


def register(app: AsyncApp, intake: Intake, thread_known: ThreadKnown, *,
             reaction: str = "brain", accounts: Accounts | None = None,
             forget_workspace: Callable[[str], Awaitable[None]] | None = None) -> None:
    """`forget_workspace` (many workspaces): deletes a workspace's installation when it
    uninstalls the app or its bot token is revoked."""
    # Bolt runs the first listener that matches a request: the order below is the order of
    # registration, and the catch-all for other events comes last.
    take = _taker(intake)
    _register_messages(app, take, thread_known)
    _register_actions(app, take)
    _register_captures(app, take, reaction)
    _register_home(app, take)
    assistant.register(app, take, log)
    _register_workspace_events(app, intake, accounts, forget_workspace)
    _register_commands(app, take)
    _register_ignored(app)


def _taker(intake: Intake) -> assistant.Take:
    """Records a request's job; a request that lacks a field is logged and not taken."""

    async def take(make: Callable[[], JobSpec], what: str, body: dict[str, Any]) -> bool:
        try:
            spec = make()
        except Missing as exc:
            log.warning("ignored a %s that cannot be handled: %s", what, exc)
            return False
        return await intake.take(spec, team_id(body))

    return take


@dataclass(frozen=True)
class _Addressed:
    """A message the bot answers: what it is (for the log) and its text."""

    what: str
    text: str


def _from_a_person(event: dict[str, Any], body: dict[str, Any]) -> bool:
    if event.get("subtype") not in USER_SUBTYPES or is_from_a_bot(event):
        return False
    if not event.get("user"):
        log.info("ignored a message event without a user (%s)", body.get("event_id"))
        return False
    return True


async def _addressed(event: dict[str, Any], body: dict[str, Any], context: Any,
                     thread_known: ThreadKnown) -> _Addressed | None:
    """A DM, or a reply in a thread the bot is in; None for any other message."""
    if not _from_a_person(event, body):
        return None
    text = shared_text(event)
    if not text:
        return None
    if event.get("channel_type") == "im":
        return _Addressed("direct message", text)
    if context.bot_user_id and f"<@{context.bot_user_id}" in text:
        return None  # app_mention delivers this one
    thread_ts = event.get("thread_ts")
    channel = event.get("channel")
    if isinstance(thread_ts, str) and isinstance(channel, str) \
            and await thread_known(channel, thread_ts):
        return _Addressed("thread reply", text)
    return None


def _register_messages(app: AsyncApp, take: assistant.Take, thread_known: ThreadKnown) -> None:
    """DMs, replies in the bot's threads and mentions: each a turn."""

    @app.event("message")
    async def on_message(event: dict[str, Any], body: dict[str, Any], context: Any) -> None:
        addressed = await _addressed(event, body, context, thread_known)
        if addressed is not None:
            text = addressed.text
            await take(lambda: turn_spec(body, event, text), addressed.what, body)

    @app.event("app_mention")
    async def on_mention(event: dict[str, Any], body: dict[str, Any]) -> None:
        if is_from_a_bot(event) or not event.get("user"):
            return
        text = strip_mentions(str(event.get("text") or ""))
        if text:
            await take(lambda: turn_spec(body, event, text), "mention", body)


def _register_actions(app: AsyncApp, take: assistant.Take) -> None:
    """The buttons and selects: a card's, the App Home's, a reminder's."""

    async def on_button(ack: Ack, body: dict[str, Any], action: dict[str, Any]) -> None:
        if (body.get("container") or {}).get("type") == "view":  # the same buttons on Home
            await take(lambda: home_action_spec(body, action), "App Home button", body)
        else:
            await take(lambda: button_spec(body, action), "button press", body)
        await ack()

    @app.action(re.compile(rf"^{re.escape(OPEN_NOTE_ACTION)}(?::\d+)?$"))
    async def on_open_note(ack: Ack, body: dict[str, Any], action: dict[str, Any]) -> None:
        await take(lambda: open_note_spec(body, action), "source button", body)
        await ack()

    app.action(re.compile(rf"^{re.escape(MOVE_ACTION_PREFIX)}"))(on_button)
    app.action(UNDO_ACTION)(on_button)
    app.action(UNDO_CHANGES_ACTION)(on_button)
    app.action(FEEDBACK_ACTION)(on_button)

    @app.action(re.compile(rf"^{re.escape(HOME_PREFIX)}"))
    async def on_home_control(ack: Ack, body: dict[str, Any], action: dict[str, Any]) -> None:
        await take(lambda: home_action_spec(body, action), "App Home control", body)
        await ack()

    @app.action(re.compile("^(" + "|".join(REMINDER_ACTIONS) + ")$"))
    async def on_reminder(ack: Ack, body: dict[str, Any], action: dict[str, Any]) -> None:
        def spec() -> JobSpec:
            press = button_spec(body, action)
            return replace(press, kind=JobKind.REMINDER_BUTTON, lane=f"reminder:{press.user}")
        await take(spec, "reminder button", body)
        await ack()


def _register_captures(app: AsyncApp, take: assistant.Take, reaction: str) -> None:
    """Someone's message kept as a note: the Save-to-brain shortcut, the capture reaction."""

    @app.message_shortcut(SAVE_SHORTCUT)
    async def on_save(ack: Ack, body: dict[str, Any]) -> None:
        await take(lambda: save_spec(body), "Save to brain", body)
        await ack()

    @app.event("reaction_added")
    async def on_reaction(event: dict[str, Any], body: dict[str, Any], context: Any) -> None:
        item = event.get("item") or {}
        if event.get("reaction") != reaction or item.get("type") != "message":
            return
        if context.bot_user_id and event.get("item_user") == context.bot_user_id:
            return  # the bot's own reply: already the brain's words
        await take(lambda: reaction_spec(body, event), "capture reaction", body)


def _register_home(app: AsyncApp, take: assistant.Take) -> None:
    """The App Home opened: its Home tab, or its Messages tab."""

    @app.event("app_home_opened")
    async def on_home(event: dict[str, Any], body: dict[str, Any]) -> None:
        if event.get("tab") == "home":
            await take(lambda: home_spec(body, event), "App Home", body)
        elif event.get("tab") == "messages":  # agent messaging: where a conversation starts
            await take(lambda: messages_tab_spec(body, event), "Messages tab", body)


def _register_workspace_events(app: AsyncApp, intake: Intake, accounts: Accounts | None,
                               forget_workspace: Callable[[str], Awaitable[None]] | None,
                               ) -> None:
    """The app uninstalled, tokens revoked: recorded through the Brain at once."""

    async def gone(body: dict[str, Any]) -> None:
        if accounts is not None:
            await accounts.uninstalled(str(body.get("team_id") or "unknown"))
        if forget_workspace is not None and body.get("team_id"):
            await forget_workspace(str(body["team_id"]))

    @app.event("app_uninstalled")
    async def on_uninstalled(body: dict[str, Any]) -> None:
        log.warning("app_uninstalled from %s", body.get("team_id"))
        await gone(body)

    @app.event("tokens_revoked")
    async def on_revoked(event: dict[str, Any], body: dict[str, Any]) -> None:
        tokens = event.get("tokens") or {}
        users = [str(u) for u in tokens.get("oauth") or [] if u]
        log.warning("tokens_revoked in %s: %d user token(s), %d bot token(s)",
                    body.get("team_id"), len(users), len(tokens.get("bot") or []))
        if accounts is None:
            return
        if tokens.get("bot"):  # the bot's own token: nothing can reach Slack any more
            await gone(body)
        await accounts.revoked([await intake.person_of(body, u) for u in users])


def _register_commands(app: AsyncApp, take: assistant.Take) -> None:
    """`/digest`: answered at once with what is being done, the work a job."""

    @app.command("/digest")
    async def on_digest(ack: Ack, command: dict[str, Any]) -> None:
        text = " ".join(str(command.get("text") or "").split())
        request = parse_digest_request(text)
        if request.action == "invalid":
            await ack(text=request.reply_to_invalid())
            return
        if await take(lambda: command_spec(command, asdict(request)), "/digest", command):
            what = (f"Working on your {request.kind} digest…" if request.action == "show"
                    else "Updating your digest settings…" if request.sets_schedule
                    else "Looking up your digest settings…")
            await ack(text=what)
        else:
            await ack()


def _register_ignored(app: AsyncApp) -> None:
    # Events we receive but do not act on are still acked with 200, so Slack does not retry.
    @app.event(re.compile(r".*"))
    async def ignore_other_events() -> None:
        return None
