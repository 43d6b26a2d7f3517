"""A machine lost in the middle of its turns (issue 34): its work is taken up within seconds by
a replica on another machine, not when its leases run out. The lost machine is a `brain serve
--http` in a process namespace of its own (`unshare --pid`: its own pids and /proc, so its
processes are of another place, as on another machine; bot/jobs/owners.py), killed with
SIGKILL while the model holds its turns; the other replica learns it is gone from its
connections to PostgreSQL (none at two looks: storage/repositories/fencing.py `unconnected`)."""

from __future__ import annotations

import asyncio
import functools
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from sqlalchemy import func, select, text

from bot.jobs.owners import elsewhere
from storage.db import Database
from storage.models import Job
from tests.bot.fake_llm_server import FakeLLMServer
from tests.databases import postgres_url
from tests.e2e import replicas as rs
from tests.e2e.fake_slack import FakeSlack
from tests.e2e.slack_harness import SECRET, USER, message_event
from tests.e2e.test_database_store import _machine, _thought, third
from tests.e2e.test_slack_serve import clean_env, fake
from tests.shared import patience

__all__ = ["fake"]  # the fixture

pytestmark = pytest.mark.postgres_only

LEASE = 90  # seconds: long, so that work taken up before it ran out was not freed by it


@functools.cache
def another_machine() -> tuple[str, ...] | None:
    """The command that runs a process as on another machine (its own pid namespace and
    /proc; killed with its parent), or None where this kernel does not allow it."""
    if shutil.which("unshare") is None:
        return None
    base = ("unshare", "--pid", "--fork", "--mount-proc", "--kill-child")
    if os.geteuid() != 0:
        base = (base[0], "--user", "--map-root-user", *base[1:])
    probe = subprocess.run([*base, "true"], capture_output=True, check=False)
    return base if probe.returncode == 0 else None


async def _up_for(url: str) -> float:
    db = await Database.open(url)
    try:
        async with db.session() as s:
            return float(await s.scalar(text(
                "SELECT extract(epoch FROM now() - pg_postmaster_start_time())")) or 0)
    finally:
        await db.close()


async def _running_elsewhere(url: str) -> int:
    """Jobs running now under an owner of another place (the namespaced replica)."""
    db = await Database.open(url)
    try:
        async with db.session() as s:
            owners = (await s.scalars(select(Job.lease_owner).where(
                Job.state == "running"))).all()
    finally:
        await db.close()
    return sum(1 for o in owners if o and elsewhere(o))


async def _taken_over(url: str) -> int:
    db = await Database.open(url)
    try:
        async with db.session() as s:
            return int(await s.scalar(select(func.count()).where(Job.attempts > 1)) or 0)
    finally:
        await db.close()


async def test_a_machine_lost_mid_turn_has_its_work_taken_up_before_its_leases_run_out(
        fake: FakeSlack, llm: FakeLLMServer, tmp_path: Path) -> None:
    wrapper = another_machine()
    if wrapper is None:
        pytest.skip("this kernel runs no process in a pid namespace of its own (unshare)")
    url = postgres_url(tmp_path)
    # Absence counts only once the server has been up a lease (after a restart, leases alone
    # decide): wait for that on a young test server.
    while (up := await _up_for(url)) < LEASE:
        await asyncio.sleep(min(LEASE - up, 5))
    started = []
    for name, wrap in (("lost", wrapper), ("kept", ())):
        env = clean_env(SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET=SECRET,
                        SLACK_API_URL=fake.api_url, OPENAI_API_KEY="sk-test",
                        OPENAI_BASE_URL=llm.openai_base_url, BRAIN_LLM_MAX_RETRIES="0",
                        **_machine(tmp_path / name, url, BRAIN_JOB_LEASE_SECONDS=str(LEASE),
                                   BRAIN_LLM="openai", BRAIN_USER_RUNNING="0",
                                   BRAIN_USER_RATE="0"))
        started.append(await rs.start(name, env, tmp_path / name, wrapper=wrap))
    lost, kept = started
    try:
        await asyncio.gather(*(rs.wait_healthy(r) for r in started))
        llm.hold()  # the turns wait for the model: the machine is lost in the middle of them
        for i in range(8):
            status, _ = await lost.send.event(message_event(
                _thought(i), ts=f"17678{i:03d}00.000100", event_id=f"EvML{i:04d}"))
            assert status == 200
        deadline = time.monotonic() + patience(30)
        while not await _running_elsewhere(url):
            assert time.monotonic() < deadline, "the lost machine took no turn"
            await asyncio.sleep(0.05)
        await rs.kill(lost)  # its namespace's processes go with it
        killed = time.monotonic()
        llm.release()
        await fake.wait_for("chat.postMessage", 8, timeout=LEASE * 3)
        answered = time.monotonic() - killed
        # Its leases were renewed at most a third of a lease before the kill: they ran out
        # two thirds of a lease after it at the earliest.
        assert answered < LEASE * 2 / 3, (answered, kept.log_text()[-3000:])
        assert await _taken_over(url) >= 1
        await rs.idle([kept], timeout=120)
    finally:
        await rs.close_all(started)
    threads = sorted(str(c.body.get("thread_ts")) for c in fake.calls_to("chat.postMessage"))
    assert threads == [f"17678{i:03d}00.000100" for i in range(8)]  # each answered once
    listed = third(tmp_path, url, "list", "--user", USER, "--json", "--limit", "50")
    entries = json.loads(listed.out)["entries"]
    for i in range(8):  # each filed once
        assert sum(f"{i:02d}" in e["name"] for e in entries) == 1, sorted(
            e["name"] for e in entries)
