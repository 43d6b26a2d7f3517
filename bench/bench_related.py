"""What related notes cost a capture: the thought embedded once, the nearest notes, the links.

    python bench/bench_related.py [--vault ../shared/data/real-vault] [--runs 3]

A copy of the vault (the real one is never written) gets its vectors; then every thought of
tests/tools/thoughts.yaml is captured through the real Brain with the offline provider (no
LLM latency: the bot's own time), once with the model and once with search by meaning off
(`BRAIN_EMBEDDING_MODEL` pointing nowhere), each in a fresh copy. Prints the turn's p50 / p95
both ways, `related_notes` alone, and how many thoughts got links. The capture's ack to Slack
is not on this path (it is sent before the turn starts).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_retrieval import _default_vault  # noqa: E402
from bot.brain import Brain  # noqa: E402
from bot.config import Settings  # noqa: E402
from storage.index.indexer import embed_pending  # noqa: E402
from tools.capture.related import related_notes  # noqa: E402

THOUGHTS = Path(__file__).resolve().parents[1] / "tests" / "tools" / "thoughts.yaml"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


async def captures(vault: Path, texts: list[str], tmp: Path, model: str | None) -> dict[str, list]:
    work = tmp / f"vault-{model is None}-{time.monotonic_ns()}"
    shutil.copytree(vault, work)
    env = {"BRAIN_EMBEDDING_MODEL": model} if model else {}
    settings = Settings(BRAIN_DATA_DIR=tmp / f"data-{time.monotonic_ns()}",  # type: ignore[call-arg]
                        BRAIN_LLM="offline", **env)
    brain = await Brain.start(settings, vault_override=work)
    out: dict[str, list] = {"turn": [], "related": [], "linked": []}
    try:
        store = brain.store_for("bench")
        await store.refresh()
        await embed_pending(brain.core.db, store.index.key, store.meaning)
        await brain.turns.handle(conversation_key="bench:warm", user_id="bench", text="warm up note")
        for i, text in enumerate(texts):
            t0 = time.perf_counter()
            result = await brain.turns.handle(conversation_key=f"bench:{i}", user_id="bench",
                                        text=text)
            out["turn"].append((time.perf_counter() - t0) * 1000)
            filed = result.filed
            out["linked"].append(bool(filed and filed[0].output
                                      and filed[0].output.data.get("related")))
            t0 = time.perf_counter()
            await related_notes(store, text + " (again)")  # a text not embedded yet
            out["related"].append((time.perf_counter() - t0) * 1000)
    finally:
        await brain.close()
    return out


async def run(args: argparse.Namespace) -> None:
    data = yaml.safe_load(THOUGHTS.read_text(encoding="utf-8"))
    texts = [t["text"] for t in data["thoughts"] + data.get("holdout", [])]
    print(f"{len(texts)} thoughts into a copy of {args.vault}; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        for label, model in (("with the model", None), ("meaning off", "/nowhere/model.onnx")):
            turns, related, linked = [], [], 0
            for _ in range(args.runs):
                got = await captures(args.vault, texts, Path(tmp), model)
                turns += got["turn"]
                related += got["related"]
                linked = sum(got["linked"])
            print(f"{label}: capture turn p50 {statistics.median(turns):.1f} ms, p95 "
                  f"{pct(turns, 0.95):.1f} ms; related_notes alone p50 "
                  f"{statistics.median(related):.1f} ms, p95 {pct(related, 0.95):.1f} ms; "
                  f"{linked} of {len(texts)} thoughts linked")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vault", type=Path, default=_default_vault())
    parser.add_argument("--runs", type=int, default=3)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
