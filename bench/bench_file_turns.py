"""Files beside other people's turns (issue 18): the ack of a DM with files is as fast as a
text DM's, and reading a clip and a screenshot does not hold up anyone else's reply.

    .venv/bin/python -m bench.bench_file_turns [--others 20]

The served Slack app over HTTP on 127.0.0.1, the real Brain (offline provider: an instant
model, so what is measured is the bot), tests/e2e/fake_slack.py serving the files. Two rounds:
`--others` people each send a text DM at once (baseline); then one person sends a DM with a
31-second voice clip and a 1280x800 screenshot and, right after it, the same `--others` text
DMs. For each round: ack times (HTTP round trip) and the time until each reply is posted.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_readers import SPOKEN  # noqa: E402
from tests.e2e.bot_harness import Harness, running_bot  # noqa: E402
from tests.e2e.slack_harness import message_event  # noqa: E402
from tests.media import screenshot, spoken_wav  # noqa: E402


async def send_and_time(h: Harness, bodies: list[dict]) -> tuple[list[float], dict[str, float]]:
    """Send all at once; ack times, and per thread the seconds until its reply."""
    start = time.perf_counter()

    async def one(body: dict) -> float:
        t = time.perf_counter()
        status, _ = await h.send.event(body)
        assert status == 200
        return time.perf_counter() - t

    acks = await asyncio.gather(*(one(b) for b in bodies))
    want = {b["event"]["ts"] for b in bodies}
    replied: dict[str, float] = {}
    while len(replied) < len(want) and time.perf_counter() - start < 300:
        for call in h.fake.calls_to("chat.postMessage"):
            ts = call.body.get("thread_ts")
            if ts in want and ts not in replied:
                replied[ts] = time.perf_counter() - start
        await asyncio.sleep(0.01)
    return list(acks), replied


def texts(n: int, round_: int) -> list[dict]:
    return [message_event(f"Call the dentist about appointment {i}", user=f"U{round_}{i:04d}",
                          ts=f"17672{round_}{i:04d}.000100", event_id=f"Ev{round_}{i}")
            for i in range(n)]


def line(label: str, values: list[float]) -> str:
    values = sorted(values)
    p95 = values[min(len(values) - 1, int(len(values) * 0.95))]
    return (f"{label:<44} p50 {statistics.median(values) * 1000:7.0f} ms   "
            f"p95 {p95 * 1000:7.0f} ms   max {values[-1] * 1000:7.0f} ms")


async def main(others: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        clip = spoken_wav(SPOKEN, Path(tmp))
        shot = screenshot(["Weekly metrics", "Signups doubled after the pricing change"])
        async with running_bot(Path(tmp) / "data") as h:
            await send_and_time(h, texts(1, 9))  # warm: the first turn opens everything
            acks, replies = await send_and_time(h, texts(others, 1))
            print(line(f"{others} text DMs at once: ack", acks))
            print(line(f"{others} text DMs at once: reply", list(replies.values())))
            files = [h.fake.share_file("F1", "memo.m4a", clip),
                     h.fake.share_file("F2", "dashboard.png", shot)]
            with_files = message_event("Notes from the review", user="UFILES",
                                       ts="1767299999.000100", event_id="EvFiles")
            with_files["event"].update(subtype="file_share", files=files)
            acks, replies = await send_and_time(h, [with_files, *texts(others, 2)])
            file_reply = replies.pop("1767299999.000100", float("nan"))
            print(line("the DM with a clip and a screenshot: ack", acks[:1]))
            print(line(f"then {others} text DMs at once: ack", acks[1:]))
            print(line(f"then {others} text DMs at once: reply", list(replies.values())))
            print(f"{'the DM with the files: reply':<44} {file_reply:.2f} s "
                  "(the models load on the first file in a process)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--others", type=int, default=20)
    asyncio.run(main(parser.parse_args().others))
