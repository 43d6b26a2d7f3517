"""The background indexer: keeps the index of the vaults in use fresh and gives their notes
vectors, off every reply's path.

In a long-running process (`brain serve`, `brain mcp`) one `Indexer` runs two tasks:

- **scan**: every `scan_every` seconds (longer for a vault whose rescan is slow: ten times its
  cost, so a 50k-note vault costs ~10 % of a core) each watched vault is rescanned (the file
  walk runs in a worker thread). Stores made with `fresh_within` then trust the index instead
  of rescanning before a read, so a turn never pays for a rescan.
- **embed**: when woken (a scan found changes, one of our own writes re-indexed a note, a
  vault was first watched) the notes without vectors get them, newest first, in small
  batches: each batch is embedded in a worker thread (onnxruntime lets go of the GIL, so the
  event loop keeps serving turns) and written in its own transaction. The work is resumable:
  what is written stays, and what is missing is found again from the database. A new note is
  searchable by meaning within a second or two of being filed: the embedder waits for
  writes to pause (SETTLE), so it never competes with the turn that wrote. One process of a
  machine embeds a vault at a time (`brain serve --workers N` runs N indexers; each found the
  same notes without vectors and embedded them again); the others look again a second later.

`embed_pending` is the same work in the foreground, for `brain reindex`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from storage.db import Database
from storage.meaning.shared_model import Meaning
from storage.vault.locks import if_free

if TYPE_CHECKING:
    from storage.meaning.vector_rows import PendingPassage
    from storage.vault.store import Store

log = logging.getLogger(__name__)

# Passages are read WINDOW at a time (newest notes first), sorted by length and embedded
# BATCH_NOTES at a time (each written in its own short transaction): texts of similar length
# batch with little padding, which measured 28 notes/s against 15 for batches in date order.
WINDOW_NOTES = 256
BATCH_NOTES = 48
SCAN_EVERY = 2.0
EVERYWHERE = ""  # the key of a write somewhere (no vault named: a start, a failure)
SLOW_SCAN_FACTOR = 10.0
PRUNE_EVERY = 60.0  # seconds between checks for vectors no note uses, per vault
# After a wake the embedder waits until writes pause for SETTLE seconds (at most MAX_SETTLE):
# the turn that wrote has posted its reply by then, and a burst's notes are embedded together.
# Started at once, the embedding shared SQLite's one writer connection and the two cores with
# the turn still running: +14 ms per capture turn in `bench_slack` (performance.md).
SETTLE = 0.3
MAX_SETTLE = 2.0
# While another process of the machine embeds a vault, this one looks again this often.
BUSY_RETRY = 1.0

# (passages done, passages to do in all, seconds since the start)
Progress = Callable[[int, int, float], None]


@dataclass
class EmbedStats:
    passages: int = 0  # passages that got vectors (a short note is one passage)
    embedded: int = 0  # of them, embedded now (the others had a copy's or a former self's)
    pruned: int = 0  # vector rows removed (no passage uses them)
    seconds: float = 0.0
    pending: int = 0  # passages that still had none when the run stopped
    notes: int = 0  # the notes those passages are of


async def embed_pending(db: Database, vault_key: str, meaning: Meaning, *,
                        batch: int = BATCH_NOTES, window: int = WINDOW_NOTES,
                        progress: Progress | None = None, prune: bool = True,
                        budget: float | None = None) -> EmbedStats:
    """Give every passage of the vault a vector of the meaning's model, those of the newest
    notes first; then (with `prune`) delete the vectors no passage uses any more. Safe to
    stop at any point: each batch is committed, and what is missing is found again from the
    database. With `budget` (seconds) it stops after the batch that passes it, and `pending`
    says how many passages are left for the next run."""
    from storage.meaning import vector_rows

    stats = EmbedStats()
    if not await meaning.ready():
        return stats
    started = time.perf_counter()
    model = meaning.model
    total = 0
    if progress is not None:
        async with db.session() as session:
            total = await vector_rows.count_pending(session, vault_key, model)
        progress(0, total, 0.0)
    tried: set[str] = set()
    notes: set[int] = set()
    while True:
        async with db.session() as session:
            found = await vector_rows.pending(session, vault_key, model, window)
        found = [p for p in found if p.key not in tried]  # a write that did not take
        if not found:
            break
        tried.update(p.key for p in found)
        todo = sorted({p.key: p for p in found}.values(), key=lambda p: len(p.text))
        notes.update(p.nid for p in found)
        stats.notes = len(notes)
        stats.passages += len(found) - len(todo)
        for at in range(0, len(todo), batch):
            part = todo[at:at + batch]
            await _embed_and_write(db, vault_key, meaning, part)
            stats.passages += len(part)
            stats.embedded += len(part)
            if progress is not None:
                total = max(total, stats.passages)
                progress(stats.passages, total, time.perf_counter() - started)
        if budget is not None and time.perf_counter() - started > budget:
            async with db.session() as session:
                stats.pending = await vector_rows.count_pending(session, vault_key, model)
            if stats.pending:
                stats.seconds = time.perf_counter() - started
                return stats
    if prune:
        stats.pruned = await _prune(db, vault_key, model)
    stats.seconds = time.perf_counter() - started
    return stats


async def _prune(db: Database, vault_key: str, model: str) -> int:
    """Delete the vectors no passage uses any more; how many went."""
    from storage.meaning import vector_rows

    async with db.session() as session:
        if not await vector_rows.orphans(session, vault_key, model):
            return 0
        pruned = await vector_rows.prune(session, vault_key, model)
        await session.commit()
    return pruned


async def _embed_and_write(db: Database, vault_key: str, meaning: Meaning,
                           passages: list[PendingPassage]) -> None:
    from storage.meaning import vector_rows

    async with db.session() as session:  # (no connection held while the model runs)
        await vector_rows.embed_into(session, vault_key, meaning, passages)
        await session.commit()


def embed_lock(vault_key: str, model: str) -> str:
    """The name of the machine's lock held while a process embeds that vault's notes."""
    return f"embed:{vault_key}:{model}"


class Indexer:
    """Keeps the watched vaults' index fresh and embedded, in the background."""

    def __init__(self, db: Database, meaning: Meaning, *, scan_every: float = SCAN_EVERY,
                 batch: int = BATCH_NOTES,
                 on_lag: Callable[[float], None] | None = None) -> None:
        self.db = db
        self.meaning = meaning
        self.scan_every = scan_every
        self.batch = batch
        self.on_lag = on_lag  # told `lag()` after each look at the files (`/metrics`)
        self._stores: dict[str, Store] = {}
        self._wake: asyncio.Event | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._written: set[str] = set()  # vaults to look at for notes without vectors
        self._everywhere = True  # ... or every vault watched (at the start, after a failure)
        # vault (or EVERYWHERE) -> when it was first written with its vectors still to make
        self._since: dict[str, float] = {}
        self._no_model = False  # the model cannot load: there are no vectors to wait for
        self._embedded_at: dict[str, int] = {}  # vault -> generation with nothing pending
        self._pruned_at: dict[str, float] = {}
        self.last_error: str | None = None

    # --- what callers use --------------------------------------------------------------------

    def watch(self, store: Store) -> None:
        """Keep this store's vault fresh (again: the newest Store object is used)."""
        new = store.index.key not in self._stores
        self._stores[store.index.key] = store
        if new:
            self.wake(store.index.key)

    def unwatch(self, vault_key: str) -> None:
        self._stores.pop(vault_key, None)
        self._embedded_at.pop(vault_key, None)
        self._pruned_at.pop(vault_key, None)
        self._written.discard(vault_key)
        self._since.pop(vault_key, None)

    def wake(self, vault_key: str | None = None) -> None:
        """Something was written (in the vault `vault_key`; None: in any of them): look for
        notes without vectors there now."""
        if vault_key is None:
            self._everywhere = True
        else:
            self._written.add(vault_key)
        self._since.setdefault(vault_key or EVERYWHERE, time.monotonic())
        if self._wake is not None:
            self._wake.set()

    def lag(self) -> float:
        """The index's lag: seconds since the oldest write whose notes may still wait for
        their vectors in this process (0: none; the words index is written with the note)."""
        if self._no_model or not self._since:
            return 0.0
        return max(0.0, time.monotonic() - min(self._since.values()))

    @property
    def running(self) -> bool:
        return any(not t.done() for t in self._tasks)

    def start(self) -> None:
        if self.running:
            return
        self._wake = asyncio.Event()
        self._wake.set()
        self._tasks = [asyncio.create_task(self._scan_loop(), name="index-scan"),
                       asyncio.create_task(self._embed_loop(), name="index-embed")]

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks = []

    # --- the two loops -----------------------------------------------------------------------

    async def _scan_loop(self) -> None:
        while True:
            slowest = 0.0
            stores = list(self._stores.values())
            behind = await self._mirrors_behind(stores)
            for store in stores:
                hint = None if behind is None or store.mirror is None \
                    else store.index.key in behind
                try:
                    stats = await store.look(hint)  # no database work when no file changed
                except Exception as exc:  # the next pass tries again; a turn rescans itself
                    self._failed("rescan of the vault failed", exc)
                    continue
                if stats is None:
                    continue
                slowest = max(slowest, stats.seconds)
                if stats.added or stats.updated or stats.removed:
                    self.wake(store.index.key)
            if self.on_lag is not None:
                self.on_lag(self.lag())
            await asyncio.sleep(max(self.scan_every, SLOW_SCAN_FACTOR * slowest))

    async def _mirrors_behind(self, stores: list[Store]) -> set[str] | None:
        """The database store's vaults that other machines wrote since their mirror's last
        pull, asked for all at once (not a transaction per vault every pass); None when
        the question failed (each vault asks for itself then)."""
        from storage.vault.mirror import mirrors_behind

        mirrors = [s.mirror for s in stores if s.mirror is not None]
        if not mirrors:
            return None
        try:
            return await mirrors_behind(self.db, mirrors)
        except Exception as exc:
            self._failed("the look at the mirrors failed", exc)
            return None

    async def _embed_loop(self) -> None:
        assert self._wake is not None
        # Load the model now, at start, not after the first pause: its imports hold the GIL
        # for a few hundred ms, which would stall the first turns (no settling for this).
        await self.meaning.ready()
        while True:
            await self._wake.wait()
            await self._settle()
            if not await self.meaning.ready():
                self._no_model = True
                continue  # no model: the words index is all there is (logged once at load)
            await self._embed_written()
            if self._written or self._everywhere:
                await asyncio.sleep(BUSY_RETRY)
                self._wake.set()

    async def _embed_written(self) -> None:
        """The vaults written since the last look (every one after a start or a failure), not
        every vault watched: a capture costs one vault's look, however many people."""
        keys = list(self._stores) if self._everywhere else \
            [k for k in self._stores if k in self._written]
        for gone in [k for k in self._since if k != EVERYWHERE and k not in self._stores]:
            del self._since[gone]  # written, then no longer watched: nothing to wait for here
        taken = {k: self._since.pop(k) for k in [*keys, EVERYWHERE] if k in self._since}
        self._everywhere, self._written = False, set()
        for key in keys:
            try:
                if await self._embed_vault(key):
                    taken.pop(key, None)
                else:  # another process embeds it now: looked at again when it may be done
                    self._written.add(key)
            except Exception as exc:
                self._failed("embedding failed", exc)
                self._everywhere = True
                await asyncio.sleep(self.scan_every)  # not in a tight loop
        if not self._everywhere:
            taken.pop(EVERYWHERE, None)
        for key, since in taken.items():  # still waiting: their lag goes on from then
            self._since[key] = min(since, self._since.get(key, since))

    async def _settle(self) -> None:
        """Wait until no write has woken us for SETTLE seconds, or MAX_SETTLE in all."""
        assert self._wake is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + MAX_SETTLE
        while (left := deadline - loop.time()) > 0:
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), min(SETTLE, left))
            except TimeoutError:
                break
        self._wake.clear()

    async def _embed_vault(self, key: str) -> bool:
        """Vectors for the vault's notes without them; False when another process of this
        machine is doing it now (each `--workers` process would embed the same notes)."""
        from storage.index.fuzzy_names import vault_state

        async with self.db.session() as session:
            generation = (await vault_state(session, key)).generation  # its row, not all
        if self._embedded_at.get(key) == generation:
            return True  # nothing changed since everything had vectors
        with if_free(embed_lock(key, self.meaning.model)) as mine:
            if not mine:
                return False
            due = time.monotonic() - self._pruned_at.get(key, 0.0) >= PRUNE_EVERY
            stats = await embed_pending(self.db, key, self.meaning, batch=self.batch,
                                        prune=due)
            if due:
                self._pruned_at[key] = time.monotonic()
            self._embedded_at[key] = generation
            if stats.embedded:
                log.debug("embedded %d note(s) in %.2f s", stats.embedded, stats.seconds)
        await self._warm(key)
        return True

    async def _warm(self, key: str) -> None:
        """Load the new vectors into this process's matrix now, so no turn waits for it."""
        from storage.index.fuzzy_names import vault_state
        from storage.meaning import cache

        async with self.db.session() as session:
            state = await vault_state(session, key)
            await cache.matrix_for(session, key, self.meaning.model,
                                          state.vector_generation)

    def _failed(self, what: str, exc: Exception) -> None:
        message = f"{what}: {type(exc).__name__}: {str(exc)[:200]}"
        if message != self.last_error:  # one line per new trouble, not one per pass
            log.warning("background indexer: %s", message)
        self.last_error = message
