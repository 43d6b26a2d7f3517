"""Block Kit cards for the bot's replies, built with slack_sdk's typed blocks.

Every outgoing message goes through `validate_message` (bot/slack/validation.py, re-exported here),
which runs the SDK's own validators plus the documented limits the SDK does not check.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    ConfirmObject,
    ContextBlock,
    MarkdownBlock,
    MarkdownTextObject,
    PlainTextObject,
    SectionBlock,
)

from bot.slack.mrkdwn import clip as clip
from bot.slack.mrkdwn import escape as escape
from bot.slack.mrkdwn import shown as shown
from bot.slack.mrkdwn import title as title
from bot.slack.validation import BODY_PREVIEW as BODY_PREVIEW
from bot.slack.validation import MAX_BLOCKS as MAX_BLOCKS
from bot.slack.validation import MAX_CONTEXT_TEXT as MAX_CONTEXT_TEXT
from bot.slack.validation import MAX_FIELD_TEXT as MAX_FIELD_TEXT
from bot.slack.validation import MAX_MARKDOWN as MAX_MARKDOWN
from bot.slack.validation import MAX_MESSAGE_TEXT as MAX_MESSAGE_TEXT
from bot.slack.validation import MAX_ROWS as MAX_ROWS
from bot.slack.validation import MAX_SECTION_TEXT as MAX_SECTION_TEXT
from bot.slack.validation import MessageInvalid as MessageInvalid
from bot.slack.validation import SlackMessage as SlackMessage
from bot.slack.validation import message as message
from bot.slack.validation import validate_message as validate_message
from storage.types import FILED_CATEGORIES
from tools.rules.naming import shown_name

MOVE_ACTION_PREFIX = "move_entry:"
UNDO_ACTION = "undo_entry"
UNDO_CHANGES_ACTION = "undo_changes"  # a turn's changes, through the vault's history
OPEN_NOTE_ACTION = "open_note"  # a source's button (+ ":<n>": unique in one message)
MAX_SOURCES = 5  # notes with a button under one answer

# Fields worth showing on a filed-note card, in display order.
KEY_FIELDS: tuple[tuple[str, str], ...] = (
    ("next_action", "Next action"),
    ("due_date", "Due"),
    ("status", "Status"),
    ("follow_ups", "Follow-ups"),
    ("one_liner", "One-liner"),
    ("context", "Context"),
)


def new_ref() -> str:
    """A short reference id shown to the user and written to the log."""
    return secrets.token_hex(3)


# ---------------------------------------------------------------------------------------------
# validation


# ---------------------------------------------------------------------------------------------
# building blocks


def section(text: str, *, block_id: str | None = None) -> SectionBlock:
    return SectionBlock(text=MarkdownTextObject(text=clip(text, MAX_SECTION_TEXT)),
                        block_id=block_id)


def context(text: str, *, block_id: str | None = None) -> ContextBlock:
    return ContextBlock(elements=[MarkdownTextObject(text=clip(text, MAX_CONTEXT_TEXT))],
                        block_id=block_id)


def text_sections(text: str) -> list[Block]:
    """Long text split into sections of at most 3,000 characters (on line breaks when possible)."""
    chunks: list[str] = []
    rest = text.strip()
    while rest:
        if len(rest) <= MAX_SECTION_TEXT:
            chunks.append(rest)
            break
        cut = rest.rfind("\n", 0, MAX_SECTION_TEXT)
        if cut < MAX_SECTION_TEXT // 2:
            cut = MAX_SECTION_TEXT
        chunks.append(rest[:cut])
        rest = rest[cut:].strip()
    return [section(c) for c in chunks if c.strip()]


def prose(text: str) -> MarkdownBlock:
    """The model's prose as a `markdown` block: **bold**, [links](url), lists and code render
    as written (mrkdwn sections show them literally). `text` comes escaped."""
    return MarkdownBlock(text=clip(text.strip(), MAX_MARKDOWN))


def _field_text(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


def _fields(data: dict[str, Any]) -> list[MarkdownTextObject]:
    fields = data.get("fields") if isinstance(data.get("fields"), dict) else data
    out = []
    for key, label in KEY_FIELDS:
        value = fields.get(key) if isinstance(fields, dict) else None
        if value in (None, "", []):
            continue
        shown = clip(escape(_field_text(value)), MAX_FIELD_TEXT - len(label) - 4)
        out.append(MarkdownTextObject(text=f"*{label}*\n{shown}"))
    return out[:10]


def move_buttons(entry_id: str, current: str | None, *, suffix: str = "") -> ActionsBlock:
    """"Move to" one button per other filed category, and Undo (to the vault's trash)."""
    buttons: list[ButtonElement] = []
    for category in FILED_CATEGORIES:
        if category == current:
            continue
        buttons.append(ButtonElement(
            text=f"Move to {title(category)}",
            action_id=f"{MOVE_ACTION_PREFIX}{category}",
            value=json.dumps({"entry_id": entry_id, "to": category}),
        ))
    buttons.append(ButtonElement(
        text="Undo",
        action_id=UNDO_ACTION,
        value=json.dumps({"entry_id": entry_id}),
        style="danger",
        confirm=ConfirmObject(title="Undo this capture?",
                              text="The note goes to the vault's .trash folder (not deleted).",
                              confirm="Move to trash", deny="Keep it"),
    ))
    return ActionsBlock(elements=buttons, block_id=f"move-{entry_id}{suffix}")


THREAD_HINT = "reply in thread to correct (e.g. `fix: people`)"


def capture_blocks(data: dict[str, Any], *, suffix: str = "",
                   hint: str | None = THREAD_HINT) -> list[Block]:
    """The receipt of a filed note: where it went, key fields, confidence, correction buttons."""
    entry_id = str(data.get("id") or "")
    category = data.get("category")
    name = shown(data.get("name") or "note")
    if category == "inbox":
        head = f"Saved to *Inbox* for review: {name}"
        if data.get("suggested_category"):
            head += f"\nBest guess: *{title(data['suggested_category'])}*"
    else:
        head = f"Filed to *{title(category)}*: {name}"
    blocks: list[Block] = [section(head, block_id=f"filed-{entry_id}{suffix}")]
    fields = _fields(data)
    if fields:
        blocks.append(SectionBlock(fields=fields, block_id=f"fields-{entry_id}{suffix}"))
    info = []
    if isinstance(data.get("confidence"), int | float):
        info.append(f"confidence {float(data['confidence']):.2f}")
    if data.get("path"):
        info.append(f"`{escape(str(data['path']))}`")
    if hint:
        info.append(hint)
    blocks.append(context(" · ".join(info), block_id=f"conf-{entry_id}{suffix}"))
    unread = "; ".join(escape(clip(str(u), 200)) for u in data.get("unread") or [])
    if unread:  # a shared file or link that could not be read: the note has the rest
        blocks.append(context(f":warning: Could not read {unread}",
                              block_id=f"unread-{entry_id}{suffix}"))
    related = " · ".join(f"*{shown(r['name'], 60)}*" for r in data.get("related", []))
    if related:  # notes close to this one by meaning (tools/capture/related.py)
        blocks.append(context(f"Related: {related}", block_id=f"related-{entry_id}{suffix}"))
    if entry_id:
        blocks.append(move_buttons(entry_id, category, suffix=suffix))
    return blocks


def moved_blocks(data: dict[str, Any], *, suffix: str = "-moved") -> list[Block]:
    """After a move: "Moved to <category>: <name>", with buttons to move again or undo."""
    entry_id = str(data.get("id") or "")
    category = data.get("category")
    name = shown(data.get("name") or "note")
    blocks: list[Block] = [section(f"Moved to *{title(category)}*: {name}",
                                   block_id=f"filed-{entry_id}{suffix}")]
    path = data.get("new_path") or data.get("newPath") or data.get("path")  # newPath: older
    if path:
        blocks.append(context(f"now at `{escape(str(path))}`", block_id=f"conf-{entry_id}{suffix}"))
    if entry_id:
        blocks.append(move_buttons(entry_id, category, suffix=suffix))
    return blocks


def trashed_blocks(name: str, trash_path: str) -> list[Block]:
    return [section(f"Undone: *{shown(name)}* moved to the trash"),
            context(f"`{escape(trash_path)}` · nothing was deleted")]


def list_blocks(data: dict[str, Any], *, heading: str) -> list[Block]:
    """Compact rows: name, category, status. At most MAX_ROWS rows."""
    entries = [e for e in data.get("entries") or [] if isinstance(e, dict)]
    total = int(data.get("total") or len(entries))
    if not entries:
        return [section(f"{heading}: nothing found.")]
    rows = []
    for entry in entries[:MAX_ROWS]:
        bits = [title(entry.get("category"))]
        if entry.get("status"):
            bits.append(str(entry["status"]))
        row = f"• *{shown(entry.get('name') or entry.get('path'), 120)}* — " + \
            ", ".join(bits)
        if entry.get("snippet"):
            row += f"\n    _{escape(clip(str(entry['snippet']), 100))}_"
        rows.append(row)
    blocks: list[Block] = [section(f"*{heading}* ({total})")]
    blocks.extend(text_sections("\n".join(rows)))
    if total > len(rows):
        blocks.append(context(f"showing {len(rows)} of {total}"))
    return blocks


def entry_blocks(data: dict[str, Any]) -> list[Block]:
    """A single note: its fields and the start of its body."""
    name = shown(data.get("name") or data.get("path") or "note")
    blocks: list[Block] = [section(f"*{name}* · {title(data.get('category'))}")]
    fields = _fields(data)
    if fields:
        blocks.append(SectionBlock(fields=fields))
    body = str(data.get("body") or "").strip()
    if body:
        blocks.append(section(escape(clip(body, BODY_PREVIEW))))
    if data.get("path"):
        blocks.append(context(f"`{escape(str(data['path']))}`"))
    return blocks


def backlinks_blocks(data: dict[str, Any]) -> list[Block]:
    links = [b for b in data.get("backlinks") or [] if isinstance(b, dict)]
    if not links:
        return [section(f"No notes link to `{escape(str(data.get('target')))}`.")]
    rows = [f"• *{shown(b.get('name'))}* — _{escape(clip(str(b.get('context', '')), 100))}_"
            for b in links[:MAX_ROWS]]
    return [section(f"*Linked from* ({len(links)})"), *text_sections("\n".join(rows))]


def error_message(ref: str, detail: str | None = None) -> SlackMessage:
    text = f"Sorry, something went wrong on my side (ref {ref})."
    if detail:
        text += f" {detail}"
    return message([section(f":warning: {escape(text)}")], text)


def output_blocks(kind: str, data: dict[str, Any]) -> list[Block]:
    """The card of one tool result, by its kind."""
    if kind == "capture":
        return capture_blocks(data)
    if kind == "move":
        return moved_blocks(data, suffix="")
    if kind == "list":
        return list_blocks(data, heading="Notes")
    if kind == "search":
        return list_blocks(data, heading="Found")
    if kind in ("entry", "update"):
        return entry_blocks(data)
    if kind == "backlinks":
        return backlinks_blocks(data)
    if kind == "answer":
        return answer_blocks(data)
    return []


def answer_blocks(data: dict[str, Any]) -> list[Block]:
    """The answer card: text, then per source note its quote(s) and an Open button; when
    nothing was found, the closest notes with their buttons."""
    blocks: list[Block] = [prose(escape(str(data.get("answer") or "")))]
    notes: dict[str, dict[str, Any]] = {}
    for source in data.get("sources") or []:
        note = notes.setdefault(str(source.get("path")), {**source, "quotes": []})
        note["quotes"].append(str(source.get("quote") or ""))
    heading = "Sources" if notes else "Closest notes"
    listed = list(notes.values()) or [dict(n, quotes=[]) for n in data.get("closest") or []]
    if not listed:
        return blocks
    blocks.append(context(f"*{heading}*"))
    buttons = []
    for n, note in enumerate(listed[:MAX_SOURCES]):
        quotes = " · ".join(f"“{escape(clip(q, 200))}”" for q in note["quotes"])
        line = f"*{shown(note.get('name'))}* ({escape(str(note.get('path')))})"
        blocks.append(ContextBlock(elements=[MarkdownTextObject(
            text=clip(f"[{n + 1}] {line}" + (f": {quotes}" if quotes else ""), 3000))]))
        buttons.append(ButtonElement(
            text=PlainTextObject(text=clip(f"[{n + 1}] Open {shown_name(str(note.get('name')))}",
                                            75)),
            action_id=f"{OPEN_NOTE_ACTION}:{n}",
            value=clip(str(note.get("id") or note.get("path")), 2000)))
    blocks.append(ActionsBlock(elements=buttons))
    return blocks


def digest_message(digest: Any) -> SlackMessage:
    """A digest from brain.digests.make(): its own blocks when valid, else its text."""
    text = clip(escape(str(getattr(digest, "text", "") or "Your digest is empty.")),
                MAX_MESSAGE_TEXT)
    raw_blocks = list(getattr(digest, "blocks", None) or [])
    if raw_blocks:
        try:
            return message(raw_blocks[:MAX_BLOCKS], text)
        except MessageInvalid:
            pass  # fall back to plain sections rather than lose the digest
    return message(text_sections(text)[:MAX_BLOCKS], text)
