"""SQL statements and transactions per Slack DM: the bot in process (the real Bolt app over
HTTP, the real Brain, the real OpenAI SDK against tests/bot/fake_llm_server.py, a fake Slack),
20 DMs after a warm-up, on SQLite or PostgreSQL, with the file store or the database store.

    .venv/bin/python bench/bench_turn_sql.py [--dms 20] [--db sqlite|postgres]
                                             [--store files|database] [--gap SECONDS]

Counted on every engine of the process (the work's, the intake's, the vault locks') through
SQLAlchemy's events: each statement, each transaction's end (a commit or a rollback), both
grouped by the code that made them (the first frame in bot/, tools/ or storage/ outside
storage/db.py, and the first one outside storage/ that called it). On PostgreSQL the server's
own count (`pg_stat_database.xact_commit + xact_rollback` of the bot's database) is read too.
The DMs' window is followed by an idle window of the same length (no DMs: the worker's polls,
the ticker, the indexer), whose counts are taken off, so the figures are the DMs' own.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from aiohttp.test_utils import TestServer  # noqa: E402
from sqlalchemy import event  # noqa: E402
from sqlalchemy.engine import Engine  # noqa: E402

from bot.brain import Brain  # noqa: E402
from bot.slack.app import SlackBot  # noqa: E402
from tests import databases  # noqa: E402
from tests.bot.fake_llm_server import FakeLLMServer  # noqa: E402
from tests.e2e.fake_slack import FakeSlack  # noqa: E402
from tests.e2e.slack_harness import SlackSender, message_event  # noqa: E402
from tests.e2e.test_slack_app import make_settings  # noqa: E402

OURS = tuple(str(ROOT / d) + "/" for d in ("bot", "tools", "storage"))
DB_PY = str(ROOT / "storage" / "db.py")
STORAGE = str(ROOT / "storage") + "/"
FLUSH = 11.0  # PostgreSQL's backends report their counts when idle, within 10 s


def _frames() -> list[FrameType]:
    """The frames that led here, innermost first. SQLAlchemy runs a statement in a greenlet
    whose stack ends where it started: the rest is the stack of the greenlet it came from."""
    import greenlet

    frames: list[FrameType] = []
    frame: FrameType | None = sys._getframe(1)
    now: Any = greenlet.getcurrent()
    while True:
        while frame is not None:
            frames.append(frame)
            frame = frame.f_back
        now = now.parent
        if now is None:
            return frames
        frame = now.gr_frame


def _where() -> str:
    """`storage/x.py:f <- bot/y.py:g`: the first frame of ours outside storage/db.py, and
    the first outside storage/ above it."""
    first = caller = None
    for frame in _frames():
        name = frame.f_code.co_filename
        if name.startswith(OURS) and name != DB_PY:
            here = f"{name[len(str(ROOT)) + 1:]}:{frame.f_code.co_name}"
            first = first or here
            if not name.startswith(STORAGE):
                caller = here
                break
    if first is None:
        return "(elsewhere)"
    return first if caller in (None, first) else f"{first} <- {caller}"


@dataclass
class Tally:
    """What the engines did while `on`."""

    on: bool = False
    statements: collections.Counter[str] = field(default_factory=collections.Counter)
    seconds: collections.Counter[str] = field(default_factory=collections.Counter)
    sites: collections.Counter[str] = field(default_factory=collections.Counter)
    ends: collections.Counter[str] = field(default_factory=collections.Counter)
    started: dict[int, float] = field(default_factory=dict)
    last: dict[int, str] = field(default_factory=dict)  # connection -> its last statement's site

    def install(self) -> None:
        event.listen(Engine, "before_cursor_execute", self._before)
        event.listen(Engine, "after_cursor_execute", self._after)
        event.listen(Engine, "commit", self._commit)
        event.listen(Engine, "rollback", self._rollback)

    def take(self) -> Tally:
        """What was counted so far; counting starts again from nothing."""
        done = Tally(False, self.statements, self.seconds, self.sites, self.ends)
        self.statements, self.seconds = collections.Counter(), collections.Counter()
        self.sites, self.ends = collections.Counter(), collections.Counter()
        return done

    def _before(self, conn: Any, cursor: Any, *args: Any) -> None:
        self.started[id(cursor)] = time.perf_counter()

    def _after(self, conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        began = self.started.pop(id(cursor), time.perf_counter())
        if not self.on:
            return
        key = " ".join(statement.split())[:90]
        self.statements[key] += 1
        self.seconds[key] += time.perf_counter() - began
        self.last[id(conn)] = site = _where()
        self.sites[site] += 1

    def _end(self, conn: Any, how: str) -> None:
        """A transaction's end, where it ends; a session's close ends it in a task of its own
        (AsyncSession.__aexit__): then where its last statement was made."""
        if self.on:
            site = _where()
            if site == "(elsewhere)":
                site = self.last.get(id(conn), site)
            self.ends[f"{how}  {site}"] += 1

    def _commit(self, conn: Any) -> None:
        self._end(conn, "commit  ")

    def _rollback(self, conn: Any) -> None:
        self._end(conn, "rollback")


def _less(busy: collections.Counter[str], idle: collections.Counter[str],
          n: int) -> list[tuple[str, float]]:
    """Per DM, the idle window's counts taken off, largest first."""
    rows = [(k, (busy[k] - idle.get(k, 0)) / n) for k in busy | idle]
    return sorted([r for r in rows if abs(r[1]) >= 0.05], key=lambda r: -r[1])


