"""`fix: <category>`: the one correction that needs no LLM call."""

from __future__ import annotations

import re

from tools.categories import category_of

_FIX = re.compile(r"^\s*fix\s*:\s*([a-z]+)\s*[.!]?\s*$", re.IGNORECASE)


def parse_fix(text: str) -> str | None:
    """The target category of a `fix: <category>` message, else None."""
    match = _FIX.match(text)
    if not match:
        return None
    return category_of(match.group(1))
