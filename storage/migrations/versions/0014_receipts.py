"""One name per concept (issue 32): the record of a capture is a receipt everywhere, so the
`captures` table becomes `receipts` (its indexes and, on PostgreSQL, its sequence and
constraints follow); a saved message's jobs are `capture` jobs (kind and lane); the
`processed_events` table, unused since the journal took over dedupe (issue 13), goes.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op


revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

_INDEXES = (("entry_id", ("entry_id",)), ("user_created", ("user_id", "created_at")),
            ("job_id", ("job_id",)))
_PG_NAMES = (("SEQUENCE", "captures_id_seq", "receipts_id_seq"),
             ("INDEX", "captures_pkey", "receipts_pkey"))


def _rename(old: str, new: str, kind_old: str, kind_new: str) -> None:
    for name, columns in _INDEXES:
        op.drop_index(f"ix_{old}_{name}", table_name=old)
    op.rename_table(old, new)
    for name, columns in _INDEXES:
        op.create_index(f"ix_{new}_{name}", new, list(columns))
    if op.get_bind().dialect.name == "postgresql":
        for kind, a, b in _PG_NAMES:
            a, b = (a, b) if new == "receipts" else (b, a)
            op.execute(f"ALTER {kind} IF EXISTS {a} RENAME TO {b}")
    op.execute(f"UPDATE jobs SET kind = '{kind_new}' WHERE kind = '{kind_old}'")
    op.execute(f"UPDATE jobs SET lane = '{kind_new}:' || substr(lane, {len(kind_old) + 2}) "
               f"WHERE lane LIKE '{kind_old}:%'")


def upgrade() -> None:
    _rename("captures", "receipts", "save", "capture")
    op.drop_index("ix_processed_events_received_at", table_name="processed_events")
    op.drop_table("processed_events")


def downgrade() -> None:
    op.create_table(
        "processed_events",
        sa.Column("event_id", sa.String(255), primary_key=True),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_processed_events_received_at", "processed_events", ["received_at"])
    _rename("receipts", "captures", "capture", "save")
