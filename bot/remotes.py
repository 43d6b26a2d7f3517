"""`brain.remotes`: each person's vault as a git remote of their own (storage/sync), so their
own Obsidian (with the obsidian-git plugin) or any git client clones it, pulls the bot's
changes and pushes theirs back.

The address is `<BRAIN_PUBLIC_URL>/git/<person>.git`; a token (`link`, from `brain sync url`
or App Home's "Sync with Obsidian") is the HTTP password. `open` says what one request gets:
a missing or wrong token is `unauthorized` (401); a good token for someone else, or for no
one who has a vault here, is `not_found` (404, the same for both).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from bot.core import Core
from storage.errors import StorageError
from storage.sync import tokens
from storage.sync.push import PushLimits
from storage.sync.remote import VaultRemote
from storage.sync.served import ParentCache
from storage.sync.tokens import TokenInfo
from storage.types import is_user_id

MB = 1_000_000


@dataclass(frozen=True)
class SyncLink:
    url: str
    token: str

    def to_dict(self) -> dict[str, str]:
        return {"url": self.url, "token": self.token}


@dataclass(frozen=True)
class Access:
    status: Literal["ok", "unauthorized", "not_found"]
    remote: VaultRemote | None = None


class Remotes:
    def __init__(self, core: Core) -> None:
        self.core = core
        self._host: str | None = None
        self._port: int | None = None
        self.parents = ParentCache()  # the remotes' commits' parents, read once per process

    def serving_at(self, host: str, port: int) -> None:
        """`brain serve`'s address: the default of BRAIN_PUBLIC_URL."""
        self._host, self._port = host, port

    def url_for(self, user_id: str) -> str:
        base = self.core.settings.public_base(self._host, self._port)
        return f"{base}/git/{user_id}.git"

    @property
    def _idle(self) -> timedelta:
        return timedelta(days=self.core.settings.sync_token_days)

    @property
    def limits(self) -> PushLimits:
        settings = self.core.settings
        return PushLimits(max_files=settings.sync_max_files,
                          max_file_bytes=int(settings.max_file_mb * MB),
                          max_push_bytes=int(settings.sync_max_push_mb * MB))

    async def link(self, user_id: str) -> SyncLink:
        """The person's remote and a new token for it (their vault is checked first:
        InvalidValue or UnsafePath when they may not have one here)."""
        self.core.store_for(user_id)
        async with self.core.db.session() as s:
            token = await tokens.issue(s, user_id, datetime.now(UTC))
            await s.commit()
        return SyncLink(self.url_for(user_id), token)

    async def tokens(self, user_id: str) -> list[TokenInfo]:
        async with self.core.db.session() as s:
            return await tokens.listed(s, user_id, self._idle)

    async def revoke(self, user_id: str, which: str | None) -> int:
        """Revoke one token (its first characters, as `tokens` shows them) or, with None,
        all of the person's; how many. ValueError when `which` names several."""
        async with self.core.db.session() as s:
            gone = await tokens.revoke(s, user_id, which)
            await s.commit()
        return gone

    async def open(self, person: str, token: str | None) -> Access:
        """What a request to `/git/<person>.git` carrying `token` may reach."""
        if not token:
            return Access("unauthorized")
        async with self.core.db.session() as s:
            owner = await tokens.owner(s, token, datetime.now(UTC), self._idle)
            await s.commit()
        if owner is None:
            return Access("unauthorized")
        if owner != person or not is_user_id(person):
            return Access("not_found")
        try:
            store = self.core.store_for(person)
        except StorageError:  # no vault here for them (BRAIN_OWNER), or an unsafe folder
            return Access("not_found")
        return Access("ok", VaultRemote(store, person, self.limits, self.parents))
