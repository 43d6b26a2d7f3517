"""The readers (issue 18): what reading one shared file costs, on this machine.

    python bench/bench_readers.py [--repeat 3]

Targets (docs/performance.md): a 10-page text PDF in <= 2 s; a 1280x800 screenshot OCR'd in
<= 3 s; a 30-second clip transcribed in <= 10 s (Whisper base, int8). The first read of each
media kind in a process also loads its model: that is shown apart ("first") from the steady
cost ("then", the median of --repeat reads). Peak memory for a 20 MB file is measured too:
the file's bytes are held once (the reader gets them, the vault writes them, nothing copies).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.media import screenshot, spoken_wav  # noqa: E402
from tests.tools.test_readers import make_pdf  # noqa: E402
from tools.readers import read  # noqa: E402
from tools.readers.read import Limits  # noqa: E402

SPOKEN = ("Notes from Tuesday. The committee reviewed the budget for the third quarter and "
          "agreed to move the offsite to Lisbon in March. Maria will compare three venues "
          "near the river, and Tom asks for a vegetarian caterer. Travel should be booked "
          "before the end of the month, because prices rise in spring. We also talked about "
          "the podcast on urban gardening: two episodes are recorded, the third needs a guest. "
          "Finally, remember to renew the car insurance before the twentieth.")
PARAGRAPH = ("The committee reviewed the budget for the third quarter and agreed to move the "
             "offsite to Lisbon; catering, travel and the venue were each compared. ")


def timed(name: str, data: bytes, limits: Limits, repeat: int) -> tuple[float, float, int]:
    times = []
    for _ in range(repeat + 1):
        t = time.perf_counter()
        reading = read(name, data, limits)
        times.append(time.perf_counter() - t)
        assert reading.ok, reading.problem
    return times[0], statistics.median(times[1:]), len(reading.text)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        limits = Limits(cache=Path(tmp) / "models")
        pdf = make_pdf([PARAGRAPH[:95] + f" (page {i})" for i in range(10)])
        shot = screenshot([f"Line {i}: {PARAGRAPH[:60]}" for i in range(8)])
        # About 30 seconds; not a repeated paragraph, which Whisper decodes again and again
        # (its text compresses too well: the temperature fallback).
        clip = spoken_wav(SPOKEN, Path(tmp))
        seconds = (len(clip) - 44) / (22050 * 2)
        print(f"{'file':<28}{'first s':>9}{'then s':>9}{'chars':>8}")
        for label, name, data in (("PDF, 10 pages", "report.pdf", pdf),
                                  ("screenshot 1280x800", "shot.png", shot),
                                  (f"clip {seconds:.0f} s (WAV)", "memo.wav", clip)):
            first, then, chars = timed(name, data, limits, args.repeat)
            print(f"{label:<28}{first:>9.2f}{then:>9.2f}{chars:>8}")
        big = b"x" * (20 * 2**20)
        tracemalloc.start()
        read("big.txt", big, limits)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        print(f"20 MB text file: peak {peak / 2**20:.0f} MB allocated while reading "
              f"(the file itself is 20 MB)")


if __name__ == "__main__":
    main()
