"""`brain serve --http` as a real process against a fake Slack, on the test's database
(BRAIN_TEST_DB=postgres too), its log kept beside the data and printed when the test ends (so
a failure shows the server's side)."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from tests.databases import database_env
from tests.e2e.fake_slack import FakeSlack
from tests.e2e.slack_harness import SECRET, USER, SlackSender
from tests.e2e.test_slack_serve import clean_env, free_port, stop, wait_healthy


@dataclass
class Served:
    fake: FakeSlack
    send: SlackSender
    vault: Path  # USER's
    env: dict[str, str]  # what a `brain` verb needs to act on the same data
    url: str  # where it serves (also BRAIN_PUBLIC_URL: the git remotes' address)


@contextlib.asynccontextmanager
async def served(tmp_path: Path, slack: FakeSlack | None = None,
                 **extra: str) -> AsyncIterator[Served]:
    """`extra` may name the DATABASE_URL (machines sharing one database), else the test's;
    `slack`: the Slack it talks to (replicas share one: any of them may run a job another
    took in), else one of its own."""
    fake = slack or await FakeSlack().start()
    port = free_port()
    database = {} if "DATABASE_URL" in extra else database_env(tmp_path)
    env = clean_env(SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET=SECRET,
                    SLACK_API_URL=fake.api_url, BRAIN_DATA_DIR=str(tmp_path / "data"),
                    BRAIN_LLM="offline", BRAIN_PUBLIC_URL=f"http://127.0.0.1:{port}",
                    **{**database, **extra})  # the test's own BRAIN_STORE wins
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot.cli", "serve", "--http", "--host", "127.0.0.1", "--port",
            str(port), env=env, cwd=str(tmp_path), stdout=out, stderr=out)
    send = SlackSender(f"http://127.0.0.1:{port}")
    try:
        await wait_healthy(f"http://127.0.0.1:{port}", proc, timeout=60)
        yield Served(fake, send, tmp_path / "data" / "vaults" / USER, env,
                     f"http://127.0.0.1:{port}")
    finally:
        await send.close()
        await stop(proc)
        if slack is None:
            await fake.stop()
        print(log.read_text(errors="replace")[-8000:])  # shown when the test fails
