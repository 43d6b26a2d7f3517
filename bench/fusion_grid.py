"""The fusion's constants tried again on the product's own signals (issue 33).

    python bench/fusion_grid.py [--store sqlite|postgres|both] [--top 15]

Each question of the long-note set and of the real vault's sets is searched once through
`Store.search`, as bench/bench_long_notes.py searches them, while the inputs of
storage/index/fusion.py's steps are recorded (its functions are wrapped and run unchanged).
Then every setting of a grid over fusion's constants fuses those inputs again, through the
same functions with the constants set in turn, and is scored by recall@5. The shipped
constants must give back the shipped order for every question: that is checked first, and a
mismatch stops the run (this file no longer follows `SearchIndex._fused`).

Used to choose the shipped constants and to show they sit on a plateau (docs/performance.md,
"Why ours / BM25 stays under 1.1"); rerun it after a change of model or signal.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import text  # noqa: E402

from bench.bench_long_notes import (  # noqa: E402
    DEPTH,
    K,
    QuestionSet,
    long_note_set_cases,
    real_vault_cases,
)
from bench.bench_retrieval import _default_vault  # noqa: E402
from bench.bench_storage import Postgres  # noqa: E402
from storage.db import Database  # noqa: E402
from storage.index import fusion  # noqa: E402
from storage.index.indexer import embed_pending  # noqa: E402
from storage.meaning.shared_model import Meaning  # noqa: E402
from storage.vault.files import Vault  # noqa: E402
from storage.vault.store import Store  # noqa: E402

GRID: dict[str, tuple[float, ...]] = {
    "EXACT_SHARE": (0.25, 0.5, 1.0), "WORDS": (0.35, 0.5, 0.7, 1.0),
    "MEANING": (0.5, 0.75, 1.0), "SECOND": (0.25, 0.5, 0.75), "NAMES": (0.25, 0.5),
    "NEAR": (0.4, 0.5, 0.6), "FAR": (0.15, 0.25, 0.3)}
STEPS = ("weak", "words", "meaning", "fuse", "boost", "order")
Signals = dict[str, Any]


@contextlib.contextmanager
def recording(into: Signals) -> Iterator[None]:
    """fusion's steps record their inputs into `into` while they run as ever."""
    real = {name: getattr(fusion, name) for name in STEPS}

    def weak(stems: Any, found: Any) -> Any:
        into.update(stems=dict(stems), found=set(found))
        return real["weak"](stems, found)

    def words(stems: Any, exact: Any, leave: Any = frozenset()) -> Any:
        into["exact"] = dict(exact)
        return real["words"](stems, exact, leave)

    def meaning(best: Any, second: Any) -> Any:
        into.update(best=dict(best), second=dict(second))
        return real["meaning"](best, second)

    def fuse(word_scores: Any, name_scores: Any, meaning_scores: Any) -> Any:
        into["names"] = dict(name_scores)
        return real["fuse"](word_scores, name_scores, meaning_scores)

    def boost(scores: Any, nids: Any, amount: float = fusion.EXACT_NAME_BOOST) -> Any:
        nids = list(nids)
        kind = "exact" if amount == fusion.EXACT_NAME_BOOST else "in_time"
        into.setdefault("boosts", []).append((kind, nids))
        return real["boost"](scores, nids, amount)

    def order(scores: Any, words: Any, names: Any) -> Any:
        into.update(word_order=list(words), fuzzy=dict(names))
        return real["order"](scores, words, names)

    with patched(dict(zip(STEPS, (weak, words, meaning, fuse, boost, order), strict=True))):
        yield


@contextlib.contextmanager
def patched(setting: dict[str, Any]) -> Iterator[None]:
    """fusion's names (constants or steps) set to these values for the block, then put back."""
    before = {name: getattr(fusion, name) for name in setting}
    for name, value in setting.items():
        setattr(fusion, name, value)
    try:
        yield
    finally:
        for name, value in before.items():
            setattr(fusion, name, value)


def refuse(signals: Signals) -> list[int] | None:
    """The order `SearchIndex._fused` gives these inputs under fusion's constants as they are
    now; None for a question that never reached the fusion (a time alone)."""
    if "word_order" not in signals:
        return None
    stems = signals["stems"]
    leave = fusion.weak(stems, signals["found"])
    scores = fusion.fuse(fusion.words(stems, signals["exact"], leave=leave), signals["names"],
                         fusion.meaning(signals["best"], signals["second"]))
    for kind, nids in signals.get("boosts", []):
        fusion.boost(scores, nids, fusion.EXACT_NAME_BOOST if kind == "exact"
                     else fusion.IN_TIME)
    return fusion.order(scores, signals["word_order"], signals["fuzzy"])[:DEPTH]


