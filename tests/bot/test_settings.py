"""The settings of the new entry points: read as written, or refused with a clear message."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from bot.config import Settings, cpu_quota, default_processes


def settings(**values: Any) -> Settings:
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


def test_defaults() -> None:
    s = settings()
    assert (s.capture_reaction, s.reminder_at, s.retention_days) == ("brain", (8, 0), 90)


def test_a_reaction_may_be_written_with_colons_and_a_time_without_a_leading_zero() -> None:
    s = settings(BRAIN_CAPTURE_REACTION=":floppy_disk:", BRAIN_REMINDER_TIME="7:30",
                 BRAIN_RETENTION_DAYS="0")
    assert (s.capture_reaction, s.reminder_time, s.retention_days) == ("floppy_disk", "07:30", 0)


@pytest.mark.parametrize(("name", "value", "says"), [
    ("BRAIN_REMINDER_TIME", "8am", "HH:MM"),
    ("BRAIN_REMINDER_TIME", "25:00", "HH:MM"),
    ("BRAIN_CAPTURE_REACTION", "::", "emoji name"),
    ("BRAIN_RETENTION_DAYS", "-1", "greater than or equal"),
    ("BRAIN_USER_RATE", "lots", "30/min, 500/h or 100/10s"),
    ("BRAIN_USER_RATE", "30/day", "30/min, 500/h or 100/10s"),
    ("BRAIN_USER_RATE", "30/0s", "longer than 0 s"),
    ("BRAIN_USER_RUNNING", "-1", "greater than or equal"),
])
def test_bad_values_are_refused_with_what_is_expected(name: str, value: str, says: str) -> None:
    with pytest.raises(ValidationError, match=says):
        settings(**{name: value})


@pytest.mark.parametrize(("written", "count", "seconds"), [
    ("30/min", 30, 60), ("30", 30, 60), ("500/h", 500, 3600), ("100/10s", 100, 10),
    (" 5 / 2 minutes ", 5, 120), ("0", 0, 60)])
def test_a_persons_rate_reads_as_written(written: str, count: int, seconds: int) -> None:
    assert settings(BRAIN_USER_RATE=written).user_rate_limit == (count,
                                                                 timedelta(seconds=seconds))


def test_a_persons_share_defaults_to_two_at_once_and_thirty_a_minute() -> None:
    s = settings()
    assert (s.user_running, s.user_rate_limit) == (2, (30, timedelta(minutes=1)))


def test_serve_runs_one_process_per_core_unless_told(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BRAIN_PROCESSES", raising=False)
    assert settings().processes == max(os.cpu_count() or 1, 1)
    assert settings(BRAIN_PROCESSES="1").processes == 1


def _cgroup(tmp_path: Path, line: str, files: dict[str, str]) -> tuple[Path, Path]:
    """A /sys/fs/cgroup tree and a /proc/self/cgroup as a container's runtime writes them."""
    root = tmp_path / "cgroup"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    mine = tmp_path / "self-cgroup"
    mine.write_text(line + "\n")
    return root, mine


def test_processes_follow_a_containers_cpu_quota_not_the_hosts_cores(tmp_path: Path) -> None:
    # cgroup v2: 1.5 CPUs for this container (its parent is unlimited): 2 processes at most
    v2 = _cgroup(tmp_path / "v2", "0::/kube/pod1", {
        "kube/pod1/cpu.max": "150000 100000\n", "kube/cpu.max": "max 100000\n"})
    assert cpu_quota(*v2) == 1.5
    assert default_processes(*v2) == min(2, len(os.sched_getaffinity(0)))
    # cgroup v1: one CPU (the quota on a parent counts too)
    v1 = _cgroup(tmp_path / "v1", "4:cpu,cpuacct:/docker/abc", {
        "cpu,cpuacct/docker/abc/cpu.cfs_quota_us": "-1\n",
        "cpu,cpuacct/docker/abc/cpu.cfs_period_us": "100000\n",
        "cpu,cpuacct/docker/cpu.cfs_quota_us": "100000\n",
        "cpu,cpuacct/docker/cpu.cfs_period_us": "100000\n"})
    assert cpu_quota(*v1) == 1.0 and default_processes(*v1) == 1
    # no quota anywhere, or no cgroup to read: the cores this process may run on
    free = _cgroup(tmp_path / "free", "0::/", {"cpu.max": "max 100000\n"})
    assert cpu_quota(*free) is None
    assert default_processes(*free) == min(len(os.sched_getaffinity(0)), 64)
    assert cpu_quota(tmp_path / "none", tmp_path / "missing") is None
