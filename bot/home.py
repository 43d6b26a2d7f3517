"""What a person's App Home shows, read from their vault and the database: the inbox to
review, active projects with their next action, what is due in the next 7 days, the latest
captures, the app's latest changes (each with Undo), and their digest settings. Each list is bounded; the totals say what was left out.

It also remembers who opened their Home, so changes made elsewhere (a capture, a button, a
reminder) refresh it only for them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from bot.core import Core
from bot.digest.data import note_ref, parse_day
from bot.digest.model import CaptureRef, NoteRef
from bot.llm.configs import available_configs, select_config
from storage import repositories
from storage.repositories import SubscriptionRow, slack_state
from storage.repositories import digest_data as q
from storage.types import Change

MAX_INBOX = 10  # each with its buttons: two blocks
MAX_PROJECTS = 15
MAX_DUE = 15
MAX_CAPTURES = 5
MAX_CHANGES = 5  # the app's latest changes, each with Undo
DUE_DAYS = 7
DUE_CATEGORIES = ("projects", "admin", "people", "ideas")
CLOSED = ("done",)


@dataclass(frozen=True)
class HomeData:
    user_id: str
    today: date
    tz: str
    inbox: tuple[NoteRef, ...]
    projects: tuple[NoteRef, ...]
    due: tuple[NoteRef, ...]  # overdue first, then by date
    captures: tuple[CaptureRef, ...]
    digests: tuple[SubscriptionRow, ...]
    totals: dict[str, int]  # how many there are of each list, shown or not
    changes: tuple[Change, ...] = ()  # newest first
    # The connections a person may choose (id, "provider model": never a key), and theirs.
    models: tuple[tuple[str, str], ...] = ()
    model: str = ""

    def left_out(self, name: str) -> int:
        return max(0, self.totals.get(name, 0) - len(getattr(self, name)))


class Home:
    def __init__(self, core: Core) -> None:
        self.core = core

    async def data(self, user_id: str, *, tz: str | None = None,
                   now: datetime | None = None) -> HomeData:
        zone_name = tz or self.core.settings.tz
        zone = ZoneInfo(zone_name)
        today = (now or datetime.now(UTC)).astimezone(zone).date()
        store = self.core.store_for(user_id)
        await store.refresh()
        vault = store.index.key  # the database store shares one key across machines
        horizon = (today + timedelta(days=DUE_DAYS)).isoformat()
        async with self.core.db.session() as s:
            inbox = await q.notes(s, vault, category="inbox")
            projects = [r for r in await q.notes(s, vault, category="projects")
                        if r.status in (None, "active")]
            due = [r for c in DUE_CATEGORIES
                   for r in await q.notes(s, vault, category=c, due_on_or_before=horizon)
                   if r.status not in CLOSED and parse_day(r.due_date) is not None]
            captures = await q.receipts_between(s, user_id, datetime(1970, 1, 1, tzinfo=UTC),
                                                datetime.now(UTC) + timedelta(days=1),
                                                limit=MAX_CAPTURES)
            found = await q.notes_by_ids(s, vault, [c.entry_id for c in captures])
            digests = tuple(await repositories.list_subscriptions(s, user_id))
        due.sort(key=lambda r: (r.due_date or "", r.name))
        available = available_configs(self.core.settings)
        changes = tuple(c for c in await store.changes(limit=MAX_CHANGES * 3)
                        if c.action not in ("outside edit", "start of history"))[:MAX_CHANGES] \
            if store.history is not None else ()
        refs = tuple(CaptureRef(ref=c.entry_id,
                                name=found[c.entry_id].name if c.entry_id in found else c.path,
                                text="", category=str(found[c.entry_id].category
                                                      if c.entry_id in found else c.category),
                                status=c.status,
                                created_at=c.created_at.astimezone(zone).isoformat())
                     for c in captures if c.category != "trash")
        return HomeData(
            user_id=user_id, today=today, tz=zone_name,
            inbox=tuple(note_ref(r, zone) for r in inbox[:MAX_INBOX]),
            projects=tuple(note_ref(r, zone) for r in projects[:MAX_PROJECTS]),
            due=tuple(note_ref(r, zone) for r in due[:MAX_DUE]),
            captures=refs, digests=digests, changes=changes,
            models=tuple((cid, f"{c.provider}, {c.model}" if c.provider != "offline"
                          else "the rules, no model") for cid, c in available.items()),
            model=await self.model_of(user_id),
            totals={"inbox": len(inbox), "projects": len(projects), "due": len(due),
                    "captures": len(refs)})

    async def model_of(self, user_id: str) -> str:
        """The config id the person's turns use: their choice, else the app's default."""
        async with self.core.db.session() as s:
            row = await slack_state.get_user(s, user_id)
        return (row.model if row is not None and row.model else None) or \
            select_config(self.core.settings).id

    async def choose_model(self, user_id: str, config_id: str) -> str:
        """Record the person's model (the default: no choice kept); what to tell them."""
        available = available_configs(self.core.settings)
        if config_id not in available:
            return f"{config_id} is not set up here; nothing was changed."
        default = select_config(self.core.settings).id
        async with self.core.db.session() as s:
            await slack_state.set_model(s, user_id, None if config_id == default else config_id)
            await s.commit()
        return f"Your messages now go to {config_id}."

    async def opened(self, user_id: str) -> None:
        async with self.core.db.session() as s:
            await slack_state.home_opened(s, user_id)
            await s.commit()

    async def watched(self, user_id: str) -> bool:
        """Has the user opened their Home (so it is worth refreshing after a change)?"""
        async with self.core.db.session() as s:
            return await slack_state.home_watched(s, user_id)
