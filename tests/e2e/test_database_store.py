"""The database store across machines (issue 34): two `brain serve --http` replicas and a third
machine for the CLI, each with a data directory, a vault root and a temp directory of its own,
sharing nothing but PostgreSQL (`BRAIN_STORE=database`). A burst of DMs spread over both
replicas is listed, searched, shown and undone from the third machine; a replica killed with
SIGKILL in the middle of its captures leaves every acknowledged DM filed once, seen from the
third machine, and no note half sent; a replica stalled past its leases (SIGSTOP, then SIGCONT
once the other replica has done its work) files nothing a second time and answers nothing
twice."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.bot.fake_llm_server import FakeLLMServer
from tests.brain_cli import Result, run_process
from tests.databases import postgres_url
from tests.e2e import replicas as rs
from tests.e2e.fake_slack import FakeSlack
from tests.e2e.processes import children
from tests.e2e.slack_harness import SECRET, USER, message_event
from tests.e2e.test_slack_serve import clean_env, fake
from tests.shared import ids_on_disk, patience

__all__ = ["fake"]  # the fixture

pytestmark = pytest.mark.postgres_only


def _machine(base: Path, url: str, **extra: str) -> dict[str, str]:
    """A machine's settings: its own data directory and temp directory, the shared database."""
    (base / "tmp").mkdir(parents=True, exist_ok=True)
    return {"BRAIN_DATA_DIR": str(base / "data"), "TMPDIR": str(base / "tmp"),
            "DATABASE_URL": url, "BRAIN_STORE": "database", "BRAIN_LLM": "offline",
            "BRAIN_LOG_LEVEL": "WARNING", **extra}


@pytest.fixture
async def two_replicas(fake: FakeSlack, llm: FakeLLMServer, tmp_path: Path,
                       ) -> AsyncIterator[tuple[list[rs.Replica], str]]:
    url = postgres_url(tmp_path)
    started = []
    for name in ("one", "two"):
        env = clean_env(SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET=SECRET,
                        SLACK_API_URL=fake.api_url, OPENAI_API_KEY="sk-test",
                        OPENAI_BASE_URL=llm.openai_base_url, BRAIN_LLM_MAX_RETRIES="0",
                        **_machine(tmp_path / name, url, BRAIN_JOB_LEASE_SECONDS="8",
                                   BRAIN_LLM="openai", BRAIN_USER_RUNNING="0",
                                   BRAIN_USER_RATE="0"))
        started.append(await rs.start(name, env, tmp_path / name))
    try:
        await asyncio.gather(*(rs.wait_healthy(r) for r in started))
        yield started, url
    finally:
        await rs.close_all(started)


def third(tmp_path: Path, url: str, *argv: str) -> Result:
    """The CLI on a third machine (nothing of the replicas' but the database)."""
    env = _machine(tmp_path / "three", url, BRAIN_CLI_LOCAL="1")
    return run_process(tmp_path / "three", *argv, env=env, timeout=patience(120))


def _thought(i: int) -> str:
    return f"Idea {i:02d}: a rooftop garden with bees"


async def test_a_burst_over_two_replicas_is_listed_searched_and_undone_elsewhere(
        fake: FakeSlack, two_replicas: tuple[list[rs.Replica], str], tmp_path: Path) -> None:
    replicas, url = two_replicas
    lb = rs.LoadBalancer(replicas)
    for i in range(12):
        await lb.deliver(message_event(_thought(i), ts=f"17675{i:03d}00.000100",
                                       event_id=f"EvDB{i:04d}"))
    assert set(lb.acked_by) == {"one", "two"}  # both took a share
    await fake.wait_for("chat.postMessage", 12, timeout=120)
    await rs.idle(replicas)

    listed = third(tmp_path, url, "list", "--user", USER, "--json", "--limit", "50")
    assert listed.code == 0, listed.err
    names = {e["name"] for e in json.loads(listed.out)["entries"]}
    assert all(any(f"Idea {i:02d}" in n or f"{i:02d}" in n for n in names)
               for i in range(12)), names
    found = third(tmp_path, url, "search", "--user", USER, "--json", "bees rooftop")
    assert found.code == 0 and json.loads(found.out)["entries"], found.err
    shown = third(tmp_path, url, "show", "--user", USER, json.loads(found.out)["entries"][0]["path"])
    assert shown.code == 0 and "bees" in shown.out
    history = third(tmp_path, url, "history", "--user", USER, "--json")
    assert history.code == 0, history.err
    changes = json.loads(history.out)
    created = [c for c in changes if c["action"] == "create"]
    assert len(created) == 12
    undone = third(tmp_path, url, "undo", "--user", USER, "--json", created[0]["id"])
    assert undone.code == 0, undone.err
    after = third(tmp_path, url, "list", "--user", USER, "--json", "--limit", "50")
    assert len(json.loads(after.out)["entries"]) == 11
    # the replicas' own mirrors follow (the next write there pulls it first)
    await lb.deliver(message_event("Idea 99: a bench by the pond", ts="1767599900.000100",
                                   event_id="EvDB9999"))
    await fake.wait_for("chat.postMessage", 13, timeout=120)
    await rs.idle(replicas)
    final = third(tmp_path, url, "list", "--user", USER, "--json", "--limit", "50")
    assert len(json.loads(final.out)["entries"]) == 12
    mirrors = [ids_on_disk(tmp_path / name / "data" / "vaults" / USER)
               for name in ("one", "two", "three")]
    assert all(all(len(paths) == 1 for paths in m.values()) for m in mirrors)


