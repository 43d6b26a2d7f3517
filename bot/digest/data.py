"""Assembling DigestData from storage: the filters and bounds of each digest kind.

Rules (dates are the user's, in their time zone):
- daily: active projects (status active, or no status: the default); people whose
  `follow_ups` list is not empty; admin with status todo and due_date <= today; every inbox
  note; captures made yesterday.
- weekly: captures of the last 7 days (today and the 6 days before) with counts by category;
  projects changed this week = changed in the last 7 days with status done, waiting,
  blocked or someday (off active), plus projects a capture was re-filed to (`fixed`) this
  week; open loops = projects waiting or blocked, or active and unchanged for 14 days; needs
  review = inbox notes plus the notes of this week's needs_review captures.
"Changed" is the note's `updated` frontmatter time (the file's mtime when it has none).
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from bot.digest.model import (
    KINDS,
    MAX_ADMIN,
    MAX_CAPTURES,
    MAX_CHANGED,
    MAX_INBOX,
    MAX_LOOPS,
    MAX_PEOPLE,
    MAX_PROJECTS,
    MAX_REVIEW,
    CaptureRef,
    DigestData,
    NoteRef,
)
from storage.db import Database
from storage.repositories import digest_data as q

if TYPE_CHECKING:
    from storage.vault.store import Store

DETAIL_CHARS = 140
TEXT_CHARS = 200
STALE_DAYS = 14
WEEK_DAYS = 7
MOVED_STATUSES = ("waiting", "blocked", "someday", "done")


def _trim(value: Any, limit: int) -> str | None:
    if value is None:
        return None
    text = " ".join(str(value).split())
    if not text:
        return None
    return text if len(text) <= limit else text[: limit - 1] + "…"


def follow_ups(frontmatter: dict[str, Any]) -> tuple[str, ...]:
    """The open follow-ups of a person: a list of strings (a lone string counts as one)."""
    raw = frontmatter.get("follow_ups")
    items = [raw] if isinstance(raw, str) else raw if isinstance(raw, list) else []
    out = []
    for item in items:
        text = _trim(item, DETAIL_CHARS)
        if text:
            out.append(text)
    return tuple(out)


def parse_day(value: str | None) -> date | None:
    if not value:
        return None
    try:
        return date.fromisoformat(str(value)[:10])
    except ValueError:
        return None


def _updated_day(row: q.NoteRow, zone: ZoneInfo) -> str | None:
    if row.updated_ts:
        return datetime.fromtimestamp(row.updated_ts, zone).date().isoformat()
    day = parse_day(row.updated)
    return day.isoformat() if day else None


def note_ref(row: q.NoteRow, zone: ZoneInfo) -> NoteRef:
    fm = row.frontmatter
    if row.category == "people":
        detail = row.context
    elif row.category == "inbox":
        detail = fm.get("reason") or fm.get("original_text")
    else:
        detail = row.one_liner
    return NoteRef(
        ref=row.id or row.path, name=row.name, path=row.path, category=row.category,
        status=row.status, next_action=_trim(row.next_action, DETAIL_CHARS),
        due_date=row.due_date[:10] if row.due_date else None,
        detail=_trim(detail, DETAIL_CHARS),
        follow_ups=follow_ups(fm)[:3] if row.category == "people" else (),
        updated=_updated_day(row, zone),
    )


def day_start(day: date, zone: ZoneInfo) -> datetime:
    return datetime.combine(day, time(0), tzinfo=zone)


async def _capture_refs(s: Any, vault: str, rows: list[q.ReceiptInfo],
                        zone: ZoneInfo) -> tuple[CaptureRef, ...]:
    found = await q.notes_by_ids(s, vault, [c.entry_id for c in rows])
    out = []
    for c in rows:
        note = found.get(c.entry_id)
        text = _trim(c.original_text, TEXT_CHARS) or ""
        name = note.name if note else (_trim(text.splitlines()[0] if text else c.path, 60)
                                       or c.path)
        out.append(CaptureRef(ref=c.entry_id, name=name, text=text,
                              category=(note.category or c.category) if note else c.category,
                              status=c.status,
                              created_at=c.created_at.astimezone(zone).isoformat()))
    return tuple(out)


async def _daily(s: Any, vault: str, user_id: str, today: date,
                 zone: ZoneInfo) -> dict[str, Any]:
    projects = [r for r in await q.notes(s, vault, category="projects")
                if r.status in (None, "active")]
    people = [r for r in await q.notes(s, vault, category="people", has_key="follow_ups")
              if follow_ups(r.frontmatter)]
    admin = [r for r in await q.notes(s, vault, category="admin", statuses=["todo"],
                                      due_on_or_before=today.isoformat())
             if (d := parse_day(r.due_date)) is not None and d <= today]
    admin.sort(key=lambda r: (r.due_date or "", r.path))
    inbox = await q.notes(s, vault, category="inbox")
    captures = await q.receipts_between(s, user_id, day_start(today - timedelta(days=1), zone),
                                        day_start(today, zone), limit=MAX_CAPTURES)
    return {
        "projects": tuple(note_ref(r, zone) for r in projects[:MAX_PROJECTS]),
        "people": tuple(note_ref(r, zone) for r in people[:MAX_PEOPLE]),
        "admin": tuple(note_ref(r, zone) for r in admin[:MAX_ADMIN]),
        "inbox": tuple(note_ref(r, zone) for r in inbox[:MAX_INBOX]),
        "captures": await _capture_refs(s, vault, captures, zone),
        "totals": {"projects": len(projects), "people": len(people), "admin": len(admin),
                   "inbox": len(inbox), "captures": len(captures)},
    }


async def _weekly(s: Any, vault: str, user_id: str, today: date,
                  zone: ZoneInfo) -> dict[str, Any]:
    start = day_start(today - timedelta(days=WEEK_DAYS - 1), zone)
    end = day_start(today + timedelta(days=1), zone)
    captures = await q.receipts_between(s, user_id, start, end, limit=MAX_CAPTURES)
    counts = await q.capture_counts(s, user_id, start, end)

    changed = [r for r in await q.notes(s, vault, category="projects",
                                        updated_since=start.timestamp())
               if r.status in MOVED_STATUSES]
    fixed = await q.receipts_between(s, user_id, start, end, statuses=["fixed"],
                                     limit=MAX_CAPTURES)
    refiled = await q.notes_by_ids(s, vault, [c.entry_id for c in fixed])
    seen = {r.path for r in changed}
    changed += [r for r in refiled.values() if r.category == "projects" and r.path not in seen]

    stale_before = (day_start(today, zone) - timedelta(days=STALE_DAYS)).timestamp()
    loops = await q.open_loop_projects(s, vault, stale_before=stale_before, limit=MAX_LOOPS)

    review = await q.notes(s, vault, category="inbox")
    unsure = await q.receipts_between(s, user_id, start, end, statuses=["needs_review"],
                                      limit=MAX_CAPTURES)
    unsure_notes = await q.notes_by_ids(s, vault, [c.entry_id for c in unsure])
    seen = {r.path for r in review}
    review += [r for r in unsure_notes.values() if r.path not in seen]
    return {
        "captures": await _capture_refs(s, vault, captures, zone),
        "capture_counts": counts,
        "changed_projects": tuple(note_ref(r, zone) for r in changed[:MAX_CHANGED]),
        "open_loops": tuple(note_ref(r, zone) for r in loops),
        "needs_review": tuple(note_ref(r, zone) for r in review[:MAX_REVIEW]),
        "totals": {"captures": sum(counts.values()), "changed_projects": len(changed),
                   "needs_review": len(review)},
    }


async def build_data(store: Store, db: Database, user_id: str, kind: str, *, today: date,
                     tz: str) -> DigestData:
    """The data of one digest, read from the (refreshed) index and the capture receipts."""
    if kind not in KINDS:
        raise ValueError(f"digest kind must be daily or weekly, not {kind!r}")
    zone = ZoneInfo(tz)
    await store.refresh()
    vault = store.index.key  # the database store shares one key across machines
    async with db.session() as s:
        parts = await (_daily if kind == "daily" else _weekly)(s, vault, user_id, today, zone)
    return DigestData(kind=kind, user_id=user_id, today=today, tz=tz, **parts)


def local_today(tz: str, now: datetime | None = None) -> date:
    return (now or datetime.now(UTC)).astimezone(ZoneInfo(tz)).date()
