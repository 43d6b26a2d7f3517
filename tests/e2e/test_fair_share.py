"""Issue 31.3: one person's flood does not delay everyone else, and is limited.

A real `brain serve --http` (one process, the offline model, the suite's database) and the fake
Slack Web API. Another person's DM is timed alone; then one person sends 400 DMs at once and,
once they are all acknowledged, the other person sends one more: it is answered within 5 times
its time alone (or 5 s), long before the flood is through. Every one of the 400 is answered
once (the thoughts among them filed once), later: nothing is lost; and the person who flooded
gets one "slow down" DM.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.databases import database_env
from tests.e2e import replicas as rs
from tests.e2e.fake_slack import FakeSlack
from tests.e2e.slack_harness import OTHER_USER, SECRET, USER, message_event
from tests.e2e.test_slack_serve import clean_env

FLOOD = 400
RATE = "100/5s"  # the flood passes it at once; the short period keeps the test short
OTHER_DM = "D0SBDM002"
SENDERS = 32  # connections the flood is sent over at once


def _flood_text(i: int) -> str:
    """Every 50th a thought to file, the rest small talk: each runs a turn and asks the
    model (the offline one: no time waiting on a network), the thoughts write a note too."""
    if i % 50 == 0:
        return f"Remember to order lantern part number {i:03d} for the workshop"
    return "thanks!"


def _flood_ts(i: int) -> str:
    return f"17675{i:05d}.000100"


def _replies_in(fake: FakeSlack, thread: str) -> list[str]:
    return [str(c.body.get("text")) for c in fake.calls_to("chat.postMessage")
            if c.body.get("thread_ts") == thread]


async def _answered(fake: FakeSlack, thread: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not _replies_in(fake, thread):
        assert time.monotonic() < deadline, f"no reply in thread {thread} in {timeout:.0f} s"
        await asyncio.sleep(0.02)


async def _other_alone(server: rs.Replica, fake: FakeSlack, n: int) -> float:
    """Seconds from the other person's DM to its answer."""
    ts = f"17676{n:05d}.000100"
    event = message_event(f"Idea number {n}: a reading corner by the window", ts=ts,
                          event_id=f"EvOther{n}", user=OTHER_USER, channel=OTHER_DM)
    began = time.monotonic()
    status, _ = await server.send.event(event)
    assert status == 200
    await _answered(fake, ts, timeout=60)
    return time.monotonic() - began


@pytest.mark.slow
async def test_a_flood_of_dms_does_not_delay_another_person(tmp_path: Path) -> None:
    fake = await FakeSlack().start()
    env = clean_env(SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET=SECRET,
                    SLACK_API_URL=fake.api_url, BRAIN_DATA_DIR=str(tmp_path / "data"),
                    BRAIN_LLM="offline", BRAIN_USER_RATE=RATE, BRAIN_LOG_LEVEL="WARNING",
                    **database_env(tmp_path))
    server = await rs.start("server", env, tmp_path)
    try:
        await rs.wait_healthy(server)
        await _other_alone(server, fake, 0)  # warm: the first turn loads the turn machinery
        alone = sorted([await _other_alone(server, fake, n) for n in (1, 2, 3)])[1]

        gate = asyncio.Semaphore(SENDERS)

        async def send(i: int) -> int:
            async with gate:
                status, _ = await server.send.event(message_event(
                    _flood_text(i), ts=_flood_ts(i), event_id=f"EvFlood{i:04d}"))
                return status

        statuses = await asyncio.gather(*(send(i) for i in range(FLOOD)))
        assert statuses == [200] * FLOOD  # every one acknowledged
        flooded = time.monotonic()
        during = await _other_alone(server, fake, 4)
        answered_then = sum(bool(_replies_in(fake, _flood_ts(i))) for i in range(FLOOD))
        assert during <= max(5 * alone, 5.0), (during, alone, answered_then)
        assert answered_then < FLOOD // 2, "the flood was through before the other DM"

        deadline = time.monotonic() + 600
        while sum(bool(_replies_in(fake, _flood_ts(i))) for i in range(FLOOD)) < FLOOD:
            assert time.monotonic() < deadline, "the flood was not all answered"
            await asyncio.sleep(0.2)
        await rs.idle([server], timeout=60)
        through = time.monotonic() - flooded
        assert server.log_text().count("Traceback") == 0, server.log_text()[-3000:]
    finally:
        await rs.close_all([server])
        await fake.stop()

    for i in range(FLOOD):  # answered once each, with its note, never an apology
        (reply,) = _replies_in(fake, _flood_ts(i))
        assert "went wrong" not in reply and "send it again" not in reply, reply
    vault = tmp_path / "data" / "vaults" / USER
    thoughts = range(0, FLOOD, 50)
    filed = Counter(i for p in vault.rglob("*.md") for i in thoughts
                    if _flood_text(i) in p.read_text(encoding="utf-8"))
    assert filed == Counter(thoughts), "each thought of the flood filed exactly once"
    told = [c for c in fake.calls_to("chat.postMessage") if "faster than" in
            json.dumps(c.body)]
    assert len(told) == 1 and told[0].body["channel"] == USER, told  # once, to them alone
    print(f"\nother person alone {alone:.2f} s, during a {FLOOD}-DM flood {during:.2f} s "
          f"({answered_then} of the flood answered by then); the flood answered in "
          f"{through:.0f} s")
