"""The "Related" section's links: every one a well-formed wikilink that Obsidian (and our own
link index) reads back to the note, whatever the note's name holds."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from storage.types import EntrySummary
from tools.capture.related import related_section, wikilink

LINK = re.compile(r"^\[\[([^\[\]|]+)(?:\|([^\[\]|]+))?\]\]$")


def _entry(name: str, path: str = "projects/draft-plan.md") -> EntrySummary:
    return EntrySummary(path=path, id="e_1", name=name, category="projects")


def test_a_name_with_brackets_keeps_both_sides_of_its_alias() -> None:
    assert wikilink(_entry("[Draft] plan")) == "[[draft-plan|Draft plan]]"
    assert wikilink(_entry("Plan [v2]")) == "[[draft-plan|Plan v2]]"
    assert wikilink(_entry("a | b")) == "[[draft-plan|a b]]"
    assert wikilink(_entry("draft-plan")) == "[[draft-plan]]"


@given(st.text(min_size=1, max_size=60))
def test_every_link_is_one_wikilink_to_its_note(name: str) -> None:
    link = wikilink(_entry(name))
    match = LINK.match(link)
    assert match is not None, link
    assert match.group(1) == "draft-plan"
    section = related_section([_entry(name)], ["projects/draft-plan"])
    assert section.count("[[") == 1 and section.count("]]") == 1
