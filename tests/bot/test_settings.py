"""The settings of the new entry points: read as written, or refused with a clear message."""

from __future__ import annotations

import os
from typing import Any

import pytest
from pydantic import ValidationError

from bot.config import Settings


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
])
def test_bad_values_are_refused_with_what_is_expected(name: str, value: str, says: str) -> None:
    with pytest.raises(ValidationError, match=says):
        settings(**{name: value})


def test_serve_runs_one_process_per_core_unless_told(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BRAIN_PROCESSES", raising=False)
    assert settings().processes == max(os.cpu_count() or 1, 1)
    assert settings(BRAIN_PROCESSES="1").processes == 1
