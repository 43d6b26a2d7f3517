"""Notes due between two days found through an index: `Store.due` ("what's due this week?")
compares the first ten characters of `due_date`, which no index covered, so every note of
the vault was read (100-180 ms at 20k notes in SQLite).

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # The expression must read as `Store.due`'s does, or neither planner uses it.
    op.create_index("ix_index_notes_due", "index_notes",
                    ["vault", sa.text("substr(due_date, 1, 10)")])


def downgrade() -> None:
    op.drop_index("ix_index_notes_due", table_name="index_notes")
