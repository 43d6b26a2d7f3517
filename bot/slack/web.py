"""Web API calls the bot makes, each logged on failure (with a reference id), never silent.

`post_once` is how a job replies: the reply carries the job's key in its message metadata, and
a job that runs again after a crash looks for that reply in the thread before posting, so the
user sees one answer however often the work ran.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from bot.config import Settings
from bot.jobs.queue import JobContext
from bot.slack import cards
from bot.slack.cards import SlackMessage
from bot.tenancy.people import slack_user

log = logging.getLogger(__name__)

RATE_LIMIT_RETRIES = 2
REPLY_EVENT = "brain_reply"  # message metadata event_type of the bot's replies
THINKING = "is thinking…"  # the status shown under the thread while a turn runs
# Errors a retry cannot fix: the job ends (logged) instead of running again.
PERMANENT = frozenset({"channel_not_found", "not_in_channel", "is_archived", "msg_too_long",
                       "invalid_blocks", "no_text", "user_not_found", "account_inactive",
                       "invalid_auth", "not_authed", "token_revoked", "cannot_dm_bot",
                       "message_not_found", "cant_update_message", "restricted_action"})


def api_base_url(settings: Settings) -> str | None:
    """SLACK_API_URL with the trailing slash the SDK's urljoin needs."""
    url = settings.slack_api_url
    if not url:
        return None
    return url if url.endswith("/") else url + "/"


_TOKEN: ContextVar[str | None] = ContextVar("brain_slack_token", default=None)


class WorkspaceClient(AsyncWebClient):
    """The bot's Web API client. Its token is the current job's workspace's (`acting_for`,
    many workspaces), else its own (SLACK_BOT_TOKEN)."""

    _own: str | None = None

    @property
    def token(self) -> str | None:
        return _TOKEN.get() or self._own

    @token.setter
    def token(self, value: str | None) -> None:
        self._own = value


@contextlib.contextmanager
def acting_for(token: str | None) -> Iterator[None]:
    """Inside the block (and the tasks it starts) WorkspaceClients call Slack with `token`
    (None: their own)."""
    reset = _TOKEN.set(token)
    try:
        yield
    finally:
        _TOKEN.reset(reset)


def make_client(settings: Settings, token: str | None = None,
                session: aiohttp.ClientSession | None = None) -> AsyncWebClient:
    """A Web API client for SLACK_API_URL (if set) that honours Retry-After on 429. With
    `session`, every call reuses its connections (the SDK opens a session per call without)."""
    kwargs: dict[str, Any] = {}
    base = api_base_url(settings)
    if base:
        kwargs["base_url"] = base
    if session is not None:
        kwargs["session"] = session
    client = WorkspaceClient(token=token or settings.slack_bot_token, **kwargs)
    client.retry_handlers.append(AsyncRateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES))
    return client


def error_code(exc: SlackClientError) -> str:
    if isinstance(exc, SlackApiError):
        return str(exc.response.get("error") or exc)
    return str(exc)


def permanent(exc: SlackClientError) -> bool:
    return isinstance(exc, SlackApiError) and error_code(exc) in PERMANENT


async def post_once(client: AsyncWebClient, job: JobContext, channel: str,
                    thread_ts: str | None, msg: SlackMessage, *, slot: str = "reply",
                    may_be_posted: bool | None = None) -> str | None:
    """Post `msg` for this job at most once; returns its ts (None when Slack refused it for
    good). Raises on a failure worth retrying, so the job runs again.

    The reply carries the job's key in its metadata. Before posting, the job records that it
    is posting; a later run finds that record and looks for the reply in the thread. A caller
    that knows whether an earlier run can have posted (`may_be_posted`: the turn handler, whose
    turn is stored before its reply is posted) skips that write, and the ts is recorded with
    the job's end."""
    done = job.result.get(f"{slot}_ts")
    if done:
        return str(done)
    marker = f"{job.job.key}#{slot}"
    look = job.result.get(f"{slot}_posting") if may_be_posted is None else may_be_posted
    if look:
        found = await find_posted(client, channel, thread_ts, marker)
        if found:
            job.note(**{f"{slot}_ts": found})
            return found
    if may_be_posted is None:
        await job.remember(**{f"{slot}_posting": True})
    kwargs: dict[str, Any] = {"thread_ts": thread_ts} if thread_ts else {}
    try:
        resp = await client.chat_postMessage(
            channel=channel, text=msg.text, blocks=msg.blocks,
            metadata={"event_type": REPLY_EVENT, "event_payload": {"job": marker}}, **kwargs)
    except SlackClientError as exc:
        log.error("chat.postMessage failed (ref %s) in %s/%s: %s", cards.new_ref(), channel,
                  thread_ts, error_code(exc))
        if permanent(exc):
            return None
        raise
    ts = str(resp.get("ts") or "")
    job.note(**{f"{slot}_ts": ts})  # a later run finds the reply by its metadata anyway
    return ts or None


async def find_posted(client: AsyncWebClient, channel: str, thread_ts: str | None,
                      marker: str) -> str | None:
    """The ts of the bot's message carrying `marker` in its metadata, if it was posted."""
    try:
        if thread_ts:
            resp = await client.conversations_replies(channel=channel, ts=thread_ts,
                                                      include_all_metadata=True, limit=200)
        else:
            resp = await client.conversations_history(channel=channel,
                                                      include_all_metadata=True, limit=50)
    except SlackClientError as exc:
        log.warning("could not look for an earlier reply in %s/%s: %s", channel, thread_ts,
                    error_code(exc))
        return None
    for message in resp.get("messages") or []:
        meta = message.get("metadata") or {}
        if meta.get("event_type") == REPLY_EVENT and \
                (meta.get("event_payload") or {}).get("job") == marker:
            return str(message.get("ts"))
    return None


