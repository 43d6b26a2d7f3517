"""The readers (issues 18, 31): what reading one shared file costs, on this machine.

    python bench/bench_readers.py [--repeat 3]

Targets (docs/performance.md): a 10-page text PDF in <= 2 s; a 1280x800 screenshot OCR'd in
<= 3 s; a 30-second clip transcribed in <= 10 s (Whisper base, int8). The first read of each
media kind in a process also loads its model: that is shown apart ("first") from the steady
cost ("then", the median of --repeat reads). Each file is read twice over: in this process
(`read`, as the bot did before issue 31) and in a reader process (`read_safely`, as it does
now: "first" then also starts the process). Then the hostile files of issue 31 (tests/
hostile_files.py), out of process only: how long each took and the highest peak memory of any
reader process. Peak memory for a 20 MB file is measured too: the file's bytes are held once
(the reader gets them, the vault writes them, nothing copies).
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.hostile_files import docx_bomb, flac_bomb, pdf_bomb, png_bomb  # noqa: E402
from tests.media import screenshot, spoken_wav  # noqa: E402
from tests.tools.test_readers import make_docx, make_pdf  # noqa: E402
from tools.readers import read  # noqa: E402
from tools.readers.pool import pool, read_safely  # noqa: E402
from tools.readers.read import Limits  # noqa: E402

SPOKEN = ("Notes from Tuesday. The committee reviewed the budget for the third quarter and "
          "agreed to move the offsite to Lisbon in March. Maria will compare three venues "
          "near the river, and Tom asks for a vegetarian caterer. Travel should be booked "
          "before the end of the month, because prices rise in spring. We also talked about "
          "the podcast on urban gardening: two episodes are recorded, the third needs a guest. "
          "Finally, remember to renew the car insurance before the twentieth.")
PARAGRAPH = ("The committee reviewed the budget for the third quarter and agreed to move the "
             "offsite to Lisbon; catering, travel and the venue were each compared. ")


def timed(name: str, data: bytes, limits: Limits, repeat: int,
          apart: bool) -> tuple[float, float, int]:
    times = []
    for _ in range(repeat + 1):
        t = time.perf_counter()
        reading = (asyncio.run(read_safely(name, data, limits)) if apart
                   else read(name, data, limits))
        times.append(time.perf_counter() - t)
        assert reading.ok, reading.problem
    return times[0], statistics.median(times[1:]), len(reading.text)


def hostile() -> None:
    """Issue 31's files, each read by a fresh reader (a refused file ends its reader)."""
    print(f"{'hostile file':<28}{'bytes':>10}{'s':>7}  said")
    for name, make in (("8 pages of 6 MB ops.pdf", pdf_bomb), ("2.5 GB inside.docx", docx_bomb),
                       ("100 Mpx.png", png_bomb), ("9 hours.flac", flac_bomb)):
        data = make()
        t = time.perf_counter()
        reading = asyncio.run(read_safely(name, data))
        print(f"{name:<28}{len(data):>10}{time.perf_counter() - t:>7.2f}  {reading.problem}")
    pool().close()  # every reader ends and is waited for: its peak is counted below
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"the highest peak of any reader process: {peak:.0f} MB\n")


async def _download_peak(tmp: Path) -> tuple[int, int]:
    """Peak bytes allocated while a 20 MB file comes over HTTP as Slack serves it (a server
    in another process, so only our side is counted), then while it is read."""
    from bot.slack.shared_files import files_download

    (tmp / "big.txt").write_bytes(b"word " * (4 * 2**20))
    server = subprocess.Popen([sys.executable, "-m", "http.server", "0", "--bind", "127.0.0.1",
                               "-d", str(tmp)], stdout=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline() if server.stdout else ""
        port = int(line.split("port ")[1].split()[0])
        base = f"http://127.0.0.1:{port}"
        tracemalloc.start()
        (got,) = await files_download("xoxb-bench", f"{base}/api/", [
            {"name": "big.txt", "size": 20 * 2**20, "url": f"{base}/big.txt"}], 25 * 2**20)
        download = tracemalloc.get_traced_memory()[1]
        assert got.data is not None and len(got.data) == 20 * 2**20, got.problem
        tracemalloc.reset_peak()
        read("big.txt", got.data, Limits(cache=tmp))
        reading = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return download, reading
    finally:
        server.kill()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    hostile()  # first: no reader of this bench has loaded a model yet
    with tempfile.TemporaryDirectory() as tmp:
        limits = Limits(cache=Path(tmp) / "models")
        pdf = make_pdf([PARAGRAPH[:95] + f" (page {i})" for i in range(10)])
        shot = screenshot([f"Line {i}: {PARAGRAPH[:60]}" for i in range(8)])
        # About 30 seconds; not a repeated paragraph, which Whisper decodes again and again
        # (its text compresses too well: the temperature fallback).
        clip = spoken_wav(SPOKEN, Path(tmp))
        seconds = (len(clip) - 44) / (22050 * 2)
        docx = make_docx([PARAGRAPH] * 40)
        print(f"{'file':<28}{'in this process':>18}{'in a reader process':>22}{'chars':>8}")
        print(f"{'':<28}{'first s':>9}{'then s':>9}{'first s':>11}{'then s':>11}")
        for label, name, data in (("PDF, 10 pages", "report.pdf", pdf),
                                  ("DOCX, 40 paragraphs", "minutes.docx", docx),
                                  ("screenshot 1280x800", "shot.png", shot),
                                  (f"clip {seconds:.0f} s (WAV)", "memo.wav", clip)):
            first_apart, then_apart, _ = timed(name, data, limits, args.repeat, True)
            first, then, chars = timed(name, data, limits, args.repeat, False)
            print(f"{label:<28}{first:>9.2f}{then:>9.2f}{first_apart:>11.2f}{then_apart:>11.2f}"
                  f"{chars:>8}")
        download, reading = asyncio.run(_download_peak(Path(tmp)))
        print(f"20 MB file: peak {download / 2**20:.1f} MB allocated while downloading it, "
              f"{reading / 2**20:.1f} MB while reading it (the file itself is 20 MB)")


if __name__ == "__main__":
    main()
