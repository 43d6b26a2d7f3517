"""Which Slack requests become work, and how that work is recorded before the ack.

Each unit of work (a message turn, a button press, a `/digest`) becomes one job in the journal,
keyed so a retried delivery finds it already there, in the lane of the conversation it belongs
to (one person's conversation in one thread: turns run in order there, across replicas).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

from bot.jobs.queue import JobKind, JobQueue
from bot.slack.shared_files import files_of
from storage.types import CATEGORIES
from tools.web.links import unfurls_of

log = logging.getLogger(__name__)

MENTION = re.compile(r"<@[A-Z0-9]+(?:\|[^>]*)?>")
# Message subtypes that still carry a person's words; every other subtype is ignored.
USER_SUBTYPES = frozenset({None, "file_share", "thread_broadcast"})
# What an assistant thread's context may hold (Slack's `assistant_thread.context`): ids only,
# since the channel's id reaches the model's prompt.
CONTEXT_KEYS = ("channel_id", "team_id", "enterprise_id")
SLACK_ID = re.compile(r"^[A-Z0-9]{1,32}$")


def conversation_key(channel: str, thread_ts: str, user: str) -> str:
    """One person's conversation in one thread: in a shared thread, each has their own."""
    return f"slack:{channel}:{thread_ts}:{user}"


def is_from_a_bot(event: dict[str, Any]) -> bool:
    return bool(event.get("bot_id")) or event.get("subtype") == "bot_message" \
        or bool(event.get("bot_profile"))


def strip_mentions(text: str) -> str:
    return " ".join(MENTION.sub(" ", text).split())


def permalink(channel: str, ts: str, thread_ts: str | None = None) -> str:
    """Slack's archive link form, built locally (no chat.getPermalink call, no extra scope)."""
    link = f"https://slack.com/archives/{channel}/p{ts.replace('.', '')}"
    if thread_ts and thread_ts != ts:
        link += f"?thread_ts={thread_ts}&cid={channel}"
    return link


_SLACK_MARKUP = re.compile(r"<([^<>|]*)(?:\|([^<>]*))?>")


def plain_text(text: str) -> str:
    """A message's text with Slack's markup read: <@U1> -> @U1, <#C1|general> -> #general,
    <https://x|label> -> label (https://x), <!here> -> @here; &amp; &lt; &gt; decoded."""
    def one(match: re.Match[str]) -> str:
        target, label = match.group(1), match.group(2)
        if target.startswith(("@", "#")):
            return f"{target[0]}{label}" if label else target
        if target.startswith("!"):
            name = target[1:].split("^", 1)[0]
            return "@" + (label or name).lstrip("@")
        return f"{label} ({target})" if label and label != target else target
    out = _SLACK_MARKUP.sub(one, text)
    return out.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


@dataclass(frozen=True)
class JobSpec:
    key: str
    kind: JobKind
    user: str
    lane: str
    payload: dict[str, Any]


def team_id(body: dict[str, Any]) -> str | None:
    """The workspace a request comes from (events, interactivity, commands)."""
    team = body.get("team_id") or body.get("team") or (body.get("user") or {}).get("team_id")
    if isinstance(team, dict):
        team = team.get("id")
    return str(team) if team else None


def for_person(spec: JobSpec, person: str, team: str | None) -> JobSpec:
    """`spec` owned by `person` (the Slack user's person key, bot/tenancy/people.py): the job's owner,
    the `user` of its payload (and of a button's press) and the end of its lane, which always
    ends with the user. The workspace goes with the payload, so the job answers with its
    token. Unchanged when the key is the plain user id and no workspace is named."""
    payload = dict(spec.payload)
    if team:
        payload["team"] = team
    if person == spec.user:
        return spec if payload == spec.payload else replace(spec, payload=payload)
    if payload.get("user") == spec.user:
        payload["user"] = person
    press = payload.get("press")
    if isinstance(press, dict) and press.get("user") == spec.user:
        payload["press"] = {**press, "user": person}
    lane = spec.lane[:-len(spec.user)] + person if spec.lane.endswith(spec.user) else spec.lane
    return replace(spec, user=person, lane=lane, payload=payload)


class Missing(ValueError):
    """A request we act on lacks a field the work needs; logged with the reason."""


def _need(mapping: dict[str, Any], *names: str) -> None:
    for name in names:
        if not isinstance(mapping.get(name), str) or not mapping[name]:
            raise Missing(f"no {name}")


def shared_text(event: dict[str, Any]) -> str:
    """The words of a message, or for a message of files alone what it shares."""
    text = str(event.get("text") or "").strip()
    if not text and (files := files_of(event)):
        text = "Shared " + ", ".join(f["name"] for f in files)
    return text


