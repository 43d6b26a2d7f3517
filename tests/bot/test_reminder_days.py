"""The days a reminder tick reads (`morning_days`): whatever the time zone, a note due on a
day whose morning is under way there is among them."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo, available_timezones

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.schedule.reminders import WINDOW, morning_days

ZONES = sorted(available_timezones())


@settings(max_examples=500, deadline=None)
@given(now=st.datetimes(min_value=datetime(2026, 1, 1), max_value=datetime(2028, 12, 31),
                        timezones=st.just(UTC)),
       zone=st.sampled_from(ZONES), hour=st.integers(0, 23), minute=st.integers(0, 59))
def test_every_zones_morning_day_is_read(now: datetime, zone: str, hour: int,
                                         minute: int) -> None:
    local = now.astimezone(ZoneInfo(zone))
    start = datetime.combine(local.date(), time(hour, minute), tzinfo=local.tzinfo)
    days = morning_days(now, (hour, minute))
    if start <= local < start + WINDOW:
        assert local.date().isoformat() in days
    assert 1 <= len(days) <= 2


def test_most_hours_read_one_day() -> None:
    """Fewer rows than the three days around today: at 08:00 reminders, a UTC noon reads
    only that day (its morning is under way somewhere; no other day's is)."""
    assert morning_days(datetime(2027, 1, 5, 12, tzinfo=UTC), (8, 0)) == ["2027-01-05"]
    assert morning_days(datetime(2027, 1, 5, 19, tzinfo=UTC), (8, 0)) == [
        "2027-01-05", "2027-01-06"]  # Kiribati's morning of the 6th has begun
    assert morning_days(datetime(2027, 1, 5, 23, 59, tzinfo=UTC) + timedelta(minutes=2),
                        (8, 0)) == ["2027-01-06"]
