"""Rendering a digest: plain text and Block Kit dicts, plus trimming to the word limit.

Blocks are plain dicts (slack_sdk stays in bot/slack/); tests check them with slack_sdk.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import date
from typing import Any

from bot.digest.model import TITLES, TRIM_ORDER, WORD_LIMITS, Digest, Item

HEADER_MAX = 150  # Slack header text limit
SECTION_MAX = 3000  # Slack section text limit


def title(kind: str, day: date) -> str:
    label = "Daily digest" if kind == "daily" else "Weekly digest"
    return f"{label} · {day.strftime('%a')} {day.day} {day.strftime('%b %Y')}"


def item_line(item: Item, names: dict[str, str]) -> str:
    refs = [names[r] for r in item.ids if r in names]
    # Names already in the text are not repeated.
    extra = [n for n in refs if n.lower() not in item.text.lower()]
    return f"{item.text} ({', '.join(extra)})" if extra else item.text


def counts_line(counts: dict[str, int]) -> str:
    total = sum(counts.values())
    if not total:
        return "No captures this week."
    parts = ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]) if v)
    return f"Captured {total} this week: {parts}."


def render_text(digest: Digest) -> str:
    lines = [title(digest.kind, digest.date)]
    if digest.kind == "weekly":
        lines.append(counts_line(digest.counts))
    shown = False
    for key, items in digest.sections.items():
        if not items:
            continue
        shown = True
        lines.append("")
        lines.append(TITLES[key])
        lines.extend(f"- {item_line(i, digest.names)}" for i in items)
    if not shown:
        lines.append("")
        lines.append("Nothing needs you right now.")
    return "\n".join(lines)


def word_count(text: str) -> int:
    return len(text.split())


def _escape(text: str) -> str:
    """Slack mrkdwn control characters."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _cap(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render_blocks(digest: Digest) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [{
        "type": "header",
        "text": {"type": "plain_text", "text": _cap(title(digest.kind, digest.date), HEADER_MAX)},
    }]
    if digest.kind == "weekly":
        blocks.append({"type": "context", "elements": [
            {"type": "mrkdwn", "text": _escape(counts_line(digest.counts))}]})
    shown = False
    for key, items in digest.sections.items():
        if not items:
            continue
        shown = True
        lines = [f"*{TITLES[key]}*"]
        for item in items:
            refs = [digest.names[r] for r in item.ids if r in digest.names]
            names = f" — _{_escape(', '.join(refs))}_" if refs else ""
            lines.append(f"• {_escape(item.text)}{names}")
        blocks.append({"type": "section",
                       "text": {"type": "mrkdwn", "text": _cap("\n".join(lines), SECTION_MAX)}})
    if not shown:
        blocks.append({"type": "section",
                       "text": {"type": "mrkdwn", "text": "Nothing needs you right now."}})
    note = "Written by the LLM from your notes" if digest.source == "llm" else (
        "Built from your notes without an LLM")
    if digest.gaps:
        note += f"; left out {len(digest.gaps)} reference(s) to notes that do not exist"
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": note + "."}]})
    return blocks


def trim_to_limit(digest: Digest) -> Digest:
    """Drop the lowest-priority items until the plain text fits the kind's word limit."""
    limit = WORD_LIMITS[digest.kind]
    sections = dict(digest.sections)
    while True:
        current = replace(digest, sections=sections)
        if word_count(render_text(current)) <= limit:
            break
        for key in TRIM_ORDER[digest.kind]:
            if sections.get(key):
                sections[key] = sections[key][:-1]
                break
        else:
            break  # nothing left to drop
    return current


def finish(digest: Digest) -> Digest:
    """Trim to the word limit, keep only names the items use, and render."""
    digest = trim_to_limit(digest)
    used = {r for items in digest.sections.values() for i in items for r in i.ids}
    digest = replace(digest, names={r: n for r, n in digest.names.items() if r in used})
    text = render_text(digest)
    digest = replace(digest, text=text, words=word_count(text))
    return replace(digest, blocks=render_blocks(digest))