def turn_spec(body: dict[str, Any], event: dict[str, Any], text: str) -> JobSpec:
    _need(event, "channel", "ts", "user")
    channel, ts, user = event["channel"], event["ts"], event["user"]
    thread_ts = event.get("thread_ts") or ts
    event_id = body.get("event_id") or event.get("client_msg_id") or f"{channel}:{ts}"
    payload = {"channel": channel, "ts": ts, "thread_ts": thread_ts, "user": user,
               "text": text, "event_id": event_id}
    if team := body.get("team_id") or event.get("team"):  # whose answer streams (channels)
        payload["team"] = team
    if files := files_of(event):  # fetched by the job, never before the ack
        payload["files"] = files
    if unfurls := unfurls_of(event):  # Slack's previews of its links: no fetch needed
        payload["unfurls"] = unfurls
    return JobSpec(key=f"event:{event_id}", kind=JobKind.TURN, user=user,
                   lane=conversation_key(channel, thread_ts, user), payload=payload)


def button_spec(body: dict[str, Any], action: dict[str, Any]) -> JobSpec:
    """A button on a message (a card in a thread, an ephemeral card, a reminder)."""
    container = body.get("container") or {}
    message = body.get("message") or {}
    user = (body.get("user") or {}).get("id") or ""
    channel = container.get("channel_id") or (body.get("channel") or {}).get("id") or ""
    message_ts = container.get("message_ts") or message.get("ts") or ""
    thread_ts = message.get("thread_ts") or container.get("thread_ts") or message_ts
    press = {"user": user, "channel": channel, "message_ts": message_ts,
             "thread_ts": thread_ts, "action_id": action.get("action_id") or "",
             "value": action.get("value") or "",
             # an ephemeral card cannot be chat.update'd: its response_url replaces it
             "ephemeral": bool(container.get("is_ephemeral")),
             "response_url": body.get("response_url")}
    _need(press, "user", "channel", "message_ts", "action_id")
    trigger = body.get("trigger_id") or f"{message_ts}:{action.get('action_ts')}"
    return JobSpec(key=f"action:{user}:{trigger}:{press['action_id']}", kind=JobKind.BUTTON,
                   user=user, lane=conversation_key(channel, thread_ts, user),
                   payload={"press": press})


def open_note_spec(body: dict[str, Any], action: dict[str, Any]) -> JobSpec:
    """A source button under an answer: open that note, from the presser's own vault, in a
    modal (`trigger_id` lets the job open it; Slack honours it for 3 seconds)."""
    spec = button_spec(body, action)
    trigger = str(body.get("trigger_id") or "")
    _need({"trigger_id": trigger, "value": action.get("value")}, "trigger_id", "value")
    return JobSpec(key=spec.key, kind=JobKind.OPEN_NOTE, user=spec.user,
                   lane=f"open:{spec.user}", payload={**spec.payload, "trigger_id": trigger})


def home_action_spec(body: dict[str, Any], action: dict[str, Any]) -> JobSpec:
    """A button or a select on the App Home: acts for the person whose Home it is."""
    user = (body.get("user") or {}).get("id") or ""
    action_id = action.get("action_id") or ""
    value = action.get("value") or (action.get("selected_option") or {}).get("value") or ""
    _need({"user": user, "action_id": action_id, "value": value}, "user", "action_id", "value")
    trigger = body.get("trigger_id") or action.get("action_ts") or value
    return JobSpec(key=f"action:{user}:{trigger}:{action_id}", kind=JobKind.HOME_ACTION, user=user,
                   lane=f"home:{user}",
                   payload={"user": user, "action_id": action_id, "value": value})


def save_spec(body: dict[str, Any]) -> JobSpec:
    """The Save-to-brain message shortcut: the message comes with the request."""
    user = (body.get("user") or {}).get("id") or ""
    channel = (body.get("channel") or {}).get("id") or ""
    message = body.get("message") or {}
    ts = message.get("ts") or body.get("message_ts") or ""
    _need({"user": user, "channel": channel, "ts": ts, "trigger": body.get("trigger_id")},
          "user", "channel", "ts", "trigger")
    return JobSpec(key=f"shortcut:{body['trigger_id']}", kind=JobKind.CAPTURE, user=user,
                   lane=f"capture:{user}",
                   payload={"via": "shortcut", "user": user, "channel": channel,
                            "message_ts": ts, "thread_ts": message.get("thread_ts"),
                            "text": str(message.get("text") or ""),
                            "author": message.get("user") or message.get("username"),
                            "response_url": body.get("response_url"),
                            # fetched by the job (never before the ack), as a DM's are
                            "files": files_of(message), "unfurls": unfurls_of(message)})


