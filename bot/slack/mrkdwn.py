"""Text as Slack's mrkdwn shows it: escaped (no mention or link can be forged), clipped, and a
note's name shown so it cannot pass for another (tools/rules/naming.py)."""

from __future__ import annotations

from typing import Any

from tools.rules.naming import shown_name, unreordered


def escape(text: str) -> str:
    """Escape the three characters mrkdwn treats as control characters, and leave out the bidi
    controls that would make the text read other than it is (tools/rules/naming.py `unreordered`)."""
    return unreordered(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def shown(name: Any, limit: int | None = None) -> str:
    """A note's name in a card: no bidi or zero-width characters, a mix of look-alike scripts
    said (tools/rules/naming.py `shown_name`), escaped."""
    text = shown_name(str(name))
    return escape(clip(text, limit) if limit else text)


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def title(category: str | None) -> str:
    return (category or "note").capitalize()
