"""Digest rendering: Block Kit dicts that slack_sdk accepts, plain text, word limits."""

from __future__ import annotations

from datetime import date

from hypothesis import given, settings
from hypothesis import strategies as st
from slack_sdk.models.blocks import Block

from bot.digest.model import SECTIONS, WORD_LIMITS, Digest, Item
from bot.digest.render import finish, word_count

DAY = date(2026, 11, 22)


def make(kind: str, sections: dict[str, tuple[Item, ...]], names: dict[str, str],
         source: str = "llm", gaps: tuple[str, ...] = ()) -> Digest:
    full = {k: sections.get(k, ()) for k in SECTIONS[kind]}
    return finish(Digest(kind=kind, date=DAY, sections=full, names=names, source=source,
                         gaps=gaps, counts={"projects": 2, "people": 1} if kind == "weekly"
                         else {}))


def assert_valid_blocks(digest: Digest) -> None:
    assert digest.blocks
    for raw in digest.blocks:
        block = Block.parse(raw)
        assert block is not None
        block.validate_json()  # raises on limits (header length, section text length, ...)
        assert block.to_dict() == raw


def test_daily_blocks_and_text() -> None:
    digest = make("daily", {
        "top_actions": (Item("Send the draft <today> & relax", ("e_p",)),),
        "people": (Item("Ask about the venue", ("e_s",)),),
    }, {"e_p": "Q3 Budget", "e_s": "Sara", "e_unused": "Unused"}, gaps=("e_bogus",))
    assert_valid_blocks(digest)
    header = digest.blocks[0]
    assert header["type"] == "header" and header["text"]["text"].startswith("Daily digest")
    sections = [b["text"]["text"] for b in digest.blocks if b["type"] == "section"]
    assert sections[0] == ("*Top actions*\n• Send the draft &lt;today&gt; &amp; relax"
                           " — _Q3 Budget_")
    assert "_Sara_" in sections[1]
    assert "left out 1 reference" in digest.blocks[-1]["elements"][0]["text"]
    assert digest.text.splitlines()[2:] == [
        "Top actions", "- Send the draft <today> & relax (Q3 Budget)", "",
        "People to connect with", "- Ask about the venue (Sara)"]
    assert digest.names == {"e_p": "Q3 Budget", "e_s": "Sara"}  # only the names used
    assert digest.to_dict()["sections"]["people"] == [{"text": "Ask about the venue",
                                                       "ids": ["e_s"]}]


def test_weekly_has_counts_and_empty_digest_says_so() -> None:
    digest = make("weekly", {}, {}, source="offline")
    assert_valid_blocks(digest)
    assert "Captured 3 this week: projects 2, people 1." in digest.text
    assert "Nothing needs you right now." in digest.text
    assert "without an LLM" in digest.blocks[-1]["elements"][0]["text"]


texts = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")),
                min_size=1, max_size=300)
items = st.lists(st.builds(lambda t, n: Item(t, (f"id{n}",)), texts, st.integers(0, 5)),
                 max_size=5)


@settings(max_examples=80, deadline=None)
@given(kind=st.sampled_from(["daily", "weekly"]), data=st.data(),
       names=st.lists(texts, min_size=6, max_size=6))
def test_any_digest_renders_valid_blocks_within_the_word_limit(
        kind: str, data: st.DataObject, names: list[str]) -> None:
    sections = {k: tuple(data.draw(items)) for k in SECTIONS[kind]}
    digest = make(kind, sections, {f"id{i}": n for i, n in enumerate(names)})
    assert_valid_blocks(digest)
    assert digest.words == word_count(digest.text)
    header_words = word_count(digest.text.split("\n\n")[0])
    if header_words < WORD_LIMITS[kind]:
        assert digest.words <= WORD_LIMITS[kind]
