"""A turn's feedback: the thumbs up or down its asker gave the answer (Slack's feedback
buttons), and when.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

UTCDateTime = sa.DateTime(timezone=True)

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("turns", sa.Column("feedback", sa.String(8), nullable=True))  # good | bad
    op.add_column("turns", sa.Column("feedback_at", UTCDateTime, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("turns") as batch:
        batch.drop_column("feedback_at")
        batch.drop_column("feedback")
