"""What a test needs to know of a process's own processes (`brain serve --workers N`)."""

from __future__ import annotations

from pathlib import Path


def children(pid: int) -> tuple[int, ...]:
    """The live processes `pid` started (its `--workers` helpers), from /proc."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            after_name = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if after_name[1] == str(pid) and after_name[0] != "Z":  # not a zombie
            found.append(int(stat.parent.name))
    return tuple(sorted(found))


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"
