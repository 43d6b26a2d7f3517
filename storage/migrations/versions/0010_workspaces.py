"""Many workspaces (OAuth): Bolt's installation and OAuth-state tables, as slack_sdk's
SQLAlchemy stores define them (slack_sdk.oauth.installation_store.sqlalchemy and
state_store.sqlalchemy, with the token-rotation columns), and the home workspace: the one whose
people keep plain Slack user ids as their person keys (bot/tenancy/people.py).

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-26
"""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def _installed_at() -> sa.Column[datetime]:
    return sa.Column("installed_at", sa.DateTime, nullable=False, server_default=sa.func.now())


def upgrade() -> None:
    op.create_table(
        "slack_installations",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("client_id", sa.String(32), nullable=False),
        sa.Column("app_id", sa.String(32), nullable=False),
        sa.Column("enterprise_id", sa.String(32)),
        sa.Column("enterprise_name", sa.String(200)),
        sa.Column("enterprise_url", sa.String(200)),
        sa.Column("team_id", sa.String(32)),
        sa.Column("team_name", sa.String(200)),
        sa.Column("bot_token", sa.String(200)),
        sa.Column("bot_id", sa.String(32)),
        sa.Column("bot_user_id", sa.String(32)),
        sa.Column("bot_scopes", sa.String(1000)),
        sa.Column("bot_refresh_token", sa.String(200)),
        sa.Column("bot_token_expires_at", sa.DateTime),
        sa.Column("user_id", sa.String(32), nullable=False),
        sa.Column("user_token", sa.String(200)),
        sa.Column("user_scopes", sa.String(1000)),
        sa.Column("user_refresh_token", sa.String(200)),
        sa.Column("user_token_expires_at", sa.DateTime),
        sa.Column("incoming_webhook_url", sa.String(200)),
        sa.Column("incoming_webhook_channel", sa.String(200)),
        sa.Column("incoming_webhook_channel_id", sa.String(200)),
        sa.Column("incoming_webhook_configuration_url", sa.String(200)),
        sa.Column("is_enterprise_install", sa.Boolean, nullable=False,
                  server_default=sa.false()),
        sa.Column("token_type", sa.String(32)),
        _installed_at(),
    )
    op.create_index("slack_installations_idx", "slack_installations",
                    ["client_id", "enterprise_id", "team_id", "user_id", "installed_at"])
    op.create_table(
        "slack_bots",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("client_id", sa.String(32), nullable=False),
        sa.Column("app_id", sa.String(32), nullable=False),
        sa.Column("enterprise_id", sa.String(32)),
        sa.Column("enterprise_name", sa.String(200)),
        sa.Column("team_id", sa.String(32)),
        sa.Column("team_name", sa.String(200)),
        sa.Column("bot_token", sa.String(200)),
        sa.Column("bot_id", sa.String(32)),
        sa.Column("bot_user_id", sa.String(32)),
        sa.Column("bot_scopes", sa.String(1000)),
        sa.Column("bot_refresh_token", sa.String(200)),
        sa.Column("bot_token_expires_at", sa.DateTime),
        sa.Column("is_enterprise_install", sa.Boolean, nullable=False,
                  server_default=sa.false()),
        _installed_at(),
    )
    op.create_index("slack_bots_idx", "slack_bots",
                    ["client_id", "enterprise_id", "team_id", "installed_at"])
    op.create_table(
        "slack_oauth_states",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("state", sa.String(200), nullable=False),
        sa.Column("expire_at", sa.DateTime, nullable=False),
    )
    op.create_table(  # one row at most: the first claim wins, across replicas
        "slack_home",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("team_id", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("slack_home")
    op.drop_table("slack_oauth_states")
    op.drop_index("slack_bots_idx", table_name="slack_bots")
    op.drop_table("slack_bots")
    op.drop_index("slack_installations_idx", table_name="slack_installations")
    op.drop_table("slack_installations")
