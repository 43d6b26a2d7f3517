from datetime import date

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage.types import CATEGORIES, CATEGORY_FIELDS
from tools.classify_rules import MAX_NAME, classify, due_date, make_title

WED = date(2026, 3, 4)  # a Wednesday


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("Call Sara about the Q3 budget next week", "people"),
        ("Follow up with Priya about the offer", "people"),
        ("Catch up with Tom Baker over coffee", "people"),
        ("Sara mentioned she is moving to Berlin", "people"),
        ("Call the dentist about the crown next Tuesday", "admin"),
        ("Pay the electricity bill tomorrow", "admin"),
        ("Renew passport 2026-05-01", "admin"),
        ("Launch the new website by Friday", "projects"),
        ("Next step for the migration project: write the runbook", "projects"),
        ("Idea: a podcast about second brains", "ideas"),
        ("What if we used Obsidian for onboarding?", "ideas"),
        ("Maybe we could give every team a weekly demo slot", "ideas"),
    ],
)
def test_categories(text: str, category: str) -> None:
    result = classify(text, WED)
    assert result.category == category
    assert result.confidence >= 0.6, result.signals


def test_named_contact_beats_a_weak_project_signal() -> None:
    # The rule: a contact verb + a name (4) outweighs "Q3" and "budget" (1 each).
    result = classify("Call Sara about the Q3 budget next week", WED)
    assert result.name == "Sara"
    assert result.fields["follow_ups"] == ["Call Sara about the Q3 budget"]
    assert "next week" in result.fields["context"]
    assert 0.75 <= result.confidence < 0.9  # sure, but a competing signal exists


def test_admin_gets_due_date_and_todo_status() -> None:
    result = classify("Call the dentist about the crown next Tuesday", WED)
    assert result.category == "admin"
    assert result.fields == {"status": "todo", "due_date": "2026-03-10",
                             "next_action": "Call the dentist about the crown"}
    assert result.name == "Call the dentist about the crown"


def test_unambiguous_strong_signal_is_confident() -> None:
    assert classify("Pay the electricity bill", WED).confidence == 0.9


def test_one_weak_signal_is_middling() -> None:
    result = classify("Draft the newsletter", WED)
    assert result.category == "projects"
    assert 0.6 <= result.confidence <= 0.75


def test_no_signal_is_unsure() -> None:
    result = classify("the sky was very blue this morning", WED)
    assert result.confidence < 0.5
    assert result.category in CATEGORIES


def test_tie_is_unsure_and_consistent() -> None:
    # "plan" (projects, 1) vs "book" (admin, 1): a tie, admin wins the tie-break.
    result = classify("Plan the offsite and book the venue", WED)
    assert result.confidence < 0.5
    assert result.category == "admin"


def test_capitalised_non_names_are_not_people() -> None:
    assert classify("Call the bank about the mortgage", WED).category == "admin"
    assert classify("Email Monday about nothing", WED).category != "people"


def test_people_fields_are_people_fields() -> None:
    result = classify("Meet Jo to talk about the launch", WED)
    assert result.category == "people"
    assert set(result.fields) <= set(CATEGORY_FIELDS["people"])


@pytest.mark.parametrize(
    ("phrase", "expected"),
    [
        ("do it today", "2026-03-04"),
        ("do it tomorrow", "2026-03-05"),
        ("next week", "2026-03-09"),  # Monday of next week
        ("on Friday", "2026-03-06"),
        ("next Tuesday", "2026-03-10"),
        ("by wednesday", "2026-03-11"),  # today is Wednesday: the next one
        ("in 10 days", "2026-03-14"),
        ("due 2026-12-31", "2026-12-31"),
        ("due 2026-02-30", None),  # not a date
        ("no date here", None),
    ],
)
def test_due_dates(phrase: str, expected: str | None) -> None:
    assert due_date(phrase, WED) == expected


def test_dates_at_the_end_of_time_do_not_crash() -> None:
    assert "due_date" not in classify("pay rent tomorrow", date.max).fields


def test_first_date_named_wins() -> None:
    assert due_date("tomorrow, or Friday at the latest", WED) == "2026-03-05"


def test_title_is_short_and_cut_at_a_word() -> None:
    title = make_title("Write " + "a very long sentence " * 10)
    assert len(title) <= MAX_NAME
    assert title.endswith("…")
    assert not title[:-1].endswith(" ")


def test_default_today_is_used() -> None:
    assert classify("pay rent tomorrow").fields["due_date"] > "2000-01-01"


def test_hints_shape() -> None:
    hints = classify("Pay rent tomorrow", WED).hints()
    assert hints["category"] == "admin" and hints["name"] == "Pay rent"
    assert hints["due_date"] == "2026-03-05" and hints["status"] == "todo"


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300), st.dates())
def test_classify_never_raises(text: str, today: date) -> None:
    result = classify(text, today)
    assert result.category in CATEGORIES
    assert 0.0 <= result.confidence <= 1.0
    assert 0 < len(result.name) <= MAX_NAME
    assert set(result.fields) <= set(CATEGORY_FIELDS[result.category])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(
    ["Call", "Sara", "about", "the", "project", "idea", "pay", "bill", "tomorrow", "Friday",
     "next", "week", "Q3", "what if", "follow up with", "Tom", "2026-13-40", "launch", "?"]),
    max_size=12))
def test_classify_word_soup(words: list[str]) -> None:
    result = classify(" ".join(words), WED)
    assert result.category in CATEGORIES
    assert 0.0 <= result.confidence <= 1.0
