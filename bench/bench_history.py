"""The vault's history (issue 20): what recording a change costs, and listing and undoing.

    python bench/bench_history.py [--notes 10000] [--changes 10000] [--url URL] [--direct]

Makes a synthetic vault (bench/gen_vault.py), indexes it, then times over it:
- the first snapshot (once per vault, the first time history is needed);
- `Store.update` of one note with history and without it (the commit's cost is the
  difference; target <= 20 ms at 10k notes);
- `brain history NOTE` / the vault's last 20 changes after `--changes` commits (target <= 0.3 s),
  in-process and as a whole `brain history` process;
- `Store.undo` of the last change;
- `brain doctor`'s check that every object the history's commits need is there.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.gen_vault import generate  # noqa: E402
from storage.db import Database  # noqa: E402
from storage.history import History  # noqa: E402
from storage.history.health import inspect  # noqa: E402
from storage.vault.files import Vault  # noqa: E402
from storage.vault.store import Store  # noqa: E402


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


async def timed_updates(store: Store, paths: list[str], runs: int) -> list[float]:
    out = []
    for i in range(runs):
        started = time.perf_counter()
        await store.update(paths[i % len(paths)], {"tags": [f"bench{i}"]})
        out.append(time.perf_counter() - started)
    return out


async def main(notes: int, changes: int, url: str | None, direct: bool) -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-history-"))
    vault_root = work / "vault"
    generated = generate(vault_root, notes)
    paths = [n.path for n in generated if n.path.split("/")[0] in
             ("people", "projects", "ideas", "admin")][:200]
    db = await Database.open(url or f"sqlite+aiosqlite:///{work}/brain.db")
    vault = Vault(vault_root)
    plain = Store(vault, db)
    await plain.refresh()
    history = History(work / "history", vault)
    kept = Store(vault, db, history=history)

    started = time.perf_counter()
    await asyncio.to_thread(history.ensure)
    print(f"first snapshot of {notes:,} notes: {time.perf_counter() - started:.2f} s")

    without = await timed_updates(plain, paths, 60)
    with_history = await timed_updates(kept, paths, 60)
    cost = statistics.median(with_history) - statistics.median(without)
    print(f"update, no history: median {ms(statistics.median(without))}; with history: "
          f"median {ms(statistics.median(with_history))}, p95 "
          f"{ms(sorted(with_history)[int(len(with_history) * 0.95)])}; "
          f"the commit adds {ms(cost)} (target <= 20 ms)")

    started = time.perf_counter()
    if direct:  # the commits alone (the list's cost depends on their number, not on how)
        for i in range(max(0, changes - 60)):
            path = vault_root / paths[i % len(paths)]
            path.write_bytes(path.read_bytes() + f"\nline {i}".encode())
            history.record("update", f"bench {i}", [paths[i % len(paths)]])
    else:
        await timed_updates(kept, paths, max(0, changes - 60))
    made = len(history.changes())
    print(f"{made:,} changes recorded in {time.perf_counter() - started:.1f} s"
          + (" (commits only)" if direct else ""))

    target = paths[0]
    for label, ref in (("the vault's last 20", None), (f"one note ({target})", target)):
        runs = []
        for _ in range(5):
            fresh = Store(vault, db, history=History(work / "history", vault))
            started = time.perf_counter()
            listed = await fresh.changes(ref, limit=20)
            runs.append(time.perf_counter() - started)
        print(f"history of {label}: median {ms(statistics.median(runs))} "
              f"({len(listed)} listed; target <= 300 ms)")

    env = {**os.environ, "BRAIN_DATA_DIR": str(work / "cli-data"), "BRAIN_TZ": "UTC"}
    if url:
        env["DATABASE_URL"] = url
    cli = [sys.executable, "-m", "bot.cli", "history", target, "--vault", str(vault_root),
           "--limit", "20"]
    subprocess.run(cli, env=env, capture_output=True, check=True)  # its first snapshot
    runs = []
    for _ in range(5):
        started = time.perf_counter()
        subprocess.run(cli, env=env, capture_output=True, check=True)
        runs.append(time.perf_counter() - started)
    print(f"`brain history NOTE` as a whole process at {notes:,} notes: median "
          f"{statistics.median(runs):.2f} s")

    started = time.perf_counter()
    await kept.undo()
    print(f"undo of the last change: {ms(time.perf_counter() - started)}")

    for budget in (5.0, 3600.0):  # doctor's budget, then the whole history
        started = time.perf_counter()
        state = inspect(work / "history", budget=budget)
        print(f"`brain doctor`'s look at the history (budget {budget:.0f} s): "
              f"{time.perf_counter() - started:.2f} s, the objects of {state.checked:,} of "
              f"{state.commits:,} commits checked ({state.problem or 'sound'})")
    await db.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--changes", type=int, default=10_000)
    parser.add_argument("--url", help="a database URL (default: SQLite in a temp dir)")
    parser.add_argument("--direct", action="store_true",
                        help="make the changes by committing edits directly (fast), not "
                             "through Store.update")
    args = parser.parse_args()
    asyncio.run(main(args.notes, args.changes, args.url, args.direct))