async def update(client: AsyncWebClient, channel: str, ts: str, msg: SlackMessage) -> bool:
    try:
        await client.chat_update(channel=channel, ts=ts, text=msg.text, blocks=msg.blocks)
        return True
    except SlackClientError as exc:
        log.error("chat.update failed (ref %s) for %s/%s: %s", cards.new_ref(), channel, ts,
                  error_code(exc))
        return False


async def ephemeral(client: AsyncWebClient, channel: str, user: str, text: str,
                    thread_ts: str | None = None, *, escape: bool = True,
                    msg: SlackMessage | None = None) -> bool:
    """A message only `user` (a person key, bot/tenancy/people.py) sees (`text`, or the card `msg`). `text` is escaped unless the
    bot built it (a mention). False when Slack refused it."""
    try:
        kwargs: dict[str, Any] = {"thread_ts": thread_ts} if thread_ts else {}
        if msg is None:
            shown = cards.escape(text) if escape else text
            msg = cards.message([cards.section(shown)], shown)
        await client.chat_postEphemeral(channel=channel, user=slack_user(user), text=msg.text,
                                        blocks=msg.blocks, **kwargs)
        return True
    except SlackClientError as exc:
        log.error("chat.postEphemeral failed (ref %s) for %s: %s", cards.new_ref(), user,
                  error_code(exc))
        return False


async def set_status(client: AsyncWebClient, channel: str, thread_ts: str,
                     status: str) -> None:
    """Slack's own "is thinking…" under the thread while the loop runs ("" clears it; a reply
    in the thread clears it too). A nicety: failures are logged and the turn goes on."""
    try:
        await client.assistant_threads_setStatus(channel_id=channel, thread_ts=thread_ts,
                                                 status=status)
    except SlackClientError as exc:
        log.warning("assistant.threads.setStatus failed on %s/%s: %s", channel, thread_ts,
                    error_code(exc))


async def fetch_message(client: AsyncWebClient, channel: str, ts: str) -> dict[str, Any] | None:
    """One message by its ts: from the channel's history, else from the thread it is in.
    None when it is not there (deleted); raises when Slack cannot be asked (retry)."""
    resp = await client.conversations_history(channel=channel, latest=ts, inclusive=True,
                                              limit=1)
    for message in resp.get("messages") or []:
        if message.get("ts") == ts:
            return dict(message)
    resp = await client.conversations_replies(channel=channel, ts=ts, oldest=ts,
                                              inclusive=True, limit=10)
    for message in resp.get("messages") or []:
        if message.get("ts") == ts:
            return dict(message)
    return None


async def user_name(client: AsyncWebClient, user_id: str) -> str:
    """How Slack shows a person (display name, else real name), or their id."""
    try:
        info = await client.users_info(user=user_id)
    except SlackClientError as exc:
        log.warning("users.info for %s failed: %s", user_id, error_code(exc))
        return user_id
    user = info.get("user") or {}
    profile = user.get("profile") or {}
    for name in (profile.get("display_name"), profile.get("real_name"), user.get("real_name"),
                 user.get("name")):
        if isinstance(name, str) and name.strip():
            return name.strip()
    return user_id


async def open_dm(client: AsyncWebClient, user_id: str) -> str:
    """The id of the bot's DM with `user_id` (a person key) (conversations.open); raises on
    failure."""
    resp = await client.conversations_open(users=slack_user(user_id))
    channel = (resp.get("channel") or {}).get("id")
    if not channel:
        raise RuntimeError("conversations.open returned no channel")
    return str(channel)


async def job_dm(client: AsyncWebClient, job: JobContext, user_id: str) -> str | None:
    """The DM a job posts to (a reminder, a scheduled digest): opened once and remembered in
    the job's result, so a run again posts where the first would have. None when Slack
    refuses for good (logged); raises on a failure worth a retry."""
    channel = job.result.get("dm")
    if channel:
        return str(channel)
    try:
        channel = await open_dm(client, user_id)
    except SlackClientError as exc:
        if permanent(exc):
            log.warning("job %s: cannot DM %s (%s)", job.job.id, user_id, error_code(exc))
            return None
        raise
    await job.remember(dm=channel)
    return channel


async def respond(response_url: str, msg: SlackMessage, *, replace: bool = False) -> bool:
    """Private answer through a response_url (a command's, a shortcut's, an ephemeral card's
    button: `replace` updates that card); False when it did not arrive."""
    hook = AsyncWebhookClient(response_url)
    hook.retry_handlers.append(AsyncRateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES))
    try:
        resp = await hook.send(text=msg.text, blocks=msg.blocks, response_type="ephemeral",
                               replace_original=replace or None)
    except Exception as exc:  # aiohttp/network errors: logged, not silent
        log.error("response_url post failed (ref %s): %s", cards.new_ref(), exc)
        return False
    if resp.status_code >= 300:
        log.error("response_url answered %s (ref %s)", resp.status_code, cards.new_ref())
        return False
    return True
