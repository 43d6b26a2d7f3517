"""One person's data in the database, as a whole: read out for an export, erased on request,
and the retention rule that deletes old conversations for everyone.

The vault files are not here (the caller handles them); the search index follows the files.
Every function takes an explicit `AsyncSession`; the caller commits. Deletes are explicit, in
dependency order, so they do not rely on each backend's cascades.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import delete, select, text, update
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from storage.models import (
    Conversation,
    DigestSubscription,
    Job,
    Message,
    Receipt,
    Reminder,
    SlackUser,
    SyncToken,
    ToolRun,
    Turn,
)
from storage.repositories.common import aware, not_empty, rowcount
from storage.types import shared_vault


def _when(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


async def conversations_of(s: AsyncSession, user_id: str) -> list[dict[str, Any]]:
    """The user's conversations with every turn, message and tool run, oldest first."""
    not_empty(user_id, "user_id")
    convs = (await s.scalars(select(Conversation).where(Conversation.user_id == user_id)
                             .order_by(Conversation.id))).all()
    ids = [c.id for c in convs]
    turns = (await s.scalars(select(Turn).where(Turn.conversation_id.in_(ids))
                             .order_by(Turn.id))).all() if ids else []
    messages = (await s.scalars(select(Message).where(Message.conversation_id.in_(ids))
                                .order_by(Message.conversation_id, Message.seq))).all() \
        if ids else []
    turn_ids = [t.id for t in turns]
    runs = (await s.scalars(select(ToolRun).where(ToolRun.turn_id.in_(turn_ids))
                            .order_by(ToolRun.id))).all() if turn_ids else []
    by_turn: dict[int, dict[str, Any]] = {}
    by_conv: dict[int, list[dict[str, Any]]] = {c.id: [] for c in convs}
    for t in turns:
        item: dict[str, Any] = {"user_text": t.user_text, "reply_text": t.reply_text, "status": t.status,
                "created_at": _when(t.created_at), "finished_at": _when(t.finished_at),
                "messages": [], "tool_runs": []}
        by_turn[t.id] = item
        by_conv[t.conversation_id].append(item)
    for m in messages:
        if m.turn_id in by_turn:
            by_turn[m.turn_id]["messages"].append(
                {"role": m.role, "content": m.content, "tool_calls": m.tool_calls,
                 "tool_results": m.tool_results, "created_at": _when(m.created_at)})
    for r in runs:
        by_turn[r.turn_id]["tool_runs"].append(
            {"tool": r.tool, "arguments": r.arguments, "status": r.status, "result": r.result,
             "error": r.error, "started_at": _when(r.started_at),
             "duration_ms": r.duration_ms})
    return [{"key": c.key, "channel": c.channel, "thread_ts": c.thread_ts, "title": c.title,
             "context": c.context, "created_at": _when(c.created_at),
             "updated_at": _when(c.updated_at), "turns": by_conv[c.id]} for c in convs]


async def receipts_of(s: AsyncSession, user_id: str) -> list[dict[str, Any]]:
    rows = await s.scalars(select(Receipt).where(Receipt.user_id == user_id)
                           .order_by(Receipt.id))
    return [{"entry_id": c.entry_id, "path": c.path, "category": c.category,
             "status": c.status, "confidence": c.confidence, "original_text": c.original_text,
             "channel": c.channel, "thread_ts": c.thread_ts,
             "created_at": _when(c.created_at), "updated_at": _when(c.updated_at)}
            for c in rows]


async def subscriptions_of(s: AsyncSession, user_id: str) -> list[dict[str, Any]]:
    rows = await s.scalars(select(DigestSubscription)
                           .where(DigestSubscription.user_id == user_id)
                           .order_by(DigestSubscription.id))
    return [{"kind": d.kind, "weekday": d.weekday, "hour": d.hour, "minute": d.minute,
             "tz": d.tz, "channel": d.channel, "last_sent_at": _when(d.last_sent_at)}
            for d in rows]


async def holds_any(s: AsyncSession, user_id: str) -> bool:
    """Does the database hold anything of the user (a conversation, receipt, job, setting)?"""
    for model in (Conversation, Receipt, Job, DigestSubscription, Reminder, SlackUser):
        found = await s.execute(select(model.user_id).where(model.user_id == user_id).limit(1))
        if found.first() is not None:
            return True
    # the database store: a vault whose mirror is on other machines only (its head: '' once
    # forgotten)
    held = await s.execute(text("SELECT 1 FROM vault_heads WHERE vault = :v AND head <> ''"),
                           {"v": shared_vault(user_id)})
    return held.first() is not None


