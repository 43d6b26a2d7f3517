"""Checks and dialect helpers shared by the repositories."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import Table, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import CursorResult, Result
from sqlalchemy.ext.asyncio import AsyncSession

from storage.errors import InvalidValue
from storage.models import Base, utcnow


def aware(value: datetime, name: str) -> datetime:
    if not isinstance(value, datetime):
        raise InvalidValue(f"{name} must be a datetime, not {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidValue(f"{name} must be timezone-aware, got {value.isoformat()}")
    return value


def one_of(value: str, allowed: Sequence[str], name: str) -> str:
    if value not in allowed:
        raise InvalidValue(f"{name} must be one of {', '.join(allowed)}, not {value!r}")
    return value


def not_empty(value: str, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidValue(f"{name} must be a non-empty string")
    return value


def rowcount(result: Result[Any]) -> int:
    """Rows hit by an UPDATE/DELETE/INSERT (the result of one is a CursorResult)."""
    return int(cast(CursorResult[Any], result).rowcount)


def dialect_insert(s: AsyncSession, model: type[Base] | Table) -> Any:
    """`INSERT` with `on_conflict_do_nothing/update` for the session's database (into a model,
    or a table: many rows without the ORM's per-row work)."""
    name = s.get_bind().dialect.name
    if name == "sqlite":
        return sqlite.insert(model)
    if name == "postgresql":
        return postgresql.insert(model)
    return None


async def clock(s: AsyncSession) -> datetime:
    """The time leases are measured in: the database server's clock where there is a server."""
    if s.get_bind().dialect.name == "postgresql":
        found = await s.scalar(select(func.now()))
        if isinstance(found, datetime) and found.tzinfo is not None:
            return found.astimezone(UTC)
    return utcnow()
