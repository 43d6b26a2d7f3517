"""`brain serve --http` as a real subprocess (signals, a restart), talking to a fake Slack Web
API; `brain doctor` and the refusals of `brain serve` through `bot.cli.main` in this process."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from tests.brain_cli import BrainCLI
from tests.databases import database_env
from tests.e2e.fake_slack import FakeSlack
from tests.e2e.slack_harness import SECRET, USER, SlackSender, message_event, vault_files
from tests.shared import patience

DM_TS = "1767261600.000100"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def clean_env(**extra: str) -> dict[str, str]:
    """The test's environment without any real Slack/LLM settings, plus `extra`. One process
    per `brain serve` unless `extra` or `--workers` says otherwise (the default is one per
    core: the suite would run twice its processes)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SLACK_", "BRAIN_", "OPENAI_", "ANTHROPIC_", "DATABASE_"))}
    env["BRAIN_PROCESSES"] = "1"
    env.update(extra)
    return env


async def brain(*args: str, env: dict[str, str], cwd: Path) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.cli", *args, env=env, cwd=str(cwd),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)


async def wait_healthy(url: str, proc: asyncio.subprocess.Process, timeout: float = 30, *,
                       history_behind: bool = False) -> None:
    """Until `/health` says 200. With `history_behind`, a 503 for the history alone counts
    too: after a SIGKILL in the middle of a history commit, its lock file stays until it is a
    minute old and `/health` says so meanwhile (docs/reliability.md), while the server works."""
    deadline = time.monotonic() + patience(timeout)
    last = "no answer"  # said when it fails: a 503's reason, or that nothing answered
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline:
            if proc.returncode is not None:
                _, err = await proc.communicate()
                raise AssertionError(f"brain serve exited {proc.returncode}: {err.decode()}")
            try:
                async with session.get(f"{url}/health") as r:
                    if r.status == 200:
                        return
                    last = f"{r.status} {await r.text()}"
                    found = await r.json() if r.status == 503 else {}
                    if history_behind and "history" in found and "storage" not in found:
                        return
            except aiohttp.ClientError as exc:
                last = f"no answer ({type(exc).__name__})"
            await asyncio.sleep(0.1)
    raise AssertionError(f"brain serve did not become healthy in {patience(timeout):.0f} s; "
                         f"/health's last answer: {last}")


async def stop(proc: asyncio.subprocess.Process) -> int:
    proc.send_signal(signal.SIGTERM)
    try:
        await asyncio.wait_for(proc.wait(), timeout=15)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    return int(proc.returncode or 0)


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    server = await FakeSlack().start()
    try:
        yield server
    finally:
        await server.stop()


async def helpers_ready(send: SlackSender, count: int, timeout: float = 60) -> None:
    """`brain serve --workers N`: its N-1 helper processes take work (GET /health says)."""
    deadline = time.monotonic() + patience(timeout)
    while (await send.health()).get("helpers", {}).get("ready", 0) < count:
        assert time.monotonic() < deadline, "the helper processes did not start"
        await asyncio.sleep(0.05)


async def idle(send: SlackSender) -> None:
    """The served process has no turn left to run."""
    calm = 0
    while calm < 3:
        await asyncio.sleep(0.05)
        jobs = (await send.health())["jobs"]
        calm = calm + 1 if jobs["pending"] + jobs["running"] == 0 else 0


async def test_served_over_http_files_once_even_across_a_restart(
        fake: FakeSlack, tmp_path: Path) -> None:
    port = free_port()
    env = clean_env(SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET=SECRET,
                    SLACK_API_URL=fake.api_url, BRAIN_DATA_DIR=str(tmp_path / "data"),
                    BRAIN_LLM="offline", **database_env(tmp_path))
    url = f"http://127.0.0.1:{port}"
    event = message_event("Call the dentist about the crown next Tuesday", ts=DM_TS,
                          event_id="Ev0SB0000001")
    vault = tmp_path / "data" / "vaults" / USER

    proc = await brain("serve", "--http", "--host", "127.0.0.1", "--port", str(port),
                       env=env, cwd=tmp_path)
    send = SlackSender(url)
    try:
        await wait_healthy(url, proc)
        assert (await send.event(event))[0] == 200
        posts = await fake.wait_for("chat.postMessage")
        assert posts[0].body["thread_ts"] == DM_TS and posts[0].body["channel"] == "D0SBDM001"
        assert (await send.event(event, retry=1))[0] == 200
        assert (await send.event(event, secret="not-the-secret"))[0] == 401
        assert (await send.event(event, timestamp=int(time.time()) - 301))[0] == 401
        await idle(send)
        assert len(fake.calls_to("chat.postMessage")) == 1
        assert len(vault_files(vault)) == 1
    finally:
        await send.close()
        code = await stop(proc)
    assert code == 0

    # A retry that arrives after a restart is still recognised (the claim is in the database).
    proc = await brain("serve", "--http", "--host", "127.0.0.1", "--port", str(port),
                       env=env, cwd=tmp_path)
    send = SlackSender(url)
    try:
        await wait_healthy(url, proc)
        assert (await send.event(event, retry=2))[0] == 200
        second = message_event("Idea: a shared calendar for the team", ts="1767261900.000100",
                               event_id="Ev0SB0000009")
        assert (await send.event(second))[0] == 200
        posts = await fake.wait_for("chat.postMessage", 2)
        await idle(send)
        assert len(posts) == 2 and posts[1].body["thread_ts"] == "1767261900.000100"
        assert len(vault_files(vault)) == 2
    finally:
        await send.close()
        await stop(proc)


def test_serve_without_tokens_says_what_is_missing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cli = BrainCLI(capsys, tmp_path, {"BRAIN_DATA_DIR": str(tmp_path)})
    done = cli("serve")
    assert done.code == 2 and "Traceback" not in done.err
    assert "SLACK_BOT_TOKEN" in done.err and "brain doctor" in done.err
    done = cli("serve", "--log-level", "loud")
    assert done.code == 2 and "unknown log level 'loud'" in done.err


async def test_doctor_reports_problems_and_fixes(
        fake: FakeSlack, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = dict(SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET=SECRET,
                SLACK_API_URL=fake.api_url, BRAIN_DATA_DIR=str(tmp_path / "d"),
                BRAIN_LLM="offline")
    cli = BrainCLI(capsys, tmp_path, good)
    # The command runs its own event loop; the fake Slack serves from this test's loop.
    done = await asyncio.to_thread(cli, "doctor")
    assert done.code == 0, done.out
    assert "U0SBBOT01" in done.out and "All good" in done.out
    assert fake.calls_to("auth.test")

    blocker = tmp_path / "file"
    blocker.write_text("x")
    done = await asyncio.to_thread(cli, "doctor", SLACK_BOT_TOKEN="xoxb-invalid",
                                   BRAIN_LLM="openai", BRAIN_DATA_DIR=str(blocker / "sub"))
    text = done.out
    assert done.code == 1, text
    assert "invalid_auth" in text and "OPENAI_API_KEY is not set" in text
    assert "Data directory" in text and text.count("fix:") >= 3
