"""Rows of the core tables: conversations, turns and messages, tool runs, captures, processed
events, digest subscriptions.

Every function takes an explicit `AsyncSession`; the caller owns the transaction and commits.
Rows come back as frozen dataclasses, never ORM objects. Datetimes in and out are
timezone-aware (UTC out); naive datetimes are refused with `InvalidValue`. The SQL is portable
(SQLite and PostgreSQL); upserts use each dialect's `INSERT ... ON CONFLICT`.
"""

from __future__ import annotations

import zoneinfo
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, cast

from sqlalchemy import delete, func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import CursorResult, Result
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from storage.errors import InvalidValue, NotFound
from storage.models import (
    Base,
    Capture,
    Conversation,
    DigestSubscription,
    Message,
    ProcessedEvent,
    ToolRun,
    Turn,
    utcnow,
)

MESSAGE_ROLES = ("user", "assistant", "tool")
TOOL_RUN_STATUSES = ("ok", "error")
CAPTURE_STATUSES = ("filed", "needs_review", "fixed")
DIGEST_KINDS = ("daily", "weekly")
TITLE_CHARS = 80


@dataclass(frozen=True)
class ConversationRow:
    id: int
    key: str
    user_id: str
    channel: str | None
    thread_ts: str | None
    title: str | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class MessageRow:
    id: int
    conversation_id: int
    turn_id: int
    seq: int
    role: str
    content: str | None
    tool_calls: Any
    tool_results: Any
    created_at: datetime


@dataclass(frozen=True)
class ToolRunRow:
    id: int
    turn_id: int
    call_id: str
    tool: str
    arguments: Any
    status: str
    result: Any
    error: Any
    started_at: datetime
    duration_ms: float


@dataclass(frozen=True)
class TurnRow:
    id: int
    conversation_id: int
    user_text: str
    reply_text: str | None
    status: str
    input_tokens: int
    output_tokens: int
    llm_calls: int
    created_at: datetime
    finished_at: datetime | None
    tool_runs: tuple[ToolRunRow, ...] = ()


@dataclass(frozen=True)
class CaptureRow:
    id: int
    user_id: str
    conversation_id: int | None
    turn_id: int | None
    original_text: str
    entry_id: str
    path: str
    category: str
    confidence: float | None
    status: str
    channel: str | None
    thread_ts: str | None
    message_ts: str | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class SubscriptionRow:
    id: int
    user_id: str
    kind: str
    weekday: int | None
    hour: int
    minute: int
    tz: str
    channel: str | None
    last_sent_at: datetime | None
    created_at: datetime


# --- helpers -----------------------------------------------------------------------------


