"""Dates as people write them in a thought: "by Dec 15", "March 1", "end of the month",
"next Friday", "in two weeks", "tomorrow", weekdays, ISO dates.

Pure and deterministic: every phrase is read relative to a `today` the caller gives (the
user's date in the user's time zone; `today_in(tz)` computes it). Hand rules rather than a
library: `dateparser` (10 MB with its dependencies, 0.1 s to import) finds dates in words like
"we", "may" and "June" (a person), which would be false due dates, and misses "end of the
month". Conventions, chosen to be predictable:

- a bare weekday, or "this/on/by <weekday>": its next occurrence, 1-7 days ahead;
- "next <weekday>": that day of next week (weeks start on Monday); "next week": next Monday;
- "end of the week": Friday (Sunday at the weekend); "end of the month": its last day;
- a month and day without a year: this year's, or next year's once it has passed;
- past or recurring mentions ("last Tuesday", "yesterday", "every Friday", "Tuesdays") are
  recognised but give no date.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from storage.types import DATE_FIELDS

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
          "september", "october", "november", "december")
_MONTH_ABBR = {"jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8,
               "sep": 9, "sept": 9, "oct": 10, "nov": 11, "dec": 12}
_MONTH_NUM = {**{m: i for i, m in enumerate(MONTHS, start=1)}, **_MONTH_ABBR}
_WEEKDAY_NUM = {**{d: i for i, d in enumerate(WEEKDAYS)},
                "mon": 0, "tue": 1, "tues": 1, "wed": 2, "thu": 3, "thur": 3, "thurs": 3,
                "fri": 4, "sat": 5, "sun": 6}
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
            "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
            "a couple of": 2, "a couple": 2, "couple of": 2, "fourteen": 14, "thirty": 30}

_MONTH = r"(?P<month>" + "|".join(sorted(_MONTH_NUM, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?:,?\s+(?P<year>\d{4}))?"
_NUM = r"(?P<n>\d{1,3}|" + "|".join(sorted(_NUMBERS, key=len, reverse=True)) + r")"
_UNIT = r"(?P<unit>days?|weeks?|months?|fortnights?)"
# Words that lead into a date and belong to the phrase (stripped from titles with it).
_LEAD = r"(?:(?:on|by|before|until|till|due|for|from|no\s+later\s+than|deadline(?:\s+is)?)\s+)?"
_END = r"(?![\w/-]|:\d)"  # not "15:30", "15/3", "15-3" or part of a longer word


@dataclass(frozen=True)
class DateMention:
    start: int
    end: int
    text: str
    value: date | None  # None: a past or recurring mention, never a due date


def today_in(tz: str | tzinfo | None = None) -> date:
    """Today's date in `tz` (an IANA name or tzinfo); the machine's zone when None or unknown."""
    if tz is None:
        return date.today()
    if isinstance(tz, str):
        try:
            tz = ZoneInfo(tz)
        except (ZoneInfoNotFoundError, ValueError):
            return date.today()
    return datetime.now(tz).date()


def _clamp(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _month_end(year: int, month: int) -> date:
    return date(year, month, calendar.monthrange(year, month)[1])


def _add_months(today: date, months: int) -> date:
    index = today.month - 1 + months
    year, month = today.year + index // 12, index % 12 + 1
    return date(year, month, min(today.day, calendar.monthrange(year, month)[1]))


def _upcoming(month: int, day: int, year: str | None, today: date) -> date | None:
    if year:
        return _clamp(int(year), month, day)
    found = _clamp(today.year, month, day)
    if found is not None and found < today:
        found = _clamp(today.year + 1, month, day)
    return found


def _next_weekday(today: date, weekday: int) -> date:
    return today + timedelta(days=(weekday - today.weekday()) % 7 or 7)


def _monday_next_week(today: date) -> date:
    return today + timedelta(days=7 - today.weekday())


def _end_of_week(today: date) -> date:
    return today + timedelta(days=(4 - today.weekday()) if today.weekday() <= 4
                             else 6 - today.weekday())


Resolver = Callable[[re.Match[str], date], "date | None"]


def _iso(m: re.Match[str], today: date) -> date | None:
    return _clamp(int(m["y"]), int(m["m"]), int(m["d"]))


def _month_day(m: re.Match[str], today: date) -> date | None:
    return _upcoming(_MONTH_NUM[m["month"].lower()], int(m["day"]), m["year"], today)


def _nth_of_month(m: re.Match[str], today: date) -> date | None:
    day = int(m["day"])
    found = _clamp(today.year, today.month, day)
    if found is None or found < today:
        following = _add_months(today.replace(day=1), 1)
        found = _clamp(following.year, following.month, day)
    return found


def _relative_n(m: re.Match[str], today: date) -> date | None:
    raw = m["n"].lower()
    n = int(raw) if raw.isdigit() else _NUMBERS[re.sub(r"\s+", " ", raw)]
    unit = m["unit"].lower()
    if unit.startswith("month"):
        return _add_months(today, n)
    days = n * {"d": 1, "w": 7, "f": 14}[unit[0]]
    return today + timedelta(days=days)


def _weekday(m: re.Match[str], today: date) -> date | None:
    weekday = _WEEKDAY_NUM[m["wd"].lower().rstrip(".")]
    if (m["rel"] or "").lower() == "next":
        return _monday_next_week(today) + timedelta(days=weekday)
    return _next_weekday(today, weekday)


def _end_of_named_month(m: re.Match[str], today: date) -> date | None:
    month = _MONTH_NUM[m["month"].lower()]
    year = today.year if month >= today.month else today.year + 1
    return _month_end(int(m["year"]) if m["year"] else year, month)


def _by_month(m: re.Match[str], today: date) -> date | None:
    month = _MONTH_NUM[m["month"].lower()]
    return date(today.year if month > today.month else today.year + 1, month, 1)


def _end_of_quarter(m: re.Match[str], today: date) -> date | None:
    quarter = int(m["q"])
    found = _month_end(today.year, quarter * 3)
    return found if found >= today else _month_end(today.year + 1, quarter * 3)


def _fixed(offset: Callable[[date], date]) -> Resolver:
    return lambda m, today: offset(today)


def _past(m: re.Match[str], today: date) -> date | None:
    return None


def _rule(pattern: str, resolve: Resolver, lead: bool = True) -> tuple[re.Pattern[str], Resolver]:
    return re.compile(r"\b" + (_LEAD if lead else "") + pattern + _END, re.I), resolve


_WD = r"(?P<wd>" + "|".join(WEEKDAYS) + r"|mon|tues?|thu(?:rs?)?|fri)\.?"
_WD_ANY = r"(?:" + "|".join(WEEKDAYS) + r"|mon|tues?|wed|thu(?:rs?)?|fri|sat|sun)"
# Month names that are also names or words ("June", "may"): never read alone as a month.
_PLAIN_MONTHS = r"(?P<month>january|february|march|july|september|october|november|december)"


def _next_month_end(today: date) -> date:
    following = _add_months(today.replace(day=1), 1)
    return _month_end(following.year, following.month)


# Order does not matter: overlapping matches are settled by position and length.
_RULES: tuple[tuple[re.Pattern[str], Resolver], ...] = (
    # past and recurring mentions: recognised so they are never read as due dates
    _rule(r"(?:last|past|previous)\s+(?:week|month|year|" + _WD_ANY + r")", _past, lead=False),
    _rule(r"(?:every|each)\s+(?:other\s+)?(?:day|week|month|year|morning|evening|"
          + _WD_ANY + r")", _past, lead=False),
    _rule(r"(?:" + "|".join(WEEKDAYS) + r")s", _past, lead=False),
    _rule(r"(?:yesterday|\d+\s+(?:days?|weeks?|months?|years?)\s+ago|this\s+morning)", _past,
          lead=False),
    _rule(r"in\s+(?:early\s+|mid\s*-?\s*|late\s+)?(?:" + "|".join(MONTHS) + r")", _past,
          lead=False),
    # absolute dates
    _rule(r"(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})", _iso),
    _rule(_MONTH + r"\s+" + _DAY + _YEAR, _month_day),
    _rule(_DAY + r"\s+(?:of\s+)?(?!may\b)" + _MONTH + _YEAR, _month_day),
    _rule(r"the\s+(?P<day>\d{1,2})(?:st|nd|rd|th)", _nth_of_month),
    _rule(r"end\s+of\s+" + _MONTH + _YEAR, _end_of_named_month),
    _rule(r"(?:by|before|until|till)\s+" + _PLAIN_MONTHS, _by_month, lead=False),
    _rule(r"end\s+of\s+q(?P<q>[1-4])", _end_of_quarter),
    # relative to today
    _rule(r"(?:today|tonight|this\s+(?:afternoon|evening)|eod|end\s+of\s+(?:the\s+)?day)",
          _fixed(lambda t: t)),
    _rule(r"(?:the\s+)?day\s+after\s+tomorrow", _fixed(lambda t: t + timedelta(days=2))),
    _rule(r"(?:tomorrow|tmrw|tmr)", _fixed(lambda t: t + timedelta(days=1))),
    _rule(r"(?:early\s+|(?:the\s+)?beginning\s+of\s+)?next\s+week", _fixed(_monday_next_week)),
    _rule(r"(?:the\s+)?week\s+after\s+next",
          _fixed(lambda t: _monday_next_week(t) + timedelta(days=7))),
    _rule(r"(?:(?:the\s+)?end\s+of\s+(?:the\s+|this\s+)?week|eow|this\s+week)",
          _fixed(_end_of_week)),
    _rule(r"(?:the\s+)?end\s+of\s+next\s+week",
          _fixed(lambda t: _monday_next_week(t) + timedelta(days=4))),
    _rule(r"(?:(?:the\s+)?end\s+of\s+(?:the\s+|this\s+)?month|eom|this\s+month)",
          _fixed(lambda t: _month_end(t.year, t.month))),
    _rule(r"(?:the\s+)?end\s+of\s+next\s+month", _fixed(_next_month_end)),
    _rule(r"next\s+month", _fixed(lambda t: _add_months(t.replace(day=1), 1))),
    _rule(r"(?:the\s+)?end\s+of\s+(?:the\s+|this\s+)?year",
          _fixed(lambda t: date(t.year, 12, 31))),
    _rule(r"(?:this|the)\s+weekend", _fixed(lambda t: t + timedelta(days=(5 - t.weekday()) % 7))),
    _rule(r"next\s+weekend", _fixed(lambda t: _monday_next_week(t) + timedelta(days=5))),
    _rule(r"(?:in|within)\s+" + _NUM + r"\s+" + _UNIT, _relative_n),
    _rule(_NUM + r"\s+" + _UNIT + r"\s+from\s+(?:now|today)", _relative_n),
    _rule(r"(?:(?P<rel>next|this|coming)\s+)?" + _WD, _weekday),
    # "Wed", "Sat", "Sun" are words too: only with a word that makes them a day
    _rule(r"(?:(?P<rel>next|this|coming)|on|by|until|before)\s+(?P<wd>wed|sat|sun)\.?",
          _weekday, lead=False),
)


def find_dates(text: str, today: date) -> list[DateMention]:
    """Every date phrase of `text`, in order, without overlaps (the longest phrase wins)."""
    found: list[tuple[int, int, date | None]] = []
    for pattern, resolve in _RULES:
        for match in pattern.finditer(text):
            try:
                value = resolve(match, today)
            except (OverflowError, ValueError):  # e.g. "tomorrow" on date.max
                value = None
            found.append((match.start(), match.end(), value))
    found.sort(key=lambda f: (f[0], -(f[1] - f[0])))
    kept: list[DateMention] = []
    for start, end, value in found:
        if kept and start < kept[-1].end:
            continue
        kept.append(DateMention(start, end, text[start:end], value))
    return kept


# A date right after a verb of something that happened ("kicked off on Monday", "started last
# week", "met Sara on Tuesday") says when it happened, not when something is due.
_HAPPENED = re.compile(
    r"\b(?:kicked\s+off|started|began|begun|launched|happened|took\s+place|met|held|"
    r"finished|shipped|went\s+live|opened|joined|arrived|moved)"
    r"(?:\s+\w+){0,2}?\s+(?:on|in|at|this|last|since)?\s*$", re.I)


def due_date(text: str, today: date) -> str | None:
    """The first future date the text names as a due day, as YYYY-MM-DD; None when it names
    none (a date of something that happened is not one)."""
    for mention in find_dates(text, today):
        if mention.value is not None and not _HAPPENED.search(text[:mention.start]):
            return mention.value.isoformat()
    return None


def strip_dates(text: str, today: date | None = None) -> str:
    """The text without the phrases that name a date, and without dangling commas."""
    today = today or date(2000, 1, 3)  # any day: only the spans matter here
    out, last = [], 0
    for mention in find_dates(text, today):
        if mention.value is None:
            continue
        out.append(text[last:mention.start])
        last = mention.end
    out.append(text[last:])
    joined = _BEFORE_MARK.sub(r"\1", _RUN.sub(" ", "".join(out)))
    return re.sub(r"[,;]\s*([,;:.!?]|$)", r"\1", joined).strip(" ,;-")


# Runs of spaces of any kind (a no-break space too) become one. Space before a mark is matched
# from the start of its run only: a pattern starting with a bare \s+ is tried from every
# position of a long run, quadratic (40,000 no-break spaces took minutes).
_RUN = re.compile(r"[^\S\n]+")
_BEFORE_MARK = re.compile(r"(?<!\s)\s+([,;:.!?])")


_ISO_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def as_date(field: str, value: object, today: date) -> str | None:
    """A date field's value (`due_date`, `last_touched`) as a writer gives it, read as a
    capture reads dates: YYYY-MM-DD as it is, or one phrase ("tomorrow", "next Friday", "by
    March 1") as the day it names; None clears. Anything else: ValueError naming the field."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, date):
        return value.isoformat()
    text = str(value).strip() if isinstance(value, str) else ""
    hint = (f"{field}: {value!r} is not a date; use YYYY-MM-DD, or a phrase like 'tomorrow' "
            "or 'next Friday'")
    if _ISO_DAY.match(text):
        try:
            return date.fromisoformat(text).isoformat()
        except ValueError:
            raise ValueError(hint) from None
    mentions = [m for m in find_dates(text, today) if m.value is not None]
    rest = (text[:mentions[0].start] + text[mentions[0].end:]).strip(" .,") if mentions else text
    if len(mentions) != 1 or rest:
        raise ValueError(hint)
    return str(mentions[0].value)  # a date's str() is its ISO form


def with_dates(changes: dict[str, Any], today: date) -> dict[str, Any]:
    """`changes` with each date field read by `as_date` (the one rule of every writer: a
    capture, `update_entry`, `brain update`); ValueError names the first bad one."""
    return {key: as_date(key, value, today) if key in DATE_FIELDS else value
            for key, value in changes.items()}
