"""Each person's model: the LLM connection (a config id of BRAIN_LLM_CONFIGS) they chose on
the App Home; NULL: the app's default.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("slack_users", sa.Column("model", sa.String(64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("slack_users") as batch:
        batch.drop_column("model")
