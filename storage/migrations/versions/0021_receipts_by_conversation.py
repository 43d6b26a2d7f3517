"""A conversation's receipts by an index (issue 34): every turn opens with them (the notes
filed in its thread), and without one both databases read every person's receipts for it, a
cost that grew with the workspace (a capture by one of 3,000 people read 3,000 rows).

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-29
"""

from __future__ import annotations

from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_receipts_conversation_id", "receipts", ["conversation_id"])


def downgrade() -> None:
    op.drop_index("ix_receipts_conversation_id", table_name="receipts")
