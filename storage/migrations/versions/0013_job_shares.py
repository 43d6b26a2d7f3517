"""The journal's claim shares work among people (storage/repositories/shares.py): it reads each waiting
person's first few pending jobs (in id order, per person), counts each person's jobs running
and those finished within the rate window, and the intake counts a person's jobs recorded
within it; each through an index instead of reading every job kept (a day's) or waiting.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-26
"""

from __future__ import annotations

from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_jobs_state_user_id", "jobs", ["state", "user_id", "id"])
    op.create_index("ix_jobs_state_finished", "jobs", ["state", "finished_at"])
    op.create_index("ix_jobs_user_created", "jobs", ["user_id", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_jobs_user_created", table_name="jobs")
    op.drop_index("ix_jobs_state_finished", table_name="jobs")
    op.drop_index("ix_jobs_state_user_id", table_name="jobs")
