"""Search by meaning for one process: the embedding model (or why there is none), and the
vector of a text, embedded once.

A `Meaning` is made once per process (`Meaning.load`, ~0.3 s) and handed to every Store and
to the background indexer. Without the model (`available` is False) nothing else changes:
search ranks by words and names as before, captures get no related notes, and the indexer
only keeps the word index fresh. The reason is logged once, in one line, and `why` keeps it
for `brain doctor`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from storage.meaning.embedder import MODEL_ENV, Embedder, EmbeddingUnavailable, preload
from storage.meaning.texts import RECIPE

if TYPE_CHECKING:
    from storage.meaning.vectors import Matrix

log = logging.getLogger(__name__)

RECENT_TEXTS = 64  # a capture's text is embedded once for related notes and the classifier
# Models loaded in this process, by (file asked for, threads): an Embedder is thread-safe, so
# every Brain, Store and indexer of a process shares one (~0.3 s and ~60 MB each).
_LOADED: dict[tuple[str, int], Embedder] = {}
_LOAD_LOCK = threading.Lock()


class Meaning:
    def __init__(self, embedder: Embedder | None, why: str | None = None) -> None:
        self._set(embedder, why)
        self._recent: OrderedDict[str, Matrix] = OrderedDict()
        self._loader: tuple[str | Path | None, int] | None = None
        self._loading: asyncio.Future[None] | None = None

    def _set(self, embedder: Embedder | None, why: str | None) -> None:
        self.embedder = embedder
        self.why = why
        # Stored with every vector: another model or another choice of text, other vectors.
        self.model = f"{embedder.model_id}/{RECIPE}" if embedder is not None else ""

    @classmethod
    def lazy(cls, model_path: str | Path | None = None, *, threads: int = 1) -> Meaning:
        """A Meaning whose model loads in a worker thread when first needed (`ready`)."""
        meaning = cls(None, "not loaded yet")
        meaning._loader = (model_path, threads)
        return meaning

    async def ready(self) -> bool:
        """Load the model if that is still to do (once; callers meanwhile wait for it);
        True when search by meaning can run."""
        if self._loader is not None:
            if self._loading is None:
                path, threads = self._loader
                try:
                    Embedder.locate(path)  # no model file: say so without importing anything
                except EmbeddingUnavailable as exc:
                    self._loader = None
                    self._off(str(exc))
                    return False
                preload()  # here, not in the worker thread (see storage.meaning.embedder.preload)
                self._loading = asyncio.ensure_future(asyncio.to_thread(self._load, path, threads))
            await asyncio.shield(self._loading)
        return self.embedder is not None

    def _off(self, why: str) -> None:
        log.warning("search by meaning is off: %s; keyword and name search still work", why)
        self._set(None, why)

    def _load(self, path: str | Path | None, threads: int) -> None:
        loaded = Meaning.load(path, threads=threads)
        self._set(loaded.embedder, loaded.why)
        self._loader = None

    @classmethod
    def load(cls, model_path: str | Path | None = None, *, threads: int = 1) -> Meaning:
        """The model from `model_path` / $BRAIN_EMBEDDING_MODEL / the installed package; when
        it cannot run here, a Meaning without it and one WARNING line saying why."""
        key = (str(model_path or os.environ.get(MODEL_ENV) or ""), threads)
        try:
            with _LOAD_LOCK:
                if key not in _LOADED:
                    _LOADED[key] = Embedder.open(model_path, threads=threads)
            return cls(_LOADED[key])
        except EmbeddingUnavailable as exc:
            off = cls(None, None)
            off._off(str(exc))
            return off

    @classmethod
    def off(cls, why: str = "not asked for") -> Meaning:
        return cls(None, why)

    @property
    def available(self) -> bool:
        return self.embedder is not None

    def embed_texts(self, texts: Sequence[str]) -> Matrix:
        """Vectors of many texts (blocking: call it from a worker thread)."""
        assert self.embedder is not None, "no model"
        return self.embedder.embed(texts)

    async def vector(self, text: str) -> Matrix | None:
        """The unit vector of `text` (None without the model), computed in a worker thread:
        onnxruntime lets go of the GIL, so the event loop keeps serving meanwhile."""
        if not await self.ready() or self.embedder is None or not text.strip():
            return None
        found = self._recent.get(text)
        if found is not None:
            self._recent.move_to_end(text)
            return found
        vector = await asyncio.to_thread(self.embedder.embed_query, text)
        self._recent[text] = vector
        while len(self._recent) > RECENT_TEXTS:
            self._recent.popitem(last=False)
        return vector
