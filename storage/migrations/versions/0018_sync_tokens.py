"""Each person's git remote (storage/sync): the tokens their git clients send, kept as a
SHA-256 only, with the token's first characters to name it by, when it was made and last
used (unused for BRAIN_SYNC_TOKEN_DAYS: no longer accepted).

Revision ID: 0018
Revises: 0014
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

UTCDateTime = sa.DateTime(timezone=True)

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sync_tokens",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("user_id", sa.String(64), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("shown", sa.String(16), nullable=False),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("last_used_at", UTCDateTime, nullable=True),
    )
    op.create_index("ix_sync_tokens_user_id", "sync_tokens", ["user_id"])


def downgrade() -> None:
    op.drop_index("ix_sync_tokens_user_id", table_name="sync_tokens")
    op.drop_table("sync_tokens")
