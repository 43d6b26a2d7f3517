"""The tool loop of one turn.

Provider in, tool executions out; persistence is the caller's (bot.brain). The rules, each from
a failure seen in practice (../shared/fixtures/llm/pitfalls.md):
- a forced tool choice applies to the first iteration only (forcing every round never ends);
- calls cut off by the output limit are not executed;
- the same call with the same arguments is not run twice in a turn;
- a round whose calls are all terminal and succeeded ends the turn without another LLM call;
- read-only calls of a round run concurrently, the others one at a time, results in call order;
- at the iteration cap, one last call with tools disabled asks for an answer from what it has;
- a round that fails (the provider raised) ends the turn with what it did so far: the error
  is in `LoopOutcome.error`, the earlier calls and tool runs stay in the record.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, field

from bot.llm.types import (
    Completion,
    LLMError,
    Message,
    Provider,
    ToolCall,
    ToolChoice,
    ToolResult,
    ToolSpec,
    Usage,
)
from bot.turn.messages import receipt_message
from tools.registry import Execution

Executor = Callable[[ToolCall], Awaitable[Execution]]

TRUNCATED = ("your output was cut off by the length limit before this call was complete; "
             "it was not run. Retry with shorter arguments.")
REPEATED = ("this exact call (same tool, same arguments) already ran in this turn; it was not "
            "run again. Use the earlier result, or answer the user.")
LOOKUPS = ("list", "search", "entry", "backlinks", "related")  # read-only tool outputs
CAP_NOTE = "Tool budget for this message is used up. Answer the user now from what you have."


@dataclass
class LoopOutcome:
    text: str
    messages: list[Message]  # this turn's messages, the user message first
    executions: list[Execution] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    llm_calls: int = 0
    capped: bool = False
    stop_reason: str = "end_turn"  # of the last completion ("refusal", "max_tokens", ...)
    error: LLMError | None = None  # the provider failed on this round: the turn stopped there


def _call_key(call: ToolCall) -> str:
    args = call.arguments if call.arguments is not None else call.raw_arguments
    return call.name + ":" + json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)


def _skipped(call: ToolCall, reason: str) -> Execution:
    content = json.dumps({"ok": False, "error": {"code": "not_run", "message": reason}})
    return Execution(call_id=call.id, tool=call.name, arguments=call.arguments, status="error",
                     output=None, error={"code": "not_run", "message": reason},
                     content=content, duration_ms=0.0)


async def _run_round(calls: Sequence[ToolCall], execute: Executor, seen: set[str],
                     truncated: bool, parallel_ok: Collection[str]) -> list[Execution]:
    results: dict[str, Execution] = {}
    parallel: list[ToolCall] = []
    for call in calls:
        key = _call_key(call)
        if truncated:
            results[call.id] = _skipped(call, TRUNCATED)
        elif key in seen:
            results[call.id] = _skipped(call, REPEATED)
        else:
            seen.add(key)
            if call.name in parallel_ok:
                parallel.append(call)
    if parallel:
        done = await asyncio.gather(*(execute(c) for c in parallel))
        results.update({e.call_id: e for e in done})
    for call in calls:  # side effects one at a time, in the model's order
        if call.id not in results:
            results[call.id] = await execute(call)
    return [results[c.id] for c in calls]


def _rendered(e: Execution) -> str:
    assert e.output is not None
    path = e.output.data.get("path") or e.output.data.get("new_path")
    return e.output.text + (f" [{path}]" if path and path not in e.output.text else "")


def from_tools(executions: Sequence[Execution], shown: int = 5) -> str:
    """An answer written from what the last successful lookup found, for a model that
    looked things up but said nothing: its summary and the first notes' names and paths."""
    for e in reversed(executions):
        if e.status != "ok" or e.output is None or e.output.kind not in LOOKUPS:
            continue
        found = [x for x in e.output.data.get("entries") or [] if isinstance(x, dict)]
        names = [f"{x.get('name')} ({x.get('path')})" for x in found[:shown] if x.get("name")]
        return e.output.text + (": " + "; ".join(names) if names else "")
    return ""


def _ends_turn(executions: Sequence[Execution], terminal: Collection[str]) -> bool:
    return bool(executions) and all(e.status == "ok" and e.tool in terminal
                                    for e in executions)


async def run_turn(
    provider: Provider,
    *,
    system: str,
    earlier: Sequence[Message],
    user_text: str,
    tools: Sequence[ToolSpec],
    execute: Executor,
    max_iterations: int = 8,
    first_tool_choice: ToolChoice = "auto",
    terminal: Collection[str] = (),
    parallel: Collection[str] = (),
) -> LoopOutcome:
    """One turn. `terminal`: tools whose successful result ends the turn (it renders itself);
    `parallel`: read-only tools that may run concurrently within a round."""
    user = Message(role="user", content=user_text)
    outcome = LoopOutcome(text="", messages=[user])
    seen: set[str] = set()
    tool_list = list(tools)

    async def ask(choice: ToolChoice, system_text: str) -> Completion:
        completion = await provider.complete(system_text, [*earlier, *outcome.messages],
                                             tool_list, choice)
        outcome.llm_calls += 1
        outcome.usage = outcome.usage + completion.usage
        outcome.stop_reason = completion.stop_reason
        return completion

    try:
        return await _rounds(outcome, ask, system, tool_list, execute, seen, max_iterations,
                             first_tool_choice, terminal, parallel)
    except LLMError as exc:
        outcome.error = exc
        return outcome


async def _rounds(outcome: LoopOutcome, ask: Callable[[ToolChoice, str], Awaitable[Completion]],
                  system: str, tool_list: list[ToolSpec], execute: Executor, seen: set[str],
                  max_iterations: int, first_tool_choice: ToolChoice,
                  terminal: Collection[str], parallel: Collection[str]) -> LoopOutcome:
    for iteration in range(max_iterations):
        completion = await ask(first_tool_choice if iteration == 0 else "auto", system)
        if not completion.tool_calls:
            outcome.text = (completion.text or "").strip()
            if outcome.text:
                outcome.messages.append(Message(role="assistant", content=outcome.text))
            return outcome
        calls = completion.tool_calls
        outcome.messages.append(Message(role="assistant", content=completion.text or None,
                                        tool_calls=calls))
        executions = await _run_round(calls, execute, seen,
                                      truncated=completion.stop_reason == "max_tokens",
                                      parallel_ok=parallel)
        outcome.executions.extend(executions)
        outcome.messages.append(Message(role="tool", tool_results=tuple(
            ToolResult(e.call_id, e.tool, e.content, is_error=e.status != "ok")
            for e in executions)))
        if _ends_turn(executions, terminal):
            # The result renders itself; the stored reply keeps path and confidence so the
            # next turn (and `brain log`) can see where the note went.
            outcome.text = "\n".join(_rendered(e) for e in executions)
            outcome.messages.append(receipt_message(outcome.text))
            return outcome
        if all(e.error and e.error.get("message") == REPEATED for e in executions):
            break  # the model is going round in circles: make it answer now

    # Iteration cap: one last call with tools disabled.
    outcome.capped = True
    completion = await ask("none", system + "\n\n" + CAP_NOTE)
    outcome.text = ((completion.text or "").strip() or from_tools(outcome.executions)
                    or "I could not finish that within my tool budget.")
    outcome.messages.append(Message(role="assistant", content=outcome.text))
    return outcome