async def capture(qset: QuestionSet, url: str, meaning: Meaning) -> list[dict[str, Any]]:
    """Per question: its kind, relevant paths, shipped ranking and fusion inputs (by path)."""
    db = await Database.open(url)
    try:
        words_only = Store(Vault(qset.root), db)
        await words_only.refresh()
        await embed_pending(db, words_only.index.key, meaning)
        store = Store(Vault(qset.root), db, meaning=meaning)
        async with db.session() as session:
            rows = (await session.execute(text("SELECT nid, path FROM index_notes"))).all()
        paths: dict[int, str] = {int(nid): str(path) for nid, path in rows}
        out = []
        for case in qset.cases:
            signals: Signals = {}
            with recording(signals):
                found = await store.search(case.text, limit=DEPTH)
            out.append({"kind": case.kind, "relevant": case.relevant, "signals": signals,
                        "shipped": [e.path for e in found.entries], "paths": paths})
        return out
    finally:
        await db.close()


def recall(cases: list[dict[str, Any]]) -> dict[str, float]:
    """kind (and "overall") -> recall@5 under fusion's constants as they are now."""
    hits: dict[str, list[bool]] = {}
    for case in cases:
        nids = refuse(case["signals"])
        ranking = case["shipped"] if nids is None else [case["paths"][n] for n in nids]
        found = any(path in case["relevant"] for path in ranking[:K])
        for kind in (case["kind"], "overall"):
            hits.setdefault(kind, []).append(found)
    return {kind: sum(found) / len(found) for kind, found in hits.items()}


def check(name: str, cases: list[dict[str, Any]]) -> None:
    for case in cases:
        nids = refuse(case["signals"])
        if nids is not None and [case["paths"][n] for n in nids] != case["shipped"]:
            raise SystemExit(f"{name}: the shipped constants do not give the shipped order; "
                             "this file no longer follows SearchIndex._fused")


async def captured(stores: list[str]) -> dict[str, list[dict[str, Any]]]:
    meaning = Meaning.load()
    if not meaning.available:
        raise SystemExit(f"the embedding model cannot load here: {meaning.why}")
    out: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-fusion-") as tmp:
        sets = [long_note_set_cases(Path(tmp), 0), real_vault_cases(_default_vault().resolve())]
        with warnings.catch_warnings():  # "XDG_RUNTIME_DIR is not set": it picks /tmp then
            warnings.simplefilter("ignore")
            pg = Postgres(Path(tmp)) if "postgres" in stores else None
        try:
            for store, (i, qset) in itertools.product(stores, enumerate(sets)):
                url = (await pg.new_database(f"fusion_{i}") if pg is not None and
                       store == "postgres" else f"sqlite+aiosqlite:///{tmp}/{store}-{i}.db")
                print(f"{store}, {qset.name}: searching", file=sys.stderr, flush=True)
                out[f"{qset.name}, {store}"] = await capture(qset, url, meaning)
        finally:
            if pg is not None:
                pg.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", choices=("sqlite", "postgres", "both"), default="sqlite")
    parser.add_argument("--top", type=int, default=15, help="settings to print, best first")
    args = parser.parse_args()
    stores = ["sqlite", "postgres"] if args.store == "both" else [args.store]
    sets = asyncio.run(captured(stores))
    for name, cases in sets.items():
        check(name, cases)
    rows = []
    for values in itertools.product(*GRID.values()):
        setting = dict(zip(GRID, values, strict=True))
        with patched(setting):
            rows.append((setting, {name: recall(cases) for name, cases in sets.items()}))
    shipped = {name: recall(cases) for name, cases in sets.items()}

    def long_notes(row: tuple[dict[str, float], dict[str, dict[str, float]]]) -> float:
        return min(r["overall"] for name, r in row[1].items() if name.startswith("long"))

    rows.sort(key=long_notes, reverse=True)
    def line(found: dict[str, dict[str, float]]) -> str:
        return "; ".join(f"{name}: {r['overall']:.3f} ({r.get('paraphrase', 0):.2f})"
                         for name, r in found.items())

    print(f"{len(rows)} settings; recall@5 overall (paraphrases) per set\n")
    print("the shipped constants:", line(shipped))
    for setting, found in rows[:args.top]:
        changed = {k: v for k, v in setting.items() if getattr(fusion, k) != v}
        print(changed or "(the shipped constants)", line(found))


if __name__ == "__main__":
    main()
