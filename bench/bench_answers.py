"""Answers from the notes, offline: how often the expected note is among the sources, how often
a question no note answers gets "nothing found", and that every source is a note of the vault
whose text holds its quote.

    .venv/bin/python -m bench.bench_answers                 # both sets, with the sentence model
    .venv/bin/python -m bench.bench_answers --no-meaning    # words and names only
    .venv/bin/python -m bench.bench_answers --set captures -v

The question sets and the captures vault are bench/answer_questions.yaml and
bench/captures_vault.yaml (bench/answer_sets.py); the real vault is read, never written.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.answer_sets import REAL_VAULT, TODAY, questions, write_captures  # noqa: E402
from storage.db import Database  # noqa: E402
from storage.index.indexer import embed_pending  # noqa: E402
from storage.meaning.shared_model import Meaning  # noqa: E402
from storage.vault.files import Vault  # noqa: E402
from storage.vault.store import Store  # noqa: E402
from tools.answers.extract import extractive  # noqa: E402
from tools.answers.question import read_question  # noqa: E402
from tools.answers.sentences import quote_in  # noqa: E402


async def run_set(name: str, vault: Path, meaning: Meaning, verbose: bool) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        db = await Database.open(f"sqlite+aiosqlite:///{tmp}/bench.db")
        store = Store(Vault(vault), db, meaning=meaning)
        await store.refresh()
        if meaning.available:
            await embed_pending(db, store.index.key, meaning)
        hits = answerable = nothing = unanswerable = bad_quotes = outside = sources = 0
        times: list[float] = []
        for asked in questions(name):
            start = time.perf_counter()
            answer = await extractive(store, read_question(asked.question, TODAY))
            times.append((time.perf_counter() - start) * 1000)
            for source in answer.sources:
                sources += 1
                entry = await store.find_id(source.id) if source.id.startswith("e_") else None
                if entry is None:
                    try:
                        entry = await store.get(source.path)
                    except Exception:
                        outside += 1
                        continue
                if not quote_in(source.quote, entry):
                    bad_quotes += 1
            got = [s.path for s in answer.sources]
            if asked.answerable:
                answerable += 1
                ok = any(path in asked.expect for path in got)
                hits += ok
            else:
                unanswerable += 1
                ok = not answer.found
                nothing += ok
            if verbose or not ok:
                mark = "ok  " if ok else "MISS"
                print(f"  {mark} {asked.question!r}: {answer.text.splitlines()[0][:70]} {got[:3]}")
        await db.close()
    return {"answerable": answerable, "hit": hits / max(answerable, 1),
            "unanswerable": unanswerable, "nothing": nothing / max(unanswerable, 1),
            "sources": sources, "bad_quotes": bad_quotes, "outside": outside,
            "ms_p50": statistics.median(times), "ms_max": max(times)}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=["real", "captures", "both"], default="both")
    parser.add_argument("--no-meaning", action="store_true", help="words and names only")
    parser.add_argument("-v", "--verbose", action="store_true", help="every question, not misses")
    args = parser.parse_args()
    meaning = Meaning.off("--no-meaning") if args.no_meaning else Meaning.load()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        sets = {"real": REAL_VAULT, "captures": write_captures(Path(tmp) / "captures")}
        for name, vault in sets.items():
            if args.set in (name, "both"):
                print(f"{name}: {vault}")
                rows.append((name, await run_set(name, vault, meaning, args.verbose)))
    print("\n| set | answerable | expected note in sources | unanswerable | nothing found | "
          "sources | quotes not in note | sources outside vault | ms p50 | ms max |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, r in rows:
        print(f"| {name} | {r['answerable']} | {r['hit']:.2f} | {r['unanswerable']} | "
              f"{r['nothing']:.2f} | {r['sources']} | {r['bad_quotes']} | {r['outside']} | "
              f"{r['ms_p50']:.0f} | {r['ms_max']:.0f} |")


if __name__ == "__main__":
    asyncio.run(main())
