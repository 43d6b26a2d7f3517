"""Names for notes: people by their name, everything else by its subject (tools/rules/naming.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tools.rules.naming import MAX_NAME, clean_person, subject


@pytest.mark.parametrize(("raw", "name"), [
    ("Dr. Patel", "Dr. Patel"), ("Dr Patel about", "Dr. Patel"), ("Tom's", "Tom"),
    ("Mrs. Okafor's", "Mrs. Okafor"), ("Professor Lee", "Professor Lee"),
    ("Alex Kim", "Alex Kim"), ("the bank", None), ("Monday", None), ("Dr", None),
])
def test_person_names(raw: str, name: str | None) -> None:
    assert clean_person(raw) == name


@pytest.mark.parametrize(("text", "keep_verb", "name"), [
    ("Website redesign: finish the new landing page mockups by Dec 15", False,
     "Website redesign"),
    ("Finish the annual security audit by end of next month", False, "Annual security audit"),
    ("Plan mom's 60th birthday party for May 9: venue, guest list, cake", False,
     "Mom's 60th birthday party"),
    ("The hiring pipeline project is blocked until legal signs off", False,
     "Hiring pipeline project"),
    ("Could we gamify code reviews with points for fast, kind feedback?", True,
     "Gamify code reviews"),
    ("What if we used Obsidian for onboarding new engineers?", True,
     "Obsidian for onboarding new engineers"),
    ("Wouldn't it be cool to have a shared playlist for focus time?", True,
     "Shared playlist for focus time"),
    ("How about a quarterly hack week where anyone can pitch a project?", True,
     "Quarterly hack week"),
    ("A browser extension that turns any article into flashcards", True, "Browser extension"),
    ("Idea: a podcast about second brains and personal knowledge management", True,
     "Podcast about second brains"),
    ("Pay the electricity bill tomorrow", True, "Pay the electricity bill"),
    ("Book a dentist appointment for next week", True, "Book a dentist appointment"),
    ("I need to renew my passport before the trip", True, "Renew my passport"),
])
def test_subjects(text: str, keep_verb: bool, name: str) -> None:
    assert subject(text, keep_verb=keep_verb) == name


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300), st.booleans())
def test_a_subject_is_always_a_short_name(text: str, keep_verb: bool) -> None:
    name = subject(text, keep_verb=keep_verb)
    assert 0 < len(name) <= MAX_NAME and name == name.strip()


def test_a_no_break_space_at_the_edge_is_trimmed() -> None:
    # Found by the property test above: "0\xa0(" was named "0\xa0".
    assert subject("0\xa0(", keep_verb=False) == "0"
    assert subject("Call Sara\xa0\u2003", keep_verb=True) == subject("Call Sara")