async def forget(s: AsyncSession, user_id: str) -> dict[str, int]:
    """Erase everything the database holds of the user; returns how many rows of each."""
    not_empty(user_id, "user_id")
    convs = select(Conversation.id).where(Conversation.user_id == user_id).scalar_subquery()
    turns = select(Turn.id).where(Turn.conversation_id.in_(convs)).scalar_subquery()
    counts = {
        "tool_runs": rowcount(await s.execute(delete(ToolRun).where(ToolRun.turn_id.in_(turns)))),
        "messages": rowcount(await s.execute(delete(Message)
                                             .where(Message.conversation_id.in_(convs)))),
        "turns": rowcount(await s.execute(delete(Turn).where(Turn.conversation_id.in_(convs)))),
        "receipts": rowcount(await s.execute(delete(Receipt).where(Receipt.user_id == user_id))),
    }
    # Receipts of other users never point at this user's conversations, but be sure.
    await s.execute(update(Receipt).where(Receipt.conversation_id.in_(convs))
                    .values(conversation_id=None))
    counts["conversations"] = rowcount(await s.execute(
        delete(Conversation).where(Conversation.user_id == user_id)))
    for name, model in (("jobs", Job), ("digest_subscriptions", DigestSubscription),
                        ("reminders", Reminder), ("slack_users", SlackUser),
                        ("sync_tokens", SyncToken)):
        counts[name] = rowcount(await s.execute(delete(model).where(
            model.user_id == user_id)))
    return counts


# Tables a forget deletes from: on PostgreSQL their dead rows are vacuumed away at once.
_FORGOTTEN_IN = ("index_notes", "index_links", "index_vectors", "index_passages",
                 "conversations", "turns", "messages", "tool_runs", "receipts", "jobs",
                 "reminders")


async def scrub(engine: AsyncEngine) -> None:
    """After a forget (rows and index rows deleted, committed): the deleted words leave the
    database's own structures too. SQLite's FTS5 keeps a deleted note's words in its segments
    until they are merged ('optimize' merges them all), and the write-ahead log keeps old pages
    until a checkpoint; PostgreSQL keeps dead rows until VACUUM. (A SQLite file's free pages
    may still hold deleted bytes until `VACUUM`; docs/operations.md.)"""
    if engine.dialect.name == "sqlite":
        async with engine.connect() as conn:
            await conn.execute(text("INSERT INTO index_fts(index_fts) VALUES ('optimize')"))
            await conn.execute(text("INSERT INTO index_stems(index_stems) VALUES ('optimize')"))
            await conn.commit()
            await conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        return
    async with engine.connect() as conn:
        auto = await conn.execution_options(isolation_level="AUTOCOMMIT")
        await auto.execute(text(f"VACUUM {', '.join(_FORGOTTEN_IN)}"))


async def prune(s: AsyncSession, older_than: datetime) -> dict[str, int]:
    """Retention: turns (with their messages and tool runs) begun before `older_than`,
    conversations idle since then and left empty, finished jobs and reminder claims from
    before it. Notes and capture receipts stay."""
    aware(older_than, "older_than")
    old = select(Turn.id).where(Turn.created_at < older_than).scalar_subquery()
    counts = {
        "tool_runs": rowcount(await s.execute(delete(ToolRun).where(ToolRun.turn_id.in_(old)))),
        "messages": rowcount(await s.execute(delete(Message).where(Message.turn_id.in_(old)))),
        "turns": rowcount(await s.execute(delete(Turn).where(Turn.created_at < older_than))),
    }
    left = select(Turn.id).where(Turn.conversation_id == Conversation.id).exists()
    idle = select(Conversation.id).where(Conversation.updated_at < older_than,
                                         ~left).scalar_subquery()
    await s.execute(update(Receipt).where(Receipt.conversation_id.in_(idle))
                    .values(conversation_id=None))
    counts["conversations"] = rowcount(await s.execute(
        delete(Conversation).where(Conversation.updated_at < older_than, ~left)))
    counts["jobs"] = rowcount(await s.execute(
        delete(Job).where(Job.state.in_(("done", "failed")), Job.finished_at < older_than)))
    counts["reminders"] = rowcount(await s.execute(
        delete(Reminder).where(Reminder.created_at < older_than)))
    return counts
