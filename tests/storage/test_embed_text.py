"""What of a note gets embedded (pure text handling, no model)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from storage.meaning.texts import note_text_for_embedding, plain_words


def test_the_title_alone_then_the_title_with_the_start_of_the_body() -> None:
    body = " ".join(f"w{i}" for i in range(300))
    texts = note_text_for_embedding("Q3 budget", body, window_words=100)
    assert texts[0] == "Q3 budget"
    assert texts[1] == "Q3 budget\n" + " ".join(f"w{i}" for i in range(100))
    assert len(texts) == 2


def test_more_windows_cover_more_of_the_body_each_with_the_title() -> None:
    body = " ".join(f"w{i}" for i in range(250))
    texts = note_text_for_embedding("Plan", body, windows=5, window_words=100,
                                    title_alone=False)
    assert [t.split("\n")[1].split()[0] for t in texts] == ["w0", "w100", "w200"]
    assert all(t.startswith("Plan\n") for t in texts)


def test_extra_fields_lead_the_first_window_only() -> None:
    texts = note_text_for_embedding("Website redesign", "one two three " * 100, windows=2,
                                    window_words=150, extra="Ship the new landing page",
                                    title_alone=False)
    assert texts[0].startswith("Website redesign. Ship the new landing page\n")
    assert texts[1].startswith("Website redesign\n")


def test_a_note_without_body_gets_its_title_once() -> None:
    assert note_text_for_embedding("Dr. Patel", "") == ["Dr. Patel"]
    assert note_text_for_embedding("Dr. Patel", "  \n", title_alone=False) == ["Dr. Patel"]
    assert note_text_for_embedding("", "") == [""]


def test_markup_is_reduced_to_words() -> None:
    body = """# Heading
Call [[people/sara-chen|Sara]] about [[Q3 budget]] and [[Offsite#Venue]].
See [the doc](https://example.com/x?y=1) and https://foo.bar/baz.
<!-- hidden --> %%private%% ![[diagram.png]] **bold** _it_ `code`
- [ ] a task ^block-1
> [!note] a callout
"""
    assert plain_words(body) == [
        "Heading", "Call", "Sara", "about", "Q3", "budget", "and", "Offsite", "Venue.",
        "See", "the", "doc", "and", "bold", "it", "code", "a", "task", "[!note]", "a",
        "callout"]


@pytest.mark.parametrize(("windows", "words"), [(0, 10), (1, 0)])
def test_windows_and_words_must_be_positive(windows: int, words: int) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        note_text_for_embedding("x", "y", windows=windows, window_words=words)


@given(st.text(max_size=60), st.text(max_size=2000), st.integers(1, 4), st.integers(1, 50),
       st.booleans())
def test_texts_are_few_distinct_and_bounded(name: str, body: str, windows: int, words: int,
                                           title_alone: bool) -> None:
    texts = note_text_for_embedding(name, body, windows=windows, window_words=words,
                                    title_alone=title_alone)
    assert 1 <= len(texts) <= windows + 1
    assert len(set(texts)) == len(texts)
    title_words = len(name.split())
    for text in texts:
        assert len(text.split()) <= title_words + words
