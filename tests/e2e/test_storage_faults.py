"""Issue 31.8: storage that cannot be written is seen by `/health` and `brain doctor`, and the
work acknowledged meanwhile waits for it instead of failing.

A real `brain serve --http` (the offline model, the suite's database) and the fake Slack Web
API. The vault is made read-only while it serves (its folders and files lose their write bits;
a test running as root runs the server without the capabilities that let root write past
them, `setpriv --bounding-set -dac_override,-fowner`, so the bits hold for it): `/health` answers
503 and says why; DMs sent meanwhile are acknowledged, each is told once that it waits, and
each is filed and answered once when the vault is writable again. Then only the person's own
folder refuses writes (the probe of the root passes): the turn runs, its capture is refused,
and that DM waits and is filed the same way. The SQLite file deleted
while serving: `/health` says so. `brain doctor` (a process, as the same user) fails on a
read-only vault and a read-only database file.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.slack.notices import WAITING
from tests.databases import fresh_url, on_postgres
from tests.e2e import replicas as rs
from tests.e2e.fake_slack import FakeSlack
from tests.e2e.slack_harness import SECRET, USER, message_event
from tests.e2e.test_slack_serve import clean_env

# Root writes whatever the permission bits say, unless it lacks these capabilities.
BITS_HOLD = "-dac_override,-fowner"


def _as_server() -> tuple[str, ...]:
    """What the server and doctor run under: as root, without the capabilities that ignore
    permission bits (as any other user runs)."""
    if os.geteuid() != 0:
        return ()
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: a read-only folder cannot be made")
    return ("setpriv", "--bounding-set", BITS_HOLD, "--")


@pytest.fixture
def place(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "data").mkdir()
    yield tmp_path
    _writable(tmp_path, True)


def _writable(root: Path, on: bool) -> None:
    """Every folder and file under `root` (and itself) with or without its write bits."""
    for folder, _dirs, files in os.walk(root):
        os.chmod(folder, 0o755 if on else 0o555)
        for name in files:
            path = Path(folder) / name
            if not path.is_symlink():
                path.chmod(0o644 if on else 0o444)


def _env(base: Path, fake: FakeSlack, url: str | None, **extra: str) -> dict[str, str]:
    return clean_env(SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET=SECRET,
                     SLACK_API_URL=fake.api_url, BRAIN_DATA_DIR=str(base / "data"),
                     BRAIN_LLM="offline", HOME=str(base),
                     **({"DATABASE_URL": url} if url else {}), **extra)


def _database(tmp_path: Path) -> str | None:
    """The suite's PostgreSQL database; on SQLite the server's own file in its data
    folder."""
    return fresh_url(tmp_path) if on_postgres() else None


async def _health(server: rs.Replica, ok: bool, timeout: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        body = await server.send.health()
        if body["ok"] is ok:
            return body
        assert time.monotonic() < deadline, f"/health never said ok={ok}: {body}"
        await asyncio.sleep(0.1)


def _posts_in(fake: FakeSlack, thread: str) -> list[str]:
    return [str(c.body.get("text")) for c in fake.calls_to("chat.postMessage")
            if c.body.get("thread_ts") == thread]


async def _until(check: Any, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.05)


MID_TURN = "Remember to book the dentist for the kids before the holidays"
MID_TS = "1767261800.000100"


def _notes(vault: Path) -> list[str]:
    return [p.read_text(encoding="utf-8") for p in vault.rglob("*.md")]


async def test_a_read_only_vault_is_reported_and_its_dms_wait_until_it_is_back(
        tmp_path: Path, place: Path) -> None:
    fake = await FakeSlack().start()
    server = await rs.start("server", _env(place, fake, _database(tmp_path)), place,
                            _as_server())
    vault_root = place / "data" / "vaults"
    texts = [f"Remember to renew the parking permit number {i} before Friday"
             for i in range(3)]
    threads = [f"176726170{i}.000100" for i in range(3)]
    try:
        await rs.wait_healthy(server)
        first = message_event("Idea: a lending library for the office", ts="1767261600.000100",
                              event_id="EvRO0")
        assert (await server.send.event(first))[0] == 200
        await _until(lambda: _posts_in(fake, "1767261600.000100"), "the first DM answered")
        await rs.idle([server])
        before = _notes(vault_root)
        assert len(before) == 1

        _writable(vault_root, False)
        down = await _health(server, ok=False)
        assert "cannot be written" in down["storage"]["vault"], down
        for text, ts in zip(texts, threads, strict=True):
            status, _ = await server.send.event(message_event(text, ts=ts,
                                                              event_id=f"EvRO{ts}"))
            assert status == 200  # acknowledged: it is in the journal
        await _until(lambda: all(_posts_in(fake, t) for t in threads),
                     "each DM told that it waits")
        for ts in threads:
            assert _posts_in(fake, ts) == [WAITING], _posts_in(fake, ts)
        await asyncio.sleep(3)  # a few tries while it stays down: still told once, no note
        assert all(len(_posts_in(fake, t)) == 1 for t in threads)
        assert _notes(vault_root) == before
        assert (await server.send.health())["ok"] is False

        _writable(vault_root, True)
        await _health(server, ok=True)
        await _until(lambda: all(len(_posts_in(fake, t)) == 2 for t in threads),
                     "each waiting DM answered once storage was back")
        await rs.idle([server])

        # Only the person's own folder refuses writes: the probe of the root passes, the turn
        # runs and its capture is refused mid-turn; it waits all the same.
        _writable(vault_root / USER, False)
        assert (await server.send.health())["ok"] is True
        status, _ = await server.send.event(message_event(MID_TURN, ts=MID_TS,
                                                          event_id="EvROmid"))
        assert status == 200
        await _until(lambda: _posts_in(fake, MID_TS), "the mid-turn DM told that it waits")
        assert _posts_in(fake, MID_TS) == [WAITING]
        _writable(vault_root, True)
        await _until(lambda: len(_posts_in(fake, MID_TS)) == 2, "the mid-turn DM answered")
        await rs.idle([server])
        assert await rs.stop(server) == 0
    finally:
        _writable(vault_root, True)
        await rs.close_all([server])
        await fake.stop()
    notes = _notes(vault_root)
    for text, ts in zip([*texts, MID_TURN], [*threads, MID_TS], strict=True):
        assert sum(text in note for note in notes) == 1, text  # filed once
        told, answer = _posts_in(fake, ts)
        assert told == WAITING
        assert "went wrong" not in answer and "send it again" not in answer, answer
    assert "Traceback" not in server.log_text(), server.log_text()[-3000:]


@pytest.mark.sqlite_only
async def test_a_database_file_deleted_while_serving_is_reported(place: Path) -> None:
    fake = await FakeSlack().start()
    server = await rs.start("server", _env(place, fake, None), place, _as_server())
    try:
        await rs.wait_healthy(server)
        assert (await server.send.health())["ok"] is True
        (place / "data" / "brain.db").unlink()
        body = await _health(server, ok=False)
        assert "brain.db" in body["storage"]["database"] and "gone" in \
            body["storage"]["database"], body
        assert "vault" not in body["storage"]
    finally:
        await rs.close_all([server])
        await fake.stop()


def _doctor(base: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*_as_server(), sys.executable, "-m", "bot.cli", "doctor",
                           "--offline"], env=env, cwd=base, capture_output=True, text=True,
                          timeout=120, check=False)


async def test_doctor_fails_on_a_vault_or_database_that_cannot_be_written(
        tmp_path: Path, place: Path) -> None:
    fake = await FakeSlack().start()
    try:
        env = _env(place, fake, _database(tmp_path))
        done = await asyncio.to_thread(_doctor, place, env)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "Vault writes" in done.stdout and "Database writes" in done.stdout

        vault_root = place / "data" / "vaults"
        _writable(vault_root, False)
        if not on_postgres():  # and a read-only SQLite file
            (place / "data" / "brain.db").chmod(0o444)
        done = await asyncio.to_thread(_doctor, place, env)
        assert done.returncode == 1, done.stdout
        assert "Traceback" not in done.stdout + done.stderr
        lines = {name: next(x for x in done.stdout.splitlines() if name in x)
                 for name in ("Vault writes", "Database writes")}
        assert lines["Vault writes"].startswith("FAIL"), done.stdout
        assert "cannot be written" in lines["Vault writes"], done.stdout
        if not on_postgres():
            assert lines["Database writes"].startswith("FAIL"), done.stdout
            assert "readonly" in lines["Database writes"], done.stdout
    finally:
        await fake.stop()
