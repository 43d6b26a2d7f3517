"""The database store (issue 34, `BRAIN_STORE=database`): each vault's files and its history's
objects kept in PostgreSQL, so machines that share nothing else serve the same notes. Each
machine keeps a mirror (files, and the history's repository) in its own data directory,
brought up to date from here before it reads and sent here after it writes
(storage/vault/mirror.py). Every row carries `seq`, from one sequence, so "what changed
since" is an index range. On SQLite the tables exist but the database store is refused.

Revision ID: 0016
Revises: 0014
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0014"
branch_labels = None
depends_on = None

_TIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    if postgres:
        op.execute("CREATE SEQUENCE IF NOT EXISTS vault_seq")

    def seq() -> sa.Column[int]:
        return sa.Column("seq", sa.BigInteger, nullable=False,
                         server_default=sa.text("nextval('vault_seq')") if postgres else None)

    op.create_table(
        "vault_files",
        sa.Column("vault", sa.String(255), primary_key=True),
        sa.Column("path", sa.Text, primary_key=True),
        sa.Column("content", sa.LargeBinary, nullable=True),  # NULL: the file was removed
        sa.Column("sha", sa.String(64), nullable=True),
        sa.Column("mtime_ns", sa.BigInteger, nullable=False),
        seq(),
    )
    op.create_index("ix_vault_files_seq", "vault_files", ["vault", "seq"])
    op.create_table(
        "vault_objects",
        sa.Column("vault", sa.String(255), primary_key=True),
        sa.Column("sha", sa.String(40), primary_key=True),
        sa.Column("kind", sa.SmallInteger, nullable=False),
        sa.Column("data", sa.LargeBinary, nullable=False),
        seq(),
    )
    op.create_index("ix_vault_objects_seq", "vault_objects", ["vault", "seq"])
    op.create_table(
        "vault_heads",
        sa.Column("vault", sa.String(255), primary_key=True),
        sa.Column("head", sa.String(40), nullable=False),
        sa.Column("updated_at", _TIME, nullable=False),
        seq(),
    )


def downgrade() -> None:
    op.drop_table("vault_heads")
    op.drop_index("ix_vault_objects_seq", table_name="vault_objects")
    op.drop_table("vault_objects")
    op.drop_index("ix_vault_files_seq", table_name="vault_files")
    op.drop_table("vault_files")
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP SEQUENCE IF EXISTS vault_seq")
