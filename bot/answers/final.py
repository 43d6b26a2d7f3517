"""The constrained final step: a question the model answered in prose from what its tools
returned is asked once more, forced through the `answer` tool (its schema requires each
sentence's citations), and only what the citations back reaches the user. Prose that cannot
be checked (the model would not cite, or could not be reached) is never shown: the reply says
nothing was found and names the closest notes.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Collection, Sequence

from bot.llm.types import LLMError, Message, Provider, RequestOptions, ToolCall, ToolResult
from bot.turn.loop import LoopOutcome
from tools import answer
from tools.answers.model import NOT_FOUND_WITH_MODEL
from tools.registry import Execution, keeping_names

log = logging.getLogger(__name__)

ANSWER_TOOLS = frozenset({"answer", "ask_notes"})  # their result is a checked answer already
FINAL_NOTE = ("Now give that answer through the answer tool: each sentence with the id of a "
              "note the tools returned above and a short quote copied exactly from that note. "
              "Leave out anything the notes do not say.")

Executor = Callable[[ToolCall], Awaitable[Execution]]


def needs_citations(outcome: LoopOutcome, read_only: Collection[str]) -> bool:
    """Did the model answer in prose from notes its tools read, without a checked answer?"""
    ok = [e for e in outcome.executions if e.status == "ok"]
    changed = keeping_names()  # a turn that filed or changed a note replies with its receipt
    return bool(outcome.text.strip()) and not any(e.tool in ANSWER_TOOLS for e in ok) \
        and any(e.tool in read_only for e in ok) and not any(e.tool in changed for e in ok)


async def cite_prose(provider: Provider, *, system: str, earlier: Sequence[Message],
                     outcome: LoopOutcome, execute: Executor,
                     returned: bool = True) -> LLMError | None:
    """Replace `outcome.text` (the model's prose) by its cited, checked form. When the tools
    returned no note at all there is nothing to cite: nothing was found, and no call is made.
    Returns the model's failure when the citations could not be asked for (the prose stays
    unchecked, so it is not shown), else None."""
    prose = outcome.messages[-1] if outcome.messages and outcome.messages[-1].role == \
        "assistant" and not outcome.messages[-1].tool_calls else None
    if not returned:
        _replace(outcome, prose, NOT_FOUND_WITH_MODEL)
        return None
    options = RequestOptions(tool_schema=answer.SCHEMA, tool_name=answer.TOOL.name,
                             tool_description=answer.DESCRIPTION)
    try:
        # The request ends with the user's turn (a conversation may not end with the
        # model's own message when a tool is forced).
        completion = await provider.complete(
            system, [*earlier, *outcome.messages, Message(role="user", content=FINAL_NOTE)], [],
            options=options)
    except LLMError as exc:
        log.warning("the answer's citations could not be asked for (%s)", exc.kind)
        _replace(outcome, prose, _unchecked(outcome))
        return exc
    outcome.llm_calls += 1
    outcome.usage = outcome.usage + completion.usage
    calls = [c for c in completion.tool_calls if c.name == answer.TOOL.name]
    if not calls:
        _replace(outcome, prose, _unchecked(outcome))
        return None
    if prose is not None:  # the stored turn keeps the checked answer, not the unchecked prose
        outcome.messages.remove(prose)
    call = ToolCall(id=calls[0].id or "final_answer", name=answer.TOOL.name,
                    arguments=calls[0].arguments, raw_arguments=calls[0].raw_arguments,
                    parse_error=calls[0].parse_error)
    execution = await execute(call)
    outcome.executions.append(execution)
    outcome.messages.append(Message(role="assistant", tool_calls=(call,)))
    outcome.messages.append(Message(role="tool", tool_results=(
        ToolResult(call.id, call.name, execution.content, is_error=execution.status != "ok"),)))
    outcome.text = execution.output.text if execution.output is not None else _unchecked(outcome)
    outcome.messages.append(Message(role="assistant", content=outcome.text))
    return None


def _replace(outcome: LoopOutcome, prose: Message | None, text: str) -> None:
    if prose is not None:
        outcome.messages.remove(prose)
    outcome.text = text
    outcome.messages.append(Message(role="assistant", content=text))


def _unchecked(outcome: LoopOutcome) -> str:
    names: list[str] = []
    for e in outcome.executions:
        for entry in (e.output.data.get("entries") or []) if e.output else []:
            if isinstance(entry, dict) and entry.get("name") and entry["name"] not in names:
                names.append(str(entry["name"]))
    tail = f" Closest notes: {', '.join(names[:3])}." if names else ""
    return NOT_FOUND_WITH_MODEL + tail
