"""Indexes for what each turn and each tick reads (issue 34), so neither reads a table of
everyone's rows: a conversation's receipts (every turn opens with them, the notes filed in its
thread: without an index both databases read every person's receipts, a capture by one of
3,000 people 3,000 rows), and the paused people and uninstalled workspaces (each tick of the
schedulers reads them: indexes of those rows alone).

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_receipts_conversation_id", "receipts", ["conversation_id"])
    for name, table, column in _PARTIAL:
        where = sa.text(f"{column} IS NOT NULL")
        op.create_index(name, table, [column], sqlite_where=where, postgresql_where=where)


def downgrade() -> None:
    for name, table, _column in _PARTIAL:
        op.drop_index(name, table_name=table)
    op.drop_index("ix_receipts_conversation_id", table_name="receipts")


_PARTIAL = (("ix_slack_users_paused", "slack_users", "paused_at"),
            ("ix_slack_teams_uninstalled", "slack_teams", "uninstalled_at"))
