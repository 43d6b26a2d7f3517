"""`brain serve --workers N`: the helper processes live and die with the serving one. A helper
killed while it serves is started again and work still gets done; SIGTERM stops every process;
`kill -9` of the serving process leaves no helper behind. Real processes, a fake Slack.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

from tests.databases import database_env
from tests.e2e.fake_slack import FakeSlack
from tests.e2e.processes import alive, children
from tests.e2e.slack_harness import SECRET, SlackSender, message_event
from tests.e2e.test_slack_serve import (
    brain,
    clean_env,
    fake,
    free_port,
    helpers_ready,
    idle,
    stop,
    wait_healthy,
)
from tests.shared import patience

__all__ = ["fake"]  # the fixture


async def _until(check: object, timeout: float = 30) -> None:
    deadline = time.monotonic() + patience(timeout)
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "not in time"
        await asyncio.sleep(0.05)


async def test_helpers_restart_when_killed_and_stop_with_the_server(
        fake: FakeSlack, tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = clean_env(SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET=SECRET,
                    SLACK_API_URL=fake.api_url, BRAIN_DATA_DIR=str(tmp_path / "data"),
                    BRAIN_LLM="offline", BRAIN_LOG_LEVEL="WARNING", **database_env(tmp_path))
    proc = await brain("serve", "--http", "--host", "127.0.0.1", "--port", str(port),
                       "--workers", "3", env=env, cwd=tmp_path)
    send = SlackSender(url)
    try:
        await wait_healthy(url, proc)
        await helpers_ready(send, 2)
        helpers = children(proc.pid)
        assert len(helpers) == 2, helpers
        assert (await send.health())["helpers"] == {"processes": 3, "ready": 2}

        os.kill(helpers[0], signal.SIGKILL)  # a helper dies: another takes its place
        await _until(lambda: len(children(proc.pid)) == 2
                     and helpers[0] not in children(proc.pid))
        assert helpers[1] in children(proc.pid)
        await helpers_ready(send, 2)  # the new one takes work too

        for i in range(6):  # and the work still gets done, once each
            event = message_event(f"Idea number {i}: a garden on the roof", event_id=f"EvW{i}",
                                  ts=f"17673000{i:02d}.000100")
            assert (await send.event(event))[0] == 200
        await fake.wait_for("chat.postMessage", 6)
        await idle(send)
        assert len(fake.calls_to("chat.postMessage")) == 6
        running = children(proc.pid)
    finally:
        await send.close()
        code = await stop(proc)
    assert code == 0
    assert not any(alive(pid) for pid in running), "SIGTERM stopped every helper"


async def test_a_killed_server_leaves_no_helper_behind(fake: FakeSlack, tmp_path: Path) -> None:
    port = free_port()
    env = clean_env(SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET=SECRET,
                    SLACK_API_URL=fake.api_url, BRAIN_DATA_DIR=str(tmp_path / "data"),
                    BRAIN_LLM="offline", BRAIN_PROCESSES="2", **database_env(tmp_path))
    proc = await brain("serve", "--http", "--host", "127.0.0.1", "--port", str(port),
                       env=env, cwd=tmp_path)
    try:
        await wait_healthy(f"http://127.0.0.1:{port}", proc)
        helpers = children(proc.pid)
        assert len(helpers) == 1, helpers  # BRAIN_PROCESSES=2
        proc.send_signal(signal.SIGKILL)
        await proc.wait()
        await _until(lambda: not alive(helpers[0]))  # its stdin closed: it exits
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
