"""Issue 31.6: a database error in the logs never carries what a person wrote.

A real `brain serve --http` whose database refuses a write (SQLite: a trigger raises;
PostgreSQL: a CHECK no new row passes, and PostgreSQL names the refused row in its DETAIL):
recording the DM itself (the DM gets a 500, Slack delivers it again, and an ERROR line says
why), or the turn's record of the message (the worker logs the failure with its traceback and
tries again later). The statement's parameters hold the message's text, and so does the row
in PostgreSQL's DETAIL; both are left out of every line unless the operator turned content
logging on (BRAIN_LOG_CONTENT=1), and then they are there (the check can see them).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from storage.db import Database
from tests.databases import fresh_url
from tests.e2e import replicas as rs
from tests.e2e.fake_slack import FakeSlack
from tests.e2e.slack_harness import SECRET, message_event
from tests.e2e.test_slack_serve import clean_env

WORDS = "Quokkaflavour zanzibarium"  # in the message; nowhere else
REFUSAL = "the test refuses this write"


def _refusing(table: str, dialect: str) -> tuple[list[str], str]:
    """Statements after which `table` takes no new row, and what the database then says."""
    if dialect == "sqlite":
        return ([f"CREATE TRIGGER refuse_{table} BEFORE INSERT ON {table} BEGIN "
                 f"SELECT RAISE(ABORT, '{REFUSAL}'); END"], REFUSAL)
    return ([f"ALTER TABLE {table} ADD CONSTRAINT refuse_{table} CHECK (id < 0) NOT VALID"],
            f'violates check constraint "refuse_{table}"')


async def _refuse(url: str, table: str) -> str:
    db = await Database.open(url)
    try:
        statements, reason = _refusing(table, db.engine.dialect.name)
        async with db.engine.begin() as conn:
            for statement in statements:
                await conn.exec_driver_sql(statement)
        return reason
    finally:
        await db.close()


@pytest.mark.parametrize("log_content", [False, True], ids=["content-off", "content-on"])
@pytest.mark.parametrize("table", ["jobs", "turns"])
async def test_a_refused_write_logs_no_message_text(tmp_path: Path, log_content: bool,
                                                    table: str) -> None:
    url = fresh_url(tmp_path)
    reason = await _refuse(url, table)
    fake = await FakeSlack().start()
    env = clean_env(SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET=SECRET,
                    SLACK_API_URL=fake.api_url, BRAIN_DATA_DIR=str(tmp_path / "data"),
                    BRAIN_LLM="offline", DATABASE_URL=url,
                    **({"BRAIN_LOG_CONTENT": "1"} if log_content else {}))
    server = await rs.start("server", env, tmp_path)
    try:
        await rs.wait_healthy(server)
        status, _ = await server.send.event(message_event(
            f"Remember the {WORDS} for the offsite", ts="1767261600.000100",
            event_id="EvRefused1"))
        if table == "jobs":
            assert status == 500  # not recorded: Slack delivers it again
        else:  # recorded; its turn cannot record the message and fails, logged
            assert status == 200
            deadline = time.monotonic() + 60
            while "failed on attempt 1" not in server.log_text():
                assert time.monotonic() < deadline, server.log_text()[-3000:]
                await asyncio.sleep(0.1)
        assert await rs.stop(server) == 0
    finally:
        await rs.close_all([server])
        await fake.stop()
    logs = server.log_text()
    assert "ERROR" in logs and reason in logs, logs[-3000:]  # the line says why
    if table == "turns":
        assert "Traceback" in logs  # the worker's own log of the failure, in full
    for word in WORDS.split():
        assert (word in logs) == log_content, logs[-3000:]
