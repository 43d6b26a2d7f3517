"""ORM tables of the core schema (migrations 0001_core, 0003_intake, 0005_reminders,
0018_sync_tokens).

Timestamps: every datetime column is `UTCDateTime`. Callers pass timezone-aware datetimes
(naive ones are refused: their zone is a guess); rows come back timezone-aware in UTC. On
SQLite they are stored as naive UTC text, so text order is time order; on PostgreSQL as
`timestamptz`.

The search index tables (0002_index, FTS5) are plain DDL owned by `storage/index/`, not models here.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from storage.text import clean, clean_value


def utcnow() -> datetime:
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC datetime on every backend (SQLite has no timezone type)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(f"naive datetime {value.isoformat()} (give a timezone)")
        value = value.astimezone(UTC)
        # SQLite keeps text: naive UTC with a fixed format sorts as time.
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        assert isinstance(value, datetime)
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


class CleanText(TypeDecorator[str]):
    """Text that every database can hold: lone surrogates, NUL and control characters become
    U+FFFD on the way in (storage.text), so one odd message never fails a write."""

    impl = Text
    cache_ok = True

    def process_bind_param(self, value: str | None, dialect: Dialect) -> str | None:
        return clean(value) if isinstance(value, str) else value


class CleanJSON(TypeDecorator[Any]):
    """JSON whose strings are cleaned like CleanText (PostgreSQL refuses \u0000 too)."""

    impl = JSON
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        return clean_value(value)


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: CleanJSON, datetime: UTCDateTime}


class Conversation(Base):
    __tablename__ = "conversations"
    __table_args__ = (
        Index("ix_conversations_user_updated", "user_id", "updated_at"),
        Index("ix_conversations_thread", "channel", "thread_ts"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    # slack:<channel>:<thread_ts>:<user> (one per person in a thread) or cli:<user>:<uuid>
    key: Mapped[str] = mapped_column(String(255), unique=True, index=True)
    user_id: Mapped[str] = mapped_column(String(64))
    channel: Mapped[str | None] = mapped_column(String(64))
    thread_ts: Mapped[str | None] = mapped_column(String(64))
    title: Mapped[str | None] = mapped_column(CleanText)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # A Slack assistant thread's context (the channel the person is viewing), as Slack last
    # sent it; NULL for every other conversation (0012).
    context: Mapped[Any | None] = mapped_column(CleanJSON)


class Turn(Base):
    __tablename__ = "turns"
    __table_args__ = (Index("ix_turns_conversation_id", "conversation_id", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    conversation_id: Mapped[int] = mapped_column(
        ForeignKey("conversations.id", ondelete="CASCADE"))
    user_text: Mapped[str] = mapped_column(CleanText)
    reply_text: Mapped[str | None] = mapped_column(CleanText)
    status: Mapped[str] = mapped_column(String(32))
    input_tokens: Mapped[int] = mapped_column(Integer, default=0)
    output_tokens: Mapped[int] = mapped_column(Integer, default=0)
    llm_calls: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    job_id: Mapped[int | None] = mapped_column(Integer, index=True)  # the intake job, if any
    # The asker's thumbs up or down on the answer (good | bad), and when (migration 0008).
    feedback: Mapped[str | None] = mapped_column(String(8))
    feedback_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class Message(Base):
    __tablename__ = "messages"
    __table_args__ = (
        # seq orders a conversation's messages; unique so two writers cannot interleave.
        Index("ix_messages_conversation_seq", "conversation_id", "seq", unique=True),
        Index("ix_messages_turn_id", "turn_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    conversation_id: Mapped[int] = mapped_column(
        ForeignKey("conversations.id", ondelete="CASCADE"))
    turn_id: Mapped[int] = mapped_column(ForeignKey("turns.id", ondelete="CASCADE"))
    seq: Mapped[int] = mapped_column(Integer)
    role: Mapped[str] = mapped_column(String(16))
    content: Mapped[str | None] = mapped_column(CleanText)
    tool_calls: Mapped[Any | None] = mapped_column(CleanJSON)
    tool_results: Mapped[Any | None] = mapped_column(CleanJSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class ToolRun(Base):
    __tablename__ = "tool_runs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    turn_id: Mapped[int] = mapped_column(
        ForeignKey("turns.id", ondelete="CASCADE"), index=True)
    call_id: Mapped[str] = mapped_column(String(128))
    tool: Mapped[str] = mapped_column(String(64))
    # None when the model's arguments were not a JSON object.
    arguments: Mapped[Any | None] = mapped_column(CleanJSON)
    status: Mapped[str] = mapped_column(String(16))  # ok | error
    result: Mapped[Any | None] = mapped_column(CleanJSON)
    # {"code", "message", ...} or a plain message.
    error: Mapped[Any | None] = mapped_column(CleanJSON)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime)
    duration_ms: Mapped[float] = mapped_column(Float)


class Receipt(Base):
    __tablename__ = "receipts"
    __table_args__ = (Index("ix_receipts_user_created", "user_id", "created_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[str] = mapped_column(String(64))
    conversation_id: Mapped[int | None] = mapped_column(
        ForeignKey("conversations.id", ondelete="SET NULL"), index=True)  # each turn's read
    turn_id: Mapped[int | None] = mapped_column(Integer)
    original_text: Mapped[str] = mapped_column(CleanText)
    entry_id: Mapped[str] = mapped_column(String(64), index=True)
    path: Mapped[str] = mapped_column(CleanText)
    category: Mapped[str] = mapped_column(String(32))
    confidence: Mapped[float | None] = mapped_column(Float)
    status: Mapped[str] = mapped_column(String(16))  # filed | needs_review | fixed
    channel: Mapped[str | None] = mapped_column(String(64))
    thread_ts: Mapped[str | None] = mapped_column(String(64))
    message_ts: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    job_id: Mapped[int | None] = mapped_column(Integer, index=True)  # the intake job, if any


class DigestSubscription(Base):
    __tablename__ = "digest_subscriptions"
    __table_args__ = (
        UniqueConstraint("user_id", "kind", name="uq_digest_subscriptions_user_kind"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[str] = mapped_column(String(64))
    kind: Mapped[str] = mapped_column(String(16))  # daily | weekly
    weekday: Mapped[int | None] = mapped_column(Integer)  # 0 = Monday (weekly only)
    hour: Mapped[int] = mapped_column(Integer)
    minute: Mapped[int] = mapped_column(Integer)
    tz: Mapped[str] = mapped_column(String(64))
    channel: Mapped[str | None] = mapped_column(String(64))
    last_sent_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # When the scheduler next looks at it (migration 0020): NULL after any change of schedule.
    due_at: Mapped[datetime | None] = mapped_column(UTCDateTime, index=True)


class Job(Base):
    """One unit of work taken in from Slack (migration 0003): recorded before the ack, run by
    a worker that holds a lease, so a dead process's work is taken up again."""

    __tablename__ = "jobs"
    __table_args__ = (
        Index("ix_jobs_state_id", "state", "id"),
        Index("ix_jobs_lane_id", "lane", "id"),
        Index("ix_jobs_state_user_id", "state", "user_id", "id"),  # 0013: storage/repositories/shares.py
        Index("ix_jobs_state_finished", "state", "finished_at"),
        Index("ix_jobs_user_created", "user_id", "created_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    key: Mapped[str] = mapped_column(String(255), unique=True, index=True)
    kind: Mapped[str] = mapped_column(String(32))
    user_id: Mapped[str] = mapped_column(String(64))
    lane: Mapped[str] = mapped_column(String(255))
    payload: Mapped[Any] = mapped_column(CleanJSON)
    state: Mapped[str] = mapped_column(String(16))  # pending | running | done | failed
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    lease_owner: Mapped[str | None] = mapped_column(String(64))
    lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime)
    result: Mapped[Any | None] = mapped_column(CleanJSON)
    error: Mapped[str | None] = mapped_column(CleanText)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class Reminder(Base):
    """A due-date reminder claimed for one note and day (migration 0005): the unique row is the
    claim, so each reminder goes out once across restarts and replicas."""

    __tablename__ = "reminders"
    __table_args__ = (
        UniqueConstraint("user_id", "ref", "day", name="uq_reminders_user_ref_day"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[str] = mapped_column(String(64))
    ref: Mapped[str] = mapped_column(Text)
    day: Mapped[str] = mapped_column(String(10), index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class SlackUser(Base):
    """What the bot keeps of a Slack user besides their notes (migration 0005)."""

    __tablename__ = "slack_users"
    # The ticks read the paused people only (migration 0021): an index of them alone.
    __table_args__ = (Index("ix_slack_users_paused", "paused_at",
                            sqlite_where=text("paused_at IS NOT NULL"),
                            postgresql_where=text("paused_at IS NOT NULL")),)

    user_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    tz: Mapped[str | None] = mapped_column(String(64))
    tz_checked_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    home_opened_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    paused_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    model: Mapped[str | None] = mapped_column(String(64))  # their LLM config id (0009)


class SlackTeam(Base):
    """A workspace the app was installed in, and whether it was uninstalled (migration 0005)."""

    __tablename__ = "slack_teams"
    __table_args__ = (Index("ix_slack_teams_uninstalled", "uninstalled_at",
                            sqlite_where=text("uninstalled_at IS NOT NULL"),
                            postgresql_where=text("uninstalled_at IS NOT NULL")),)

    team_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    uninstalled_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class SlackHome(Base):
    """The home workspace (migration 0010): its people's person keys are their plain Slack
    user ids (bot/tenancy/people.py). One row at most (id 1); the first claim wins."""

    __tablename__ = "slack_home"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    team_id: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class SyncToken(Base):
    """A token a person's git client sends to reach their vault's remote (migration 0018):
    kept as its SHA-256 only, with its first characters to name it by."""

    __tablename__ = "sync_tokens"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[str] = mapped_column(String(64), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    shown: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


CORE_TABLES: tuple[str, ...] = (
    "conversations", "turns", "messages", "tool_runs", "receipts",
    "digest_subscriptions", "jobs", "reminders", "slack_users", "slack_teams",
)
