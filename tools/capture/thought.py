"""The capture of a thought: the one way a note is filed from what someone said, at every
door (the model's classify_and_capture, the rescue of a turn that went wrong, a captured
message). By the model's hints, else the keyword rules; to the inbox when unsure; the same
words twice in a moment, or news of someone who has a note, make no new note; the message's
files and related notes go with it; its receipt is written with it."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Any

from storage.errors import unreachable
from storage.text import visible_name
from storage.types import (
    DEFAULT_STATUS,
    LIST_FIELDS,
    STATUS_VALUES,
    Entry,
    EntrySummary,
    ReceiptDraft,
)
from tools.base import ToolContext, ToolError, ToolOutput
from tools.capture.known_person import add_to_person, known_person
from tools.capture.limits import excerpt, refusal
from tools.capture.related import related_notes, related_section
from tools.capture.repeats import filed_already, window_start
from tools.readers.sections import file_sections
from tools.rules import classify
from tools.rules.dates import as_date, today_in
from tools.rules.naming import shown_name
from tools.web.links import URL

if TYPE_CHECKING:
    from storage.repositories.receipts import ReceiptRow

log = logging.getLogger(__name__)

MAX_NAME = 80  # a captured note's name (a name given by hand may be longer: storage.types)


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
    choice = await _choose(ctx, text, hints)
    name = _name(ctx, text, hints, choice.classified)
    # The model's fields win over the keyword classifier's.
    merged = {**choice.suggested, **{k: v for k, v in hints.items()
                                     if k not in ("category", "confidence", "name")}}
    common = {"confidence": choice.confidence, "source": ctx.source, **(extra_fields or {})}
    unread: list[str] = []  # "report.pdf: the PDF is encrypted": said in the reply
    if ctx.shared and not ctx.shared_filed:  # the message's files go with its (first) note
        ctx.shared_filed = True
        sections = await file_sections(ctx.deps.store, ctx.shared)
        unread = sections.problems
        footer = "\n".join(x for x in (footer, sections.text) if x)
    body = text.strip() + "\n" + (f"\n{footer.strip()}\n" if footer and footer.strip() else "")
    entry_id = ctx.next_entry_id()
    await _embed_ahead(ctx, text)
    async with ctx.deps.store.together():  # (the database store: one transaction)
        related = await _related(ctx, text, entry_id)
        if related:
            targets = [await ctx.deps.store.link_to(e.path) for e in related]
            body += "\n" + related_section(related, targets)
        target, fields, status = _placement(ctx, text, choice, merged, common, dropped,
                                            inbox_reason)

        # A derived id may be on a note already: made by an earlier attempt, or by a stalled
        # one still running. Its receipt says so, written before the note (a file that merely
        # carries the id, a copy or someone else's, is not it).
        existing, recent = await _receipts_before(ctx, entry_id, repeat_ok)
        if existing is None and not ctx.shared:
            elsewhere = await _already_kept(ctx, text, entry_id, name, target, repeat_ok,
                                            recent)
            if elsewhere is not None:
                return elsewhere
        entry, made, receipt = await ctx.deps.store.create_once(
            target, name, fields, body, entry_id=entry_id, receipt=ReceiptDraft(
                user_id=ctx.deps.user_id, original_text=text, category=target, status=status,
                confidence=choice.confidence, conversation_id=ctx.conversation_id,
                turn_id=ctx.turn_id, channel=ctx.channel, thread_ts=ctx.thread_ts,
                job_id=ctx.job_id))
    filed = Filed(target, status, choice.confidence, choice.category, fields)
    if not made:  # another run filed it: the reply tells what is there
        filed = _as_filed(entry, filed)
    notes = Notes(receipt_kept=receipt, dropped=dropped, unread=unread, related=related,
                  hidden=tuple(extra_fields or {}))
    return _output(entry, filed, notes)


@dataclass(frozen=True)
class Choice:
    """Where the thought should go, and how sure: by the model's hints, the keyword rules, or
    both (the rules vote when the model gave no confidence)."""

    category: str
    confidence: float
    classified: classify.Classification | None = None
    suggested: dict[str, Any] = field(default_factory=dict)  # the rules' fields


async def _choose(ctx: ToolContext, text: str, hints: dict[str, Any]) -> Choice:
    if "category" in hints and "confidence" in hints:
        return Choice(str(hints["category"]), _sure(float(hints["confidence"])))
    classified = await classify.classify_async(text, tz=ctx.deps.tz, similar=ctx.deps.similar)
    if "category" not in hints:
        return Choice(classified.category, _sure(float(classified.confidence)), classified,
                      dict(classified.fields))
    # The model chose without saying how sure: the keyword rules vote. Agreement files it;
    # disagreement sends it to the inbox with the model's choice as the suggestion.
    category = str(hints["category"])
    confidence = (max(classified.confidence, ctx.deps.confidence_threshold)
                  if classified.category == category
                  else min(classified.confidence, ctx.deps.confidence_threshold - 0.01))
    return Choice(category, _sure(confidence), classified)


def _sure(confidence: float) -> float:
    return round(min(max(confidence, 0.0), 1.0), 2)


def _name(ctx: ToolContext, text: str, hints: dict[str, Any],
          classified: classify.Classification | None) -> str:
    """The note's name: the model's, else a bare link's page title, else the rules'; never
    with bidi or zero-width characters, never empty."""
    name = visible_name(str(hints.get("name") or ""))
    if ctx.shared and not URL.sub(" ", text).strip() and not URL.sub(" ", name).strip():
        name = ctx.shared[0][1].name  # a bare link (and no better name): its page's title
    if not name:
        name = classified.name if classified else classify.subject(text)
    return visible_name(name)[:MAX_NAME].strip() or "Untitled"


def _placement(ctx: ToolContext, text: str, choice: Choice, merged: dict[str, Any],
               common: dict[str, Any], dropped: list[str],
               inbox_reason: str | None) -> tuple[str, dict[str, Any], str]:
    """(folder, frontmatter fields, receipt status): the inbox, with why, when unsure."""
    category, confidence = choice.category, choice.confidence
    if inbox_reason is None and category != "inbox" and confidence >= ctx.deps.confidence_threshold:
        fields = {**common, **_category_fields(category, merged, dropped, today_in(ctx.deps.tz))}
        return category, fields, "filed"
    if inbox_reason is not None:
        reason = inbox_reason
    elif category == "inbox":
        reason = "classified as inbox"
    else:
        reason = f"confidence {confidence:.2f} below {ctx.deps.confidence_threshold:.2f}"
    # The body holds the whole text; the frontmatter its start (a YAML field that repeated a
    # long text made the note unreadable past the frontmatter bound).
    fields = {**common, "original_text": excerpt(text), "reason": reason}
    if category != "inbox":
        fields["suggested_category"] = category
    return "inbox", fields, "needs_review"


async def _receipts_before(ctx: ToolContext, entry_id: str | None, repeat_ok: bool,
                           ) -> tuple[str | None, list[ReceiptRow] | None]:
    """Where a note made under the derived id is (its receipt says: see `capture_thought`),
    and, when a repeat will be looked for, the person's receipts of the repeat window, read
    with it (one transaction; None: not read)."""
    if not entry_id:
        return None, None
    if repeat_ok or ctx.shared:
        return await ctx.deps.receipts.held(entry_id, ctx.deps.user_id), None
    return await ctx.deps.receipts.held_with_recent(entry_id, ctx.deps.user_id,
                                                    window_start())


async def _already_kept(ctx: ToolContext, text: str, entry_id: str | None, name: str,
                        target: str, repeat_ok: bool,
                        recent: list[ReceiptRow] | None) -> ToolOutput | None:
    """The same words filed a moment ago, or news of someone who has a note (it goes into
    that note): what was done instead of a new note; None: file it. `recent`: see
    `filed_already`."""
    if not repeat_ok:
        repeat = await filed_already(ctx, text, entry_id, recent)
        if repeat is not None:
            return repeat
    if target == "people":
        person = await known_person(ctx, name)
        if person is not None:
            return await add_to_person(ctx, person, text)
    return None


@dataclass(frozen=True)
class Filed:
    """Where the note went: folder, receipt status, confidence, the category chosen (the
    inbox's suggestion) and its fields."""

    target: str
    status: str
    confidence: float
    category: str
    fields: dict[str, Any]


@dataclass(frozen=True)
class Notes:
    """What the reply says beside where the note went."""

    receipt_kept: bool
    dropped: list[str]
    unread: list[str]
    related: list[EntrySummary]
    hidden: tuple[str, ...]  # extra fields the card does not show


def _output(entry: Entry, filed: Filed, notes: Notes) -> ToolOutput:
    data: dict[str, Any] = {
        "path": entry.path, "id": entry.id, "name": entry.name, "category": filed.target,
        "confidence": filed.confidence, "status": filed.status,
    }
    if not notes.receipt_kept:
        data["receipt"] = "not recorded (the note is saved)"
    if filed.target == "inbox" and filed.category != "inbox":
        data["suggested_category"] = filed.category
    if notes.dropped:
        data["dropped"] = notes.dropped
    if notes.unread:
        data["unread"] = notes.unread
    if notes.related:
        data["related"] = [{"name": e.name, "path": e.path, "id": e.id} for e in notes.related]
    data["fields"] = {k: v for k, v in entry.fields.items()
                      if k not in ("id", "name", "category", "created", "updated", "source",
                                   "confidence", "original_text", *notes.hidden)}
    return ToolOutput(kind="capture", data=data, text=_summary(entry, filed, notes))


def _summary(entry: Entry, filed: Filed, notes: Notes) -> str:
    said = shown_name(entry.name)  # a look-alike script mix is said
    if filed.status == "filed":
        summary = f"Filed to {filed.target}: {said} ({filed.confidence:.2f})"
    else:
        summary = (f"Saved to inbox for review: {said} "
                   f"({filed.fields.get('reason') or 'to review'})")
    if notes.dropped:
        summary += f"; left out: {'; '.join(notes.dropped)}"
    if notes.unread:
        summary += f"; could not read {'; '.join(notes.unread)}"
    if notes.related:
        summary += f"; related: {', '.join(e.name for e in notes.related)}"
    return summary


def _as_filed(entry: Entry, filed: Filed) -> Filed:
    """Where the note another run made went, as that note says."""
    where = entry.category or filed.target
    known = entry.fields.get("confidence")
    sure = float(known) if isinstance(known, int | float) else filed.confidence
    return Filed(where, "needs_review" if where == "inbox" else "filed", sure,
                 str(entry.fields.get("suggested_category") or where), entry.fields)


async def _embed_ahead(ctx: ToolContext, text: str) -> None:
    """The thought's vector made before the write's lock is taken (its related notes are
    looked for under it); never a reason for the capture to fail."""
    try:
        await ctx.deps.store.embed_ahead(text)
    except Exception:
        log.warning("the thought's vector was not made ahead of its capture", exc_info=True)


async def _related(ctx: ToolContext, text: str, entry_id: str | None) -> list[EntrySummary]:
    """Notes related to the thought; never a reason for the capture to fail."""
    try:
        return await related_notes(ctx.deps.store, text, exclude={entry_id} if entry_id else ())
    except Exception as exc:
        gone = unreachable(exc)  # (then the capture waits for it too, in one line)
        log.warning("related notes not found for a capture%s", f": {gone}" if gone else "",
                    exc_info=gone is None)
        return []


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
