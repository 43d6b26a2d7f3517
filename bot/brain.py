"""The brain: the one door from the adapters (Slack, the CLI, MCP) to storage.

Settings, the database, the user's vaults, the LLM provider, and every operation an adapter
may ask for: a turn, a move, an undo, a digest, the queries a card or a thread needs, and the
objects for the other entry points (saves, App Home, reminders, accounts). Nothing heavy is
imported here: the turn machinery (LLM layer, tools) loads on the first turn, so a storage
verb of the CLI pays only for storage.
"""

from __future__ import annotations

import re
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from bot.config import Settings
from storage.db import Database
from storage.errors import InvalidValue
from storage.store import Store
from storage.types import MoveResult
from storage.vault import Vault

if TYPE_CHECKING:
    from bot.accounts import Accounts
    from bot.home import Home
    from bot.index_keeper import IndexKeeper
    from bot.jobs import JobQueue, JobRow
    from bot.llm.types import Provider
    from bot.reminders import Reminders
    from bot.saving import Saver
    from bot.turns import TurnResult
    from storage import repositories
    from storage.meaning import Meaning
    from tools.base import DigestMaker
    from tools.registry import Execution

USER_ID = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")

__all__ = ["Brain", "Store", "clean_vault_temp"]


class Brain:
    def __init__(self, settings: Settings, db: Database, provider: Provider | None = None,
                 *, vault_override: Path | None = None, meaning: Meaning | None = None) -> None:
        self.settings = settings
        self.db = db
        self._provider = provider
        self.vault_override = vault_override
        self._jobs: JobQueue | None = None
        self._stores: dict[str, Store] = {}
        self._turns: Any = None
        self._services: dict[str, Any] = {}
        self._meaning = meaning  # a model the caller started loading, else one made lazily
        self._keeper: IndexKeeper | None = None

    @classmethod
    async def start(cls, settings: Settings, *, vault_override: Path | None = None,
                    provider: Provider | None = None, with_llm: bool = True,
                    meaning: Meaning | None = None) -> Brain:
        """Open the database; with `with_llm` (turns, digests) also the configured provider,
        so a bad configuration is found at start, not at the first message."""
        if provider is None and with_llm:
            provider = _make_provider(settings)
        db = await Database.open(settings.db_url())
        return cls(settings, db, provider, vault_override=vault_override, meaning=meaning)

    @property
    def jobs(self) -> JobQueue:
        """The durable intake, for adapters that take in work (loaded on first use: a
        storage verb of the CLI never needs it)."""
        if self._jobs is None:
            from bot.jobs import JobQueue

            self._jobs = JobQueue(self.db)
        return self._jobs

    @property
    def provider(self) -> Provider:
        if self._provider is None:
            self._provider = _make_provider(self.settings)
        return self._provider

    # Operations of the other entry points, each in its own module, through this door.

    @property
    def saves(self) -> Saver:
        """A message saved by the shortcut or the capture reaction."""
        return self._service("saves", "bot.saving", "Saver")

    @property
    def home(self) -> Home:
        """What the App Home shows."""
        return self._service("home", "bot.home", "Home")

    @property
    def reminders(self) -> Reminders:
        """Due-date reminders and their buttons."""
        return self._service("reminders", "bot.reminders", "Reminders")

    @property
    def accounts(self) -> Accounts:
        """Export, forget, retention, uninstall and revocation."""
        return self._service("accounts", "bot.accounts", "Accounts")

    @property
    def keeper(self) -> IndexKeeper:
        """The Stores' search by meaning and the background indexer (bot.index_keeper)."""
        if self._keeper is None:
            from bot.index_keeper import IndexKeeper

            self._keeper = IndexKeeper(self.settings, self.db, meaning=self._meaning)
        return self._keeper

    def _service(self, name: str, module: str, cls: str) -> Any:
        if name not in self._services:
            import importlib

            self._services[name] = getattr(importlib.import_module(module), cls)(self)
        return self._services[name]

    async def close(self) -> None:
        aclose = getattr(self._provider, "aclose", None)
        if aclose is not None:  # the SDK providers' HTTP clients
            await aclose()
        if self._keeper is not None:
            await self._keeper.close()
        await self.db.close()

    @property
    def offline(self) -> bool:
        from bot.llm.offline import OfflineProvider

        return isinstance(self.provider, OfflineProvider)

    def store_for(self, user_id: str) -> Store:
        if not USER_ID.match(user_id) or user_id in {".", ".."}:
            raise InvalidValue(f"not a valid user id: {user_id!r}")
        if user_id not in self._stores:
            root = self.vault_override or self.settings.vault_for(user_id)
            self._stores[user_id] = self.keeper.store(root)
        return self._stores[user_id]

    def forget_store(self, user_id: str) -> None:
        if user_id in self._stores:
            self.keeper.forget(self._stores.pop(user_id))

    def now(self) -> datetime:
        return datetime.now(ZoneInfo(self.settings.tz))

    async def conversation(self, key: str, user_id: str, *, channel: str | None = None,
                           thread_ts: str | None = None) -> repositories.ConversationRow:
        from storage import repositories

        async with self.db.session() as s:
            row = await repositories.get_or_create_conversation(
                s, key, user_id, channel=channel, thread_ts=thread_ts)
            await s.commit()
            return row

    # -- one turn ---------------------------------------------------------------------------

    @property
    def turns(self) -> Any:
        """The turn runner (bot.turn_runner), imported on first use."""
        if self._turns is None:
            from bot.turn_runner import TurnRunner

            self._turns = TurnRunner(self)
        return self._turns

    async def handle(self, *, conversation_key: str, user_id: str, text: str,
                     source: str = "cli", channel: str | None = None,
                     thread_ts: str | None = None, job: JobRow | None = None) -> TurnResult:
        """One turn. With `job` (the intake job it runs for) it is taken once: a job that
        runs again gets the turn already taken, and notes its first try filed are found."""
        result: TurnResult = await self.turns.handle(
            conversation_key=conversation_key, user_id=user_id, text=text, source=source,
            channel=channel, thread_ts=thread_ts, job=job)
        return result

    # -- corrections and buttons -------------------------------------------------------------

    async def move_entry(self, *, user_id: str, ref: str, category: str,
                         conversation_key: str | None = None) -> MoveResult:
        """A move from a button: move, mark the receipt fixed, and tell the conversation."""
        from tools.move_entry import move_note

        result = await move_note(self.store_for(user_id), self.db, ref, category)
        if conversation_key:
            await self.turns.record(conversation_key, user_id,
                               f"(pressed the button: move '{result.entry.name}' to {category})",
                               f"Moved {result.entry.name} to {category}: {result.new_path}")
        return result

    async def trash_entry(self, *, user_id: str, ref: str,
                          conversation_key: str | None = None) -> str:
        """Undo: the note goes to the vault's restorable trash, never deleted."""
        from storage import repositories

        store = self.store_for(user_id)
        entry = await store.get(ref)
        new_path = await store.trash(ref)
        async with self.db.session() as s:
            if entry.id:
                await repositories.mark_capture(s, entry.id, "fixed", path=new_path,
                                                category="trash")
            await s.commit()
        if conversation_key:
            await self.turns.record(conversation_key, user_id,
                               f"(pressed Undo on '{entry.name}')",
                               f"Moved {entry.name} to the trash: {new_path} (restorable)")
        return new_path

    # -- conversations, for `brain chat` and `brain log` ---------------------------------------

    async def recent_conversations(self, user_id: str,
                                   limit: int = 5) -> list[repositories.ConversationRow]:
        from storage import repositories

        async with self.db.session() as s:
            return await repositories.recent_conversations(s, user_id, limit=limit)

    async def conversation_key(self, ref: str) -> str | None:
        """The key of the conversation `ref` names (its key or its number), or None."""
        from storage import repositories

        async with self.db.session() as s:
            row = await repositories.get_conversation(s, ref)
            if row is None and ref.isdigit():
                row = await repositories.get_conversation_by_id(s, int(ref))
        return row.key if row is not None else None

    async def turn_log(self, conversation_key: str | None = None,
                       limit: int = 10) -> list[repositories.TurnRow]:
        """The latest turns (of one conversation, or all), newest first, with tool runs."""
        from storage import repositories

        async with self.db.session() as s:
            conv_id = None
            if conversation_key is not None:
                row = await repositories.get_conversation(s, conversation_key)
                if row is None:
                    return []
                conv_id = row.id
            return await repositories.turns_for_log(s, conv_id, limit=limit)

    # -- what adapters ask about threads and receipts ----------------------------------------

    async def thread_known(self, channel: str, thread_ts: str) -> bool:
        """Has anyone talked with the bot in this Slack thread?"""
        from storage import repositories

        async with self.db.session() as s:
            return await repositories.thread_known(s, channel, thread_ts)

    async def note_owner(self, entry_id: str, conversation_key: str | None = None) -> str | None:
        """Whose vault holds the note: its capture's user, else the conversation's user."""
        from storage import repositories

        async with self.db.session() as s:
            capture = await repositories.capture_for_entry(s, entry_id)
            if capture is not None:
                return capture.user_id
            if conversation_key is None:
                return None
            conversation = await repositories.get_conversation(s, conversation_key)
            return conversation.user_id if conversation is not None else None

    async def receipt(self, entry_id: str) -> repositories.CaptureRow | None:
        from storage import repositories

        async with self.db.session() as s:
            return await repositories.capture_for_entry(s, entry_id)

    async def shown_at(self, result: TurnResult, channel: str,
                       message_ts: str) -> list[tuple[str, str, dict[str, Any], str]]:
        """Record which message shows each new receipt of the turn; returns the cards of notes
        the turn moved that were shown elsewhere in this channel (channel, ts, data, text), so
        the adapter can update them in place."""
        from storage import repositories

        stale: list[tuple[str, str, dict[str, Any], str]] = []
        async with self.db.session() as s:
            for ex in result.executions:
                if ex.status != "ok" or ex.output is None or not ex.output.data.get("id"):
                    continue
                row = await repositories.capture_for_entry(s, str(ex.output.data["id"]))
                if row is None:
                    continue
                if ex.output.kind == "capture":
                    await repositories.set_capture_message(s, row.id, message_ts)
                elif ex.output.kind == "move" and row.message_ts and row.channel == channel \
                        and row.message_ts != message_ts:
                    stale.append((channel, row.message_ts, ex.output.data, ex.output.text))
            await s.commit()
        return stale

    # -- digests ---------------------------------------------------------------------------

    def today(self) -> date:
        return self.now().date()

    def digest_maker(self, store: Store, user_id: str) -> DigestMaker:
        async def make(kind: str) -> dict[str, Any]:
            digest = await self.digest(user_id=user_id, kind=kind, store=store)
            result: dict[str, Any] = digest.to_dict()
            return result
        return make

    async def digest(self, *, user_id: str, kind: str, store: Store | None = None,
                     today: date | None = None, tz: str | None = None) -> Any:
        """The daily or weekly digest; a scheduled one passes its own day and the user's zone."""
        from bot.digest import make_digest

        return await make_digest(store or self.store_for(user_id), self.db, self.provider,
                                 user_id, kind, today=today or self.today(),
                                 tz=tz or self.settings.tz)

    async def digest_settings(self, *, user_id: str, request: Any, channel: str | None = None,
                              tz: str | None = None) -> str:
        """Carry out a parsed `/digest subscribe | off | status` (bot.digest.command)."""
        from bot.digest.command import apply

        return await apply(self.db, user_id, request, channel=channel, tz=tz or self.settings.tz)

    # -- one tool, called directly (MCP) -------------------------------------------------------

    async def call_tool(self, *, user_id: str, name: str, arguments: dict[str, Any] | None,
                        source: str = "mcp") -> Execution:
        """Run one tool for `user_id` outside a conversation, as an MCP client asks: the same
        registry the model's calls go through, so validation and errors are the model's."""
        execution: Execution = await self.turns.call_tool(user_id=user_id, name=name,
                                                          arguments=arguments, source=source)
        return execution


def _make_provider(settings: Settings) -> Provider:
    from bot.llm.configs import make_provider, select_config

    return make_provider(select_config(settings), settings)


def clean_vault_temp(root: Path) -> list[str]:
    """Remove the temp files an interrupted write left anywhere under `root` (`brain doctor`);
    they are ours, never notes. Returns what was removed."""
    return Vault(root).clean_temp()
