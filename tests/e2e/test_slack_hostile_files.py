"""Small files that cost minutes of CPU or gigabytes of memory to read (issue 31), through a
real `brain serve --http` with signed requests against the fake Slack: while one person's
eight hostile files are read, another person's plain DM, sent meanwhile, is answered within
5 × its time alone (measured in the same run; that time is a tenth of a second, which a
shared machine's load alone can multiply by five, so never less than FLOOR seconds, the issue's
own floor for a flood: before issue 31 that DM waited over 300 s); every hostile file's note
is filed and its reply says it was too large to read safely; the serving process does not
balloon, and no reader process passes 1 GB. The files are made here."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time
from pathlib import Path

import pytest

from tests.databases import database_env
from tests.e2e.fake_slack import FakeSlack
from tests.e2e.processes import children
from tests.e2e.slack_harness import OTHER_USER, SECRET, USER, SlackSender, message_event
from tests.e2e.test_slack_files import with_files
from tests.e2e.test_slack_serve import brain, clean_env, fake, free_port, stop, wait_healthy
from tests.hostile_files import docx_bomb, flac_bomb, pdf_bomb, png_bomb

__all__ = ["fake"]  # the fixture
pytestmark = pytest.mark.slow

THEIR_DM = "D0SBDM002"  # the other person's DM with the bot
HOSTILE = {"plan.pdf": pdf_bomb, "minutes.docx": docx_bomb, "board.png": png_bomb,
           "memo.flac": flac_bomb}
GUARD_MB = 2048  # the serving process past this: the test ends it (and fails)
FLOOR = 5.0


def _mb(pid: int, field: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) // 1024
    except OSError:
        pass
    return 0


class Watch:
    """The serving process's and its readers' peak memory, seen every 50 ms (a reader's
    VmHWM is its current file's peak: tools/readers/worker.py clears it per file)."""

    def __init__(self, pid: int) -> None:
        self.pid, self.readers_mb, self.ballooned = pid, 0, False
        self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        while True:
            for reader in children(self.pid):
                self.readers_mb = max(self.readers_mb, _mb(reader, "VmHWM"))
            if _mb(self.pid, "VmRSS") > GUARD_MB:
                self.ballooned = True
                with contextlib.suppress(OSError):
                    os.kill(self.pid, signal.SIGKILL)
                return
            await asyncio.sleep(0.05)

    async def stop(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


async def _reply(fake: FakeSlack, channel: str, ts: str, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        for call in fake.calls_to("chat.postMessage"):
            if call.body.get("channel") == channel and call.body.get("thread_ts") == ts:
                return call.body
        assert time.monotonic() < deadline, f"no reply to {ts} in {timeout} s"
        await asyncio.sleep(0.02)


async def _their_dm(fake: FakeSlack, send: SlackSender, n: int) -> float:
    """Seconds from the other person's plain DM to its answer."""
    ts = f"17673100{n:02d}.000100"
    started = time.monotonic()
    event = message_event(f"Idea {n}: a reading corner in the office", ts=ts,
                          event_id=f"EvB{n}", user=OTHER_USER, channel=THEIR_DM)
    assert (await send.event(event))[0] == 200
    await _reply(fake, THEIR_DM, ts, timeout=120)
    return time.monotonic() - started


async def test_hostile_files_neither_stall_another_persons_dm_nor_balloon_the_server(
        fake: FakeSlack, tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = clean_env(SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET=SECRET,
                    SLACK_API_URL=fake.api_url, BRAIN_DATA_DIR=str(tmp_path / "data"),
                    BRAIN_LLM="offline", BRAIN_LOG_LEVEL="WARNING", **database_env(tmp_path))
    shared = []
    for i, (name, make) in enumerate(HOSTILE.items()):
        data = make()
        shared += [fake.share_file(f"FH{i}a", name, data), fake.share_file(f"FH{i}b", name, data)]
    proc = await brain("serve", "--http", "--host", "127.0.0.1", "--port", str(port),
                       env=env, cwd=tmp_path)
    drain = asyncio.create_task(proc.stderr.read()) if proc.stderr else None
    send = SlackSender(url)
    watch: Watch | None = None
    try:
        await wait_healthy(url, proc)
        await _their_dm(fake, send, 0)  # the first turn loads what every turn needs
        alone = sorted([await _their_dm(fake, send, n) for n in (1, 2, 3)])[1]  # the median
        server_before = _mb(proc.pid, "VmHWM")
        watch = Watch(proc.pid)

        sent = []
        for i, file in enumerate(shared):
            ts = f"17673200{i:02d}.000100"
            event = with_files("Project Phoenix: launch notes", [file], ts=ts,
                               event_id=f"EvH{i}")
            assert (await send.event(event))[0] == 200
            sent.append((ts, file["name"]))
        meanwhile = await _their_dm(fake, send, 4)
        answered = [ts for ts, _ in sent if any(
            c.body.get("thread_ts") == ts for c in fake.calls_to("chat.postMessage"))]
        assert len(answered) < len(sent), "the DM was not sent while files were being read"
        assert meanwhile <= max(5 * alone, FLOOR), (
            f"{meanwhile:.2f} s with the files, {alone:.2f} s alone")

        for ts, name in sent:
            reply = json.dumps(await _reply(fake, "D0SBDM001", ts, timeout=180))
            assert f"Could not read {name}: " in reply and "too large to read safely" in reply
        vault = tmp_path / "data" / "vaults" / USER
        notes = [p.read_text(encoding="utf-8") for p in (vault / "projects").glob("*.md")]
        assert len(notes) == len(sent)
        assert all("_Could not read it: " in n and "too large to read safely (" in n
                   for n in notes)
        assert not watch.ballooned, "the serving process passed 2 GB"
        assert _mb(proc.pid, "VmHWM") - server_before < 256, "the serving process ballooned"
        assert watch.readers_mb < 1024, f"a reader reached {watch.readers_mb} MB"
    finally:
        if watch is not None:
            await watch.stop()
        await send.close()
        if proc.returncode is None:
            await stop(proc)
        if drain is not None:
            await drain
