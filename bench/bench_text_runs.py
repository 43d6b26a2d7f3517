"""How the time to read a thought's date phrases and subject grows with runs of spaces.

    python bench/bench_text_runs.py [--sizes 10000,20000,40000]

`strip_dates` and `names.subject` (a capture's name without a model) on a word, a run of N
no-break spaces, and a word; then ordinary spaces; then line breaks. Linear code doubles its
time when N doubles; the regular expressions these used to have (a pattern starting with a
bare \\s+, tried from every position of a run) quadrupled it: 368 s on 40,000 no-break spaces.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools.rules.dates import strip_dates  # noqa: E402
from tools.rules.naming import subject  # noqa: E402

KINDS = {"no-break spaces": "\u00a0", "spaces": " ", "line breaks": "\n"}


def timed(text: str) -> tuple[float, float]:
    started = time.perf_counter()
    strip_dates(text)
    middle = time.perf_counter()
    subject(text)
    return middle - started, time.perf_counter() - middle


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10000,20000,40000")
    sizes = [int(n) for n in parser.parse_args().sizes.split(",")]
    print(f"{'run of':<16}{'N':>8}{'strip_dates s':>15}{'subject s':>11}")
    for kind, char in KINDS.items():
        for n in sizes:
            dates, name = timed("Call" + char * n + "Sara about the budget")
            print(f"{kind:<16}{n:>8}{dates:>15.3f}{name:>11.3f}", flush=True)


if __name__ == "__main__":
    main()