def reaction_spec(body: dict[str, Any], event: dict[str, Any]) -> JobSpec:
    """The capture reaction: the worker fetches the message (the event names it only)."""
    item = event.get("item") or {}
    spec = {"user": event.get("user"), "channel": item.get("channel"), "ts": item.get("ts"),
            "event_id": body.get("event_id")}
    _need(spec, "user", "channel", "ts", "event_id")
    user = str(spec["user"])
    return JobSpec(key=f"event:{spec['event_id']}", kind=JobKind.CAPTURE, user=user,
                   lane=f"capture:{user}",
                   payload={"via": "reaction", "user": user, "channel": spec["channel"],
                            "message_ts": spec["ts"], "author": event.get("item_user")})


def home_spec(body: dict[str, Any], event: dict[str, Any]) -> JobSpec:
    _need(event, "user")
    _need(body, "event_id")
    user = event["user"]
    return JobSpec(key=f"event:{body['event_id']}", kind=JobKind.HOME, user=user,
                   lane=f"home:{user}", payload={"user": user})


def messages_tab_spec(body: dict[str, Any], event: dict[str, Any]) -> JobSpec:
    """Agent messaging (manifest `agent_view`): the person opened the app's Messages tab; it
    gets the suggested prompts, set on the DM itself (no thread)."""
    _need(event, "user", "channel")
    _need(body, "event_id")
    user, channel = event["user"], event["channel"]
    return JobSpec(key=f"event:{body['event_id']}", kind=JobKind.THREAD_STARTED, user=user,
                   lane=f"prompts:{user}", payload={"user": user, "channel": channel,
                                                    "thread_ts": None})


def assistant_spec(body: dict[str, Any], event: dict[str, Any], *,
                   kind: JobKind = JobKind.THREAD_STARTED) -> JobSpec:
    """The assistant panel opened a thread (it gets the suggested prompts), or the channel
    beside it changed (`kind` THREAD_CONTEXT); either way the thread's context is kept. In
    the thread's lane: a turn taken after the change sees it."""
    thread = event.get("assistant_thread") or {}
    _need(thread, "user_id", "channel_id", "thread_ts")
    _need(body, "event_id")
    user, channel, thread_ts = thread["user_id"], thread["channel_id"], thread["thread_ts"]
    given = thread.get("context")
    context: dict[str, Any] = given if isinstance(given, dict) else {}
    return JobSpec(key=f"event:{body['event_id']}", kind=kind, user=user,
                   lane=conversation_key(channel, thread_ts, user),
                   payload={"user": user, "channel": channel, "thread_ts": thread_ts,
                            "context": {k: v for k, v in context.items()
                                        if k in CONTEXT_KEYS and isinstance(v, str)
                                        and SLACK_ID.match(v)}})


def command_spec(command: dict[str, Any], request: dict[str, Any]) -> JobSpec:
    _need(command, "user_id", "response_url")
    user = command["user_id"]
    trigger = command.get("trigger_id") or command["response_url"]
    return JobSpec(key=f"command:{trigger}", kind=JobKind.DIGEST, user=user, lane=f"digest:{user}",
                   payload={"user": user, "channel": command.get("channel_id"),
                            "response_url": command["response_url"], "request": request})


class IntakeFailed(Exception):
    """The journal could not record a request: Slack must get an error and deliver again."""


def parse_button_value(value: str) -> tuple[str, str | None]:
    """(entry id, target category) from a button's value; ValueError when malformed."""
    try:
        data = json.loads(value)
    except json.JSONDecodeError as exc:
        raise ValueError("the button value is not JSON") from exc
    if not isinstance(data, dict) or not isinstance(data.get("entry_id"), str) \
            or not data["entry_id"]:
        raise ValueError("the button names no note")
    target = data.get("to")
    if target is not None and target not in CATEGORIES:
        raise ValueError(f"unknown category {str(target)[:30]!r}")
    return data["entry_id"], target


PersonKey = Callable[[str | None, str], Awaitable[str]]


class Intake:
    """Records jobs (committed before the listener returns, so before the ack) and wakes the
    local worker. A failure to record raises: Slack gets an error and delivers again. With
    `person` (many workspaces: `brain.people.key`), each job belongs to its Slack user's
    person key in the workspace it came from."""

    def __init__(self, jobs: JobQueue, wake: Callable[[], None],
                 person: PersonKey | None = None) -> None:
        self.jobs = jobs
        self.wake = wake
        self.person = person

    async def person_of(self, body: dict[str, Any], user: str) -> str:
        """The person key of `user` of the workspace `body` comes from."""
        return user if self.person is None else await self.person(team_id(body), user)

    async def take(self, spec: JobSpec, team: str | None = None) -> bool:
        try:
            if self.person is not None:
                spec = for_person(spec, await self.person(team, spec.user), team)
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
