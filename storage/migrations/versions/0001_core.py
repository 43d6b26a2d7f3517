"""Core tables: conversations, turns, messages, tool runs, captures, events, digests.

Revision ID: 0001
Revises:
Create Date: 2025-01-01

Written by hand to match storage/models.py (tests/storage/test_db.py compares them).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

# The DDL type of storage.models.UTCDateTime; the migration does not import the models.
UTCDateTime = sa.DateTime(timezone=True)


revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "conversations",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("key", sa.String(255), nullable=False),
        sa.Column("user_id", sa.String(64), nullable=False),
        sa.Column("channel", sa.String(64), nullable=True),
        sa.Column("thread_ts", sa.String(64), nullable=True),
        sa.Column("title", sa.Text, nullable=True),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("updated_at", UTCDateTime, nullable=False),
    )
    op.create_index("ix_conversations_key", "conversations", ["key"], unique=True)
    op.create_index("ix_conversations_user_updated", "conversations", ["user_id", "updated_at"])

    op.create_table(
        "turns",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("conversation_id", sa.Integer,
                  sa.ForeignKey("conversations.id", ondelete="CASCADE"), nullable=False),
        sa.Column("user_text", sa.Text, nullable=False),
        sa.Column("reply_text", sa.Text, nullable=True),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("input_tokens", sa.Integer, nullable=False),
        sa.Column("output_tokens", sa.Integer, nullable=False),
        sa.Column("llm_calls", sa.Integer, nullable=False),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("finished_at", UTCDateTime, nullable=True),
    )
    op.create_index("ix_turns_conversation_id", "turns", ["conversation_id", "id"])

    op.create_table(
        "messages",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("conversation_id", sa.Integer,
                  sa.ForeignKey("conversations.id", ondelete="CASCADE"), nullable=False),
        sa.Column("turn_id", sa.Integer,
                  sa.ForeignKey("turns.id", ondelete="CASCADE"), nullable=False),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("content", sa.Text, nullable=True),
        sa.Column("tool_calls", sa.JSON, nullable=True),
        sa.Column("tool_results", sa.JSON, nullable=True),
        sa.Column("created_at", UTCDateTime, nullable=False),
    )
    op.create_index("ix_messages_conversation_seq", "messages", ["conversation_id", "seq"],
                    unique=True)
    op.create_index("ix_messages_turn_id", "messages", ["turn_id"])

    op.create_table(
        "tool_runs",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("turn_id", sa.Integer,
                  sa.ForeignKey("turns.id", ondelete="CASCADE"), nullable=False),
        sa.Column("call_id", sa.String(128), nullable=False),
        sa.Column("tool", sa.String(64), nullable=False),
        sa.Column("arguments", sa.JSON, nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("result", sa.JSON, nullable=True),
        sa.Column("error", sa.JSON, nullable=True),
        sa.Column("started_at", UTCDateTime, nullable=False),
        sa.Column("duration_ms", sa.Float, nullable=False),
    )
    op.create_index("ix_tool_runs_turn_id", "tool_runs", ["turn_id"])

    op.create_table(
        "captures",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("user_id", sa.String(64), nullable=False),
        sa.Column("conversation_id", sa.Integer,
                  sa.ForeignKey("conversations.id", ondelete="SET NULL"), nullable=True),
        sa.Column("turn_id", sa.Integer, nullable=True),
        sa.Column("original_text", sa.Text, nullable=False),
        sa.Column("entry_id", sa.String(64), nullable=False),
        sa.Column("path", sa.Text, nullable=False),
        sa.Column("category", sa.String(32), nullable=False),
        sa.Column("confidence", sa.Float, nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("channel", sa.String(64), nullable=True),
        sa.Column("thread_ts", sa.String(64), nullable=True),
        sa.Column("message_ts", sa.String(64), nullable=True),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("updated_at", UTCDateTime, nullable=False),
    )
    op.create_index("ix_captures_entry_id", "captures", ["entry_id"])
    op.create_index("ix_captures_user_created", "captures", ["user_id", "created_at"])

    op.create_table(
        "processed_events",
        sa.Column("event_id", sa.String(255), primary_key=True),
        sa.Column("received_at", UTCDateTime, nullable=False),
    )
    op.create_index("ix_processed_events_received_at", "processed_events", ["received_at"])

    op.create_table(
        "digest_subscriptions",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("user_id", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("weekday", sa.Integer, nullable=True),
        sa.Column("hour", sa.Integer, nullable=False),
        sa.Column("minute", sa.Integer, nullable=False),
        sa.Column("tz", sa.String(64), nullable=False),
        sa.Column("channel", sa.String(64), nullable=True),
        sa.Column("last_sent_at", UTCDateTime, nullable=True),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.UniqueConstraint("user_id", "kind", name="uq_digest_subscriptions_user_kind"),
    )


def downgrade() -> None:
    op.drop_table("digest_subscriptions")
    op.drop_index("ix_processed_events_received_at", table_name="processed_events")
    op.drop_table("processed_events")
    op.drop_index("ix_captures_user_created", table_name="captures")
    op.drop_index("ix_captures_entry_id", table_name="captures")
    op.drop_table("captures")
    op.drop_index("ix_tool_runs_turn_id", table_name="tool_runs")
    op.drop_table("tool_runs")
    op.drop_index("ix_messages_turn_id", table_name="messages")
    op.drop_index("ix_messages_conversation_seq", table_name="messages")
    op.drop_table("messages")
    op.drop_index("ix_turns_conversation_id", table_name="turns")
    op.drop_table("turns")
    op.drop_index("ix_conversations_user_updated", table_name="conversations")
    op.drop_index("ix_conversations_key", table_name="conversations")
    op.drop_table("conversations")
