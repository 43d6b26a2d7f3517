"""A Slack assistant thread's context on its conversation: the channel the person is viewing
(`assistant_thread_started` and `assistant_thread_context_changed`), which the turn's prompt
names; NULL for every other conversation.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("conversations", sa.Column("context", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("conversations") as batch:
        batch.drop_column("context")
