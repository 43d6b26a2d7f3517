"""classify_and_capture: file a new thought as a note, or in the inbox when unsure."""

from __future__ import annotations

import logging
from datetime import date
from typing import Any

from jsonschema import Draft202012Validator

from storage.text import visible_name
from storage.types import DEFAULT_STATUS, LIST_FIELDS, STATUS_VALUES, Entry, EntrySummary
from tools.base import CATEGORY_ENUM, Tool, ToolContext, ToolError, ToolOutput
from tools.capture.known_person import add_to_person, known_person
from tools.capture.limits import MAX_MESSAGE, excerpt, refusal
from tools.capture.related import related_notes, related_section
from tools.capture.repeats import filed_already
from tools.readers.sections import file_sections
from tools.rules import classify
from tools.rules.dates import as_date, today_in
from tools.rules.naming import shown_name
from tools.web.links import URL

log = logging.getLogger(__name__)

MAX_TEXT = MAX_MESSAGE  # the one limit of a message, at every door
MAX_NAME = 80

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


def _category_fields(category: str, source: dict[str, Any], dropped: list[str],
                     today: date) -> dict[str, Any]:
    """Only the fields that belong to the category (and a due date, whatever the category),
    with sane values; a value that cannot be kept is dropped and named in `dropped`, and the
    capture stands."""
    out: dict[str, Any] = {}
    for key in classify.FIELDS.get(category, ()):
        value = source.get(key)
        if value is None or value == "" or value == []:
            continue
        if key in LIST_FIELDS:
            if not isinstance(value, list):
                dropped.append(f"{key} (not a list)")
                continue
            value = [str(v) for v in value if str(v).strip()]
        out[key] = value
    if "due_date" in out:  # read as every writer reads it (tools/rules/dates.py: as_date)
        try:
            out["due_date"] = as_date("due_date", out["due_date"], today)
        except ValueError:
            dropped.append(f"due_date ({str(out.pop('due_date'))[:20]!r} is not a date)")
        if out.get("due_date", "") is None:
            out.pop("due_date")
    # A guessed status the category does not know would make the whole capture fail;
    # the default is better than losing the thought.
    allowed = STATUS_VALUES.get(category)
    if allowed is not None and out.get("status") not in allowed:
        if "status" in out:
            dropped.append(f"status ({str(out['status'])[:20]!r} is not one of "
                           f"{', '.join(allowed)})")
        out["status"] = DEFAULT_STATUS[category]
    return out


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
    if url and ctx.read_links is not None and not ctx.shared_filed and not any(
            s.link == url for s, _ in ctx.shared):  # (a link the turn read already)
        ctx.shared = [*ctx.shared, *await ctx.read_links([url])]
    return await capture_thought(ctx, ctx.full_text(args["text"]), dict(args.get("hints") or {}))


