"""Who holds a job's lease, and whether that process is still alive.

A lease owner is its process's name (`host:pid:place.start`, storage/processes.py: where a
pid means one process, and when it started) and a token per worker. A worker that sees a
running job whose owner has its place but no live process with that pid and start time knows
the owner died (`kill -9`, a crash): the job is free at once instead of after its lease. An
owner of another place (another machine) is judged by its connections on PostgreSQL: none at
two looks a few seconds apart, and its jobs are free (bot/jobs/worker.py); on SQLite, and
for an owner of an unknown shape, its lease decides, as before.
"""

from __future__ import annotations

import secrets

from storage.processes import place, process_name, start_of


def owner_id() -> str:
    """A new owner name for a worker of this process (fits the jobs table's 64 characters)."""
    return f"{process_name()}.{secrets.token_hex(3)}"


def _of_here(owner: str) -> tuple[int, str] | None:
    """The pid and start time of `owner`'s process when it is of this place, else None."""
    parts = owner.split(":")
    if len(parts) != 3 or not parts[1].isdigit():
        return None
    found = parts[2].split(".")
    here = place()
    if len(found) != 3 or here is None or found[0] != here or found[1] == "-":
        return None
    return int(parts[1]), found[1]


def dead(owner: str) -> bool:
    """Whether `owner` names a process of this place that no longer runs."""
    found = _of_here(owner)
    return found is not None and start_of(found[0]) != found[1]


def elsewhere(owner: str) -> bool:
    """Whether `owner` names a process of another place (machine, container): /proc cannot
    say whether it lives; its connections to the database can (storage/repositories/
    fencing.py `unconnected`)."""
    parts = owner.split(":")
    return len(parts) == 3 and parts[1].isdigit() and _of_here(owner) is None \
        and len(parts[2].split(".")) == 3