async def _server_count(url: str) -> int:
    """The server's transactions (commits + rollbacks) of the bot's database so far, read from
    another database so the reading is not counted."""
    import asyncpg
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    conn = await asyncpg.connect(host=parsed.query["host"], user="postgres",
                                 database="postgres")
    try:
        await conn.execute("SELECT pg_stat_clear_snapshot()")
        row = await conn.fetchrow("SELECT xact_commit + xact_rollback FROM pg_stat_database "
                                  "WHERE datname = $1", parsed.database)
        return int(row[0])
    finally:
        await conn.close()


@dataclass
class Run:
    dms: int
    url: str
    postgres: bool
    gap: float = 0.0
    tally: Tally = field(default_factory=Tally)

    async def server(self) -> int | None:
        return await _server_count(self.url) if self.postgres else None

    async def windows(self, send: SlackSender, fake: FakeSlack) -> None:
        settle = FLUSH if self.postgres else 0.5
        await asyncio.sleep(settle)
        before, self.tally.on, began = await self.server(), True, time.monotonic()
        for i in range(self.dms):
            await send.event(message_event(f"Call supplier {i} about the late invoice next week",
                                           ts=f"17670001{i:02d}.000100", event_id=f"E{i}"))
            await fake.wait_for("chat.postMessage", i + 2)
            await asyncio.sleep(self.gap)
        dm_seconds = time.monotonic() - began
        await asyncio.sleep(settle)
        busy, busy_server = self.tally.take(), await self.server()
        await asyncio.sleep(time.monotonic() - began)  # the idle window, as long
        idle, idle_server = self.tally.take(), await self.server()
        self.report(busy, idle, dm_seconds, (before, busy_server, idle_server))

    def report(self, busy: Tally, idle: Tally, dm_seconds: float,
               server: tuple[int | None, ...]) -> None:
        n = self.dms
        total = sum(busy.statements.values()) - sum(idle.statements.values())
        ends = sum(busy.ends.values()) - sum(idle.ends.values())
        print(f"{n} DMs in {dm_seconds:.1f} s; idle window: {sum(idle.statements.values())} "
              f"statements, {sum(idle.ends.values())} transactions")
        print(f"statements per DM: {total / n:.1f}")
        print(f"transactions per DM (engine events, commits + rollbacks): {ends / n:.1f}")
        before, after, idle_end = server
        if before is not None and after is not None and idle_end is not None:
            dm, quiet = after - before, idle_end - after
            print(f"transactions per DM (pg_stat_database): {(dm - quiet) / n:.1f} "
                  f"({dm} in the DMs' window, {quiet} in the idle one)")
        print("\ntransactions per DM by where they end:")
        for key, per in _less(busy.ends, idle.ends, n):
            print(f"{per:5.1f}  {key}")
        print("\nstatements per DM by call site:")
        for key, per in _less(busy.sites, idle.sites, n)[:40]:
            print(f"{per:5.1f}  {key}")
        print("\nstatements per DM (mean time):")
        for key, per in _less(busy.statements, idle.statements, n)[:40]:
            mean = 1000 * busy.seconds[key] / max(busy.statements[key], 1)
            print(f"{per:5.1f}  {mean:6.2f} ms  {key}")


async def main(dms: int, db: str, store: str, gap: float = 0.0) -> None:
    databases.set_backend(db)
    fake = await FakeSlack().start()
    llm = FakeLLMServer(validate=False).start()
    settings = make_settings(Path(tempfile.mkdtemp(prefix="turn-sql-")), fake,
                             BRAIN_LLM="openai", OPENAI_API_KEY="sk",
                             OPENAI_BASE_URL=llm.openai_base_url, BRAIN_STORE=store)
    brain = await Brain.start(settings)
    brain.stores.keep_fresh()  # as `brain serve` does: the background indexer, reads trust it
    bot = SlackBot(brain, settings, poll=5)
    bot.start(scheduler=False)
    server = TestServer(bot.web_app(), host="127.0.0.1")
    await server.start_server()
    send = SlackSender(str(server.make_url("/")))
    run = Run(dms, brain.core.db.url, db == "postgres", gap)
    run.tally.install()
    print(f"database {db}, store {store}")
    try:
        await send.event(message_event("Warm up the engines for the q3 budget",
                                       ts="1767000000.000001", event_id="W1"))
        await fake.wait_for("chat.postMessage", 1)
        await run.windows(send, fake)
    finally:
        await send.close()
        await server.close()
        await bot.close(5)
        await brain.close()
        llm.stop()
        await fake.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dms", type=int, default=20)
    parser.add_argument("--gap", type=float, default=0.0,
                        help="seconds between DMs (past the indexer's 2 s settle: each DM's "
                             "background work is its own, as when people write now and then)")
    parser.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--store", choices=("files", "database"), default="files")
    args = parser.parse_args()
    if args.store == "database" and args.db != "postgres":
        parser.error("--store database keeps vaults in PostgreSQL: use --db postgres")
    asyncio.run(main(args.dms, args.db, args.store, args.gap))
