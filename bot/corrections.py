"""`fix: <category>`: the one correction that needs no LLM call."""

from __future__ import annotations

import re

# Singular, plural and a few everyday words for each category.
ALIASES: dict[str, str] = {
    "person": "people", "people": "people", "persons": "people", "contact": "people",
    "project": "projects", "projects": "projects",
    "idea": "ideas", "ideas": "ideas",
    "admin": "admin", "task": "admin", "tasks": "admin", "errand": "admin",
    "inbox": "inbox",
}
_FIX = re.compile(r"^\s*fix\s*:\s*([a-z]+)\s*[.!]?\s*$", re.IGNORECASE)


def parse_fix(text: str) -> str | None:
    """The target category of a `fix: <category>` message, else None."""
    match = _FIX.match(text)
    if not match:
        return None
    return ALIASES.get(match.group(1).lower())
