"""LLM calls per scenario and prompt size (system + tools + history) against vault size.

    python bench/bench_llm.py --sizes 10 1000 10000 50000

Runs the real Brain (loop, tools, storage, SQLite) with the offline provider wrapped in a
counter, so the figures are what the loop asks of any provider. Tokens are estimated as
characters / 4 (no tokenizer can be downloaded here); the OpenAI and Anthropic tokenizers give
figures of the same order for English text and JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.gen_vault import generate  # noqa: E402
from bot.brain import Brain  # noqa: E402
from bot.config import Settings  # noqa: E402
from bot.llm.offline import OfflineProvider  # noqa: E402
from bot.llm.types import (  # noqa: E402
    Completion,
    Message,
    RequestOptions,
    ToolChoice,
    ToolSpec,
)
from bot.turn.messages import message_to_dict  # noqa: E402

SCENARIOS = [
    ("capture", "Call Sara about the Q3 budget next week"),
    ("correction (natural)", "actually that's a project"),
    ("correction (fix:)", "fix: admin"),
    ("list", "list my projects"),
    ("search", "find budget"),
    ("chit-chat", "thanks!"),
]


# The routing step of the two-step alternative offers the tools without the capture hints.
ROUTE_ONLY: list[ToolSpec] = []


def tokens(text: str) -> int:
    return (len(text) + 3) // 4


@dataclass
class Counting:
    """Wraps a provider; records the size of every request."""

    inner: OfflineProvider
    name: str = "offline"
    model: str = "rules-v1"
    calls: list[dict[str, int]] = field(default_factory=list)
    last_system: str = ""

    async def complete(self, system: str, messages: list[Message], tools: list[ToolSpec],
                       tool_choice: ToolChoice = "auto",
                       options: RequestOptions | None = None) -> Completion:
        tool_json = json.dumps([t.__dict__ for t in tools])
        history = json.dumps([message_to_dict(m) for m in messages[:-1]])
        self.calls.append({"system": tokens(system), "tools": tokens(tool_json),
                           "history": tokens(history)})
        self.last_system = system
        return await self.inner.complete(system, messages, tools, tool_choice, options)


async def two_step_capture(provider: Counting, system: str, text: str) -> dict[str, object]:
    """The alternative we did not choose: a routing call that only picks the tool, then a
    classifier call forcing one tool whose schema (the capture hints) is injected per request.
    A reply call would follow in a naive loop; we count the two it cannot avoid."""
    from tools.classify_and_capture import SCHEMA

    before = len(provider.calls)
    user = [Message(role="user", content=text)]
    await provider.complete(system, user, ROUTE_ONLY)
    await provider.complete("Classify the user's thought into the category schema.", user, [],
                            options=RequestOptions(tool_schema=SCHEMA["properties"]["hints"],
                                                   tool_name="classify"))
    calls = provider.calls[before:]
    return {"llm_calls": len(calls), "system": sum(c["system"] for c in calls),
            "tools": sum(c["tools"] for c in calls), "history": 0}


async def run_size(size: int, workdir: Path) -> list[dict[str, object]]:
    vault = workdir / f"vault-{size}"
    generate(vault, size)
    settings = Settings(BRAIN_DATA_DIR=workdir / f"data-{size}")  # type: ignore[call-arg]
    provider = Counting(OfflineProvider())
    brain = await Brain.start(settings, vault_override=vault, provider=provider)
    rows: list[dict[str, object]] = []
    try:
        started = time.perf_counter()
        await brain.store_for("bench").refresh()
        index_s = time.perf_counter() - started
        for scenario, text in SCENARIOS:
            before = len(provider.calls)
            result = await brain.turns.handle(conversation_key=f"bench:{size}", user_id="bench",
                                        text=text)
            calls = provider.calls[before:]
            rows.append({
                "notes": size, "scenario": scenario, "llm_calls": result.llm_calls,
                "system": max((c["system"] for c in calls), default=0),
                "tools": max((c["tools"] for c in calls), default=0),
                "history": max((c["history"] for c in calls), default=0),
                "index_s": round(index_s, 1),
            })
            if scenario == "capture":
                system = provider.last_system
                rows.append({"notes": size, "scenario": "capture, two-step alternative",
                             **await two_step_capture(provider, system, text)})
    finally:
        await brain.close()
    return rows


def table(rows: list[dict[str, object]]) -> str:
    head = ("| notes | scenario | LLM calls | system tokens | tools tokens | system + tools "
            "| history tokens (largest request) |\n|---|---|---|---|---|---|---|")
    lines = [head]
    for r in rows:
        system, tools_ = int(r["system"]), int(r["tools"])  # type: ignore[call-overload]
        lines.append(f"| {r['notes']:,} | {r['scenario']} | {r['llm_calls']} | {system} | "
                     f"{tools_} | {system + tools_} | {r['history']} |")
    return "\n".join(lines)


async def main() -> None:
    from tools.registry import tool_specs

    for spec in tool_specs():
        params = dict(spec["parameters"])
        if spec["name"] == "classify_and_capture":
            params = {**params, "properties": {"text": params["properties"]["text"]}}
        ROUTE_ONLY.append(ToolSpec(spec["name"], spec["description"], params))
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 1000, 10000, 50000])
    args = parser.parse_args()
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            rows.extend(await run_size(size, Path(tmp)))
            print(f"done {size}", file=sys.stderr)
    print(table(rows))


if __name__ == "__main__":
    asyncio.run(main())
