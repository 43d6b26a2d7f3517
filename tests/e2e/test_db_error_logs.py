"""Issue 31.6: a database error in the logs never carries what a person wrote.

A real `brain serve --http` whose database refuses to record incoming work (a trigger on the
jobs table raises, on the suite's database): the DM gets a 500 (Slack delivers it again) and
an ERROR line that says why. The statement's parameters hold the message's text; they are
left out unless the operator turned content logging on (BRAIN_LOG_CONTENT=1), and then they
are there (the check can see them).
"""

from __future__ import annotations

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

TRIGGERS = {
    "sqlite": [f"CREATE TRIGGER refuse_jobs BEFORE INSERT ON jobs BEGIN "
               f"SELECT RAISE(ABORT, '{REFUSAL}'); END"],
    "postgresql": [f"CREATE FUNCTION refuse_jobs() RETURNS trigger LANGUAGE plpgsql AS "
                   f"$$ BEGIN RAISE EXCEPTION '{REFUSAL}'; END $$",
                   "CREATE TRIGGER refuse_jobs BEFORE INSERT ON jobs FOR EACH ROW "
                   "EXECUTE FUNCTION refuse_jobs()"],
}


async def _refuse_jobs(url: str) -> None:
    db = await Database.open(url)
    try:
        async with db.engine.begin() as conn:
            for statement in TRIGGERS[db.engine.dialect.name]:
                await conn.exec_driver_sql(statement)
    finally:
        await db.close()


@pytest.mark.parametrize("log_content", [False, True], ids=["content-off", "content-on"])
async def test_a_refused_write_logs_no_message_text(tmp_path: Path, log_content: bool) -> None:
    url = fresh_url(tmp_path)
    await _refuse_jobs(url)
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
        assert status == 500  # not recorded: Slack delivers it again
        assert await rs.stop(server) == 0
    finally:
        await rs.close_all([server])
        await fake.stop()
    logs = server.log_text()
    assert "ERROR" in logs and "could not record a request" in logs, logs[-2000:]
    assert REFUSAL in logs  # the line says why
    for word in WORDS.split():
        assert (word in logs) == log_content, logs[-3000:]
