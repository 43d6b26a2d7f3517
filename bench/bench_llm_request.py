"""Our own CPU time per LLM request through a real SDK, against the local fake server.

    python bench/bench_llm_request.py --provider openai --calls 300 [--profile]

Each call sends what a capture turn sends (a ~1.5k-char system prompt, a short history, the
eight real tool specs) through the provider adapter and the official SDK to
tests/bot/fake_llm_server.py on 127.0.0.1, which answers at once with a short text. Prints the
CPU time of the calling thread per call (median of --rounds rounds; the server's threads are
not counted, and the wall time is mostly the fake server's latency). With --profile, cProfile of the calling thread
(the server runs in its own threads and is not counted): the top functions by cumulative time,
and the share of the adapter's complete() spent in the SDK's request transform and in our own
translation of messages and tools.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import pstats
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.llm.configs import BUILTIN_CONFIGS  # noqa: E402
from bot.llm.types import Message, ToolCall, ToolResult, ToolSpec  # noqa: E402
from tests.bot.fake_llm_server import FakeLLMServer, anthropic_text, openai_text  # noqa: E402
from tools.registry import tool_specs  # noqa: E402

SYSTEM = ("You are Second Brain, a personal knowledge-capture assistant in Slack. " * 20)[:1500]


def history() -> list[Message]:
    call = ToolCall("call_1", "search_entries", {"query": "budget"}, '{"query": "budget"}')
    return [Message("user", "find budget"), Message("assistant", None, (call,)),
            Message("tool", tool_results=(ToolResult("call_1", "search_entries",
                                                     '{"entries": [], "total": 0}'),)),
            Message("assistant", "No matching notes found."),
            Message("user", "Call Sara about the Q3 budget next week")]


def make_provider(kind: str, srv: FakeLLMServer) -> Any:
    if kind == "openai":
        from bot.llm.openai_provider import OpenAIProvider

        return OpenAIProvider(replace(BUILTIN_CONFIGS["openai"]), api_key="sk-bench",
                              base_url=srv.openai_base_url, timeout=10, max_retries=0)
    from bot.llm.anthropic_provider import AnthropicProvider

    return AnthropicProvider(replace(BUILTIN_CONFIGS["anthropic"]), api_key="sk-bench",
                             base_url=srv.anthropic_base_url, timeout=10, max_retries=0)


async def run(kind: str, calls: int, srv: FakeLLMServer) -> float:
    provider = make_provider(kind, srv)
    specs = [ToolSpec(s["name"], s["description"], s["parameters"]) for s in tool_specs()]
    messages = history()
    answer = openai_text("ok") if kind == "openai" else anthropic_text("ok")
    srv.script([answer] * (calls + 5))
    await provider.complete(SYSTEM, messages, specs)  # warm up: connection, imports
    start = time.thread_time()
    for _ in range(calls):
        await provider.complete(SYSTEM, messages, specs)
    spent = time.thread_time() - start
    await provider.client.close()
    return spent / calls * 1000


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--provider", choices=("openai", "anthropic"), default="openai")
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args(argv)
    with FakeLLMServer() as srv:
        srv.validate = False  # the server's own checks are not what we measure
        times = [asyncio.run(run(args.provider, args.calls, srv)) for _ in range(args.rounds)]
        print(f"{args.provider}: {args.calls} calls x {args.rounds} rounds, CPU ms per call: "
              f"median {statistics.median(times):.3f}, min {min(times):.3f}, "
              f"max {max(times):.3f}")
        if not args.profile:
            return
        profiler = cProfile.Profile()
        profiler.enable()
        asyncio.run(run(args.provider, args.calls, srv))
        profiler.disable()
    stats = pstats.Stats(profiler)
    total = stats.total_tt  # type: ignore[attr-defined]
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(25)
    print(out.getvalue())
    shares: dict[str, float] = {}
    inside = 0.0  # cumulative time inside our adapter's complete() (idle waits excluded)
    for (file, _line, name), row in stats.stats.items():  # type: ignore[attr-defined]
        cumulative = row[3]
        if name == "send" and "/bot/llm/" in file:
            shares["SDK call (send)"] = cumulative
        if name == "complete" and "/bot/llm/" in file:
            inside = max(inside, cumulative)
        if name in ("_transform_recursive", "_async_transform_recursive") \
                and "_utils/_transform" in file:
            key = "SDK request transform"
            shares[key] = max(shares.get(key, 0.0), cumulative)
        if name in ("translate_tools", "translate_messages"):
            shares[f"our {name}"] = shares.get(f"our {name}", 0.0) + cumulative
    print(f"under cProfile: {inside:.3f} s inside complete() over {args.calls} calls "
          f"(the rest of {total:.3f} s is waiting for the server)")
    for label, seconds in sorted(shares.items()):
        print(f"  {label}: {seconds:.3f} s ({seconds / inside:.1%} of complete())")


if __name__ == "__main__":
    main()
