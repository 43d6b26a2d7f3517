"""classify_and_capture: file a new thought as a note, or in the inbox when unsure (the
capture itself: tools/capture/thought.py)."""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator

from tools.base import CATEGORY_ENUM, Tool, ToolContext, ToolOutput
from tools.capture.limits import MAX_MESSAGE
from tools.capture.thought import MAX_NAME, capture_thought

MAX_TEXT = MAX_MESSAGE  # the one limit of a message, at every door

_STR: dict[str, Any] = {"type": "string", "maxLength": 500}
_STRS: dict[str, Any] = {"type": "array", "items": {"type": "string", "maxLength": 200}}

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "text": {"type": "string", "minLength": 1, "maxLength": MAX_TEXT,
                 "description": "The thought, verbatim"},
        "url": {"type": "string", "maxLength": 2000, "description": "A page to keep"},
        "hints": {
            "type": "object",
            "properties": {
                "category": {"type": "string", "enum": CATEGORY_ENUM},
                "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                "name": {"type": "string", "minLength": 1, "maxLength": MAX_NAME},
                "context": _STR,
                "follow_ups": _STRS,
                "next_action": _STR,
                "due_date": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"},
                "status": {"type": "string", "maxLength": 20},
                "one_liner": _STR,
                "tags": _STRS,
            },
            "additionalProperties": False,
        },
    },
    "required": ["text"],
    "additionalProperties": False,
}

DESCRIPTION = (
    "Save a thought, task or fact the user tells you (not questions or corrections). "
    "Fill hints yourself: category, confidence 0-1, short name, and that category's fields "
    "(people: context, follow_ups; projects: status, next_action, due_date; ideas: one_liner; "
    "admin: status, due_date, next_action). If unsure: inbox."
)


def repair(args: Any) -> tuple[dict[str, Any], list[str]] | None:
    """Arguments that fail the schema only in optional parts: those parts dropped (and named),
    so one bad due date or tag does not lose the thought. None when the text itself is bad."""
    if not isinstance(args, dict):
        return None
    text = args.get("text")
    if not isinstance(text, str) or not text.strip() or len(text) > MAX_TEXT:
        return None
    dropped = [f"{k} (not an argument)" for k in args if k not in ("text", "hints", "url")]
    hints = args.get("hints")
    kept: dict[str, Any] = {}
    if isinstance(hints, dict):
        for key, value in hints.items():
            if key not in _HINT_VALIDATORS:
                dropped.append(f"{str(key)[:40]} (unknown hint)")
            elif not _HINT_VALIDATORS[key].is_valid(value):
                dropped.append(f"{key} ({_short(value)} does not fit)")
            else:
                kept[key] = value
    elif hints is not None:
        dropped.append("hints (not an object)")
    out: dict[str, Any] = {"text": text, "hints": kept}
    url = args.get("url")
    if isinstance(url, str) and 0 < len(url) <= 2000:
        out["url"] = url
    elif url is not None:
        dropped.append("url (not a link)")
    return out, dropped


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 30 else text[:29] + "…"


async def run(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    url = args.get("url")
    if url and ctx.deps.read_links is not None and not ctx.shared_filed and not any(
            s.link == url for s, _ in ctx.shared):  # (a link the turn read already)
        ctx.shared = [*ctx.shared, *await ctx.deps.read_links([url])]
    return await capture_thought(ctx, ctx.full_text(args["text"]), dict(args.get("hints") or {}))


_HINT_VALIDATORS = {key: Draft202012Validator(sub)
                    for key, sub in SCHEMA["properties"]["hints"]["properties"].items()}

TOOL = Tool(name="classify_and_capture", description=DESCRIPTION, parameters=SCHEMA, run=run,
            terminal=True, read_only=False, repair=repair, additive=True)
