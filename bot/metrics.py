"""Prometheus figures of `brain serve` (`GET /metrics`), cheap to keep and to read.

- `brain_jobs{kind,state}`: the journal's waiting (`pending`) and running jobs, read at each
  scrape with one grouped query over the open jobs (the deployment's, the same on every
  replica);
- `brain_job_seconds{kind,outcome}`: how long each run of a job took in this server's
  processes (`done`, or `not_done`: failed, sent back, taken over);
- `brain_llm_request_seconds{provider}`: each request to the model, and
  `brain_llm_errors_total{provider,kind}` the ones that failed (`timeout`, `rate_limited`,
  `overloaded`, `auth`, `unavailable`, ...);
- `brain_index_lag_seconds`: how long the oldest write has waited for its vectors (search
  by meaning; the words index is written with the note), the largest of the processes',
  set by each one's background indexer every pass (~2 s).

`brain serve --workers N` runs N processes behind one socket, so a scrape lands in any of them:
their figures are kept in files of one folder (prometheus_client's multiprocess mode,
`PROMETHEUS_MULTIPROC_DIR`) that the serving process makes before anything is recorded and
removes when it stops, and whichever process answers reads them all. prometheus_client picks
that mode when it is first imported, so it is imported here lazily, never at module load.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from storage.processes import place, start_of

FOLDER = "PROMETHEUS_MULTIPROC_DIR"
PREFIX = "brain-metrics-"  # then the serving process's `_tag`: a killed one's is found again
_TAGGED = re.compile(re.escape(PREFIX) + r"(?P<pid>\d+)_(?P<place>\w+?)_(?P<start>\d+)-")
log = logging.getLogger(__name__)

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# Seconds: turns mostly wait for the model (a second to a minute), the bot's own work is ms.
BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)


@contextlib.contextmanager
def shared_folder() -> Iterator[Path | None]:
    """For the serving process: a folder of its own for every process's figures (its
    helpers inherit it), removed at the end; None when one was given (`PROMETHEUS_MULTIPROC_DIR`
    set by the operator: theirs to clear between starts)."""
    if os.environ.get(FOLDER):
        yield None
        return
    _clear_left()
    folder = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{_tag(os.getpid()) or ''}-"))
    os.environ[FOLDER] = str(folder)
    try:
        yield folder
    finally:
        os.environ.pop(FOLDER, None)
        shutil.rmtree(folder, ignore_errors=True)


def _tag(pid: int) -> str | None:
    """What names process `pid` here for good: its pid, this kernel's boot and pid namespace,
    and its start time (storage/processes.py); None where /proc cannot say (no cleanup)."""
    where, start = place(), start_of(pid)
    return f"{pid}_{where}_{start}" if where and start else None


def _clear_left() -> None:
    """Remove the folders of serving processes that are gone (killed: a clean stop removes
    its own), so SIGKILLs and restarts do not pile folders up in the temp directory. A folder
    of another pid namespace (a container sharing the folder) is never judged from here."""
    for found in Path(tempfile.gettempdir()).glob(f"{PREFIX}*"):
        tagged = _TAGGED.match(found.name)
        with contextlib.suppress(OSError):
            if tagged and tagged["place"] == place() \
                    and start_of(int(tagged["pid"])) != tagged["start"] \
                    and found.lstat().st_uid == os.getuid() and found.is_dir():
                shutil.rmtree(found, ignore_errors=True)


@dataclass(frozen=True)
class _Figures:
    job_seconds: Any
    llm_seconds: Any
    llm_errors: Any
    index_lag: Any


@functools.cache
def _figures() -> _Figures:
    from prometheus_client import Counter, Gauge, Histogram

    return _Figures(
        Histogram("brain_job_seconds", "How long a run of a job took.", ["kind", "outcome"],
                  buckets=BUCKETS),
        Histogram("brain_llm_request_seconds", "How long a request to the model took.",
                  ["provider"], buckets=BUCKETS),
        Counter("brain_llm_errors", "Requests to the model that failed.",
                ["provider", "kind"]),
        # A scrape shows the largest of the processes' (each sets its own every ~2 s).
        Gauge("brain_index_lag_seconds", "Seconds since the oldest write whose notes still "
              "wait for their vectors (0: none).", multiprocess_mode="livemax"))


def index_lag(seconds: float) -> None:
    """The background indexer's lag (storage/index/indexer.py `Indexer.lag`), each pass."""
    with _never_fails():
        _figures().index_lag.set(seconds)


def job_ran(kind: str, done: bool, seconds: float) -> None:
    with _never_fails():
        _figures().job_seconds.labels(kind, "done" if done else "not_done").observe(seconds)


def llm_answered(provider: str, seconds: float, error: str | None = None) -> None:
    """One request to the model: its time, and its failure's kind if it failed."""
    with _never_fails():
        figures = _figures()
        figures.llm_seconds.labels(provider).observe(seconds)
        if error is not None:
            figures.llm_errors.labels(provider, error).inc()


@contextlib.contextmanager
def _never_fails() -> Iterator[None]:
    """A figure that cannot be kept (its folder gone, a full disk) is lost, never the work."""
    try:
        yield
    except Exception as exc:
        log.debug("a metric could not be recorded: %s", exc)


class _Jobs:
    """`brain_jobs` from counts read for this scrape."""

    def __init__(self, counts: dict[tuple[str, str], int]) -> None:
        self.counts = counts

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        family = GaugeMetricFamily("brain_jobs", "Jobs waiting (pending) and running, by kind.",
                                   labels=["kind", "state"])
        for (kind, state), n in sorted(self.counts.items()):
            family.add_metric([kind, state], n)
        yield family


def exposition(open_jobs: dict[tuple[str, str], int]) -> bytes:
    """The text a scrape gets: every process's figures, and the journal's open jobs."""
    from prometheus_client import REGISTRY, CollectorRegistry, generate_latest, multiprocess

    registry = CollectorRegistry()
    if os.environ.get(FOLDER):
        multiprocess.MultiProcessCollector(registry)
        text = generate_latest(registry)
    else:  # one process (tests, `brain chat`): its own registry
        text = generate_latest(REGISTRY)
    jobs = CollectorRegistry()
    jobs.register(_Jobs(open_jobs))
    return text + generate_latest(jobs)
