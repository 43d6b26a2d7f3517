"""The one limit of a message (tools/capture/limits.py): text of any script, emoji and
punctuation is taken up to MAX_MESSAGE characters; a message with a tenth or more of its
visible characters control characters, lone surrogates or U+FFFD is not text."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tools.capture.limits import MAX_MESSAGE, excerpt, not_text, refusal

WRITTEN = st.text(st.characters(categories=("L", "M", "N", "P", "S", "Zs"),
                                include_characters="\t\n\r"), min_size=1, max_size=400)
JUNK = st.sampled_from(["\x00", "\x07", "\x1b", "\x7f", "\x9b", "\ufffd", "\udc80"])


@given(WRITTEN)
def test_written_text_of_any_script_is_taken(text: str) -> None:
    assert refusal(text) is None


@given(st.lists(JUNK, min_size=1, max_size=20), st.integers(min_value=0, max_value=300))
def test_a_tenth_of_junk_makes_a_message_not_text(junk: list[str], letters: int) -> None:
    text = "a" * letters + "".join(junk)
    visible = letters + len(junk)
    assert not_text(text) == (len(junk) >= 0.1 * visible)
    if not_text(text):
        assert refusal(text) is not None and "not text" in (refusal(text) or "")


def test_over_the_limit_is_refused_and_at_it_taken() -> None:
    assert refusal("x" * MAX_MESSAGE) is None
    assert "over the limit of 40,000" in (refusal("x" * (MAX_MESSAGE + 1)) or "")


@given(WRITTEN)
def test_an_excerpt_is_the_start_and_short(text: str) -> None:
    long = text * 10
    short = excerpt(long, most=50)
    assert len(short) <= 52
    assert long.strip().startswith(short.rstrip(" \u2026"))
