"""Text every database stores: no NUL, no lone surrogates.

PostgreSQL `text` refuses U+0000, and no UTF-8 driver can encode a lone surrogate (YAML's
"\\ud800" escapes make one). A note or a query holding either must not fail a whole refresh or
search, so they become U+FFFD at the edge, on the way in and on the way to a query alike (a
name with a NUL is still found by the same text).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

REPLACEMENT = "\ufffd"


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
    """A copy of `row` with every string value cleaned."""
    return {k: clean_text(v) if isinstance(v, str) else v for k, v in row.items()}
