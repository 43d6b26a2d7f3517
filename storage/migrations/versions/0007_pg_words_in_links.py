"""PostgreSQL search finds words inside links, addresses and paths, as FTS5 does.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23

PostgreSQL only. Its text search parser keeps `www.codecademy.com`, `ada@example.org` and
`docs/setup_guide.md` as single `host` / `email` / `file` tokens, so a search for
"codecademy" or "setup" missed notes that SQLite's FTS5 (which splits on every character
that is not a letter or digit) finds. The generated `fields` and `search` columns now read
the text with `.`, `/`, `:`, `@` and `_` turned into spaces first (`translate`,
immutable, so a generated column may use it); the rest of 0004's definition is unchanged.

Dropping and re-adding the generated columns rewrites `index_notes` (about a second per 10k
notes) and rebuilds their GIN indexes; no note is indexed again from the files.
"""

from __future__ import annotations

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

BODY_CHARS = 100_000  # as 0004: a tsvector holds at most 1 MB
_BREAKS = "./:@_"
_SPACES = " " * len(_BREAKS)


def _text(column: str, *, split: bool) -> str:
    value = f"coalesce({column}, '')"
    return f"translate({value}, '{_BREAKS}', '{_SPACES}')" if split else value


def _fields(split: bool) -> str:
    return (
        f"setweight(to_tsvector('brain_search', {_text('name', split=split)}), 'A')"
        f" || setweight(to_tsvector('brain_search', {_text('one_liner', split=split)}), 'B')"
        f" || setweight(to_tsvector('brain_search', {_text('context', split=split)} || ' ' || "
        f"{_text('next_action', split=split)}), 'C')")


def _rebuild(split: bool) -> None:
    body = _text(f"left(body, {BODY_CHARS})", split=split)
    op.execute("ALTER TABLE index_notes DROP COLUMN search, DROP COLUMN fields")
    op.execute(f"ALTER TABLE index_notes ADD COLUMN fields tsvector "
               f"GENERATED ALWAYS AS ({_fields(split)}) STORED")
    op.execute(f"ALTER TABLE index_notes ADD COLUMN search tsvector "
               f"GENERATED ALWAYS AS ({_fields(split)} || "
               f"setweight(to_tsvector('brain_search', {body}), 'D')) STORED")
    op.execute("CREATE INDEX ix_index_notes_search ON index_notes USING gin (search)")
    op.execute("CREATE INDEX ix_index_notes_fields ON index_notes USING gin (fields)")


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    _rebuild(split=True)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    _rebuild(split=False)
