"""Which process this is, by a name every machine sharing the database can read.

A process is `host:pid:place.start`. `place` names where a pid means one process (this
kernel's boot and its pid namespace: two containers on one host are two places), and `start`
is the process's start time there, so a pid that a new process took again is not mistaken for
the one that died. A job's lease owner is this name and a token per worker
(bot/jobs/owners.py); on PostgreSQL each connection carries it as its `application_name`, so
a worker that takes over a stalled process's job can end that process's open transactions
(storage/repositories/fencing.py).
"""

from __future__ import annotations

import functools
import hashlib
import os
import socket
from pathlib import Path

PROC = Path("/proc")
# What our connections' application_name starts with: the process's name follows.
APPLICATION = "brain "


def start_of(pid: int) -> str | None:
    """The process's start time (clock ticks since boot), or None when there is no such
    process, or only its exit status waits for its parent (a zombie), or no /proc to ask."""
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # Fields after the command's closing parenthesis (the command may hold spaces): the
    # 22nd field of the line, starttime, is the 20th of them.
    fields = stat[stat.rfind(")") + 2:].split()
    if len(fields) <= 19 or fields[0] in ("Z", "X"):
        return None
    return fields[19]


@functools.cache
def place() -> str | None:
    """This process's place: a hash of the boot id and the pid namespace (None off Linux)."""
    try:
        boot = (PROC / "sys/kernel/random/boot_id").read_text().strip()
        namespace = os.stat(PROC / "self/ns/pid").st_ino
    except OSError:
        return None
    return hashlib.sha256(f"{boot}:{namespace}".encode()).hexdigest()[:8]


def process_name() -> str:
    """This process's name (at most 50 characters: PostgreSQL keeps 63 of an
    application_name)."""
    pid = os.getpid()
    return f"{socket.gethostname()[:20]}:{pid}:{place() or '-'}.{start_of(pid) or '-'}"


def runs(name: str) -> bool:
    """Whether the process called `name` (`process_name`'s form) runs now; one of another
    place, or a name of another shape, counts as running (this machine cannot tell)."""
    parts = name.split(":")
    found = parts[2].split(".") if len(parts) == 3 and parts[1].isdigit() else []
    if len(found) != 2 or found[0] != place() or found[1] == "-":
        return True
    return start_of(int(parts[1])) == found[1]


def application_name(name: str | None = None) -> str:
    """The `application_name` of the connections of process `name` (this one by default)."""
    return APPLICATION + (name or process_name())


def process_of(owner: str) -> str:
    """The process a lease owner (`<process name>.<token>`) is a worker of."""
    return owner.rsplit(".", 1)[0]
