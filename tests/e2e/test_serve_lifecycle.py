"""`brain serve` as an operator meets it: a refused token is one line and a non-zero exit, a
signal at any moment (connecting included) is a clean exit, and message text stays out of the
logs, even at DEBUG, unless BRAIN_LOG_CONTENT=1."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

from tests.databases import database_env
from tests.e2e.fake_slack import FakeSlack
from tests.e2e.slack_harness import SECRET, SlackSender, message_event
from tests.e2e.test_slack_serve import brain, clean_env, fake, free_port, idle, stop, wait_healthy

__all__ = ["fake"]  # the fixture


def _socket_env(tmp_path: Path, fake: FakeSlack, app_token: str) -> dict[str, str]:
    return clean_env(SLACK_BOT_TOKEN="xoxb-test", SLACK_APP_TOKEN=app_token,
                     SLACK_API_URL=fake.api_url, BRAIN_DATA_DIR=str(tmp_path / "data"),
                     BRAIN_LLM="offline", PORT=str(free_port()), **database_env(tmp_path))


async def test_a_refused_app_token_is_one_line_and_exit_2(fake: FakeSlack, tmp_path: Path) -> None:
    proc = await brain("serve", env=_socket_env(tmp_path, fake, "xapp-invalid"), cwd=tmp_path)
    out, err = await asyncio.wait_for(proc.communicate(), timeout=30)
    text = err.decode()
    assert proc.returncode == 2, text
    assert "SLACK_APP_TOKEN" in text and "invalid_auth" in text
    assert "Traceback" not in text and len(text.strip().splitlines()) == 1


async def test_a_refused_bot_token_is_one_line_and_exit_2(fake: FakeSlack, tmp_path: Path) -> None:
    env = dict(_socket_env(tmp_path, fake, "xapp-good"), SLACK_BOT_TOKEN="xoxb-invalid")
    proc = await brain("serve", env=env, cwd=tmp_path)
    _, err = await asyncio.wait_for(proc.communicate(), timeout=30)
    assert proc.returncode == 2 and "SLACK_BOT_TOKEN" in err.decode()
    assert "Traceback" not in err.decode()


async def test_sigterm_while_connecting_exits_cleanly(fake: FakeSlack, tmp_path: Path) -> None:
    # The app token is accepted but the WebSocket never opens: the bot is still connecting.
    proc = await brain("serve", env=_socket_env(tmp_path, fake, "xapp-good"), cwd=tmp_path)
    await fake.wait_for("apps.connections.open", timeout=30)
    await asyncio.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    _, err = await asyncio.wait_for(proc.communicate(), timeout=20)
    assert proc.returncode == 0, err.decode()[-1500:]
    assert "Traceback" not in err.decode()


async def test_sigterm_during_the_start_up_checks_exits_cleanly(fake: FakeSlack,
                                                                tmp_path: Path) -> None:
    fake.delay = 30  # Slack does not answer auth.test
    proc = await brain("serve", env=_socket_env(tmp_path, fake, "xapp-good"), cwd=tmp_path)
    await fake.wait_for("auth.test", timeout=30)
    proc.send_signal(signal.SIGTERM)
    _, err = await asyncio.wait_for(proc.communicate(), timeout=20)
    assert proc.returncode == 0 and "Traceback" not in err.decode()


async def _served_dm_logs(fake: FakeSlack, tmp_path: Path, **extra: str) -> str:
    port = free_port()
    env = clean_env(SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET=SECRET,
                    SLACK_API_URL=fake.api_url, BRAIN_DATA_DIR=str(tmp_path / "data"),
                    BRAIN_LLM="offline", BRAIN_LOG_LEVEL="DEBUG", **database_env(tmp_path),
                    **extra)
    log_file = tmp_path / "serve.log"
    with log_file.open("wb") as sink:  # DEBUG output is large: a file, not a pipe
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot.cli", "serve", "--http", "--port", str(port), env=env,
            cwd=str(tmp_path), stdout=sink, stderr=sink)
        url = f"http://127.0.0.1:{port}"
        send = SlackSender(url)
        try:
            await wait_healthy(url, proc)
            event = message_event("Ask Priyanka about the zeppelin budget",
                                  ts="1767261600.000100", event_id="EvPriv1")
            assert (await send.event(event))[0] == 200
            await fake.wait_for("chat.postMessage")
            await idle(send)
        finally:
            await send.close()
            assert await stop(proc) == 0
    return log_file.read_text(encoding="utf-8", errors="replace")


async def test_message_text_stays_out_of_debug_logs(fake: FakeSlack, tmp_path: Path) -> None:
    logs = await _served_dm_logs(fake, tmp_path)
    assert "DEBUG bot.jobs.worker: job 1 claimed" in logs  # the level really was DEBUG
    assert "zeppelin" not in logs and "Priyanka" not in logs


async def test_content_logging_is_the_operators_choice(fake: FakeSlack, tmp_path: Path) -> None:
    logs = await _served_dm_logs(fake, tmp_path, BRAIN_LOG_CONTENT="1")
    assert "zeppelin" in logs
