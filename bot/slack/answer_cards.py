"""The modal an answer's source button opens (`views.open`): one note, its name, category,
key fields and body, within Slack's limits for views, so the asker checks a claim without
leaving Slack. (The answer card itself is `cards.answer_blocks`.)
"""

from __future__ import annotations

from typing import Any

from slack_sdk.models.blocks import Block

from bot.slack.cards import KEY_FIELDS, clip, context, escape, section, text_sections
from storage.types import Entry

MAX_VIEW_BLOCKS = 100  # Slack's limit for a modal
MAX_TITLE = 24  # a modal's title


def note_view(entry: Entry) -> dict[str, Any]:
    """The modal that shows one note: name, category and path, key fields, the body."""
    blocks: list[Block] = [
        section(f"*{escape(clip(entry.name, 200))}*"),
        context(escape(f"{(entry.category or 'note').capitalize()} · {entry.path}")),
    ]
    fields = [f"*{label}*: {escape(clip(_text(entry.fields[key]), 500))}"
              for key, label in KEY_FIELDS if entry.fields.get(key) not in (None, "", [])]
    if fields:
        blocks.append(section("\n".join(fields)))
    room = MAX_VIEW_BLOCKS - len(blocks) - 1
    body = text_sections(escape(entry.body.strip()) or "_(no text)_")
    if len(body) > room:
        body = body[:room] + [context("(the rest of the note is longer than Slack shows)")]
    blocks.extend(body[:room + 1])
    return {"type": "modal", "title": {"type": "plain_text", "text": clip(entry.name, MAX_TITLE)},
            "close": {"type": "plain_text", "text": "Close"},
            "blocks": [b.to_dict() for b in blocks]}


def _text(value: Any) -> str:
    return ", ".join(str(v) for v in value) if isinstance(value, list) else str(value)

