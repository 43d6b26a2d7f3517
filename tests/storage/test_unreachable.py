"""A database server that does not answer is told apart from other failures
(`storage.errors.unreachable`): the worker makes such work wait for it instead of failing an
attempt (bot/jobs/worker.py; the whole story: tests/e2e/test_postgres_restart.py)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import asyncpg
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from storage.errors import unreachable, unwritable


async def _error_of(run: Callable[[], Awaitable[None]]) -> BaseException:
    try:
        await run()
    except Exception as exc:  # the error as the code above the driver sees it
        return exc
    raise AssertionError("no error")


async def test_a_server_that_is_not_there_does_not_answer(tmp_path: Path) -> None:
    # a Unix socket directory with no server in it: what a stopped PostgreSQL looks like
    engine = create_async_engine(f"postgresql+asyncpg://postgres@/brain?host={tmp_path}",
                                 hide_parameters=True)

    async def query() -> None:
        async with engine.connect() as conn:
            await conn.execute(text("SELECT 1"))

    try:
        exc = await _error_of(query)
    finally:
        await engine.dispose()
    assert unreachable(exc) is not None, repr(exc)
    assert unwritable(exc) == unreachable(exc)  # the job waits for it, as for a full disk


@pytest.mark.parametrize("error", [
    asyncpg.exceptions.ConnectionDoesNotExistError("connection was closed in the middle of "
                                                   "operation"),
    asyncpg.exceptions.AdminShutdownError("terminating connection due to administrator "
                                          "command"),
    asyncpg.exceptions.CannotConnectNowError("the database system is starting up"),
])
def test_a_cut_connection_does_not_answer(error: Exception) -> None:
    try:
        try:
            raise error
        except Exception as inner:
            raise RuntimeError("the turn failed") from inner
    except RuntimeError as exc:
        assert unreachable(exc) is not None


async def test_other_failures_are_not_the_database_gone(tmp_path: Path) -> None:
    def read_missing() -> None:
        (tmp_path / "missing.md").read_text()

    try:
        read_missing()  # a note that is not there is no database that does not answer
    except FileNotFoundError as exc:
        assert unreachable(exc) is None
    assert unreachable(ValueError("bad value")) is None
    assert unreachable(asyncpg.exceptions.UniqueViolationError("duplicate key")) is None