async def test_a_replica_killed_mid_burst_leaves_every_acked_dm_filed_once(
        fake: FakeSlack, llm: FakeLLMServer, two_replicas: tuple[list[rs.Replica], str],
        tmp_path: Path) -> None:
    replicas, url = two_replicas
    victim = replicas[0]
    lb = rs.LoadBalancer(replicas)
    for i in range(6):
        await lb.deliver(message_event(_thought(i), ts=f"17676{i:03d}00.000100",
                                       event_id=f"EvDK{i:04d}"))
    # the victim in the middle of its turns: the model's answers held back until it runs
    # some, so the kill cuts them off (their jobs are taken over when the leases run out)
    llm.hold()
    for i in range(6, 12):
        await lb.deliver(message_event(_thought(i), ts=f"17676{i:03d}00.000100",
                                       event_id=f"EvDK{i:04d}"))
    deadline = asyncio.get_running_loop().time() + patience(30)
    while not await rs.running_jobs_of(url, victim):
        assert asyncio.get_running_loop().time() < deadline, "the victim took no turn"
        await asyncio.sleep(0.05)
    await rs.kill(victim)  # as a machine dies
    victim.in_rotation = False
    llm.release()
    for i in range(12, 16):
        await lb.deliver(message_event(_thought(i), ts=f"17676{i:03d}00.000100",
                                       event_id=f"EvDK{i:04d}"))
    await rs.idle([replicas[1]], timeout=180)
    listed = third(tmp_path, url, "list", "--user", USER, "--json", "--limit", "50")
    assert listed.code == 0, listed.err
    entries = json.loads(listed.out)["entries"]
    for i in range(16):  # every acknowledged thought filed, once
        assert sum(f"{i:02d}" in e["name"] for e in entries) == 1, (i, sorted(
            e["name"] for e in entries))
    on_disk = ids_on_disk(tmp_path / "three" / "data" / "vaults" / USER)
    assert len(on_disk) == 16 and all(len(paths) == 1 for paths in on_disk.values()), on_disk


def _signal_all(replica: rs.Replica, sig: signal.Signals) -> None:
    """`sig` to the replica and its `--workers` helpers, as a machine that freezes or thaws."""
    for pid in (replica.pid, *children(replica.pid)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def _stopped_jobs(log: str) -> set[str]:
    """The jobs a worker's log says it stopped because another worker had taken them."""
    return set(re.findall(r"job (\S+): (?:lease lost|taken over by another worker)", log))


async def test_a_replica_stalled_past_its_leases_files_and_answers_nothing_twice(
        fake: FakeSlack, llm: FakeLLMServer, two_replicas: tuple[list[rs.Replica], str],
        tmp_path: Path) -> None:
    replicas, url = two_replicas
    victim, other = replicas
    llm.hold()  # the turns wait for the model: the freeze comes in the middle of them
    lb = rs.LoadBalancer(replicas)
    for i in range(8):
        await lb.deliver(message_event(_thought(i), ts=f"17677{i:03d}00.000100",
                                       event_id=f"EvDS{i:04d}"))
    deadline = asyncio.get_running_loop().time() + patience(30)
    while not (stalled := await rs.running_jobs_of(url, victim)):
        assert asyncio.get_running_loop().time() < deadline, "the victim took no turn"
        await asyncio.sleep(0.05)
    _signal_all(victim, signal.SIGSTOP)
    try:
        llm.release()  # the frozen replica's answers wait in its sockets
        # The other replica takes the frozen one's jobs when their leases (8 s) run out, and
        # ends the transactions the victim froze in (a conversation's new row, frozen between
        # two statements, held its key against the same turn run again: 2 DMs of 8 waited
        # for the thaw before; storage/repositories/fencing.py).
        await fake.wait_for("chat.postMessage", 8, timeout=240)
        await rs.idle([other], timeout=120)
    finally:
        _signal_all(victim, signal.SIGCONT)
    # Thawed, the victim reads its model's answers, then learns its leases are gone.
    deadline = asyncio.get_running_loop().time() + patience(60)
    while len(_stopped_jobs(victim.log_text())) < stalled:
        assert asyncio.get_running_loop().time() < deadline, victim.log_text()[-3000:]
        await asyncio.sleep(0.1)
    await rs.wait_healthy(victim)  # it serves on, and its own work is over
    await rs.idle(replicas)
    threads = sorted(str(c.body.get("thread_ts")) for c in fake.calls_to("chat.postMessage"))
    assert threads == [f"17677{i:03d}00.000100" for i in range(8)]  # each answered once
    listed = third(tmp_path, url, "list", "--user", USER, "--json", "--limit", "50")
    assert listed.code == 0, listed.err
    entries = json.loads(listed.out)["entries"]
    for i in range(8):  # each filed once
        assert sum(f"{i:02d}" in e["name"] for e in entries) == 1, (i, sorted(
            e["name"] for e in entries))
    on_disk = ids_on_disk(tmp_path / "three" / "data" / "vaults" / USER)
    assert len(on_disk) == 8 and all(len(paths) == 1 for paths in on_disk.values()), on_disk
