"""Wikilink extraction: the forms Obsidian writes, nothing inside code."""

from __future__ import annotations

from storage.vault.links import MAX_LINE, WikiLink, extract_links, link_key


def targets(body: str) -> list[tuple[str, str | None, str | None, bool]]:
    return [(link.target, link.heading, link.alias, link.embed) for link in extract_links(body)]


def test_link_forms() -> None:
    body = "[[Sara]] [[people/Bob|Bobby]] [[Q3#Budget]] [[#Local]] ![[diagram.png]] [[A#h|al]]"
    assert targets(body) == [
        ("Sara", None, None, False),
        ("people/Bob", None, "Bobby", False),
        ("Q3", "Budget", None, False),
        ("", "Local", None, False),
        ("diagram.png", None, None, True),
        ("A", "h", "al", False),
    ]


def test_line_is_the_stripped_source_line() -> None:
    links = extract_links("intro\n   Call [[Sara]] about Q3   \n")
    assert links == [WikiLink("Sara", None, None, "Call [[Sara]] about Q3", False)]
    long_line = "x" * 300 + " [[Far]]"
    assert len(extract_links(long_line)[0].line) == MAX_LINE


def test_links_in_code_are_ignored() -> None:
    body = "\n".join([
        "`[[InlineCode]]` and ``a ` [[Double]] `` but [[Real]]",
        "```python",
        "x = '[[InFence]]'",
        "```",
        "~~~~",
        "[[InTilde]]",
        "~~~",
        "[[StillInTilde]]",
        "~~~~",
        "[[After]]",
    ])
    assert [t[0] for t in targets(body)] == ["Real", "After"]


def test_unclosed_fence_hides_the_rest() -> None:
    assert targets("[[Before]]\n```\n[[Inside]]\n") == [("Before", None, None, False)]


def test_table_escaped_pipe_and_empty_links() -> None:
    assert targets("| [[Tab\\|alias]] | [[]] | [[ ]] |") == [("Tab", None, "alias", False)]


def test_unmatched_backtick_does_not_hide_links() -> None:
    assert [t[0] for t in targets("it`s [[Here]]")] == ["Here"]


def test_link_key_normalises() -> None:
    assert link_key("./People/Sara.MD") == "people/sara"
    assert link_key("people\\Sara") == "people/sara"
    assert link_key("/a//b.md ") == "a/b"
    # NFD (as macOS writes file names) and NFC resolve alike.
    assert link_key("Cafe\u0301") == link_key("Caf\u00e9")
