"""SerialRunner: one turn at a time per thread in arrival order; threads run side by side."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.slack.ordering import SerialRunner


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abcd"), st.integers(0, 3)), min_size=1, max_size=30))
def test_each_key_runs_in_submission_order_and_never_overlaps(
        jobs: list[tuple[str, int]]) -> None:
    async def scenario() -> None:
        runner = SerialRunner()
        done: dict[str, list[int]] = {}
        running: set[str] = set()
        overlaps: list[str] = []

        def job(key: str, n: int, pause: int) -> object:
            async def work() -> None:
                if key in running:
                    overlaps.append(key)
                running.add(key)
                for _ in range(pause):  # yield to the loop a few times mid-turn
                    await asyncio.sleep(0)
                done.setdefault(key, []).append(n)
                running.discard(key)
            return work

        for n, (key, pause) in enumerate(jobs):
            runner.submit(key, job(key, n, pause))  # type: ignore[arg-type]
        assert await runner.drain(5)
        assert overlaps == []
        for key in done:
            assert done[key] == [n for n, (k, _) in enumerate(jobs) if k == key]
        assert runner.keys() == set() and runner.busy == 0  # no per-thread state left behind

    asyncio.run(scenario())


async def test_different_threads_run_concurrently() -> None:
    runner = SerialRunner()
    started = asyncio.Event()
    both = asyncio.Event()
    seen: list[str] = []

    async def first() -> None:
        seen.append("a")
        started.set()
        await asyncio.wait_for(both.wait(), 1)  # finishes only if "b" can run meanwhile

    async def second() -> None:
        await started.wait()
        seen.append("b")
        both.set()

    runner.submit("thread-a", first)
    runner.submit("thread-b", second)
    assert await runner.drain(2)
    assert seen == ["a", "b"]


async def test_a_failing_turn_does_not_block_the_next_one() -> None:
    runner = SerialRunner()
    ran: list[str] = []

    async def broken() -> None:
        raise RuntimeError("boom")

    async def fine() -> None:
        ran.append("ok")

    runner.submit("t", broken)
    runner.submit("t", fine)
    assert await runner.drain(2)
    assert ran == ["ok"]
