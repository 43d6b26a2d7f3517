"""Many people, one replica (issue 34): what a process holding N people who each wrote once
costs when nobody writes, and whether a capture is slower than with a few people.

The bot in process (the real Bolt app over HTTP, the real Brain, the offline model: an
instant one), a fake Slack (tests/e2e/fake_slack.py, which says every person is in Tokyo),
the digest and reminder schedulers running with a shortened tick (`--tick`, 60 s in
`brain serve`), so an idle window of W seconds holds 60 W / tick seconds of their work.

    .venv/bin/python bench/bench_people.py --people 10000 [--db sqlite|postgres]
        [--store files|database] [--idle 120] [--tick 1] [--meaning] [--morning]

Phases: (1) N DMs, one per person, 16 in flight; (2) an idle window: the process's CPU time
(all its threads; the fake Slack's answers to the schedulers' users.info are in it) and
resident memory, sampled every `--idle / 10` seconds; then, with the schedulers back at
`brain serve`'s 60 s tick, (3) captures by people who wrote already, one after another: 20
by the people who wrote last (their Stores open), then 20 spread over everyone (with many
people, mostly Stores opened again), the send-to-reply time of each (`--profile FILE`: a
cProfile of this phase), and (4) a second idle window. Without `--meaning` the
embedding model is off (its one-time work on N new notes is not the idle cost).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from aiohttp.test_utils import TestServer  # noqa: E402

from bot.brain import Brain  # noqa: E402
from bot.slack.app import SlackBot  # noqa: E402
from storage.meaning.shared_model import Meaning  # noqa: E402
from tests import databases  # noqa: E402
from tests.e2e.bot_harness import make_settings  # noqa: E402
from tests.e2e.fake_slack import FakeSlack  # noqa: E402
from tests.e2e.slack_harness import SlackSender, message_event  # noqa: E402

IN_FLIGHT = 16
TEXTS = ("Call {n} about the Q3 budget next week", "Idea: a podcast about gardening #{n}",
         "Project {n}: migrate the wiki, next action draft the plan",
         "Renew passport {n} before March")


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def person(i: int) -> str:
    return f"U{i:08d}"


async def fill(send: SlackSender, fake: FakeSlack, people: int) -> float:
    """One DM from each person, IN_FLIGHT at a time; seconds until every reply is posted."""
    began, limit = time.monotonic(), asyncio.Semaphore(IN_FLIGHT)
    base = len(fake.calls_to("chat.postMessage"))

    async def one(i: int) -> None:
        async with limit:
            status, _ = await send.event(message_event(
                TEXTS[i % 4].format(n=i), user=person(i), ts=f"17670{i:05d}.000100",
                event_id=f"Ef{i}"))
            assert status == 200, status

    for start in range(0, people, 500):  # a chunk acked, then answered, then the next
        done = min(start + 500, people)
        await asyncio.gather(*(one(i) for i in range(start, done)))
        await fake.wait_for("chat.postMessage", base + done, timeout=600)
        print(f"  {done}/{people} people wrote, {time.monotonic() - began:.0f} s", flush=True)
    return time.monotonic() - began


async def captures(send: SlackSender, fake: FakeSlack, people: list[int],
                   tag: str) -> list[float]:
    """A capture by each of `people` (who wrote already), one after another: ms from send to
    reply."""
    times = []
    for k, who in enumerate(people):
        before = len(fake.calls_to("chat.postMessage"))
        began = time.perf_counter()
        await send.event(message_event(f"Follow up with Dana {k} about the lease on Friday",
                                       user=person(who), ts=f"1768{tag}{k:05d}.000100",
                                       event_id=f"Ec{tag}{k}"))
        await fake.wait_for("chat.postMessage", before + 1, timeout=120)
        times.append(1000 * (time.perf_counter() - began))
    return times


def who_wrote(people: int, n: int = 20) -> tuple[list[int], list[int]]:
    """`n` people who wrote last (their Stores still open: the LRU keeps 256), and `n` spread
    over everyone (most of them long closed, when there are many)."""
    recent = list(range(max(0, people - n), people))
    spread = sorted({(k * 7919) % people for k in range(n)})
    return recent, spread


def show(what: str, ms: list[float]) -> None:
    print(f"capture, send to reply, {what}: p50 {statistics.median(ms):.0f} ms, "
          f"max {max(ms):.0f} ms ({len(ms)}, one after another, 60 s ticks)", flush=True)


async def idle(seconds: float) -> list[tuple[float, float, float]]:
    """(seconds since start, CPU seconds since start, RSS MB) every tenth of the window."""
    samples, began, cpu0 = [], time.monotonic(), time.process_time()
    step = seconds / 10
    for _ in range(10):
        await asyncio.sleep(step)
        samples.append((time.monotonic() - began, time.process_time() - cpu0, rss_mb()))
    return samples


async def main(args: argparse.Namespace) -> None:
    databases.set_backend(args.db)
    fake = await FakeSlack().start()
    data = Path(tempfile.mkdtemp(prefix="bench-people-"))
    morning = {}
    if args.morning:  # everyone's reminder window open now (the fake Slack says Tokyo)
        now = datetime.now(ZoneInfo(fake.user_tz)) - timedelta(minutes=1)
        morning = {"BRAIN_REMINDER_TIME": f"{now:%H:%M}"}
    settings = make_settings(data, fake, BRAIN_STORE=args.store, BRAIN_USER_RATE="0",
                             BRAIN_USER_RUNNING="0", **morning)
    brain = await Brain.start(settings, meaning=None if args.meaning else Meaning.off())
    bot = SlackBot(brain, settings)
    bot.start(poll_seconds=args.tick)
    server = TestServer(bot.web_app(), host="127.0.0.1")
    await server.start_server()
    send = SlackSender(str(server.make_url("/")))
    print(f"{args.people} people; database {args.db}, store {args.store}, tick {args.tick} s, "
          f"meaning {'on' if args.meaning else 'off'}, "
          f"{'in' if args.morning else 'outside'} their reminders' morning window; "
          f"RSS at start {rss_mb():.0f} MB")
    try:
        took = await fill(send, fake, args.people)
        print(f"fill: {args.people} DMs answered in {took:.0f} s "
              f"({args.people / took:.1f}/s); RSS {rss_mb():.0f} MB; "
              f"Stores open {brain.stores.open}")
        samples = await idle(args.idle)
        print(f"idle {args.idle:.0f} s (= {60 * args.idle / args.tick / 3600:.1f} h of "
              f"60 s ticks):")
        for at, cpu, rss in samples:
            print(f"  {at:6.0f} s  CPU {100 * cpu / at:5.1f} % of a core  RSS {rss:6.0f} MB")
        at, cpu, rss = samples[-1]
        first_rss = samples[0][2]
        print(f"idle CPU {100 * cpu / at:.1f} % of a core; RSS {first_rss:.0f} -> {rss:.0f} MB")
        for ticker in (bot.scheduler, bot.reminder_scheduler):  # back to brain serve's tick
            if ticker is not None:
                ticker.poll_seconds = 60
        await asyncio.sleep(args.tick)  # each ticker's current wait ends
        recent, spread = who_wrote(args.people)
        profile = cProfile.Profile() if args.profile else None
        if profile is not None:
            profile.enable()
        show("people who wrote last", await captures(send, fake, recent, "1"))
        show("people spread over all", await captures(send, fake, spread, "2"))
        if profile is not None:
            profile.disable()
            profile.dump_stats(args.profile)
        at, cpu, rss = (await idle(args.idle))[-1]
        print(f"idle CPU with 60 s ticks (as brain serve): {100 * cpu / at:.1f} % of a core; "
              f"RSS {rss:.0f} MB")
    finally:
        await send.close()
        await server.close()
        await bot.close(5)
        await brain.close()
        await fake.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--people", type=int, default=10_000)
    parser.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--store", choices=("files", "database"), default="files")
    parser.add_argument("--idle", type=float, default=120.0)
    parser.add_argument("--tick", type=float, default=1.0)
    parser.add_argument("--meaning", action="store_true")
    parser.add_argument("--profile", type=Path,
                        help="write a cProfile of the captures (the event loop's thread) here")
    parser.add_argument("--morning", action="store_true",
                        help="everyone's reminder window open during the run (their due "
                             "notes looked for every 10 minutes)")
    args = parser.parse_args()
    if args.store == "database" and args.db != "postgres":
        parser.error("--store database keeps vaults in PostgreSQL: use --db postgres")
    asyncio.run(main(args))
