"""A locked history under a real `brain serve --http` (issue 31): a lock file a dead writer
left in the vault's history repository. DMs signed as Slack signs them are each filed once and
answered once; `/health` says the history is behind (503) until the lock is a minute old,
when the server clears it and records the late changes, which `brain history` then lists; a
server that stopped while behind records them when it starts again. On both databases."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from pathlib import Path
from typing import Any

import aiohttp

from tests.brain_cli import run_process
from tests.databases import database_env
from tests.e2e.fake_slack import FakeSlack
from tests.e2e.slack_harness import SECRET, USER, SlackSender, message_event, vault_files
from tests.e2e.test_slack_serve import brain, clean_env, fake, free_port, idle, stop, wait_healthy
from tests.shared import ids_on_disk

__all__ = ["fake"]  # the fixture

THOUGHTS = ("Idea: a lending library for the office", "Call the dentist about the crown",
            "Project Phoenix: launch the beta in May")
DEADLINE = 90.0  # seconds a condition may take on a loaded machine


async def health(url: str) -> tuple[int, dict[str, Any]]:
    async with aiohttp.ClientSession() as session, session.get(f"{url}/health") as r:
        return r.status, await r.json()


async def until(check: Any, what: str) -> Any:
    deadline = time.monotonic() + DEADLINE
    while True:
        found = await check()
        if found:
            return found
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.2)


def history_of(data: Path, env: dict[str, str]) -> list[dict[str, Any]]:
    done = run_process(data.parent, "history", "--user", USER, "--limit", "50", "--json",
                       env=env)
    assert done.code == 0 and "Traceback" not in done.err, done.err
    changes: list[dict[str, Any]] = done.json()
    return changes


async def test_a_locked_history_files_each_dm_once_and_records_them_late(
        fake: FakeSlack, tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    data = tmp_path / "data"
    db = database_env(tmp_path)
    env = clean_env(SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET=SECRET,
                    SLACK_API_URL=fake.api_url, BRAIN_DATA_DIR=str(data), BRAIN_LLM="offline",
                    **db)
    cli_env = {"BRAIN_DATA_DIR": str(data), "BRAIN_LLM": "offline", **db}
    vault = data / "vaults" / USER
    proc = await brain("serve", "--http", "--host", "127.0.0.1", "--port", str(port),
                       env=env, cwd=tmp_path)
    send = SlackSender(url)
    try:
        await wait_healthy(url, proc)
        first = message_event("Sara Lopez prefers email", ts="1767261000.000100",
                              event_id="Ev0HD0000000")
        assert (await send.event(first))[0] == 200
        await fake.wait_for_reply(1, timeout=DEADLINE)
        await idle(send)
        [repo] = list((data / "history").glob("*/repo.git"))
        lock = repo / "refs" / "heads" / "main.lock"
        lock.write_bytes(b"")  # a writer died holding it, a moment ago

        for n, text in enumerate(THOUGHTS, start=1):
            ts = f"{1767261000 + 60 * n}.000100"
            status, _ = await send.event(message_event(text, ts=ts, event_id=f"Ev0HD000000{n}"))
            assert status == 200
        await fake.wait_for_reply(4, timeout=DEADLINE)
        await idle(send)
        assert len(fake.replies()) == 4  # one answer per DM, none twice
        assert len(vault_files(vault)) == 4  # each DM filed once
        assert all(len(paths) == 1 for paths in ids_on_disk(vault).values())
        status, body = await health(url)
        assert status == 503 and body["history"]["vaults_behind"] == 1, body
        assert "main.lock" in body["history"]["why"] and USER not in str(body)
        recorded = [c for c in history_of(data, cli_env) if c["action"] == "create"]
        assert len(recorded) == 1  # the three wait: the history cannot be written yet

        # The lock is now a minute old: the server's next rescan clears it and records them.
        old = time.time() - 120
        os.utime(lock, (old, old))

        async def healthy() -> bool:
            return (await health(url))[0] == 200

        await until(healthy, "/health did not recover once the lock was stale")
        assert not lock.exists()
        created = [c for c in history_of(data, cli_env) if c["action"] == "create"]
        assert sorted(p for c in created for p in c["paths"]) == vault_files(vault)
        assert sum("recorded late" in c["summary"] for c in created) == 3
        assert len(vault_files(vault)) == 4 and len(fake.replies()) == 4

        # Locked again, one more DM, and the server stops before the lock is stale.
        lock.write_bytes(b"")
        last = message_event("Renew the car insurance before the 20th",
                             ts="1767262000.000100", event_id="Ev0HD0000009")
        assert (await send.event(last))[0] == 200
        await fake.wait_for_reply(5, timeout=DEADLINE)
        await idle(send)
        assert (await health(url))[0] == 503
    finally:
        await send.close()
        code = await stop(proc)
    assert code == 0
    _out, err = await proc.communicate()
    assert b"Traceback" not in err, err.decode()[-3000:]

    # The next start records it with no request to wake it (its vault is watched at once).
    os.utime(lock, (old, old))
    proc = await brain("serve", "--http", "--host", "127.0.0.1", "--port", str(port),
                       env=env, cwd=tmp_path)
    try:
        async def started_and_healthy() -> bool:
            with contextlib.suppress(aiohttp.ClientError):
                return (await health(url))[0] == 200
            return False

        await until(started_and_healthy, "the restarted server did not record the change")
        created = [c for c in history_of(data, cli_env) if c["action"] == "create"]
        assert sorted(p for c in created for p in c["paths"]) == vault_files(vault)
        assert len(vault_files(vault)) == 5 and len(fake.replies()) == 5
    finally:
        assert await stop(proc) == 0
