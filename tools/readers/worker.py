"""A reader process (issue 31): reads shared files one at a time for tools/readers/pool.py,
under limits it sets on itself before each file (CPU seconds, data memory, an alarm), so a
file that would cost too much ends this process, never the serving one. Started as
`python -m tools.readers.worker`. Each request is a JSON line and the file's bytes; each answer
a JSON line. It imports the readers only (each loads its library on first use), and it ends
when its input closes, so it never outlives the process that started it for long.

Linux only (`resource`, /proc), as the project is."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any, BinaryIO

GRACE = 10  # seconds past its wall-clock budget before the alarm ends a reader on its own
NEAR = 0.75  # of its memory budget: a file that failed after growing this much failed for it


def _status(field: str) -> int:
    """A /proc/self/status size, in bytes (VmData, VmHWM, ...)."""
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def _reset_peak() -> None:
    """VmHWM from here on is this file's peak (Linux 4.0+: `5` clears the high-water mark)."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
    except OSError:
        pass  # an older kernel: the peak is the process's


def _soft(which: int, value: int | None) -> None:
    """Set a soft limit (None: as high as allowed), never above the hard one the host set."""
    hard = resource.getrlimit(which)[1]
    if value is None or (hard != resource.RLIM_INFINITY and value > hard):
        value = hard
    resource.setrlimit(which, (value, hard))


def _limit(budget: dict[str, float]) -> None:
    """This file's budget on top of what the process already spent and holds (a model loaded
    for an earlier file stays): RLIMIT_CPU ends it with SIGXCPU, RLIMIT_DATA fails its
    allocations (Python's MemoryError), the alarm ends it with SIGALRM."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    _soft(resource.RLIMIT_CPU, int(used.ru_utime + used.ru_stime + budget["cpu"]) + 1)
    _soft(resource.RLIMIT_DATA, _status("VmData") + int(budget["memory_mb"] * 2**20))
    signal.alarm(int(budget["wall"]) + GRACE)


def _unlimit() -> None:
    signal.alarm(0)
    _soft(resource.RLIMIT_CPU, None)
    _soft(resource.RLIMIT_DATA, None)


def _exactly(stream: BinaryIO, size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        chunk = stream.read(left)
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _page(name: str, url: str, html: bytes) -> Any:
    """A web page's reading (tools/web/links.py); an extractor that fails on it says so."""
    from tools.readers.read import Reading
    from tools.web.links import page_reading

    try:
        return page_reading(url, html)
    except MemoryError:
        raise
    except Exception as exc:  # the extractor on a hostile page (or a broken install)
        return Reading(name, "page", "", f"the page could not be read ({type(exc).__name__})")


def serve(requests: BinaryIO, answers: BinaryIO) -> None:
    from tools.readers.documents import TOO_LARGE
    from tools.readers.read import Limits, Reading, kind_of, read, too_large

    while line := requests.readline():
        ask: dict[str, Any] = json.loads(line)
        data = _exactly(requests, int(ask["size"]))
        if data is None:
            return
        limits = Limits(max_pages=int(ask["max_pages"]), max_seconds=float(ask["max_seconds"]),
                        speech_model=Path(ask["speech_model"]) if ask["speech_model"] else None,
                        cache=Path(ask["cache"]))
        _reset_peak()
        before = _status("VmRSS")
        _limit(ask["budget"])
        kind = "page" if ask["page"] else kind_of(ask["name"], data)
        try:
            reading = (_page(ask["name"], ask["page"], data) if ask["page"]
                       else read(ask["name"], data, limits))
        except MemoryError:  # past RLIMIT_DATA somewhere a reader does not catch it
            reading = Reading(ask["name"], kind, "",
                              too_large(kind, "it needs more memory than a file may use"))
        finally:
            _unlimit()
        peak = _status("VmHWM")
        if reading.problem and TOO_LARGE not in reading.problem and (
                peak - before >= NEAR * ask["budget"]["memory_mb"] * 2**20):
            # A library that failed at the memory limit says so in its own words
            # (lxml: "unknown error"): it was the limit.
            reading = Reading(reading.name, reading.kind, "", too_large(
                reading.kind, "it needs more memory than a file may use"))
        del data
        # A file refused as too large may have left this process half-spent (an allocation
        # that failed deep in a library): it answers, then ends; the pool starts another.
        done = bool(reading.problem and TOO_LARGE in reading.problem)
        answer = {**asdict(reading), "peak_mb": peak // 2**20, "retire": done}
        answers.write(json.dumps(answer).encode() + b"\n")
        answers.flush()
        if done:
            return


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the group: the parent decides
    # Batch work: a turn of the serving process that wakes up runs before a reader, which
    # still gets its fair share of the CPU (a lower priority would starve it on a busy host).
    with contextlib.suppress(OSError):  # (a sandbox may refuse it: then as any process)
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a reader ended at a limit dumps no core
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever a library prints goes to stderr, never into an answer
    sys.stdout = sys.stderr
    serve(sys.stdin.buffer, answers)


if __name__ == "__main__":
    main()
