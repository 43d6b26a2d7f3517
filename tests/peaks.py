"""A command run under a parent of its own that says how long it took and the highest peak
memory (resident set) of it and of every process it started: getrusage(RUSAGE_CHILDREN) of
that parent, which is made a child subreaper so an orphaned grandchild is waited for and
counted too, a reader process killed at its limit included. Linux only.

A guard ends the whole tree if any of its processes passes GUARD_MB or it runs past its
timeout: a regression fails the test, it does not take the machine down with it."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

GUARD_MB = 2048

PARENT = r"""
import ctypes, json, os, resource, signal, subprocess, sys, time
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
report, timeout, guard, argv = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]

def tree():
    # every live process below this one (orphans come here: it is their subreaper)
    parents = {}
    for stat in os.listdir("/proc"):
        if stat.isdigit():
            try:
                with open(f"/proc/{stat}/stat") as f:
                    parents[int(stat)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    below, frontier = set(), {os.getpid()}
    while frontier:
        frontier = {p for p, pp in parents.items() if pp in frontier} - below
        below |= frontier
    return below

def rss_mb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) // 1024
    except OSError:
        pass
    return 0

started = time.monotonic()
proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
stopped = None
while proc.poll() is None:
    over = [p for p in tree() if rss_mb(p) > guard]
    if over or time.monotonic() - started > timeout:
        stopped = f"over {guard} MB" if over else f"over {timeout:g} s"
        for p in tree():
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        break
    time.sleep(0.05)
out, err = proc.communicate()
took = time.monotonic() - started
while True:
    try:
        os.wait()
    except ChildProcessError:
        break
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
with open(report, "w") as f:
    json.dump({"code": proc.returncode, "out": out, "err": err, "seconds": took,
               "peak_mb": peak, "stopped": stopped}, f)
"""


@dataclass(frozen=True)
class Measured:
    code: int
    out: str
    err: str
    seconds: float
    peak_mb: float  # the highest of any one process's peak: the command's or a child's
    stopped: str | None  # why the guard ended it, if it did

    def json(self) -> object:
        assert self.code == 0, f"exit {self.code}: {self.err}"
        return json.loads(self.out)


def measured(argv: list[str], *, cwd: Path, env: dict[str, str],
             timeout: float = 120) -> Measured:
    report = cwd / ".measured.json"
    subprocess.run([sys.executable, "-c", PARENT, str(report), str(timeout), str(GUARD_MB),
                    *argv], cwd=cwd, env=env, check=True, timeout=timeout + 60)
    found = json.loads(report.read_text())
    report.unlink()
    return Measured(**found)
