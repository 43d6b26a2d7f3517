"""Text made safe to store, in the two places it goes.

`clean` / `clean_value`, for what we write (notes, YAML, our tables): lone surrogates (from
JSON like "\\udc80") cannot be encoded as UTF-8, control characters other than tab and line
breaks make YAML unreadable, NUL is refused by PostgreSQL; each becomes U+FFFD, so the user can
see that something was there.

`clean_text` / `clean_values`, for what we index and query from notes written by hand: only NUL
and lone surrogates (what a database refuses) become U+FFFD, the same on the way in and on the
way to a query, so a name holding one is still found by the same text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

REPLACEMENT = "\ufffd"
# C0 controls but tab, LF, CR; DEL and C1 controls; lone surrogates; the two non-characters
# YAML rejects.
_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def clean(text: str) -> str:
    """`text` with every character a note or a database cannot hold replaced by U+FFFD."""
    return _BAD.sub(REPLACEMENT, text) if _BAD.search(text) else text


def clean_value(value: Any) -> Any:
    """`clean` applied to every string inside a JSON-like value (keys included)."""
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, list | tuple):
        return [clean_value(v) for v in value]
    if isinstance(value, Mapping):
        return {clean(str(k)) if isinstance(k, str) else k: clean_value(v)
                for k, v in value.items()}
    return value


def clean_text(value: str) -> str:
    """`value` with NUL and lone surrogates replaced by U+FFFD (unchanged, and fast, when it
    has neither)."""
    if "\x00" in value:
        value = value.replace("\x00", REPLACEMENT)
    if value.isascii():
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "".join(REPLACEMENT if "\ud800" <= c <= "\udfff" else c for c in value)
    return value


def clean_values(row: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `row` with every string value cleaned (`clean_text`)."""
    return {k: clean_text(v) if isinstance(v, str) else v for k, v in row.items()}
