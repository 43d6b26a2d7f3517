"""What a message may be, at every door (`brain chat` and `brain add`, Slack, MCP's capture):
text, at most MAX_MESSAGE characters. A longer one, or one that is not text (mostly control
characters or bytes that were not UTF-8: a binary file piped in), is refused with a reply that
says why, and nothing is filed. A message that is taken is kept in full once, in the note's
body; an inbox note's `original_text` (frontmatter) holds its start only.
"""

from __future__ import annotations

MAX_MESSAGE = 40_000  # characters: Slack's own limit for a message, so every door has one
MAX_ORIGINAL = 500  # characters of a message an inbox note's frontmatter repeats
NOT_TEXT_SHARE = 0.1  # of the visible characters: more of them junk and it is not text
_REPLACEMENT = 0xFFFD  # what an undecodable byte became


def refusal(text: str) -> str | None:
    """Why `text` is not taken as a message, in a sentence for the person; None when it is."""
    if len(text) > MAX_MESSAGE:
        return (f"That message is {len(text):,} characters long, over the limit of "
                f"{MAX_MESSAGE:,}, so nothing was saved. Keep a long text as a file instead "
                "(`brain add --file`, or share the file in Slack).")
    if not_text(text):
        return ("That message is not text (it is mostly control characters or bytes that are "
                "not UTF-8), so nothing was saved.")
    return None


def not_text(text: str) -> bool:
    """Are at least NOT_TEXT_SHARE of the visible characters control characters (tab and
    line breaks aside), lone surrogates or U+FFFD?"""
    junk = visible = 0
    for c in text:
        o = ord(c)
        if (o < 32 and c not in "\t\n\r") or 0x7F <= o <= 0x9F or 0xD800 <= o <= 0xDFFF \
                or o in (_REPLACEMENT, 0xFFFE, 0xFFFF):
            junk += 1
            visible += 1
        elif not c.isspace():
            visible += 1
    return junk > 0 and junk >= NOT_TEXT_SHARE * visible


def excerpt(text: str, most: int = MAX_ORIGINAL) -> str:
    """The start of a message, for a field that repeats it (the body keeps all of it)."""
    text = text.strip()
    if len(text) <= most:
        return text
    return text[:most].rstrip() + " \u2026"
