"""Daily and weekly digests: data from storage, one LLM synthesis (or rules), rendering,
and the schedule that sends them."""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING

from bot.digest.command import DigestRequest, digest_command
from bot.digest.command import parse as parse_digest_request
from bot.digest.data import build_data
from bot.digest.model import Digest, DigestData, Item
from bot.digest.schedule import DigestScheduler
from bot.digest.synthesis import synthesize
from bot.llm.types import Provider
from storage.db import Database

if TYPE_CHECKING:
    from storage.vault.store import Store


async def make_digest(store: Store, db: Database, provider: Provider, user_id: str, kind: str,
                      *, today: date, tz: str) -> Digest:
    """The user's `kind` ("daily" | "weekly") digest for `today` (a date in `tz`)."""
    data = await build_data(store, db, user_id, kind, today=today, tz=tz)
    return await synthesize(data, provider)


__all__ = ["Digest", "DigestData", "DigestRequest", "DigestScheduler", "Item", "digest_command",
           "make_digest", "parse_digest_request"]
