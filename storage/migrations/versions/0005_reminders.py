"""Reminders sent (one per note and day: the claim that keeps a reminder from going out twice),
what the bot knows of each Slack user (time zone, App Home opened, paused after a token was
revoked) and of the workspace (uninstalled).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

UTCDateTime = sa.DateTime(timezone=True)

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "reminders",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("user_id", sa.String(64), nullable=False),
        sa.Column("ref", sa.Text, nullable=False),  # the note's id (its path if it has none)
        sa.Column("day", sa.String(10), nullable=False),  # YYYY-MM-DD in the owner's zone
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.UniqueConstraint("user_id", "ref", "day", name="uq_reminders_user_ref_day"),
    )
    op.create_table(
        "slack_users",
        sa.Column("user_id", sa.String(64), primary_key=True),
        sa.Column("tz", sa.String(64), nullable=True),
        sa.Column("tz_checked_at", UTCDateTime, nullable=True),
        sa.Column("home_opened_at", UTCDateTime, nullable=True),
        sa.Column("paused_at", UTCDateTime, nullable=True),  # their token was revoked
        sa.Column("updated_at", UTCDateTime, nullable=False),
    )
    op.create_table(
        "slack_teams",
        sa.Column("team_id", sa.String(64), primary_key=True),
        sa.Column("uninstalled_at", UTCDateTime, nullable=True),
        sa.Column("updated_at", UTCDateTime, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("slack_teams")
    op.drop_table("slack_users")
    op.drop_table("reminders")
