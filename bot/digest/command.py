"""The `/digest` command's words, parsed once for Slack and the CLI, and the settings it
changes: `daily` / `weekly` (show one now), `subscribe daily [HH:MM]`,
`subscribe weekly [DAY [HH:MM]]`, `off [daily|weekly]` (`unsubscribe` means the same), `status`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from bot.digest.schedule import WEEKDAYS, describe, next_slot
from storage import repositories
from storage.db import Database

DEFAULT_DAILY = (8, 0)
DEFAULT_WEEKLY = (0, 9, 0)  # Monday 09:00
KINDS = ("daily", "weekly")

USAGE = (
    "Usage: /digest daily | weekly (show one now)\n"
    "       /digest subscribe daily [HH:MM]        (default 08:00, your time zone)\n"
    "       /digest subscribe weekly [DAY HH:MM]   (default mon 09:00)\n"
    "       /digest off [daily|weekly]             (stop scheduled digests; or unsubscribe)\n"
    "       /digest status"
)

_TIME = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")


@dataclass(frozen=True)
class DigestRequest:
    """What the words ask for. `action`: show | subscribe | off | status | invalid."""

    action: str
    kind: str | None = None  # daily | weekly (show, subscribe; off: None = both)
    hour: int = 0
    minute: int = 0
    weekday: int | None = None
    problem: str | None = None  # for invalid: what was wrong, then the usage

    @property
    def sets_schedule(self) -> bool:
        """It subscribes or stops a digest (the App Home shows the settings)."""
        return self.action in ("subscribe", "off")

    def reply_to_invalid(self, command: str = "/digest") -> str:
        reply = f"{self.problem}\n{USAGE}" if self.problem else USAGE
        return worded_for(reply, command)


def worded_for(reply: str, command: str) -> str:
    """A reply in the words of the entry point that asked: `brain digest` instead of Slack's
    `/digest` (the words after it are the same)."""
    return reply.replace("/digest", command) if command != "/digest" else reply


def _time(text: str) -> tuple[int, int] | None:
    m = _TIME.match(text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def _weekday(text: str) -> int | None:
    word = text.lower()
    if len(word) < 3:
        return None
    for i, name in enumerate(WEEKDAYS):
        if name.startswith(word):
            return i
    return None


def parse(text: str) -> DigestRequest:
    """The request in `text` (the words after `/digest` or `brain digest`). Empty = daily."""
    words = text.split()
    verb = words[0].lower() if words else "daily"
    rest = words[1:]
    if verb in KINDS:
        if rest:
            return DigestRequest("invalid", problem=f"I don't know “{text.strip()}”.")
        return DigestRequest("show", verb)
    if verb == "status":
        return DigestRequest("status") if not rest else DigestRequest(
            "invalid", problem="`status` takes nothing after it.")
    if verb in ("off", "unsubscribe"):
        if len(rest) > 1 or (rest and rest[0].lower() not in KINDS):
            return DigestRequest("invalid", problem=f"Not a digest kind: {' '.join(rest)!r}.")
        return DigestRequest("off", rest[0].lower() if rest else None)
    if verb == "subscribe":
        return _subscribe(rest)
    return DigestRequest("invalid", problem=f"I don't know “{text.strip()}”.")


def _subscribe(words: list[str]) -> DigestRequest:
    if not words or words[0].lower() not in KINDS:
        return DigestRequest("invalid", problem="Subscribe to `daily` or `weekly`.")
    kind, rest = words[0].lower(), words[1:]
    if kind == "daily":
        at = _time(rest[0]) if len(rest) == 1 else None
        if rest and at is None:
            return DigestRequest("invalid", problem=f"Not a time: {' '.join(rest)!r} "
                                                    "(use HH:MM, e.g. 07:30).")
        hour, minute = at or DEFAULT_DAILY
        return DigestRequest("subscribe", "daily", hour, minute)
    weekday, hour, minute = DEFAULT_WEEKLY
    if rest:
        day = _weekday(rest[0])
        at = _time(rest[1]) if len(rest) == 2 else ((hour, minute) if len(rest) == 1 else None)
        if day is None or at is None:
            return DigestRequest("invalid", problem=f"Not a day and time: {' '.join(rest)!r} "
                                                    "(use e.g. fri 16:00).")
        weekday, (hour, minute) = day, at
    return DigestRequest("subscribe", "weekly", hour, minute, weekday)


async def apply(db: Database, user_id: str, req: DigestRequest, *, channel: str | None,
                tz: str) -> str:
    """Carry out a subscribe / off / status request; the reply says what is now true."""
    if req.action == "subscribe" and req.kind is not None:
        try:
            ZoneInfo(tz)
        except (ZoneInfoNotFoundError, ValueError):
            return f"Unknown time zone {tz!r}; set your time zone in Slack and try again."
        async with db.session() as s:
            sub = await repositories.upsert_subscription(s, user_id, req.kind, req.hour,
                                                         req.minute, req.weekday, tz, channel)
            await s.commit()
        nxt = next_slot(sub, datetime.now(UTC))
        return f"You will get a {describe(sub)}. Next one: {nxt.strftime('%a %d %b %H:%M')}."
    if req.action == "off":
        async with db.session() as s:
            gone = await repositories.delete_subscriptions(s, user_id, req.kind)
            await s.commit()
        what = f"{req.kind} digest" if req.kind else "digests"
        return f"Scheduled {what} turned off." if gone else f"You had no scheduled {what}."
    if req.action == "status":
        async with db.session() as s:
            mine = await repositories.list_subscriptions(s, user_id)
        if not mine:
            return "No scheduled digests. Try `/digest subscribe daily 08:00`."
        return "Scheduled: " + "; ".join(describe(x) for x in mine) + "."
    return req.reply_to_invalid()


async def digest_command(db: Database, user_id: str, text: str, *, channel: str | None,
                         tz: str) -> str:
    """Parse and carry out a settings request; a request to show a digest gets the usage
    (showing one is the caller's: it needs the vault and the model)."""
    req = parse(text)
    if req.action == "show":
        return f"`{text.strip()}` shows a digest; it changes no settings.\n{USAGE}"
    return await apply(db, user_id, req, channel=channel, tz=tz)
