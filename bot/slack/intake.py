"""Which Slack requests become work, and how that work is recorded before the ack.

Each unit of work (a message turn, a button press, a `/digest`) becomes one job in the journal,
keyed so a retried delivery finds it already there, in the lane of the conversation it belongs
to (one person's conversation in one thread: turns run in order there, across replicas).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bot.jobs import JobQueue

log = logging.getLogger(__name__)

MENTION = re.compile(r"<@[A-Z0-9]+(?:\|[^>]*)?>")
# Message subtypes that still carry a person's words; every other subtype is ignored.
USER_SUBTYPES = frozenset({None, "file_share", "thread_broadcast"})


def conversation_key(channel: str, thread_ts: str, user: str) -> str:
    """One person's conversation in one thread: in a shared thread, each has their own."""
    return f"slack:{channel}:{thread_ts}:{user}"


def is_from_a_bot(event: dict[str, Any]) -> bool:
    return bool(event.get("bot_id")) or event.get("subtype") == "bot_message" \
        or bool(event.get("bot_profile"))


def strip_mentions(text: str) -> str:
    return " ".join(MENTION.sub(" ", text).split())


def permalink(channel: str, ts: str) -> str:
    """Slack's archive link form, built locally (no chat.getPermalink call, no extra scope)."""
    return f"https://slack.com/archives/{channel}/p{ts.replace('.', '')}"


@dataclass(frozen=True)
class JobSpec:
    key: str
    kind: str
    user: str
    lane: str
    payload: dict[str, Any]


class Missing(ValueError):
    """A request we act on lacks a field the work needs; logged with the reason."""


def _need(mapping: dict[str, Any], *names: str) -> None:
    for name in names:
        if not isinstance(mapping.get(name), str) or not mapping[name]:
            raise Missing(f"no {name}")


def turn_spec(body: dict[str, Any], event: dict[str, Any], text: str) -> JobSpec:
    _need(event, "channel", "ts", "user")
    channel, ts, user = event["channel"], event["ts"], event["user"]
    thread_ts = event.get("thread_ts") or ts
    event_id = body.get("event_id") or event.get("client_msg_id") or f"{channel}:{ts}"
    return JobSpec(key=f"event:{event_id}", kind="turn", user=user,
                   lane=conversation_key(channel, thread_ts, user),
                   payload={"channel": channel, "ts": ts, "thread_ts": thread_ts, "user": user,
                            "text": text, "event_id": event_id})


def button_spec(body: dict[str, Any], action: dict[str, Any]) -> JobSpec:
    container = body.get("container") or {}
    message = body.get("message") or {}
    user = (body.get("user") or {}).get("id") or ""
    channel = container.get("channel_id") or (body.get("channel") or {}).get("id") or ""
    message_ts = container.get("message_ts") or message.get("ts") or ""
    thread_ts = message.get("thread_ts") or container.get("thread_ts") or message_ts
    press = {"user": user, "channel": channel, "message_ts": message_ts,
             "thread_ts": thread_ts, "action_id": action.get("action_id") or "",
             "value": action.get("value") or ""}
    _need(press, "user", "channel", "message_ts", "action_id")
    trigger = body.get("trigger_id") or f"{message_ts}:{action.get('action_ts')}"
    return JobSpec(key=f"action:{user}:{trigger}:{press['action_id']}", kind="button",
                   user=user, lane=conversation_key(channel, thread_ts, user),
                   payload={"press": press})


def command_spec(command: dict[str, Any], request: dict[str, Any]) -> JobSpec:
    _need(command, "user_id", "response_url")
    user = command["user_id"]
    trigger = command.get("trigger_id") or command["response_url"]
    return JobSpec(key=f"command:{trigger}", kind="digest", user=user, lane=f"digest:{user}",
                   payload={"user": user, "channel": command.get("channel_id"),
                            "response_url": command["response_url"], "request": request})


class IntakeFailed(Exception):
    """The journal could not record a request: Slack must get an error and deliver again."""


class Intake:
    """Records jobs (committed before the listener returns, so before the ack) and wakes the
    local worker. A failure to record raises: Slack gets an error and delivers again."""

    def __init__(self, jobs: JobQueue, wake: Callable[[], None]) -> None:
        self.jobs = jobs
        self.wake = wake

    async def take(self, spec: JobSpec) -> bool:
        try:
            job_id, new = await self.jobs.record(key=spec.key, kind=spec.kind,
                                                 user_id=spec.user, lane=spec.lane,
                                                 payload=spec.payload)
        except Exception as exc:
            raise IntakeFailed(f"{type(exc).__name__}: {exc}") from exc
        if new:
            log.info("job %s recorded: %s for %s", job_id, spec.kind, spec.user)
            self.wake()
        else:
            log.info("job %s seen again (%s); not recorded twice", job_id, spec.key)
        return new
