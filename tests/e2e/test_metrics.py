"""`GET /metrics` of `brain serve --http --workers 2`: Prometheus text that a scraper reads the
same whichever of the two processes answers (their figures are kept in one folder): the jobs
waiting and running, each job's time, each model request's time and its failures."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from tests.bot.fake_llm_server import FakeLLMServer
from tests.databases import database_env
from tests.e2e.fake_slack import FakeSlack
from tests.e2e.slack_harness import SECRET, SlackSender, message_event
from tests.e2e.test_slack_serve import (
    brain,
    clean_env,
    fake,
    free_port,
    helpers_ready,
    idle,
    stop,
    wait_healthy,
)
from tests.shared import patience

__all__ = ["fake"]  # the fixture

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


async def scrape(url: str) -> Samples:
    """One scrape, parsed as Prometheus does: (name, labels) -> value."""
    async with aiohttp.ClientSession() as session, session.get(f"{url}/metrics") as r:
        assert r.status == 200 and r.headers["Content-Type"].startswith("text/plain")
        text = await r.text()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def total(samples: Samples, name: str, **labels: str) -> float:
    return sum(v for (n, ls), v in samples.items()
               if n == name and labels.items() <= dict(ls).items())


async def until(url: str, check: object, timeout: float = 60) -> Samples:
    deadline = time.monotonic() + patience(timeout)
    while not check(samples := await scrape(url)):  # type: ignore[operator]
        assert time.monotonic() < deadline, samples
        await asyncio.sleep(0.05)
    return samples


async def test_metrics_count_every_processs_work_whichever_answers(
        fake: FakeSlack, llm: FakeLLMServer, tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = clean_env(SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET=SECRET,
                    SLACK_API_URL=fake.api_url, BRAIN_DATA_DIR=str(tmp_path / "data"),
                    BRAIN_LLM="openai", OPENAI_API_KEY="sk-test",
                    OPENAI_BASE_URL=llm.openai_base_url, BRAIN_LLM_MAX_RETRIES="0",
                    BRAIN_LOG_LEVEL="WARNING", **database_env(tmp_path))
    proc = await brain("serve", "--http", "--host", "127.0.0.1", "--port", str(port),
                       "--workers", "2", env=env, cwd=tmp_path)
    send = SlackSender(url)
    try:
        await wait_healthy(url, proc)
        await helpers_ready(send, 1)
        for i in range(6):
            event = message_event(f"Idea {i}: a garden on the roof", event_id=f"EvM{i}",
                                  ts=f"17673100{i:02d}.000100")
            assert (await send.event(event))[0] == 200
        await fake.wait_for("chat.postMessage", 6)
        await idle(send)
        # The six turns ran in both processes; every scrape, whichever answers, counts six.
        for _ in range(8):
            samples = await scrape(url)
            assert total(samples, "brain_job_seconds_count", kind="turn", outcome="done") == 6
            assert total(samples, "brain_llm_request_seconds_count", provider="OpenAI") >= 6
            assert total(samples, "brain_jobs", kind="turn") == 0
            assert total(samples, "brain_llm_errors_total") == 0
            lag = [v for (n, _), v in samples.items() if n == "brain_index_lag_seconds"]
            assert len(lag) == 1 and 0 <= lag[0] < 60  # one figure, the processes' largest

        llm.hold()  # a turn waiting for the model is running, and says so
        assert (await send.event(message_event("Idea 9: bees", event_id="EvM9",
                                               ts="1767310099.000100")))[0] == 200
        await until(url, lambda s: total(s, "brain_jobs", kind="turn", state="running") == 1)
        llm.release()
        await fake.wait_for("chat.postMessage", 7)

        llm.fail(503)  # the model is overloaded once: counted by its kind
        assert (await send.event(message_event("Idea 10: a pond", event_id="EvM10",
                                               ts="1767310100.000100")))[0] == 200
        samples = await until(url, lambda s: total(s, "brain_llm_errors_total") >= 1)
        assert total(samples, "brain_llm_errors_total", provider="OpenAI",
                     kind="overloaded") == 1
        await fake.wait_for("chat.postMessage", 8)
        await idle(send)
    finally:
        await send.close()
        code = await stop(proc)
    assert code == 0


async def test_a_killed_servers_figures_folder_is_removed_by_the_next_start(
        fake: FakeSlack, tmp_path: Path) -> None:
    """A clean stop removes the figures' folder; a SIGKILL cannot, so the next start removes
    the folders of serving processes that are gone (restarts do not pile them up)."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = clean_env(SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET=SECRET,
                    SLACK_API_URL=fake.api_url, BRAIN_DATA_DIR=str(tmp_path / "data"),
                    BRAIN_LLM="offline", BRAIN_LOG_LEVEL="WARNING", TMPDIR=str(temp),
                    **database_env(tmp_path))
    other = temp / "brain-metrics-notes"  # not a server's: left alone
    other.mkdir()

    async def started() -> tuple[asyncio.subprocess.Process, str]:
        port = free_port()
        proc = await brain("serve", "--http", "--host", "127.0.0.1", "--port", str(port),
                           env=env, cwd=tmp_path)
        await wait_healthy(f"http://127.0.0.1:{port}", proc)
        return proc, f"brain-metrics-{proc.pid}_"  # its pid, place and start time

    first, mine = await started()
    first.kill()
    await first.wait()
    assert [p.name for p in temp.glob(f"{mine}*")] != []  # a SIGKILL leaves it
    second, theirs = await started()
    try:
        assert list(temp.glob(f"{mine}*")) == []
        assert list(temp.glob(f"{theirs}*")) != []
    finally:
        assert await stop(second) == 0
    assert sorted(p.name for p in temp.iterdir() if p.name.startswith("brain-metrics-")) == [
        "brain-metrics-notes"]
