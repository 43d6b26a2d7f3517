"""Dates as people write them, read relative to the user's today (tools/rules/dates.py)."""

from __future__ import annotations

import re
from datetime import date

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tools.rules.dates import due_date, find_dates, strip_dates, today_in

WED = date(2026, 2, 18)  # a Wednesday


@pytest.mark.parametrize(("phrase", "expected"), [
    ("by Dec 15", "2026-12-15"),
    ("March 1", "2026-03-01"),
    ("on 3rd March", "2026-03-03"),
    ("December 15th, 2027", "2027-12-15"),
    ("before Jan 10", "2027-01-10"),  # already past this year: next year's
    ("end of the month", "2026-02-28"),
    ("by end of next month", "2026-03-31"),
    ("end of March", "2026-03-31"),
    ("by March", "2026-03-01"),
    ("end of Q3", "2026-09-30"),
    ("next Friday", "2026-02-27"),  # Friday of next week
    ("this Friday", "2026-02-20"),
    ("by Friday", "2026-02-20"),
    ("on Wednesday", "2026-02-25"),  # today is Wednesday: the next one
    ("next Wednesday", "2026-02-25"),
    ("on Sat", "2026-02-21"),
    ("next Fri.", "2026-02-27"),
    ("in two weeks", "2026-03-04"),
    ("in 10 days", "2026-02-28"),
    ("in a month", "2026-03-18"),
    ("3 weeks from now", "2026-03-11"),
    ("in a couple of days", "2026-02-20"),
    ("tomorrow", "2026-02-19"),
    ("the day after tomorrow", "2026-02-20"),
    ("today", "2026-02-18"),
    ("EOD", "2026-02-18"),
    ("next week", "2026-02-23"),
    ("end of the week", "2026-02-20"),
    ("the week after next", "2026-03-02"),
    ("this weekend", "2026-02-21"),
    ("on the 15th", "2026-03-15"),  # the 15th of this month has passed
    ("by the 28th", "2026-02-28"),
    ("deadline is 2026-04-10", "2026-04-10"),
])
def test_phrases(phrase: str, expected: str) -> None:
    assert due_date(f"Do the thing {phrase}", WED) == expected


@pytest.mark.parametrize("text", [
    "Met Sara last Tuesday", "Tuesdays feel slow", "Standup every Friday", "on Fridays",
    "two days ago", "yesterday's call", "she starts in September", "Talk to June about it",
    "I may switch teams", "Get 3 may be enough", "Sat down with Tom", "March is busy",
    "meet at 15:30", "due 2026-02-30", "Feb 29", "the 3 options", "weekend meetings",
    "Q3 budget", "version 2 of the plan", "Could we gamify code reviews?",
])
def test_no_due_date(text: str) -> None:
    assert due_date(text, WED) is None


def test_the_first_date_named_wins() -> None:
    assert due_date("tomorrow, or Friday at the latest", WED) == "2026-02-19"
    assert due_date("Met her last Friday; follow up next Monday", WED) == "2026-02-23"


def test_strip_dates_takes_the_phrase_and_its_lead_word() -> None:
    assert strip_dates("Book a dentist appointment for next week", WED) \
        == "Book a dentist appointment"
    assert strip_dates("Taxes due April 15", WED) == "Taxes"
    assert strip_dates("Renew passport by Dec 15, it expires", WED) == "Renew passport, it expires"
    assert strip_dates("Met Sara last Tuesday", WED) == "Met Sara last Tuesday"  # not a date


def test_today_in_a_zone() -> None:
    assert today_in("Pacific/Kiritimati") > today_in("Etc/GMT+12")
    assert today_in("Not/AZone") == date.today()  # an unknown zone: the machine's day


# Every word that can make a date: digits, weekdays, months, and relative words.
DATE_WORD = re.compile(
    r"\d|\b(?:mon|tue|wed|thu|fri|sat|sun|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|"
    r"today|tonight|tomorrow|tmrw|tmr|week|weekend|month|year|day|days|fortnight|eod|eow|"
    r"eom|q[1-4]|this\s+afternoon|this\s+evening)", re.I)

_words = st.lists(st.sampled_from([
    "next", "Friday", "by", "Dec", "15", "in", "two", "weeks", "tomorrow", "the", "end", "of",
    "month", "call", "Sara", "March", "1st", "on", "last", "every", "may", "June", "2026-03-05",
    "2026-13-45", "Q3", "weekend", "this", "a", "couple", "days", "ago", ",", ":", "?", "Sat",
]), max_size=10).map(" ".join)


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.text(max_size=120), _words), st.dates())
def test_dates_are_valid_iso_and_only_from_date_words(text: str, today: date) -> None:
    found = due_date(text, today)
    if found is None:
        return
    assert date.fromisoformat(found).isoformat() == found
    assert DATE_WORD.search(text), f"{found} from {text!r}"
    assert any(m.value is not None and DATE_WORD.search(m.text) for m in find_dates(text, today))
