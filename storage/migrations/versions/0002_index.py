"""Search index of the vaults: notes, links, per-vault generation, FTS5 (SQLite only).

Revision ID: 0002
Revises: 0001
Create Date: 2025-01-02

Plain DDL on purpose: these tables belong to storage/index.py alone (raw SQL, no ORM models).
`vault` is the vault root as a string, so one database serves many users' vaults.
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    # `nid` is the FTS5 rowid. SQLite: INTEGER PRIMARY KEY is the rowid; elsewhere a plain key
    # (index.py assigns nids itself, so no sequence is needed).
    nid = "nid INTEGER PRIMARY KEY" if dialect == "sqlite" else "nid BIGINT PRIMARY KEY"
    op.execute(
        f"""
        CREATE TABLE index_notes (
            {nid},
            vault TEXT NOT NULL,
            path TEXT NOT NULL,
            id TEXT,
            name TEXT NOT NULL,
            name_key TEXT NOT NULL,
            stem_key TEXT NOT NULL,
            category TEXT,
            status TEXT,
            one_liner TEXT,
            context TEXT,
            next_action TEXT,
            due_date TEXT,
            tags TEXT NOT NULL DEFAULT '[]',
            body TEXT NOT NULL DEFAULT '',
            frontmatter TEXT NOT NULL DEFAULT '{{}}',
            created TEXT,
            updated TEXT,
            updated_ts DOUBLE PRECISION NOT NULL DEFAULT 0,
            mtime_ns BIGINT NOT NULL,
            size BIGINT NOT NULL,
            hash TEXT NOT NULL,
            UNIQUE (vault, path)
        )
        """
    )
    # Covering indexes: the rescan and the fuzzy name list read these instead of the wide rows
    # (bodies), which is what keeps an unchanged rescan of 50k notes under a second.
    op.execute(
        "CREATE INDEX ix_index_notes_files ON index_notes (vault, path, mtime_ns, size, hash)"
    )
    op.execute("CREATE INDEX ix_index_notes_names ON index_notes (vault, name, category, status)")
    op.execute("CREATE INDEX ix_index_notes_id ON index_notes (vault, id)")
    op.execute("CREATE INDEX ix_index_notes_name ON index_notes (vault, name_key)")
    op.execute("CREATE INDEX ix_index_notes_stem ON index_notes (vault, stem_key)")
    op.execute("CREATE INDEX ix_index_notes_updated ON index_notes (vault, updated_ts)")
    op.execute(
        "CREATE INDEX ix_index_notes_cat ON index_notes (vault, category, status, updated_ts)"
    )
    # Links keep the target as written; resolution to a path happens at query time, so it
    # follows notes being added, moved and removed without rewriting link rows.
    op.execute(
        """
        CREATE TABLE index_links (
            vault TEXT NOT NULL,
            source_path TEXT NOT NULL,
            target TEXT NOT NULL,
            target_key TEXT NOT NULL,
            target_base TEXT NOT NULL,
            heading TEXT,
            alias TEXT,
            line TEXT NOT NULL
        )
        """
    )
    op.execute("CREATE INDEX ix_index_links_source ON index_links (vault, source_path)")
    op.execute("CREATE INDEX ix_index_links_base ON index_links (vault, target_base)")
    # Bumped by every change to a vault's rows; in-process caches (fuzzy names) check it.
    op.execute(
        """
        CREATE TABLE index_vaults (
            vault TEXT PRIMARY KEY,
            generation BIGINT NOT NULL DEFAULT 0
        )
        """
    )
    if dialect == "sqlite":
        # `meta` holds one token each for the vault, category and status (hashed), so search
        # filters run inside FTS5 and never join per matching row.
        op.execute(
            "CREATE VIRTUAL TABLE index_fts USING fts5("
            "name, one_liner, context, next_action, body, meta, "
            "tokenize = 'unicode61 remove_diacritics 2')"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TABLE IF EXISTS index_fts")
    op.execute("DROP TABLE IF EXISTS index_vaults")
    op.execute("DROP TABLE IF EXISTS index_links")
    op.execute("DROP TABLE IF EXISTS index_notes")
