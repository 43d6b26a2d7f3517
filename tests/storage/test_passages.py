"""A note's passages (storage/index/passages.py): they cover its text, a short note is one,
a saved chat's messages and a document's sections stand apart, and none is too long to embed."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from storage.index.passages import MAX_WORDS, SHORT_WORDS, split

_BLOCKS = st.one_of(
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=300),
    st.sampled_from(["# Heading", "## Sub", "```", "~~~", "- item one", "1. first", "",
                     "Ana, 9 Feb 2025 19:02: hello there", "[06/03/2025, 20:14] Ines: yes",
                     "Yara · 8 Sep 2025 · 19:58", "Maren: right", "word " * 200,
                     "A sentence. " * 80]),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_BLOCKS, max_size=30), st.sampled_from(["\n", "\n\n", "\r\n"]))
def test_passages_cover_every_character_of_the_body_once_in_order(
        blocks: list[str], newline: str) -> None:
    body = newline.join(blocks)
    passages = split(body)
    covered = [False] * len(body)
    last_end = 0
    for p in passages:
        assert last_end <= p.start < p.end <= len(body)
        last_end = p.end
        for i in range(p.start, p.end):
            covered[i] = True
    missed = [body[i] for i in range(len(body)) if not covered[i] and not body[i].isspace()]
    assert missed == []
    assert (passages == []) == (body.split() == [])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["alpha", "beta.", "gamma!", "delta?", "\n", "\n\n"]),
                min_size=1, max_size=2000))
def test_no_passage_is_longer_than_the_model_reads(words: list[str]) -> None:
    body = " ".join(words)
    for p in split(body):
        assert len(body[p.start:p.end].split()) <= MAX_WORDS


def test_a_short_note_is_one_passage() -> None:
    body = "# Plan\n\nCall Sara about the budget.\n\n- bring the numbers\n- book a room\n"
    assert len(body.split()) <= SHORT_WORDS
    [only] = split(body)
    assert body[only.start:only.end] == body.strip()


def test_a_saved_chat_is_cut_between_messages() -> None:
    lines = [f"Tobias, 13 Apr 2025 10:{i:02d}: message number {i} " + "about the house " * 6
             for i in range(30)]
    body = "\n".join(lines)  # a line per message, no blank line between them
    passages = split(body)
    assert len(passages) > 3
    starts = {m.start() for m in re.finditer(r"^Tobias", body, re.M)}
    assert all(p.start in starts for p in passages)  # never in the middle of a message


def test_a_section_starts_a_passage_with_its_heading() -> None:
    body = ("Intro words here. " * 30 + "\n\n## Cancelling the policy\n\n"
            + "You can cancel within 14 days. " * 10)
    passages = split(body)
    section = [p for p in passages if p.heading == "Cancelling the policy"]
    assert section and body[section[0].start:].startswith("## Cancelling the policy")