async def capture_thought(ctx: ToolContext, text: str, hints: dict[str, Any], *,
                       inbox_reason: str | None = None,
                       dropped: list[str] | None = None,
                       extra_fields: dict[str, Any] | None = None,
                       footer: str | None = None, repeat_ok: bool = False) -> ToolOutput:
    """File `text` as a note: by the model's hints, else by the keyword rules; to the inbox
    when unsure, or always with `inbox_reason` (the rescue of a turn that went wrong).
    `extra_fields` go into the frontmatter (a saved message's author) and `footer` ends the
    body (where the text came from). The same words sent again a moment ago make no second
    note (tools/capture/repeats.py) unless `repeat_ok` (a saved message: one note per message)."""
    if not text.strip():
        raise ToolError("invalid", "text is empty: there is nothing to save")
    refused = refusal(text)
    if refused is not None:
        raise ToolError("invalid", refused)
    dropped = list(dropped or [])
    classified: classify.Classification | None = None
    suggested_fields: dict[str, Any] = {}
    if "category" in hints and "confidence" in hints:
        category = str(hints["category"])
        confidence = float(hints["confidence"])
    elif "category" in hints:
        # The model chose without saying how sure: the keyword rules vote. Agreement files it;
        # disagreement sends it to the inbox with the model's choice as the suggestion.
        classified = await classify.classify_async(text, tz=ctx.tz, similar=ctx.similar)
        category = str(hints["category"])
        agree = classified.category == category
        confidence = (max(classified.confidence, ctx.confidence_threshold) if agree
                      else min(classified.confidence, ctx.confidence_threshold - 0.01))
    else:
        classified = await classify.classify_async(text, tz=ctx.tz, similar=ctx.similar)
        category, confidence = classified.category, float(classified.confidence)
        suggested_fields = dict(classified.fields)
    confidence = round(min(max(confidence, 0.0), 1.0), 2)

    name = visible_name(str(hints.get("name") or ""))  # no bidi or zero-width characters
    if ctx.shared and not URL.sub(" ", text).strip() and not URL.sub(" ", name).strip():
        name = ctx.shared[0][1].name  # a bare link (and no better name): its page's title
    if not name:
        name = classified.name if classified else classify.subject(text)
    name = visible_name(name)[:MAX_NAME].strip() or "Untitled"

    # The model's fields win over the keyword classifier's.
    merged = {**suggested_fields, **{k: v for k, v in hints.items()
                                     if k not in ("category", "confidence", "name")}}
    common = {"confidence": confidence, "source": ctx.source, **(extra_fields or {})}
    unread: list[str] = []  # "report.pdf: the PDF is encrypted": said in the reply
    if ctx.shared and not ctx.shared_filed:  # the message's files go with its (first) note
        ctx.shared_filed = True
        sections = await file_sections(ctx.store, ctx.shared)
        unread = sections.problems
        footer = "\n".join(x for x in (footer, sections.text) if x)
    body = text.strip() + "\n" + (f"\n{footer.strip()}\n" if footer and footer.strip() else "")
    entry_id = ctx.next_entry_id()
    related = await _related(ctx, text, entry_id)
    if related:
        targets = [await ctx.store.link_to(e.path) for e in related]
        body += "\n" + related_section(related, targets)
    if inbox_reason is not None or category == "inbox" or confidence < ctx.confidence_threshold:
        target = "inbox"
        if inbox_reason is not None:
            reason = inbox_reason
        elif category == "inbox":
            reason = "classified as inbox"
        else:
            reason = f"confidence {confidence:.2f} below {ctx.confidence_threshold:.2f}"
        # The body holds the whole text; the frontmatter its start (a YAML field that
        # repeated a long text made the note unreadable past the frontmatter bound).
        fields: dict[str, Any] = {**common, "original_text": excerpt(text), "reason": reason}
        if category != "inbox":
            fields["suggested_category"] = category
        status = "needs_review"
    else:
        target = category
        fields = {**common, **_category_fields(category, merged, dropped, today_in(ctx.tz))}
        status = "filed"

    # A derived id may be on a note already: made by an earlier attempt, or by a stalled one
    # still running. Its receipt says so, written before the note (a file that merely carries
    # the id, a copy or someone else's, is not it).
    claim = Receipt(ctx, text, entry_id, target, status, confidence) if entry_id else None
    existing = await claim.held() if claim is not None else None
    if existing is None and not repeat_ok and not ctx.shared:
        repeat = await filed_already(ctx, text, entry_id)
        if repeat is not None:
            return repeat
    if existing is None and target == "people" and not ctx.shared:
        person = await known_person(ctx, name)
        if person is not None:  # news of someone with a note: into that note
            return await add_to_person(ctx, person, text)
    entry, made = await ctx.store.create_once(target, name, fields, body, entry_id=entry_id,
                                              claim=claim)
    receipt = claim.ok if claim is not None else await write_receipt(
        ctx, text, entry.id or "", entry.path, target, confidence, status)
    if not made:  # another run filed it: the reply tells what is there
        target, status, confidence = _as_filed(entry, made, target, status, confidence)
        fields = entry.fields
        category = str(entry.fields.get("suggested_category") or target)
    data: dict[str, Any] = {
        "path": entry.path, "id": entry.id, "name": entry.name, "category": target,
        "confidence": confidence, "status": status,
    }
    if not receipt:
        data["receipt"] = "not recorded (the note is saved)"
    if target == "inbox" and category != "inbox":
        data["suggested_category"] = category
    if dropped:
        data["dropped"] = dropped
    if unread:
        data["unread"] = unread
    if related:
        data["related"] = [{"name": e.name, "path": e.path, "id": e.id} for e in related]
    shown = {k: v for k, v in entry.fields.items()
             if k not in ("id", "name", "category", "created", "updated", "source",
                          "confidence", "original_text", *(extra_fields or {}))}
    data["fields"] = shown
    said = shown_name(entry.name)  # a look-alike script mix is said
    if status == "filed":
        summary = f"Filed to {target}: {said} ({confidence:.2f})"
    else:
        summary = f"Saved to inbox for review: {said} ({fields.get('reason') or 'to review'})"
    if dropped:
        summary += f"; left out: {'; '.join(dropped)}"
    if unread:
        summary += f"; could not read {'; '.join(unread)}"
    if related:
        summary += f"; related: {', '.join(e.name for e in related)}"
    return ToolOutput(kind="capture", data=data, text=summary)


