"""The time a query names ("last week", "in May", "March 2025", "on 13 April 2025",
"yesterday") as a range of days, and the query without it (pure, no I/O).

Search ranks the notes whose day (storage/index/note_dates.py) falls in the range above the
others, and a query that is only a time ("what did I write last week?") lists the notes of
that time, newest first.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from storage.index.note_dates import MONTHS, days_in

_MONTH = "(" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_MONTH_YEAR = re.compile(rf"\b(?:in |during |from )?(?:early |mid-?|late )?{_MONTH},? "
                         r"((?:19|20)\d\d)\b", re.I)
_MONTH_ALONE = re.compile(rf"\b(?:in|during|since|from) (?:early |mid-?|late )?{_MONTH}\b",
                          re.I)
_YEAR = re.compile(r"\b(?:in|during|since|from) ((?:19|20)\d\d)\b", re.I)
_QUARTER = re.compile(r"\b(?:in )?q([1-4]) ((?:19|20)\d\d)\b", re.I)
_RELATIVE = re.compile(r"\b(today|yesterday|(?:this|last|past) (?:week|month|year)"
                       r"|(?:the )?(?:past|last) (\d{1,3}) days)\b", re.I)


@dataclass(frozen=True)
class TimeRange:
    first: dt.date
    last: dt.date
    rest: str  # the query without the words that named the time

    def holds(self, day: str | None) -> bool:
        if not day:
            return False
        return self.first.isoformat() <= day[:10] <= self.last.isoformat()


def _month(year: int, month: int) -> tuple[dt.date, dt.date]:
    first = dt.date(year, month, 1)
    after = dt.date(year + (month == 12), month % 12 + 1, 1)
    return first, after - dt.timedelta(days=1)


def _relative(phrase: str, days: str | None, today: dt.date) -> tuple[dt.date, dt.date]:
    phrase = phrase.lower()
    if phrase == "today":
        return today, today
    if phrase == "yesterday":
        return today - dt.timedelta(days=1), today - dt.timedelta(days=1)
    if days:
        return today - dt.timedelta(days=int(days)), today
    unit = phrase.split()[-1]
    this = phrase.startswith("this")
    if unit == "week":
        monday = today - dt.timedelta(days=today.weekday())
        return (monday, today) if this else (monday - dt.timedelta(days=7),
                                             monday - dt.timedelta(days=1))
    if unit == "month":
        if this:
            return today.replace(day=1), today
        return _month(today.year - (today.month == 1), (today.month - 2) % 12 + 1)
    return (dt.date(today.year, 1, 1), today) if this else (
        dt.date(today.year - 1, 1, 1), dt.date(today.year - 1, 12, 31))


def _cut(query: str, match: re.Match[str]) -> str:
    return " ".join((query[:match.start()] + " " + query[match.end():]).split())


def time_range(query: str, today: dt.date) -> TimeRange | None:
    """The days the query names, or None when it names no time."""
    days = days_in(query)
    if days:
        at, day = days[0]
        end = re.search(r"\d{4}\b", query[at:])
        rest = query[:at] + " " + query[at + (end.end() if end else 0):]
        return TimeRange(day, day, " ".join(rest.split()))
    if m := _QUARTER.search(query):
        quarter, year = int(m[1]), int(m[2])
        first, _ = _month(year, quarter * 3 - 2)
        return TimeRange(first, _month(year, quarter * 3)[1], _cut(query, m))
    if m := _MONTH_YEAR.search(query):
        return TimeRange(*_month(int(m[2]), MONTHS[m[1].lower()]), _cut(query, m))
    if m := _RELATIVE.search(query):
        return TimeRange(*_relative(m[1], m[2], today), _cut(query, m))
    if m := _MONTH_ALONE.search(query):
        month = MONTHS[m[1].lower()]
        year = today.year if month <= today.month else today.year - 1
        return TimeRange(*_month(year, month), _cut(query, m))
    if m := _YEAR.search(query):
        year = int(m[1])
        return TimeRange(dt.date(year, 1, 1), dt.date(year, 12, 31), _cut(query, m))
    return None
