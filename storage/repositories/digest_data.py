"""Queries behind the digests: notes from the search index, capture receipts, and the
compare-and-set claim that keeps a scheduled digest from being sent twice.

Read-only over `index_notes` (owned by storage/index/; refresh the index first) and `captures`.
Portable SQL only (SQLite and PostgreSQL).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import and_, column, func, literal_column, or_, select, table, update
from sqlalchemy.ext.asyncio import AsyncSession

from storage.errors import InvalidValue
from storage.models import DigestSubscription, Receipt
from storage.text import name_text

_notes = table(
    "index_notes",
    column("vault"), column("path"), column("id"), column("name"), column("category"),
    column("status"), column("one_liner"), column("context"), column("next_action"),
    column("due_date"), column("frontmatter"), column("updated"), column("updated_ts"),
)
_COLUMNS = (_notes.c.path, _notes.c.id, _notes.c.name, _notes.c.category, _notes.c.status,
            _notes.c.one_liner, _notes.c.context, _notes.c.next_action, _notes.c.due_date,
            _notes.c.frontmatter, _notes.c.updated, _notes.c.updated_ts)


@dataclass(frozen=True)
class NoteRow:
    path: str
    id: str | None
    name: str
    category: str | None
    status: str | None
    one_liner: str | None
    context: str | None
    next_action: str | None
    due_date: str | None
    frontmatter: dict[str, Any]
    updated: str | None
    updated_ts: float  # seconds since the epoch of the last change (frontmatter or file)


@dataclass(frozen=True)
class ReceiptInfo:
    id: int
    entry_id: str
    path: str
    category: str
    status: str
    original_text: str
    created_at: datetime  # aware, UTC


def _frontmatter(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw) if raw else {}
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _note(row: Any) -> NoteRow:
    return NoteRow(row.path, row.id, name_text(row.name or "") or row.path, row.category, row.status, row.one_liner,
                   row.context, row.next_action, row.due_date, _frontmatter(row.frontmatter),
                   row.updated, float(row.updated_ts or 0.0))


async def notes(s: AsyncSession, vault: str, *, category: str,
                statuses: Sequence[str] | None = None, due_on_or_before: str | None = None,
                updated_before: float | None = None, updated_since: float | None = None,
                has_key: str | None = None, limit: int | None = None) -> list[NoteRow]:
    """Notes of one category in one vault, most recently changed first.

    `due_on_or_before` compares the first ten characters of `due_date` (YYYY-MM-DD) as text;
    `has_key` keeps notes whose frontmatter mentions that key (callers check the value).
    """
    query = select(*_COLUMNS).where(_notes.c.vault == vault, _notes.c.category == category)
    if statuses is not None:
        query = query.where(_notes.c.status.in_(list(statuses)))
    if due_on_or_before is not None:
        query = query.where(_notes.c.due_date.is_not(None),
                            func.substr(_notes.c.due_date, 1, 10) <= due_on_or_before)
    if updated_before is not None:
        query = query.where(_notes.c.updated_ts < updated_before)
    if updated_since is not None:
        query = query.where(_notes.c.updated_ts >= updated_since)
    if has_key is not None:
        query = query.where(_notes.c.frontmatter.like(f'%"{has_key}"%'))
    query = query.order_by(_notes.c.updated_ts.desc(), _notes.c.path)
    if limit is not None:
        query = query.limit(limit)
    return [_note(r) for r in (await s.execute(query)).all()]


@dataclass(frozen=True)
class DueNote:
    """A note due on a day, as the reminders need it (no frontmatter read)."""

    vault: str
    path: str
    id: str | None
    name: str
    due_date: str


async def due_in_any_vault(s: AsyncSession, days: Sequence[str],
                           categories: Sequence[str]) -> list[DueNote]:
    """Every vault's open notes (status not done) of `categories` whose `due_date` falls on
    one of `days` (YYYY-MM-DD): one statement over the index of due days (migration 0020),
    whoever the vaults belong to."""
    # Literal arguments: an expression index is used only for the very expression it holds.
    day = func.substr(_notes.c.due_date, literal_column("1"), literal_column("10"))
    query = (select(_notes.c.vault, _notes.c.path, _notes.c.id, _notes.c.name, day)
             .where(day.in_(list(days)), _notes.c.category.in_(list(categories)),
                    or_(_notes.c.status.is_(None), _notes.c.status != "done"))
             .order_by(_notes.c.vault, _notes.c.path))
    return [DueNote(vault, path, id_, name_text(name or "") or path, due)
            for vault, path, id_, name, due in (await s.execute(query)).all()]


async def open_loop_projects(s: AsyncSession, vault: str, *, stale_before: float,
                             limit: int) -> list[NoteRow]:
    """Projects waiting or blocked, or active and unchanged since `stale_before`; blocked
    first, then waiting, then the longest untouched."""
    order = func.coalesce(_notes.c.status, "")
    query = (select(*_COLUMNS)
             .where(_notes.c.vault == vault, _notes.c.category == "projects",
                    or_(_notes.c.status.in_(["waiting", "blocked"]),
                        and_(or_(_notes.c.status == "active", _notes.c.status.is_(None)),
                             _notes.c.updated_ts < stale_before)))
             .order_by((order == "blocked").desc(), (order == "waiting").desc(),
                       _notes.c.updated_ts, _notes.c.path)
             .limit(limit))
    return [_note(r) for r in (await s.execute(query)).all()]


async def notes_by_ids(s: AsyncSession, vault: str, ids: Sequence[str]) -> dict[str, NoteRow]:
    if not ids:
        return {}
    query = select(*_COLUMNS).where(_notes.c.vault == vault, _notes.c.id.in_(list(set(ids))))
    return {r.id: _note(r) for r in (await s.execute(query)).all()}


def _capture(c: Receipt) -> ReceiptInfo:
    return ReceiptInfo(c.id, c.entry_id, c.path, c.category, c.status, c.original_text,
                       c.created_at)


def _window(start: datetime, end: datetime) -> None:
    for value in (start, end):
        if value.tzinfo is None or value.utcoffset() is None:
            raise InvalidValue(f"capture window bounds must be timezone-aware: {value}")


async def receipts_between(s: AsyncSession, user_id: str, start: datetime, end: datetime, *,
                           statuses: Sequence[str] | None = None,
                           limit: int = 50) -> list[ReceiptInfo]:
    """The user's captures with start <= created_at < end, newest first."""
    _window(start, end)
    query = select(Receipt).where(Receipt.user_id == user_id, Receipt.created_at >= start,
                                  Receipt.created_at < end)
    if statuses is not None:
        query = query.where(Receipt.status.in_(list(statuses)))
    rows = await s.scalars(query.order_by(Receipt.created_at.desc(), Receipt.id.desc())
                           .limit(limit))
    return [_capture(c) for c in rows]


