"""Who holds a job's lease, and whether that process is still alive.

A lease owner is `host:pid:place.start.token`. `place` names where a pid means one process
(this kernel's boot and its pid namespace: two containers on one host are two places), and
`start` is the process's start time there, so a pid that a new process took again is not
mistaken for the one that died. A worker that sees a running job whose owner has its place
but no live process with that pid and start time knows the owner died (`kill -9`, a crash):
the job is free at once instead of after its lease. An owner of another place (another
machine) or of an unknown shape is never judged: its lease decides, as before.
"""

from __future__ import annotations

import functools
import hashlib
import os
import secrets
import socket
from pathlib import Path

PROC = Path("/proc")


def _start_of(pid: int) -> str | None:
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


def owner_id() -> str:
    """A new owner name for a worker of this process (fits the jobs table's 64 characters)."""
    pid = os.getpid()
    return (f"{socket.gethostname()[:20]}:{pid}:{place() or '-'}.{_start_of(pid) or '-'}."
            f"{secrets.token_hex(3)}")


def dead(owner: str) -> bool:
    """Whether `owner` names a process of this place that no longer runs."""
    parts = owner.split(":")
    if len(parts) != 3 or not parts[1].isdigit():
        return False
    found = parts[2].split(".")
    here = place()
    if len(found) != 3 or here is None or found[0] != here or found[1] == "-":
        return False
    return _start_of(int(parts[1])) != found[1]
