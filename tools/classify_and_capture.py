"""classify_and_capture: file a new thought as a note, or in the inbox when unsure."""

from __future__ import annotations

import logging
from typing import Any

from storage import repositories
from storage.types import DEFAULT_STATUS, LIST_FIELDS, STATUS_VALUES
from tools import classify_rules
from tools.base import CATEGORY_ENUM, Tool, ToolContext, ToolError, ToolOutput

log = logging.getLogger(__name__)

MAX_TEXT = 4000
MAX_NAME = 80

_STR: dict[str, Any] = {"type": "string", "maxLength": 500}
_STRS: dict[str, Any] = {"type": "array", "items": {"type": "string", "maxLength": 200}}

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "text": {"type": "string", "minLength": 1, "maxLength": MAX_TEXT,
                 "description": "The thought, verbatim"},
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
    "Save a new thought, task or fact the user tells you (not questions or corrections). "
    "Fill hints yourself: category, confidence 0-1, short name, and that category's fields "
    "(people: context, follow_ups; projects: status, next_action, due_date; ideas: one_liner; "
    "admin: status, due_date, next_action). Unsure goes to the inbox."
)


def _category_fields(category: str, source: dict[str, Any]) -> dict[str, Any]:
    """Only the fields that belong to the category (and a due date, whatever the category),
    with sane values."""
    out: dict[str, Any] = {}
    for key in classify_rules.FIELDS.get(category, ()):
        value = source.get(key)
        if value is None or value == "" or value == []:
            continue
        if key in LIST_FIELDS:
            if not isinstance(value, list):
                continue
            value = [str(v) for v in value if str(v).strip()]
        out[key] = value
    # A guessed status the category does not know would make the whole capture fail;
    # the default is better than losing the thought.
    allowed = STATUS_VALUES.get(category)
    if allowed is not None and out.get("status") not in allowed:
        out["status"] = DEFAULT_STATUS[category]
    return out


async def run(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    text: str = ctx.full_text(args["text"])
    if not text.strip():
        raise ToolError("invalid", "text is empty: there is nothing to save")
    hints: dict[str, Any] = dict(args.get("hints") or {})

    classified: classify_rules.Classification | None = None
    suggested_fields: dict[str, Any] = {}
    if "category" in hints and "confidence" in hints:
        category = str(hints["category"])
        confidence = float(hints["confidence"])
    elif "category" in hints:
        # The model chose without saying how sure: the keyword rules vote. Agreement files it;
        # disagreement sends it to the inbox with the model's choice as the suggestion.
        classified = classify_rules.classify(text, tz=ctx.tz, similar=ctx.similar)
        category = str(hints["category"])
        agree = classified.category == category
        confidence = (max(classified.confidence, ctx.confidence_threshold) if agree
                      else min(classified.confidence, ctx.confidence_threshold - 0.01))
    else:
        classified = classify_rules.classify(text, tz=ctx.tz, similar=ctx.similar)
        category, confidence = classified.category, float(classified.confidence)
        suggested_fields = dict(classified.fields)
    confidence = round(min(max(confidence, 0.0), 1.0), 2)

    name = str(hints.get("name") or "").strip()
    if not name:
        name = classified.name if classified else classify_rules.subject(text)
    name = name[:MAX_NAME].strip() or "Untitled"

    # The model's fields win over the keyword classifier's.
    merged = {**suggested_fields, **{k: v for k, v in hints.items()
                                     if k not in ("category", "confidence", "name")}}
    common = {"confidence": confidence, "source": ctx.source}
    body = text.strip() + "\n"
    if category == "inbox" or confidence < ctx.confidence_threshold:
        target = "inbox"
        if category == "inbox":
            reason = "classified as inbox"
        else:
            reason = f"confidence {confidence:.2f} below {ctx.confidence_threshold:.2f}"
        fields: dict[str, Any] = {**common, "original_text": text, "reason": reason}
        if category != "inbox":
            fields["suggested_category"] = category
        status = "needs_review"
    else:
        target = category
        fields = {**common, **_category_fields(category, merged)}
        status = "filed"

    entry = await ctx.store.create(target, name, fields, body)
    receipt = await write_receipt(ctx, text, entry.id or "", entry.path, target, confidence,
                                   status)
    data: dict[str, Any] = {
        "path": entry.path, "id": entry.id, "name": entry.name, "category": target,
        "confidence": confidence, "status": status,
    }
    if not receipt:
        data["receipt"] = "not recorded (the note is saved)"
    if target == "inbox" and category != "inbox":
        data["suggested_category"] = category
    shown = {k: v for k, v in entry.fields.items()
             if k not in ("id", "name", "category", "created", "updated", "source",
                          "confidence", "original_text")}
    data["fields"] = shown
    if status == "filed":
        summary = f"Filed to {target}: {entry.name} ({confidence:.2f})"
    else:
        summary = f"Saved to inbox for review: {entry.name} ({fields['reason']})"
    return ToolOutput(kind="capture", data=data, text=summary)


async def write_receipt(ctx: ToolContext, text: str, entry_id: str, path: str, category: str,
                        confidence: float | None, status: str) -> bool:
    """The capture's receipt row. The note is already on disk: a failure here is logged, not
    returned as an error, or the model would capture the thought a second time."""
    try:
        async with ctx.db.session() as session:
            await repositories.add_capture(
                session, user_id=ctx.user_id, original_text=text, entry_id=entry_id,
                path=path, category=category, confidence=confidence, status=status,
                conversation_id=ctx.conversation_id, turn_id=ctx.turn_id,
                channel=ctx.channel, thread_ts=ctx.thread_ts)
            await session.commit()
        return True
    except Exception:
        log.exception("capture receipt for %s not recorded", path)
        return False


TOOL = Tool(name="classify_and_capture", description=DESCRIPTION, parameters=SCHEMA, run=run,
            terminal=True, read_only=False)
