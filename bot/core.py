"""What every service of the brain needs, in one small typed object: the settings, the
database, each person's Store, the language model (made on first use), the capture receipts
and the clock.

Services (`bot/capture/messages.py`, `bot/home.py`, the turn runner, ...) take a `Core` and never the
Brain: the Brain (`bot/brain.py`) builds one Core and hands it to each service it composes.
Nothing heavy is imported here: the provider and the Stores (search by meaning) load when first
asked for.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from bot.config import Settings
from storage.db import Database
from storage.errors import InvalidValue
from storage.types import ATTACHMENTS, CATEGORIES, TRASH_DIR, is_user_id, shared_vault
from storage.vault.paths import check_person_folder
from storage.vault.store import Store

# Folders a vault uses: never a person's id under BRAIN_OWNER.
OPEN_STORES = 256  # people's Stores a process keeps open
VAULT_NAMES = frozenset({*CATEGORIES, TRASH_DIR, ATTACHMENTS})

if TYPE_CHECKING:
    from bot.llm.configs import LLMConfig
    from bot.llm.types import Provider
    from bot.stores import Stores
    from storage.meaning.shared_model import Meaning
    from storage.repositories.receipts import Receipts

@dataclass(frozen=True)
class ModelChoice:
    """The model a person chose (None: the app's default), as already read in this turn."""

    model: str | None


class Core:
    def __init__(self, settings: Settings, db: Database, provider: Provider | None = None,
                 *, vault_override: Path | None = None, meaning: Meaning | None = None) -> None:
        self.settings = settings
        self.db = db
        self._receipts: Receipts | None = None
        self.vault_override = vault_override
        self._provider = provider
        self._meaning = meaning  # a model the caller started loading, else one made lazily
        self._stores: Stores | None = None
        # The Stores of the people served lately, at most OPEN_STORES: a process serving
        # thousands holds a bounded few (each watched by the indexer), not one per person ever.
        self._open: OrderedDict[str, Store] = OrderedDict()
        self._chosen: dict[str, Provider] = {}  # the providers of people's own choices
        self._available: dict[str, LLMConfig] | None = None  # what a person may choose

    @property
    def provider(self) -> Provider:
        """The configured language model (made on first use: a storage verb never needs it)."""
        if self._provider is None:
            self._provider = make_provider(self.settings)
        return self._provider

    async def provider_for(self, user_id: str, *, chosen: ModelChoice | None = None,
                           ) -> tuple[Provider, str | None]:
        """The model `user_id` chose (App Home), else the configured one. A choice that is no
        longer set up here falls back to the default and is cleared, so it is said once: the
        second value is that sentence. `chosen`: the choice as the turn already read it (the
        person's row is then not read again)."""
        from bot.llm.configs import available_configs
        from bot.llm.configs import make_provider as connect
        from storage.repositories import slack_state

        if self._available is None:  # the settings do not change while the process runs
            self._available = available_configs(self.settings)
        configs = self._available
        if chosen is None:
            async with self.db.session() as s:
                row = await slack_state.get_user(s, user_id)
            chosen = ModelChoice(row.model if row is not None else None)
        choice = chosen.model
        if not choice:
            return self.provider, None
        if choice not in configs:
            async with self.db.session() as s:
                await slack_state.set_model(s, user_id, None)
                await s.commit()
            return self.provider, (f"The model you chose ({choice}) is not set up here any "
                                   "more, so I'm using the default.")
        if choice not in self._chosen:
            self._chosen[choice] = connect(configs[choice], self.settings)
        return self._chosen[choice], None

    @property
    def receipts(self) -> Receipts:
        """Capture receipts (storage/repositories/receipts.py; loaded on first use: a storage verb of the
        CLI never needs the rows' module)."""
        if self._receipts is None:
            from storage.repositories.receipts import Receipts

            self._receipts = Receipts(self.db)
        return self._receipts

    @property
    def offline(self) -> bool:
        from bot.llm.offline import OfflineProvider

        return isinstance(self.provider, OfflineProvider)

    @property
    def stores(self) -> Stores:
        """The Stores' search by meaning and the background indexer (bot.stores)."""
        if self._stores is None:
            from bot.stores import Stores

            self._stores = Stores(self.settings, self.db, meaning=self._meaning)
        return self._stores

    def store_for(self, user_id: str) -> Store:
        """The person's vault over the shared database; refuses ids that could name a path,
        and with BRAIN_OWNER anyone but the owner (`has_vault`)."""
        if not is_user_id(user_id):
            raise InvalidValue(f"not a valid user id: {user_id!r}")
        self.check_person(user_id)
        if not self.has_vault(user_id):
            raise InvalidValue(f"this brain keeps notes for {self.settings.owner} only "
                               f"(BRAIN_OWNER); {user_id!r} has no vault here")
        if self.vault_override is None:
            self.check_vault_folder(user_id)  # each time: a folder swapped for a link later too
        store = self._open.get(user_id)
        if store is None:
            if self.vault_override is not None:  # a folder as it is: never a mirror
                store = self.stores.store(self.vault_override)
            else:
                store = self.stores.store(self.settings.vault_for(user_id), person=user_id)
            self._open[user_id] = store
            while len(self._open) > OPEN_STORES:  # the least lately served goes
                self.stores.forget(self._open.popitem(last=False)[1])
        self._open.move_to_end(user_id)
        return store

    def has_vault(self, user_id: str) -> bool:
        """With BRAIN_OWNER only the owner has a vault, the vault root itself: `<root>/<id>`
        would be a folder of the owner's vault. Anyone else's data is rows only."""
        owner = self.settings.owner
        return self.vault_override is not None or not owner or user_id == owner

    def person_of(self, vault_key: str) -> str | None:
        """Whose vault the index calls `vault_key` here (its rows go by that name: the folder,
        or `db:<person>` in the database store), or None: someone else's (another vault root,
        a `--vault` folder) or no one's. No vault is opened."""
        if self.vault_override is not None:
            return None  # a folder as it is: nobody's vault
        owner = self.settings.owner
        if self.settings.store == "database":
            person = vault_key.removeprefix("db:")
            expected = shared_vault(person)
        else:
            root = str(self.settings.vault_root.resolve())
            person = owner if owner and vault_key == root else Path(vault_key).name
            expected = str(self.settings.vault_for(person).resolve()) if person else ""
        if not person or not is_user_id(person) or not self.has_vault(person) \
                or vault_key != expected:
            return None
        return person

    def check_person(self, user_id: str) -> None:
        """InvalidValue when `user_id` is part of the owner's vault (BRAIN_OWNER): a name of a
        file or folder in it (`projects`, `.git`, `attachments`), or of one the vault uses, is
        never a person, so no export or forget of it reads or erases the owner's notes."""
        owner = self.settings.owner
        if not owner or user_id == owner or self.vault_override is not None:
            return
        inside = self.settings.vault_root / user_id
        if user_id.startswith(".") or user_id in VAULT_NAMES or inside.exists() \
                or inside.is_symlink():
            raise InvalidValue(f"{user_id!r} is a part of {owner}'s vault, not a person: with "
                               "BRAIN_OWNER the vault root is the owner's vault, and --user "
                               f"names the owner or someone with no folder in it. Nothing "
                               "was read or changed")

    def check_vault_folder(self, user_id: str) -> None:
        """UnsafePath when the person's own folder (`<vault root>/<user id>`) is a symlink or
        resolves anywhere else (storage/vault/paths.py); the single owner's vault is the root."""
        folder = self.settings.vault_for(user_id)
        if folder != self.settings.vault_root:
            check_person_folder(self.settings.vault_root, folder)

    def forget_store(self, user_id: str) -> None:
        if user_id in self._open:
            self.stores.forget(self._open.pop(user_id))

    def now(self) -> datetime:
        return datetime.now(ZoneInfo(self.settings.tz))

    def today(self) -> date:
        return self.now().date()

    async def close(self) -> None:
        for provider in (self._provider, *self._chosen.values()):
            aclose = getattr(provider, "aclose", None)
            if aclose is not None:  # the SDK providers' HTTP clients
                await aclose()
        if self._stores is not None:
            await self._stores.close()
        await self.db.close()


def make_provider(settings: Settings) -> Provider:
    from bot.llm.configs import make_provider as make
    from bot.llm.configs import select_config

    return make(select_config(settings), settings)
