"""CLI benchmark: `brain` as a whole process, as a user runs it (median of N runs).

    python bench/bench_cli.py [--notes 20000] [--runs 15] [--vault DIR] [--src CHECKOUT]

Makes a synthetic vault (bench/gen_vault.py) and indexes it once (`brain reindex`), then times
`brain --help`, `brain search QUERY`, `brain ask QUESTION` and `brain list` over it, and `brain list` over a small
vault; then search and ask again while a `brain mcp` of the same data runs (they ask it). The database lives in a temp dir; no `.env` is read. Targets: --help <= 0.3 s, search on
20k notes <= 0.5 s, ask on 20k notes <= 1 s, list <= 0.4 s.

Search by meaning: the big vault's notes get random vectors under the real model's id
(embedding 20k notes would take a quarter of an hour; what a search costs does not depend on
what they say), so `brain search` loads the model, embeds the query and reads the vectors as
it does on a real vault; it is also timed with the model off (`BRAIN_EMBEDDING_MODEL`
pointing nowhere), which is the search of words and names alone.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.gen_vault import generate  # noqa: E402

TARGETS = {"--help": 0.3, "search": 0.5, "list": 0.4, "ask": 1.0}


def brain_command(src: Path | None) -> list[str]:
    if src is not None:  # another checkout (e.g. `git archive main`), for before/after figures
        return [sys.executable, "-m", "bot.cli"]
    script = Path(sys.executable).with_name("brain")
    return [str(script)] if script.exists() else [sys.executable, "-m", "bot.cli"]


def clean_env(data_dir: Path, src: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("BRAIN_", "SLACK_", "OPENAI_", "ANTHROPIC_"))
           and k not in ("DATABASE_URL", "PYTHONPATH")}
    env["BRAIN_DATA_DIR"] = str(data_dir)
    if src is not None:
        env["PYTHONPATH"] = str(src.resolve())
    return env


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str], env: dict[str, str], cwd: Path,
          runs: int) -> tuple[list[float], list[float]]:
    """Wall seconds and CPU seconds (user + system) of each run. On a busy machine the wall
    time grows with the load; the CPU time is close to what a quiet machine's wall would be."""
    walls, cpus = [], []
    for _ in range(runs):
        cpu, started = _children_cpu(), time.perf_counter()
        subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, check=True)
        walls.append(time.perf_counter() - started)
        cpus.append(_children_cpu() - cpu)
    return walls, cpus


async def _vectors(data: Path, vault: Path) -> None:
    from bench.bench_meaning_search import random_vectors
    from storage.db import Database
    from storage.meaning.shared_model import Meaning
    from storage.urls import default_url
    from storage.vault.files import Vault

    meaning = Meaning.load()
    db = await Database.open(default_url(data))
    try:
        if meaning.available:
            await random_vectors(db, Vault(vault), meaning.model)
    finally:
        await db.close()


def served(brain: list[str], env: dict[str, str], big: Path, tmp: Path,
           args: argparse.Namespace) -> None:
    """The same search and ask while a `brain mcp` of the same data runs (stdio, its client
    silent): the CLI asks it over the local socket (bot/local_socket.py)."""
    started = time.time() - 1
    server = subprocess.Popen([*brain, "mcp", "--vault", str(big)], env=env, cwd=tmp,
                              stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    folder = Path(tempfile.gettempdir()) / f"brain-{os.getuid()}"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not any(
                p.stat().st_mtime >= started for p in folder.glob("*.sock")):
            time.sleep(0.2)
        for argv in ([*brain, "search", *args.query.split(), "--vault", str(big)],
                     [*brain, "ask", args.question, "--vault", str(big)]):
            timed(argv, env, tmp, 1)  # the server's first answer loads its vectors
            walls, cpus = timed(argv, env, tmp, args.runs)
            target = "search" if argv[1] == "search" else "ask"
            print(f"| `{' '.join(argv[1:3])}` with a `brain mcp` running | "
                  f"{statistics.median(walls):.2f} s | {min(walls):.2f} s "
                  f"| {statistics.median(cpus):.2f} s | {TARGETS[target]:.1f} s |", flush=True)
    finally:
        server.communicate(timeout=60)  # its client leaves: a clean stop


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--vault", type=Path,
                        help="use this generated vault (made if missing) instead of a temp one")
    parser.add_argument("--query", default="budget offsite")
    parser.add_argument("--question", default="what did I decide about the budget offsite?")
    parser.add_argument("--src", type=Path, help="time the code of this checkout instead")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="bench-cli-"))
    try:
        big = args.vault or tmp / "vault"
        if not big.exists():
            generate(big, args.notes)
        small = tmp / "small"
        generate(small, 100, seed=2)
        env, brain = clean_env(tmp / "data", args.src), brain_command(args.src)
        off = {**env, "BRAIN_EMBEDDING_MODEL": str(tmp / "no-model.onnx")}
        for vault in (big, small):  # the first index is a one-off cost, not what is timed
            subprocess.run([*brain, "reindex", "--vault", str(vault)], env=off, cwd=tmp,
                           stdout=subprocess.DEVNULL, check=True)
        if args.src is None:
            asyncio.run(_vectors(tmp / "data", big))
        notes = sum(1 for _ in big.rglob("*.md"))
        cases = [
            ("python -c pass", [sys.executable, "-c", "pass"], None),
            ("brain --help", [*brain, "--help"], "--help"),
            (f"brain search {args.query!r} ({notes:,} notes)",
             [*brain, "search", *args.query.split(), "--vault", str(big)], "search"),
            (f"brain search {args.query!r} ({notes:,} notes), model off",
             [*brain, "search", *args.query.split(), "--vault", str(big)], "search-off"),
            (f"brain ask {args.question!r} ({notes:,} notes)",
             [*brain, "ask", args.question, "--vault", str(big)], "ask"),
            (f"brain list ({notes:,} notes)", [*brain, "list", "--vault", str(big)], "list"),
            ("brain list (100 notes)", [*brain, "list", "--vault", str(small)], "list"),
        ]
        print(f"{args.runs} runs each, whole process, load average "
              f"{os.getloadavg()[0]:.1f} at the start")
        print("| command | wall median | wall min | CPU median | target |")
        print("|---|---:|---:|---:|---:|")
        for label, argv, target in cases:
            walls, cpus = timed(argv, off if target == "search-off" else env, tmp, args.runs)
            goal = f"{TARGETS[target]:.1f} s" if target in TARGETS else ""
            print(f"| `{label}` | {statistics.median(walls):.2f} s | {min(walls):.2f} s "
                  f"| {statistics.median(cpus):.2f} s | {goal} |", flush=True)
        served(brain, env, big, tmp, args)
        print(f"load average {os.getloadavg()[0]:.1f} at the end")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
