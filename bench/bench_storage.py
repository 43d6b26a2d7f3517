"""Storage benchmark: full index, unchanged rescan, search latency, at several vault sizes.

    python bench/bench_storage.py --sizes 1000 10000 50000

Each size gets a fresh synthetic vault (bench/gen_vault.py) and SQLite database in a temp dir.
Prints a markdown table (targets at 50k: full index <= 60 s, rescan <= 1 s, search p95 <= 20 ms).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.gen_vault import WORDS, GeneratedNote, generate  # noqa: E402
from storage.db import Database  # noqa: E402
from storage.index import SearchIndex  # noqa: E402
from storage.store import Store  # noqa: E402
from storage.vault import Vault  # noqa: E402


@dataclass
class Result:
    notes: int
    generate_s: float
    index_s: float
    rescan_s: float
    search_p50_ms: float
    search_p95_ms: float
    search_max_ms: float
    store_p95_ms: float
    list_p95_ms: float
    db_mb: float


def _typo(rng: random.Random, word: str) -> str:
    if len(word) < 4:
        return word
    i = rng.randrange(1, len(word) - 1)
    return word[:i] + word[i + 1] + word[i] + word[i + 2:]  # swap two letters


def queries(notes: list[GeneratedNote], count: int = 200, seed: int = 7) -> list[
        tuple[str, str | None]]:
    """(query, category filter) pairs: words, phrases, names, typos, prefixes, odd input."""
    rng = random.Random(seed)
    out: list[tuple[str, str | None]] = []
    names = [n.name for n in notes]
    common, rare = list(WORDS[:60]), list(WORDS[60:])
    for _ in range(count * 15 // 100):
        out.append((rng.choice(common), None))
    for _ in range(count * 15 // 100):
        out.append((rng.choice(rare), None))
    for _ in range(count * 15 // 100):
        out.append((f"{rng.choice(rare)} {rng.choice(rare)}", None))
    for _ in range(count * 15 // 100):
        out.append((rng.choice(names), None))
    for _ in range(count * 15 // 100):
        out.append((" ".join(_typo(rng, w) for w in rng.choice(names).split()), None))
    for _ in range(count * 10 // 100):
        out.append((rng.choice(rare + names), rng.choice(("people", "projects", "ideas"))))
    for _ in range(count * 5 // 100):
        out.append((rng.choice(rare)[:3], None))
    odd = ['"unclosed', "NEAR(budget", "-draft", "a" * 2000, "🎉 budget", "budget AND OR",
           "call sara about the q3 budget next week", "Müller", "x", ""]
    while len(out) < count:
        out.append((odd[len(out) % len(odd)], None))
    rng.shuffle(out)
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


async def run_size(size: int, workdir: Path) -> Result:
    root = workdir / f"vault-{size}"
    t0 = time.perf_counter()
    notes = generate(root, size)
    generate_s = time.perf_counter() - t0
    db = await Database.open(f"sqlite+aiosqlite:///{workdir / f'brain-{size}.db'}")
    try:
        vault = Vault(root)
        index = SearchIndex(vault)
        t0 = time.perf_counter()
        async with db.session() as s:
            stats = await index.refresh(s)
            await s.commit()
        index_s = time.perf_counter() - t0
        assert stats.added == size, stats
        rescans = []
        for _ in range(3):
            t0 = time.perf_counter()
            async with db.session() as s:
                again = await index.refresh(s)
                await s.commit()
            rescans.append(time.perf_counter() - t0)
            assert again.unchanged == size and again.added == again.updated == 0, again
        latencies: list[float] = []
        async with db.session() as s:
            await index.search(s, "warm up")  # builds the fuzzy name cache once
            for query, category in queries(notes):
                t0 = time.perf_counter()
                await index.search(s, query, category=category, limit=10)
                latencies.append((time.perf_counter() - t0) * 1000)
            lists = []
            for category in (None, "people", "projects", "ideas", "admin", "inbox") * 5:
                t0 = time.perf_counter()
                await index.list(s, category=category, limit=10)
                lists.append((time.perf_counter() - t0) * 1000)
        # Through the Store: includes its rescan before reads (skipped within a second after a
        # slow one), as a tool call sees it.
        store = Store(vault, db)
        store_lat = []
        for query, category in queries(notes, 60, seed=11):
            t0 = time.perf_counter()
            await store.search(query, category=category)
            store_lat.append((time.perf_counter() - t0) * 1000)
        db_mb = sum(p.stat().st_size for p in workdir.glob(f"brain-{size}.db*")) / 1e6
        return Result(size, generate_s, index_s, statistics.median(rescans),
                      pct(latencies, 0.5), pct(latencies, 0.95), max(latencies),
                      pct(store_lat, 0.95), pct(lists, 0.95), db_mb)
    finally:
        await db.close()


def table(results: list[Result]) -> str:
    lines = [
        "| notes | full index | unchanged rescan | search p50 | search p95 | search max "
        "| Store.search p95 | list p95 | db size |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r.notes:,} | {r.index_s:.1f} s | {r.rescan_s * 1000:.0f} ms "
            f"| {r.search_p50_ms:.1f} ms | {r.search_p95_ms:.1f} ms | {r.search_max_ms:.1f} ms "
            f"| {r.store_p95_ms:.0f} ms | {r.list_p95_ms:.1f} ms | {r.db_mb:.0f} MB |")
    return "\n".join(lines)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-storage-") as tmp:
        workdir = args.keep or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        for size in args.sizes:
            result = await run_size(size, workdir)
            print(f"{size:>7} notes: generated in {result.generate_s:.1f} s, "
                  f"indexed in {result.index_s:.1f} s", file=sys.stderr, flush=True)
            results.append(result)
    print(f"cpus: {os.cpu_count()}, python {sys.version.split()[0]}")
    print(table(results))


if __name__ == "__main__":
    asyncio.run(main())
