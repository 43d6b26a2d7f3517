"""A note's day, and the days written in text (pure, no I/O).

A note's day is what a person would call its date: its `created` field, else a date written
in its title ("Chat with Tobias, 13 April 2025", "Product sync 2025-06-03"), else the day
of its file's time. Every hit and every citation shows it, and questions about time rank by
it (storage/index/time_words.py).
"""

from __future__ import annotations

import datetime as dt
import re

MONTHS = {name: i for i, names in enumerate(
    (("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"),
     ("may",), ("june", "jun"), ("july", "jul"), ("august", "aug"),
     ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
     ("december", "dec")), start=1) for name in names}
_MONTH = "(" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_ISO = re.compile(r"\b((?:19|20)\d\d)-(\d\d)-(\d\d)\b")
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)? (?:of )?{_MONTH},? ((?:19|20)\d\d)\b",
                             re.I)
_MONTH_DAY_YEAR = re.compile(rf"\b{_MONTH} (\d{{1,2}})(?:st|nd|rd|th)?,? ((?:19|20)\d\d)\b", re.I)
_SLASHED = re.compile(r"\b(\d{1,2})/(\d{1,2})/((?:19|20)\d\d)\b")  # day first, as in Europe


def _day(year: int, month: int, day: int) -> dt.date | None:
    try:
        return dt.date(year, month, day)
    except ValueError:
        return None


def days_in(text: str) -> list[tuple[int, dt.date]]:
    """The whole dates written in `text` (ISO, "13 April 2025", "April 13, 2025",
    "13/04/2025"), with where each starts, in order."""
    found: list[tuple[int, dt.date | None]] = []
    for m in _ISO.finditer(text):
        found.append((m.start(), _day(int(m[1]), int(m[2]), int(m[3]))))
    for m in _DAY_MONTH_YEAR.finditer(text):
        found.append((m.start(), _day(int(m[3]), MONTHS[m[2].lower()], int(m[1]))))
    for m in _MONTH_DAY_YEAR.finditer(text):
        found.append((m.start(), _day(int(m[3]), MONTHS[m[1].lower()], int(m[2]))))
    for m in _SLASHED.finditer(text):
        found.append((m.start(), _day(int(m[3]), int(m[2]), int(m[1]))))
    return sorted((at, day) for at, day in found if day is not None)


def _created_day(created: object) -> dt.date | None:
    if isinstance(created, dt.datetime):
        return created.date()
    if isinstance(created, dt.date):
        return created
    if not isinstance(created, str) or not created.strip():
        return None
    text = created.strip()
    try:
        return dt.datetime.fromisoformat(text).date()
    except ValueError:
        pass
    days = days_in(text)
    return days[0][1] if days else None


def written_day(created: object, name: str) -> str | None:
    """The day a note says it is of, ISO: `created`, else a date in its title; None when
    it says none."""
    day = _created_day(created)
    if day is None:
        titled = days_in(name or "")
        day = titled[0][1] if titled else None
    return None if day is None else day.isoformat()


def note_day(created: object, name: str, mtime_ns: int) -> str:
    """The note's day, ISO (YYYY-MM-DD): `created`, else a date in the title, else the
    file's time (UTC)."""
    return written_day(created, name) or dt.datetime.fromtimestamp(
        mtime_ns / 1e9, dt.UTC).date().isoformat()
