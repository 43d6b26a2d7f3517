"""SQL statements per Slack DM: the bot in process (the real Bolt app over HTTP, the real Brain,
SQLite, the real OpenAI SDK against tests/bot/fake_llm_server.py, a fake Slack), 20 DMs after a
warm-up; every statement on the work's engine is counted with its mean time in SQLite.

    .venv/bin/python bench/bench_turn_sql.py [--dms 20]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aiohttp.test_utils import TestServer  # noqa: E402
from sqlalchemy import event  # noqa: E402

from bot.brain import Brain  # noqa: E402
from bot.slack.app import SlackBot  # noqa: E402
from tests.bot.fake_llm_server import FakeLLMServer  # noqa: E402
from tests.e2e.fake_slack import FakeSlack  # noqa: E402
from tests.e2e.slack_harness import SlackSender, message_event  # noqa: E402
from tests.e2e.test_slack_app import make_settings  # noqa: E402


async def main(dms: int) -> None:
    counts: collections.Counter[str] = collections.Counter()
    seconds: collections.Counter[str] = collections.Counter()
    started: dict[int, float] = {}
    fake = await FakeSlack().start()
    llm = FakeLLMServer(validate=False).start()
    settings = make_settings(Path(tempfile.mkdtemp(prefix="turn-sql-")), fake,
                             BRAIN_LLM="openai", OPENAI_API_KEY="sk",
                             OPENAI_BASE_URL=llm.openai_base_url)
    brain = await Brain.start(settings)
    bot = SlackBot(brain, settings, poll=5)
    bot.start(scheduler=False)
    server = TestServer(bot.web_app(), host="127.0.0.1")
    await server.start_server()
    send = SlackSender(str(server.make_url("/")))
    try:
        await send.event(message_event("Warm up the engines for the q3 budget",
                                       ts="1767000000.000001", event_id="W1"))
        await fake.wait_for("chat.postMessage", 1)
        await asyncio.sleep(0.3)
        engine = brain.core.db.engine.sync_engine

        @event.listens_for(engine, "before_cursor_execute")
        def before(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
            started[id(cursor)] = time.perf_counter()

        @event.listens_for(engine, "after_cursor_execute")
        def after(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
            key = " ".join(statement.split())[:90]
            counts[key] += 1
            seconds[key] += time.perf_counter() - started.pop(id(cursor), time.perf_counter())

        for i in range(dms):
            await send.event(message_event(f"Call supplier {i} about the late invoice next week",
                                           ts=f"17670001{i:02d}.000100", event_id=f"E{i}"))
            await fake.wait_for("chat.postMessage", i + 2)
            await asyncio.sleep(0.05)
        print(f"statements per DM on the work's engine: {sum(counts.values()) / dms:.1f}")
        for key, n in counts.most_common(40):
            print(f"{n / dms:5.1f}  {1000 * seconds[key] / n:6.2f} ms  {key}")
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
    asyncio.run(main(parser.parse_args().dms))