async def capture_counts(s: AsyncSession, user_id: str, start: datetime,
                         end: datetime) -> dict[str, int]:
    """How many captures per category in [start, end) (not bounded: it is one row each)."""
    _window(start, end)
    query = (select(Receipt.category, func.count())
             .where(Receipt.user_id == user_id, Receipt.created_at >= start,
                    Receipt.created_at < end)
             .group_by(Receipt.category))
    return {cat: int(n) for cat, n in (await s.execute(query)).all()}


async def claim_digest_slot(s: AsyncSession, sub_id: int, slot: datetime) -> bool:
    """Mark the subscription sent for `slot`, only if no one has yet (compare-and-set).

    True for exactly one caller per slot, even across processes sharing the database: the
    UPDATE matches only while `last_sent_at` is older than the slot. The caller commits.
    """
    if slot.tzinfo is None or slot.utcoffset() is None:
        raise InvalidValue(f"slot must be timezone-aware: {slot}")
    result = await s.execute(
        update(DigestSubscription)
        .where(DigestSubscription.id == sub_id,
               or_(DigestSubscription.last_sent_at.is_(None),
                   DigestSubscription.last_sent_at < slot))
        .values(last_sent_at=slot, due_at=None))  # the next tick works out the next slot
    return int(getattr(result, "rowcount", 0) or 0) == 1