def _as_filed(entry: Entry, made: bool, target: str, status: str,
              confidence: float) -> tuple[str, str, float]:
    """(category, status, confidence) of the capture's note: this run's choice when it made
    the note, else what the note that another run made says."""
    if made:
        return target, status, confidence
    where = entry.category or target
    known = entry.fields.get("confidence")
    sure = float(known) if isinstance(known, int | float) else confidence
    return where, "needs_review" if where == "inbox" else "filed", sure


class Receipt:
    """A capture's claim on its derived id (storage/vault/ids.py `Claim`): its receipt, written
    before the note, moved with it, and the only thing that says the note was made."""

    def __init__(self, ctx: ToolContext, text: str, entry_id: str, category: str,
                 status: str, confidence: float) -> None:
        self.ctx, self.text, self.entry_id = ctx, text, entry_id
        self.category, self.status, self.confidence = category, status, confidence
        self.known = False  # a receipt of the id is there (ours, or an earlier run's)
        self.mine = False  # this object wrote it
        self.ok = True  # False: it could not be written (logged); the note stands

    async def held(self) -> str | None:
        row = await self.ctx.receipts.for_entry(self.entry_id)
        if row is None or row.user_id != self.ctx.user_id:
            return None
        self.known = True
        return None if row.category == "trash" else row.path  # undone: made again

    async def record(self, path: str) -> None:
        if self.known:
            self.ok = await self.ctx.receipts.placed(self.entry_id, path=path,
                                                     category=self.category, status=self.status)
            return
        self.ok = await write_receipt(self.ctx, self.text, self.entry_id, path, self.category,
                                      self.confidence, self.status)
        self.known = self.mine = self.ok

    async def release(self) -> None:
        if self.mine:
            await self.ctx.receipts.drop(self.entry_id)


async def _related(ctx: ToolContext, text: str, entry_id: str | None) -> list[EntrySummary]:
    """Notes related to the thought; never a reason for the capture to fail."""
    try:
        return await related_notes(ctx.store, text, exclude={entry_id} if entry_id else ())
    except Exception:
        log.warning("related notes not found for a capture", exc_info=True)
        return []


async def write_receipt(ctx: ToolContext, text: str, entry_id: str, path: str, category: str,
                        confidence: float | None, status: str) -> bool:
    """The capture's receipt row (False, logged, when it could not be written)."""
    return await ctx.receipts.record(
        user_id=ctx.user_id, original_text=text, entry_id=entry_id, path=path,
        category=category, confidence=confidence, status=status,
        conversation_id=ctx.conversation_id, turn_id=ctx.turn_id, channel=ctx.channel,
        thread_ts=ctx.thread_ts, job_id=ctx.job_id)


_HINT_VALIDATORS = {key: Draft202012Validator(sub)
                    for key, sub in SCHEMA["properties"]["hints"]["properties"].items()}

TOOL = Tool(name="classify_and_capture", description=DESCRIPTION, parameters=SCHEMA, run=run,
            terminal=True, read_only=False, repair=repair, additive=True)
