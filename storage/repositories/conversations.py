"""Conversations, their turns and messages, and the tool runs of each turn."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from storage.errors import InvalidValue, NotFound
from storage.models import Conversation, Message, ToolRun, Turn, utcnow
from storage.repositories.common import aware, dialect_insert, not_empty, one_of, rowcount

MESSAGE_ROLES = ("user", "assistant", "tool")
TOOL_RUN_STATUSES = ("ok", "error")
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
    context: dict[str, Any] | None = None  # a Slack assistant thread's context


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
    feedback: str | None = None  # good | bad, from the answer's feedback buttons



def _conversation(c: Conversation) -> ConversationRow:
    return ConversationRow(c.id, c.key, c.user_id, c.channel, c.thread_ts, c.title,
                           c.created_at, c.updated_at,
                           c.context if isinstance(c.context, dict) else None)


def _turn(t: Turn, runs: tuple[ToolRunRow, ...] = ()) -> TurnRow:
    return TurnRow(t.id, t.conversation_id, t.user_text, t.reply_text, t.status, t.input_tokens,
                   t.output_tokens, t.llm_calls, t.created_at, t.finished_at, runs,
                   t.feedback)


def _message(m: Message) -> MessageRow:
    return MessageRow(m.id, m.conversation_id, m.turn_id, m.seq, m.role, m.content,
                      m.tool_calls, m.tool_results, m.created_at)


def _tool_run(r: ToolRun) -> ToolRunRow:
    return ToolRunRow(r.id, r.turn_id, r.call_id, r.tool, r.arguments, r.status, r.result,
                      r.error, r.started_at, r.duration_ms)


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
    not_empty(key, "conversation key")
    not_empty(user_id, "user_id")
    existing = await get_conversation(s, key)
    if existing is not None:
        return existing
    now = utcnow()
    values = {"key": key, "user_id": user_id, "channel": channel, "thread_ts": thread_ts,
              "created_at": now, "updated_at": now}
    stmt = dialect_insert(s, Conversation)
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


async def set_conversation_context(s: AsyncSession, id: int, context: dict[str, Any]) -> None:
    """Keep a Slack assistant thread's context (the latest Slack sent) on its conversation."""
    await s.execute(update(Conversation).where(Conversation.id == id).values(context=context))


async def title_conversation(s: AsyncSession, id: int, text: str) -> str | None:
    """Title an untitled conversation from `text` (one line, at most 80 characters); the
    title, or None when it had one already (a second writer finds it titled)."""
    title = _title(text)
    if not title:
        return None
    done = await s.execute(update(Conversation).where(Conversation.id == id,
                                                      Conversation.title.is_(None))
                           .values(title=title))
    return title if rowcount(done) == 1 else None


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
    not_empty(status, "turn status")
    for name, value in (("input_tokens", input_tokens), ("output_tokens", output_tokens),
                        ("llm_calls", llm_calls)):
        if not isinstance(value, int) or value < 0:
            raise InvalidValue(f"{name} must be a non-negative integer, not {value!r}")
    result = await s.execute(
        update(Turn).where(Turn.id == turn_id).values(
            reply_text=reply_text, status=status, input_tokens=input_tokens,
            output_tokens=output_tokens, llm_calls=llm_calls, finished_at=utcnow()))
    if rowcount(result) == 0:
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
        one_of(m.get("role", ""), MESSAGE_ROLES, f"message {i} role")
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


async def set_feedback(s: AsyncSession, turn_id: int, user_id: str, value: str) -> bool:
    """Record `value` (good | bad) on a turn of `user_id`'s; False when the turn is not
    theirs (or gone): someone else's press on a shared thread's answer changes nothing."""
    turn = await s.get(Turn, turn_id)
    if turn is None or value not in ("good", "bad"):
        return False
    owner = await s.scalar(select(Conversation.user_id).where(
        Conversation.id == turn.conversation_id))
    if owner != user_id:
        return False
    turn.feedback, turn.feedback_at = value, utcnow()
    return True


# --- tool runs ------------------------------------------------------------------------------


async def add_tool_run(s: AsyncSession, turn_id: int, call_id: str, tool: str,
                       arguments: dict[str, Any] | None, status: str, result: Any,
                       error: Any, started_at: datetime, duration_ms: float) -> int:
    """One tool call as a job. `error` is the error dict ({"code", "message", ...}) or text."""
    one_of(status, TOOL_RUN_STATUSES, "tool run status")
    aware(started_at, "started_at")
    if await s.get(Turn, turn_id) is None:
        raise NotFound(f"no turn {turn_id}")
    run = ToolRun(turn_id=turn_id, call_id=call_id, tool=tool, arguments=arguments,
                  status=status, result=result, error=error, started_at=started_at,
                  duration_ms=float(duration_ms))
    s.add(run)
    await s.flush()
    return run.id