def _aware(value: datetime, name: str) -> datetime:
    if not isinstance(value, datetime):
        raise InvalidValue(f"{name} must be a datetime, not {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidValue(f"{name} must be timezone-aware, got {value.isoformat()}")
    return value


def _one_of(value: str, allowed: Sequence[str], name: str) -> str:
    if value not in allowed:
        raise InvalidValue(f"{name} must be one of {', '.join(allowed)}, not {value!r}")
    return value


def _not_empty(value: str, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidValue(f"{name} must be a non-empty string")
    return value


def _rowcount(result: Result[Any]) -> int:
    """Rows hit by an UPDATE/DELETE/INSERT (the result of one is a CursorResult)."""
    return int(cast(CursorResult[Any], result).rowcount)


def _dialect_insert(s: AsyncSession, model: type[Base]) -> Any:
    """`INSERT` with `on_conflict_do_nothing/update` for the session's database."""
    name = s.get_bind().dialect.name
    if name == "sqlite":
        return sqlite.insert(model)
    if name == "postgresql":
        return postgresql.insert(model)
    return None


def _conversation(c: Conversation) -> ConversationRow:
    return ConversationRow(c.id, c.key, c.user_id, c.channel, c.thread_ts, c.title,
                           c.created_at, c.updated_at)


def _turn(t: Turn, runs: tuple[ToolRunRow, ...] = ()) -> TurnRow:
    return TurnRow(t.id, t.conversation_id, t.user_text, t.reply_text, t.status, t.input_tokens,
                   t.output_tokens, t.llm_calls, t.created_at, t.finished_at, runs)


def _message(m: Message) -> MessageRow:
    return MessageRow(m.id, m.conversation_id, m.turn_id, m.seq, m.role, m.content,
                      m.tool_calls, m.tool_results, m.created_at)


def _tool_run(r: ToolRun) -> ToolRunRow:
    return ToolRunRow(r.id, r.turn_id, r.call_id, r.tool, r.arguments, r.status, r.result,
                      r.error, r.started_at, r.duration_ms)


def _capture(c: Capture) -> CaptureRow:
    return CaptureRow(c.id, c.user_id, c.conversation_id, c.turn_id, c.original_text,
                      c.entry_id, c.path, c.category, c.confidence, c.status, c.channel,
                      c.thread_ts, c.message_ts, c.created_at, c.updated_at)


def _subscription(d: DigestSubscription) -> SubscriptionRow:
    return SubscriptionRow(d.id, d.user_id, d.kind, d.weekday, d.hour, d.minute, d.tz,
                           d.channel, d.last_sent_at, d.created_at)


# --- conversations -------------------------------------------------------------------------


async def get_conversation(s: AsyncSession, key: str) -> ConversationRow | None:
    found = await s.scalar(select(Conversation).where(Conversation.key == key))
    return _conversation(found) if found is not None else None


async def get_conversation_by_id(s: AsyncSession, id: int) -> ConversationRow | None:
    found = await s.get(Conversation, id)
    return _conversation(found) if found is not None else None


async def get_or_create_conversation(s: AsyncSession, key: str, user_id: str,
                                     channel: str | None = None,
                                     thread_ts: str | None = None) -> ConversationRow:
    """The conversation of `key`, created on first use. Safe against a concurrent creator."""
    _not_empty(key, "conversation key")
    _not_empty(user_id, "user_id")
    existing = await get_conversation(s, key)
    if existing is not None:
        return existing
    now = utcnow()
    values = {"key": key, "user_id": user_id, "channel": channel, "thread_ts": thread_ts,
              "created_at": now, "updated_at": now}
    stmt = _dialect_insert(s, Conversation)
    if stmt is not None:
        await s.execute(stmt.values(**values).on_conflict_do_nothing(index_elements=["key"]))
    else:
        try:
            async with s.begin_nested():
                s.add(Conversation(**values))
        except IntegrityError:
            pass
    created = await get_conversation(s, key)
    assert created is not None
    return created


async def thread_known(s: AsyncSession, channel: str, thread_ts: str) -> bool:
    """Has anyone talked with the bot in this Slack thread?"""
    found = await s.scalar(select(Conversation.id).where(Conversation.channel == channel,
                                                         Conversation.thread_ts == thread_ts)
                           .limit(1))
    return found is not None


async def touch_conversation(s: AsyncSession, id: int) -> None:
    await s.execute(update(Conversation).where(Conversation.id == id)
                    .values(updated_at=utcnow()))


def _title(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1].rstrip() + "…"


async def recent_conversations(s: AsyncSession, user_id: str,
                               limit: int = 10) -> list[ConversationRow]:
    """The user's conversations, latest activity first. An untitled one is titled by its last
    user text (one line, at most 80 characters)."""
    rows = (await s.scalars(
        select(Conversation).where(Conversation.user_id == user_id)
        .order_by(Conversation.updated_at.desc(), Conversation.id.desc()).limit(limit))).all()
    untitled = [c.id for c in rows if not c.title]
    last_text: dict[int, str] = {}
    if untitled:
        last_turn = (select(func.max(Turn.id)).where(Turn.conversation_id.in_(untitled))
                     .group_by(Turn.conversation_id))
        for conversation_id, user_text in await s.execute(
                select(Turn.conversation_id, Turn.user_text).where(Turn.id.in_(last_turn))):
            last_text[conversation_id] = user_text
    out = []
    for c in rows:
        row = _conversation(c)
        if not c.title and c.id in last_text:
            row = replace(row, title=_title(last_text[c.id]))
        out.append(row)
    return out


# --- turns and messages ---------------------------------------------------------------------


async def start_turn(s: AsyncSession, conversation_id: int, user_text: str,
                     job_id: int | None = None) -> int:
    """A new running turn of the conversation; also marks the conversation active now. An
    earlier turn of the same job that never finished (its process died) is marked
    `abandoned`: this one takes its place."""
    conversation = await s.get(Conversation, conversation_id)
    if conversation is None:
        raise NotFound(f"no conversation {conversation_id}")
    now = utcnow()
    if job_id is not None:
        await s.execute(update(Turn).where(Turn.job_id == job_id, Turn.status == "running")
                        .values(status="abandoned", finished_at=now))
    turn = Turn(conversation_id=conversation_id, user_text=user_text, status="running",
                input_tokens=0, output_tokens=0, llm_calls=0, created_at=now, job_id=job_id)
    s.add(turn)
    conversation.updated_at = now
    await s.flush()
    return turn.id


async def finish_turn(s: AsyncSession, turn_id: int, reply_text: str | None, status: str,
                      input_tokens: int, output_tokens: int, llm_calls: int) -> None:
    _not_empty(status, "turn status")
    for name, value in (("input_tokens", input_tokens), ("output_tokens", output_tokens),
                        ("llm_calls", llm_calls)):
        if not isinstance(value, int) or value < 0:
            raise InvalidValue(f"{name} must be a non-negative integer, not {value!r}")
    result = await s.execute(
        update(Turn).where(Turn.id == turn_id).values(
            reply_text=reply_text, status=status, input_tokens=input_tokens,
            output_tokens=output_tokens, llm_calls=llm_calls, finished_at=utcnow()))
    if _rowcount(result) == 0:
        raise NotFound(f"no turn {turn_id}")


async def save_messages(s: AsyncSession, conversation_id: int, turn_id: int,
                        messages: list[dict[str, Any]]) -> None:
    """Append a turn's messages ({"role", "content", "tool_calls", "tool_results"}) after the
    conversation's last seq. All are checked before any is written."""
    turn = await s.get(Turn, turn_id)
    if turn is None or turn.conversation_id != conversation_id:
        raise NotFound(f"no turn {turn_id} in conversation {conversation_id}")
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            raise InvalidValue(f"message {i} must be a dict")
        _one_of(m.get("role", ""), MESSAGE_ROLES, f"message {i} role")
    last = await s.scalar(select(func.max(Message.seq))
                          .where(Message.conversation_id == conversation_id))
    seq = -1 if last is None else last
    now = utcnow()
    for m in messages:
        seq += 1
        s.add(Message(conversation_id=conversation_id, turn_id=turn_id, seq=seq, role=m["role"],
                      content=m.get("content"), tool_calls=m.get("tool_calls") or None,
                      tool_results=m.get("tool_results") or None, created_at=now))
    await s.flush()


async def recent_turn_messages(s: AsyncSession, conversation_id: int,
                               max_turns: int) -> list[list[MessageRow]]:
    """The messages of the last `max_turns` turns that have any, oldest turn first, each turn's
    messages in seq order. Never part of a turn."""
    if max_turns <= 0:
        return []
    last_turns = (select(Message.turn_id).where(Message.conversation_id == conversation_id)
                  .group_by(Message.turn_id).order_by(func.max(Message.seq).desc())
                  .limit(max_turns))
    rows = (await s.scalars(
        select(Message).where(Message.conversation_id == conversation_id,
                              Message.turn_id.in_(last_turns))
        .order_by(Message.seq))).all()
    turns: dict[int, list[MessageRow]] = {}
    for m in rows:  # seq order, so turns come out in the order they began
        turns.setdefault(m.turn_id, []).append(_message(m))
    return list(turns.values())


async def turns_for_log(s: AsyncSession, conversation_id: int | None = None,
                        limit: int = 10) -> list[TurnRow]:
    """The latest turns (of one conversation, or all), newest first, with their tool runs in
    the order they started."""
    query = select(Turn).order_by(Turn.id.desc()).limit(limit)
    if conversation_id is not None:
        query = query.where(Turn.conversation_id == conversation_id)
    turns = (await s.scalars(query)).all()
    runs: dict[int, list[ToolRunRow]] = {}
    if turns:
        for r in await s.scalars(select(ToolRun).where(ToolRun.turn_id.in_([t.id for t in turns]))
                                 .order_by(ToolRun.started_at, ToolRun.id)):
            runs.setdefault(r.turn_id, []).append(_tool_run(r))
    return [_turn(t, tuple(runs.get(t.id, ()))) for t in turns]


# --- tool runs ------------------------------------------------------------------------------


async def add_tool_run(s: AsyncSession, turn_id: int, call_id: str, tool: str,
                       arguments: dict[str, Any] | None, status: str, result: Any,
                       error: Any, started_at: datetime, duration_ms: float) -> int:
    """One tool call as a job. `error` is the error dict ({"code", "message", ...}) or text."""
    _one_of(status, TOOL_RUN_STATUSES, "tool run status")
    _aware(started_at, "started_at")
    if await s.get(Turn, turn_id) is None:
        raise NotFound(f"no turn {turn_id}")
    run = ToolRun(turn_id=turn_id, call_id=call_id, tool=tool, arguments=arguments,
                  status=status, result=result, error=error, started_at=started_at,
                  duration_ms=float(duration_ms))
    s.add(run)
    await s.flush()
    return run.id


# --- captures -------------------------------------------------------------------------------


async def add_capture(s: AsyncSession, *, user_id: str, original_text: str, entry_id: str,
                      path: str, category: str, confidence: float | None, status: str,
                      conversation_id: int | None = None, turn_id: int | None = None,
                      channel: str | None = None, thread_ts: str | None = None,
                      job_id: int | None = None) -> int:
    """The receipt of a capture. A capture made by a job that runs again (after a crash) has
    the same entry id: the first receipt stands and its id is returned."""
    _one_of(status, CAPTURE_STATUSES, "capture status")
    _not_empty(user_id, "user_id")
    _not_empty(entry_id, "entry_id")
    if confidence is not None and not 0.0 <= confidence <= 1.0:
        raise InvalidValue(f"confidence must be between 0 and 1, not {confidence!r}")
    if job_id is not None:
        existing = await s.scalar(select(Capture.id).where(Capture.job_id == job_id,
                                                           Capture.entry_id == entry_id))
        if existing is not None:
            return int(existing)
    now = utcnow()
    capture = Capture(user_id=user_id, original_text=original_text, entry_id=entry_id, path=path,
                      category=category, confidence=confidence, status=status,
                      conversation_id=conversation_id, turn_id=turn_id, channel=channel,
                      thread_ts=thread_ts, created_at=now, updated_at=now, job_id=job_id)
    s.add(capture)
    await s.flush()
    return capture.id


async def set_capture_message(s: AsyncSession, capture_id: int, message_ts: str) -> None:
    """Remember the Slack message that shows the receipt, to update it in place later."""
    result = await s.execute(update(Capture).where(Capture.id == capture_id)
                             .values(message_ts=message_ts, updated_at=utcnow()))
    if _rowcount(result) == 0:
        raise NotFound(f"no capture {capture_id}")


async def captures_for_conversation(s: AsyncSession, conversation_id: int) -> list[CaptureRow]:
    """The captures filed in a conversation, in the order they were made."""
    rows = await s.scalars(select(Capture).where(Capture.conversation_id == conversation_id)
                           .order_by(Capture.id))
    return [_capture(c) for c in rows]


async def capture_for_entry(s: AsyncSession, entry_id: str) -> CaptureRow | None:
    """The latest capture that filed `entry_id`."""
    found = await s.scalar(select(Capture).where(Capture.entry_id == entry_id)
                           .order_by(Capture.id.desc()).limit(1))
    return _capture(found) if found is not None else None


async def mark_capture(s: AsyncSession, entry_id: str, status: str, path: str | None = None,
                       category: str | None = None) -> CaptureRow | None:
    """Set the status (and where the entry now is) on the captures of `entry_id`; returns the
    latest one, or None when the entry was not captured by us (a hand-written note)."""
    _one_of(status, CAPTURE_STATUSES, "capture status")
    values: dict[str, Any] = {"status": status, "updated_at": utcnow()}
    if path is not None:
        values["path"] = path
    if category is not None:
        values["category"] = category
    await s.execute(update(Capture).where(Capture.entry_id == entry_id).values(**values))
    # The bulk update leaves loaded objects stale; read the row fresh.
    found = await s.scalar(select(Capture).where(Capture.entry_id == entry_id)
                           .order_by(Capture.id.desc()).limit(1)
                           .execution_options(populate_existing=True))
    return _capture(found) if found is not None else None


async def captures_since(s: AsyncSession, user_id: str, since: datetime,
                         limit: int = 50) -> list[CaptureRow]:
    """The user's captures made at or after `since`, newest first."""
    _aware(since, "since")
    rows = await s.scalars(select(Capture)
                           .where(Capture.user_id == user_id, Capture.created_at >= since)
                           .order_by(Capture.created_at.desc(), Capture.id.desc()).limit(limit))
    return [_capture(c) for c in rows]


# --- processed events -----------------------------------------------------------------------


async def claim_event(s: AsyncSession, event_id: str) -> bool:
    """True the first time `event_id` is claimed, False ever after.

    Race-free through the primary key (`ON CONFLICT DO NOTHING`). The caller must commit right
    away: until then a concurrent claimer waits on the row, and a rollback un-claims it.
    """
    _not_empty(event_id, "event_id")
    stmt = _dialect_insert(s, ProcessedEvent)
    if stmt is not None:
        result = await s.execute(stmt.values(event_id=event_id, received_at=utcnow())
                                 .on_conflict_do_nothing(index_elements=["event_id"]))
        return bool(_rowcount(result) == 1)
    try:
        async with s.begin_nested():
            s.add(ProcessedEvent(event_id=event_id, received_at=utcnow()))
    except IntegrityError:
        return False
    return True


async def prune_events(s: AsyncSession, older_than: datetime) -> int:
    """Forget events received before `older_than` (Slack retries come within minutes)."""
    _aware(older_than, "older_than")
    result = await s.execute(delete(ProcessedEvent)
                             .where(ProcessedEvent.received_at < older_than))
    return _rowcount(result)


# --- digest subscriptions -------------------------------------------------------------------


def _check_subscription(kind: str, hour: int, minute: int, weekday: int | None,
                        tz: str) -> None:
    _one_of(kind, DIGEST_KINDS, "digest kind")
    if not isinstance(hour, int) or not 0 <= hour <= 23:
        raise InvalidValue(f"hour must be 0..23, not {hour!r}")
    if not isinstance(minute, int) or not 0 <= minute <= 59:
        raise InvalidValue(f"minute must be 0..59, not {minute!r}")
    if kind == "weekly" and weekday is None:
        raise InvalidValue("a weekly digest needs a weekday (0 = Monday .. 6 = Sunday)")
    if weekday is not None and (not isinstance(weekday, int) or not 0 <= weekday <= 6):
        raise InvalidValue(f"weekday must be 0 (Monday) .. 6 (Sunday), not {weekday!r}")
    try:
        zoneinfo.ZoneInfo(tz)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, TypeError) as exc:
        raise InvalidValue(f"unknown time zone {tz!r}") from exc


async def upsert_subscription(s: AsyncSession, user_id: str, kind: str, hour: int, minute: int,
                              weekday: int | None, tz: str,
                              channel: str | None) -> SubscriptionRow:
    """The user's one subscription of `kind`, created or changed. A daily digest ignores
    `weekday` (stored as None); `last_sent_at` is kept so a change does not resend today."""
    _not_empty(user_id, "user_id")
    _check_subscription(kind, hour, minute, weekday, tz)
    if kind == "daily":
        weekday = None
    values = {"hour": hour, "minute": minute, "weekday": weekday, "tz": tz, "channel": channel}
    stmt = _dialect_insert(s, DigestSubscription)
    if stmt is not None:
        await s.execute(stmt.values(user_id=user_id, kind=kind, created_at=utcnow(), **values)
                        .on_conflict_do_update(index_elements=["user_id", "kind"], set_=values))
    else:
        result = await s.execute(update(DigestSubscription).where(
            DigestSubscription.user_id == user_id, DigestSubscription.kind == kind)
            .values(**values))
        if _rowcount(result) == 0:
            s.add(DigestSubscription(user_id=user_id, kind=kind, created_at=utcnow(), **values))
            await s.flush()
    row = await s.scalar(select(DigestSubscription)
                         .where(DigestSubscription.user_id == user_id,
                                DigestSubscription.kind == kind)
                         .execution_options(populate_existing=True))
    assert row is not None
    return _subscription(row)


async def delete_subscriptions(s: AsyncSession, user_id: str, kind: str | None = None) -> int:
    """Remove the user's subscriptions (of one kind, or all); returns how many went."""
    query = delete(DigestSubscription).where(DigestSubscription.user_id == user_id)
    if kind is not None:
        _one_of(kind, DIGEST_KINDS, "digest kind")
        query = query.where(DigestSubscription.kind == kind)
    result = await s.execute(query)
    return _rowcount(result)


async def list_subscriptions(s: AsyncSession) -> list[SubscriptionRow]:
    rows = await s.scalars(select(DigestSubscription).order_by(DigestSubscription.id))
    return [_subscription(d) for d in rows]


async def mark_sent(s: AsyncSession, sub_id: int, sent_at: datetime) -> None:
    _aware(sent_at, "sent_at")
    result = await s.execute(update(DigestSubscription).where(DigestSubscription.id == sub_id)
                             .values(last_sent_at=sent_at))
    if _rowcount(result) == 0:
        raise NotFound(f"no digest subscription {sub_id}")
