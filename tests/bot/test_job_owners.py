"""Whether a lease's owner is alive (bot/jobs/owners.py), judged with real processes."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from bot.jobs import owners
from storage import processes


def _owner_of(pid: int) -> str:
    """The owner name a worker in process `pid` of this machine would have."""
    start = processes.start_of(pid)
    assert start is not None
    return f"host:{pid}:{processes.place()}.{start}.abc123"


def test_a_live_process_is_alive_and_a_killed_one_is_dead() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        owner = _owner_of(child.pid)
        assert not owners.dead(owner)
        assert not owners.dead(owners.owner_id())  # this very process
        child.kill()
        child.wait()
        assert owners.dead(owner)
    finally:
        child.kill()


def test_a_killed_child_not_yet_reaped_is_dead() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    owner = _owner_of(child.pid)
    while processes.start_of(child.pid) is not None:  # exits; a zombie until waited for
        time.sleep(0.01)
    assert owners.dead(owner)
    child.wait()


def test_a_pid_taken_again_by_another_process_is_not_the_dead_one() -> None:
    here = _owner_of(os.getpid())
    host, pid, rest = here.split(":")
    place, start, token = rest.split(".")
    assert owners.dead(f"{host}:{pid}:{place}.{int(start) - 1}.{token}")


def test_owners_of_another_machine_are_left_to_their_connections_and_odd_ones_to_leases(
        ) -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    gone = _owner_of_dead(child.pid)
    far = gone.replace(str(processes.place()), "0000beef")
    assert owners.dead(gone) and not owners.elsewhere(gone)
    assert not owners.dead(far) and owners.elsewhere(far)  # /proc cannot tell: PostgreSQL can
    assert not owners.elsewhere(owners.owner_id())
    for odd in ("elsewhere:1:x", "host:notapid:a.b.c", "", "a:b", "h:1:p.t"):
        assert not owners.dead(odd) and not owners.elsewhere(odd)


def _owner_of_dead(pid: int) -> str:
    return f"host:{pid}:{processes.place()}.1.abc123"
