"""What is due, found by one query (issue 34): a digest subscription remembers when it is next
due (`due_at`, UTC; NULL until the scheduler first works it out, and again after any change
of its schedule), and the index has due dates by day across vaults, so the reminder
scheduler reads the notes due around today in every vault with one statement instead of
reading each person's vault in their morning.

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("digest_subscriptions",
                  sa.Column("due_at", sa.DateTime(timezone=True), nullable=True))
    op.create_index("ix_digest_subscriptions_due_at", "digest_subscriptions", ["due_at"])
    # The expression must read as the reminder query's does, or neither planner uses it.
    op.create_index("ix_index_notes_due_day", "index_notes",
                    [sa.text("substr(due_date, 1, 10)")])
    op.create_index("ix_reminders_day", "reminders", ["day"])  # the claims of these days


def downgrade() -> None:
    op.drop_index("ix_reminders_day", table_name="reminders")
    op.drop_index("ix_index_notes_due_day", table_name="index_notes")
    op.drop_index("ix_digest_subscriptions_due_at", table_name="digest_subscriptions")
    op.drop_column("digest_subscriptions", "due_at")
