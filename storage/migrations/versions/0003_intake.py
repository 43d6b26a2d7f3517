"""Durable intake: the jobs journal; turns and captures keyed by the job that made them;
Slack conversations per person (a shared thread holds one conversation per user).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

UTCDateTime = sa.DateTime(timezone=True)

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "jobs",
        sa.Column("id", sa.Integer, primary_key=True),
        # The dedupe key: `event:<event_id>`, `action:<...>`, `command:<trigger_id>`, ...
        sa.Column("key", sa.String(255), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("user_id", sa.String(64), nullable=False),
        # Jobs of one lane (a conversation) run one at a time, in id order.
        sa.Column("lane", sa.String(255), nullable=False),
        sa.Column("payload", sa.JSON, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),  # pending|running|done|failed
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("lease_owner", sa.String(64), nullable=True),
        sa.Column("lease_until", UTCDateTime, nullable=True),
        sa.Column("result", sa.JSON, nullable=True),  # effects already made (e.g. reply ts)
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("updated_at", UTCDateTime, nullable=False),
        sa.Column("finished_at", UTCDateTime, nullable=True),
    )
    op.create_index("ix_jobs_key", "jobs", ["key"], unique=True)
    op.create_index("ix_jobs_state_id", "jobs", ["state", "id"])
    op.create_index("ix_jobs_lane_id", "jobs", ["lane", "id"])
    with op.batch_alter_table("turns") as batch:
        batch.add_column(sa.Column("job_id", sa.Integer, nullable=True))
    op.create_index("ix_turns_job_id", "turns", ["job_id"])
    with op.batch_alter_table("captures") as batch:
        batch.add_column(sa.Column("job_id", sa.Integer, nullable=True))
    op.create_index("ix_captures_job_id", "captures", ["job_id"])
    op.create_index("ix_conversations_thread", "conversations", ["channel", "thread_ts"])
    # A Slack thread's conversation is per person now: slack:<channel>:<thread_ts>:<user>.
    conversations = sa.table("conversations", sa.column("key", sa.String),
                             sa.column("user_id", sa.String))
    op.execute(conversations.update()
               .where(conversations.c.key.like("slack:%"))
               .values(key=conversations.c.key + ":" + conversations.c.user_id))


def downgrade() -> None:
    op.drop_index("ix_conversations_thread", table_name="conversations")
    op.drop_index("ix_captures_job_id", table_name="captures")
    with op.batch_alter_table("captures") as batch:
        batch.drop_column("job_id")
    op.drop_index("ix_turns_job_id", table_name="turns")
    with op.batch_alter_table("turns") as batch:
        batch.drop_column("job_id")
    op.drop_index("ix_jobs_lane_id", table_name="jobs")
    op.drop_index("ix_jobs_state_id", table_name="jobs")
    op.drop_index("ix_jobs_key", table_name="jobs")
    op.drop_table("jobs")
