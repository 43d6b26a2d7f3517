"""The tokens people's git clients send, as the HTTP password, to reach their vault's remote
(`/git/<person>.git`). A token is 32 random bytes, given once (`brain sync url`, App Home's
"Sync with Obsidian") and kept only as its SHA-256, with its first characters to name it by
(`--list`, `--revoke`). It opens one person's remote; it is refused once revoked, or once
unused for the idle time (BRAIN_SYNC_TOKEN_DAYS). Every function takes an explicit
`AsyncSession`; the caller commits.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from storage.models import SyncToken
from storage.repositories.common import aware, not_empty, rowcount

PREFIX = "bsk_"  # "brain sync key": a token is recognisable in a config file or a log
MIN_SHOWN = 6  # the fewest characters that may name a token to revoke
SHOWN = 12  # characters kept to name a token by (the prefix and 8 of its 43 random ones)
MAX_TOKEN = 200  # longer is never one of ours: not even hashed
TOUCH = timedelta(hours=1)  # its last use is written at most this often


@dataclass(frozen=True)
class TokenInfo:
    shown: str  # its first characters, `bsk_1a2B3c4D`
    created: datetime
    last_used: datetime | None
    expires: datetime  # unless used before

    def to_dict(self) -> dict[str, str | None]:
        return {"token": self.shown + "…", "created": self.created.isoformat(),
                "last_used": self.last_used.isoformat() if self.last_used else None,
                "expires": self.expires.isoformat()}


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


async def issue(s: AsyncSession, user_id: str, now: datetime) -> str:
    """A new token for `user_id` (returned once: only its hash is kept)."""
    not_empty(user_id, "user_id")
    token = PREFIX + secrets.token_urlsafe(32)
    s.add(SyncToken(user_id=user_id, token_hash=_hash(token), shown=token[:SHOWN],
                    created_at=aware(now, "now")))
    return token


async def owner(s: AsyncSession, token: str, now: datetime, idle: timedelta) -> str | None:
    """The person `token` belongs to, if it is one of ours, not revoked and used within
    `idle`; its use is noted (at most hourly)."""
    if not token.startswith(PREFIX) or len(token) > MAX_TOKEN:
        return None
    row = await s.scalar(select(SyncToken).where(SyncToken.token_hash == _hash(token)))
    if row is None:
        return None
    last = row.last_used_at or row.created_at
    if now - last > idle:
        return None
    if row.last_used_at is None or now - row.last_used_at > TOUCH:
        row.last_used_at = aware(now, "now")
    return row.user_id


async def listed(s: AsyncSession, user_id: str, idle: timedelta) -> list[TokenInfo]:
    """The person's tokens, newest first."""
    rows = await s.scalars(select(SyncToken).where(SyncToken.user_id == user_id)
                           .order_by(SyncToken.id.desc()))
    return [TokenInfo(r.shown, r.created_at, r.last_used_at,
                      (r.last_used_at or r.created_at) + idle) for r in rows]


async def revoke(s: AsyncSession, user_id: str, shown: str | None) -> int:
    """Revoke the person's token whose first characters are `shown` (None: all of them);
    returns how many. A token's first characters that name more than one revoke none:
    ValueError."""
    query = delete(SyncToken).where(SyncToken.user_id == user_id)
    if shown is not None:
        start = shown.strip().rstrip("…")
        rows = list(await s.scalars(select(SyncToken).where(SyncToken.user_id == user_id)))
        found = [r for r in rows if r.token_hash == _hash(start)] or \
            [r for r in rows if len(start) >= MIN_SHOWN and r.shown.startswith(start)]
        if len(found) > 1:
            raise ValueError(f"{shown!r} names {len(found)} tokens: give more of it")
        if not found:
            return 0
        query = query.where(SyncToken.id == found[0].id)
    return rowcount(await s.execute(query))


async def forget(s: AsyncSession, user_id: str) -> int:
    """`brain forget`: every token of the person goes."""
    return rowcount(await s.execute(delete(SyncToken).where(SyncToken.user_id == user_id)))
