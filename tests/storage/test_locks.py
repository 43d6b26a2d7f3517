"""The machine's vault lock between real processes: fair under contention (a process that
releases and has its next writer queued does not take it again while another process waits),
a timeout when another process holds it, freed when its holder is killed, and nothing held
after a waiter gives up (timeout or cancellation)."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from pathlib import Path

import pytest

from storage.vault.locks import LockTimeout, vault_lock

REPO = Path(__file__).resolve().parents[2]

# Writers of one process queue in-process (write_lock) and take the machine lock in a tight
# loop until told to stop. Reports how often it held the lock and its longest stretch
# without it while its writers wanted it (i.e. waiting for the other process).
CONTENDER = """
import asyncio, json, sys, time
from pathlib import Path
from storage.vault.locks import write_lock

async def main(root, seconds, writers):
    print("ready", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    end = time.monotonic() + seconds
    held, longest, released = 0, 0.0, time.monotonic()

    async def writer():
        nonlocal held, longest, released
        while time.monotonic() < end:
            async with write_lock(root):
                longest = max(longest, time.monotonic() - released)
                held += 1
                await asyncio.sleep(0.001)  # the write
                released = time.monotonic()

    await asyncio.gather(*(writer() for _ in range(writers)))
    print(json.dumps({"held": held, "longest_wait": longest}), flush=True)

asyncio.run(main(Path(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])))
"""

# Holds the lock from "held" until a line arrives on stdin (or it is killed).
HOLDER = """
import asyncio, sys
from pathlib import Path
from storage.vault.locks import vault_lock

async def main(root):
    async with vault_lock(root):
        print("held", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)

asyncio.run(main(Path(sys.argv[1])))
"""

# Takes the lock once within 3 s, or fails.
PROBE = """
import asyncio, sys
from pathlib import Path
from storage.vault.locks import vault_lock

async def main(root):
    async with vault_lock(root, timeout=3):
        print("got it", flush=True)

asyncio.run(main(Path(sys.argv[1])))
"""


async def _python(script: str, *args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, *args, cwd=REPO, stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)


async def _holder(root: Path) -> asyncio.subprocess.Process:
    proc = await _python(HOLDER, str(root))
    assert proc.stdout is not None
    assert (await proc.stdout.readline()).strip() == b"held"
    return proc


async def _release(proc: asyncio.subprocess.Process) -> None:
    assert proc.stdin is not None
    proc.stdin.write(b"go\n")
    await proc.stdin.drain()
    assert await proc.wait() == 0


async def _probe_takes_it(root: Path) -> None:
    probe = await _python(PROBE, str(root))
    out, err = await probe.communicate()
    assert probe.returncode == 0 and out.strip() == b"got it", err.decode()[-2000:]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    vault = tmp_path / "vault"
    vault.mkdir()
    return vault


async def test_two_busy_processes_share_the_lock_fairly(root: Path) -> None:
    seconds = 4.0
    procs = [await _python(CONTENDER, str(root), str(seconds), "3") for _ in range(2)]
    for proc in procs:
        assert proc.stdout is not None
        assert (await proc.stdout.readline()).strip() == b"ready"
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write(b"go\n")
    results = [await proc.communicate() for proc in procs]
    for proc, (_, err) in zip(procs, results, strict=True):
        assert proc.returncode == 0, err.decode()[-2000:]  # a LockTimeout fails here
    reports = [json.loads(out) for out, _ in results]
    total = sum(r["held"] for r in reports)
    assert total > 100, reports
    for report in reports:
        # Before, the process that released re-took the lock for its own next writer while
        # the other slept between polls: one got ~3/4 of it, the other waited over 2 s.
        assert report["held"] >= total / 3, reports
        assert report["longest_wait"] < 1.0, reports  # alternating: ~15 ms here
    assert list(root.iterdir()) == []  # the lock files live outside the vault


async def test_a_lock_held_by_another_process_times_out(root: Path) -> None:
    holder = await _holder(root)
    try:
        start = time.monotonic()
        with pytest.raises(LockTimeout, match="busy"):
            async with vault_lock(root, timeout=0.5):
                pass
        assert 0.45 <= time.monotonic() - start < 3
    finally:
        await _release(holder)
    async with vault_lock(root, timeout=3):
        pass


async def test_a_holder_killed_with_sigkill_frees_the_lock(root: Path) -> None:
    holder = await _holder(root)
    waiting = asyncio.create_task(_hold_briefly(root, timeout=10))
    await asyncio.sleep(0.3)
    assert not waiting.done()
    killed = time.monotonic()
    holder.kill()
    await holder.wait()
    await waiting
    assert time.monotonic() - killed < 2


async def _hold_briefly(root: Path, timeout: float) -> None:
    async with vault_lock(root, timeout=timeout):
        await asyncio.sleep(0)


def _waiter_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "vault-lock-wait"]


async def test_a_waiter_that_gives_up_leaves_nothing_held(root: Path) -> None:
    holder = await _holder(root)
    try:
        cancelled = asyncio.create_task(_hold_briefly(root, timeout=30))
        await asyncio.sleep(0.2)
        cancelled.cancel()
        with pytest.raises(asyncio.CancelledError):
            await cancelled
        with pytest.raises(LockTimeout):
            await _hold_briefly(root, timeout=0.3)
        assert _waiter_threads()  # still blocked in flock, until the holder lets go
    finally:
        await _release(holder)
    # The abandoned waits took the lock when it came free and closed it at once: another
    # process and this one take it, and no waiting thread is left behind.
    await _probe_takes_it(root)
    await _hold_briefly(root, timeout=3)
    for _ in range(100):
        if not _waiter_threads():
            break
        await asyncio.sleep(0.02)
    assert not _waiter_threads()
