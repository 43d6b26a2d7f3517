"""The database store's git remotes (issues 34 and 35): each vault's remote state (the head git
clients see and the history commit it stands for: storage/sync/projection.py's `remote.json`)
kept beside the history's head, so every machine serves one line of commits and a push taken
by one is what a pull from another brings. NULL until the vault is first served as a remote.

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("vault_heads", sa.Column("remote", sa.Text, nullable=True))


def downgrade() -> None:
    op.drop_column("vault_heads", "remote")
