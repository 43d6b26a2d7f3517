"""The tool registry: validates a call's arguments, runs the tool, and turns every outcome
(success or any failure) into an Execution whose content the model can read."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import import_module
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from storage.errors import Ambiguous, StorageDown, StorageError, unwritable
from storage.history.context import counting
from tools.base import Tool, ToolContext, ToolError, ToolOutput

MAX_RESULT_CHARS = 6000
MAX_CANDIDATES = 10
_PREVIEW = 300  # chars of raw arguments echoed back on a parse error
_MESSAGE = 200  # chars of one validation message (instances can be huge)

# The tools the model may call, in the order it is shown them: one module each under tools/,
# whose TOOL is its schema, description and function. A new tool is its module and one line.
TOOL_MODULES = (
    "classify_and_capture",
    "list_entries",
    "get_entry",
    "search_entries",
    "ask_notes",
    "update_entry",
    "move_entry",
    "generate_digest",
    "list_backlinks",
    "answer",
)


def _registered(module: str) -> Tool:
    tool = import_module(f"tools.{module}").TOOL
    if not isinstance(tool, Tool) or tool.name != module:
        raise TypeError(f"tools/{module}.py must define TOOL, a Tool named {module!r}")
    return tool


TOOLS: dict[str, Tool] = {tool.name: tool for tool in map(_registered, TOOL_MODULES)}
_VALIDATORS: dict[str, Draft202012Validator] = {
    name: Draft202012Validator(tool.parameters) for name, tool in TOOLS.items()
}


def terminal_names() -> frozenset[str]:
    """Tools whose successful result renders itself and ends the turn (capture, move)."""
    return frozenset(name for name, tool in TOOLS.items() if tool.terminal)


def read_only_names() -> frozenset[str]:
    """Tools that change nothing, so calls of one round may run concurrently."""
    return frozenset(name for name, tool in TOOLS.items() if tool.read_only)


def keeping_names() -> frozenset[str]:
    """Tools that change a note (capture, update, move): a turn that ran one kept something."""
    return frozenset(name for name, tool in TOOLS.items() if not tool.read_only)


def tool_specs() -> list[dict[str, Any]]:
    """The tools as the LLM layer wants them, in a stable order."""
    return [{"name": t.name, "description": t.description, "parameters": t.parameters}
            for t in TOOLS.values()]


@dataclass(frozen=True)
class Execution:
    call_id: str
    tool: str
    arguments: dict[str, Any] | None
    status: str  # ok | error
    output: ToolOutput | None
    error: dict[str, Any] | None  # {"code","message","details"?,"candidates"?}
    content: str  # JSON text for the model, capped at MAX_RESULT_CHARS
    duration_ms: float
    started_at: datetime | None = None  # when the tool started (None: it never ran)


# ---------------------------------------------------------------- validation messages

def _field_path(error: ValidationError) -> str:
    path = error.json_path  # "$", "$.hints.confidence", "$.tags[0]"
    return "arguments" if path == "$" else path.removeprefix("$.")


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:59] + "…"


def _kind(schema: Any) -> str:
    """A schema's type in words, e.g. "string, number" or "array of string"."""
    if not isinstance(schema, dict):
        return "a value"
    kind = schema.get("type", "value")
    words = ", ".join(kind) if isinstance(kind, list) else str(kind)
    if kind == "array" and isinstance(schema.get("items"), dict):
        words += f" of {_kind(schema['items'])}"
    return words


def _message(error: ValidationError) -> str:
    instance = error.instance
    if error.validator in ("maxLength", "minLength") and isinstance(instance, str):
        return f"is {len(instance)} characters, limit {error.validator} {error.validator_value}"
    if error.validator in ("maxItems", "minItems", "maxProperties") and isinstance(
            instance, list | dict):
        return f"has {len(instance)} items, limit {error.validator} {error.validator_value}"
    if error.validator == "anyOf" and isinstance(error.validator_value, list):
        kinds = " or ".join(_kind(sub) for sub in error.validator_value)
        return f"{_short(instance)} is not valid: expected {kinds}"
    message = error.message
    return message if len(message) <= _MESSAGE else message[: _MESSAGE - 1] + "…"


def _best_errors(errors: Iterator[ValidationError]) -> list[str]:
    out: list[str] = []
    for error in sorted(errors, key=lambda e: (list(map(str, e.absolute_path)), e.message)):
        # anyOf failures: the sub-errors say more than "is not valid under any".
        line = f"{_field_path(error)}: {_message(error)}"
        if line not in out:
            out.append(line)
    return out


def validation_errors(name: str, arguments: Any) -> list[str]:
    """Every schema violation of `arguments`, as "<field path>: <message>"."""
    return _best_errors(_VALIDATORS[name].iter_errors(arguments))


# ---------------------------------------------------------------- capped JSON content

def _shrink(value: Any, str_cap: int | None, list_cap: int | None) -> Any:
    if isinstance(value, str):
        if str_cap is not None and len(value) > str_cap:
            return value[:str_cap] + "…"
        return value
    if isinstance(value, list):
        items = value if list_cap is None else value[:list_cap]
        return [_shrink(v, str_cap, list_cap) for v in items]
    if isinstance(value, dict):
        return {k: _shrink(v, str_cap, list_cap) for k, v in value.items()}
    return value


# (string cap, list cap) tried in order, from gentle to harsh.
_STEPS: tuple[tuple[int | None, int | None], ...] = (
    (2000, None), (2000, 20), (1000, 10), (500, 10), (300, 5), (200, 3), (100, 2), (60, 1),
    (30, 1),
)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def cap_content(payload: dict[str, Any], limit: int = MAX_RESULT_CHARS) -> str:
    """JSON text of `payload` of at most `limit` chars, always valid JSON.

    Too big: long strings and lists are trimmed (whole items, never mid-escape) and
    `"truncated": true` is added; as a last resort a preview string of the whole.
    """
    text = _dumps(payload)
    if len(text) <= limit:
        return text
    # Each step shrinks the previous one: cutting a cut string again equals cutting the original.
    smaller: dict[str, Any] = payload
    for str_cap, list_cap in _STEPS:
        smaller = _shrink(smaller, str_cap, list_cap)
        smaller["truncated"] = True
        text = _dumps(smaller)
        if len(text) <= limit:
            return text
    # Too many keys even when every value is small: keep the longest preview that fits.
    full = _dumps(smaller)[: limit * 2]
    head: dict[str, Any] = {"ok": payload.get("ok", True), "truncated": True}
    lo, hi = 0, len(full)
    while lo < hi:  # the encoded length grows with the prefix length
        mid = (lo + hi + 1) // 2
        if len(_dumps({**head, "preview": full[:mid]})) <= limit:
            lo = mid
        else:
            hi = mid - 1
    return _dumps({**head, "preview": full[:lo]})


# ---------------------------------------------------------------- execute

def _error(code: str, message: str, *, details: list[str] | None = None,
           candidates: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if details:
        error["details"] = details
    if candidates:
        error["candidates"] = candidates[:MAX_CANDIDATES]
    return error


def _storage_error(exc: StorageError) -> dict[str, Any]:
    if isinstance(exc, Ambiguous):
        shown = exc.candidates[:MAX_CANDIDATES]
        candidates = [{"path": c.path, "name": c.name, "category": c.category} for c in shown]
        paths = ", ".join(c.path for c in shown)
        message = f"{exc.message} Candidates: {paths}. Ask the user which one, or use a path."
        return _error(exc.code, message, candidates=candidates)
    return _error(exc.code, exc.message)


def _with_dropped(output: ToolOutput, dropped: list[str]) -> ToolOutput:
    """Name what a repair left out, in the result the model sees and the receipt shows."""
    data = dict(output.data)
    data["dropped"] = [*data.get("dropped", []), *dropped]
    return ToolOutput(output.kind, data, f"{output.text}; left out: {'; '.join(dropped)}")


async def _outcome(ctx: ToolContext, name: str, arguments: dict[str, Any] | None,
                   parse_error: str | None) -> tuple[ToolOutput | None, dict[str, Any] | None]:
    """The call's output, or the error the model is told."""
    tool = TOOLS.get(name)
    if tool is None:
        return None, _error("unknown_tool",
                            f"unknown tool {name[:80]!r}; valid tools: {', '.join(TOOLS)}")
    if parse_error is not None:
        preview = parse_error if len(parse_error) <= _PREVIEW else parse_error[:_PREVIEW] + "…"
        return None, _error("invalid_json", f"arguments were not valid JSON: {preview}")
    args: Any = {} if arguments is None else arguments
    problems = validation_errors(name, args)
    repaired = tool.repair(args) if problems and tool.repair is not None else None
    dropped: list[str] = []
    if repaired is not None and not validation_errors(name, repaired[0]):
        args, problems, dropped = repaired[0], [], repaired[1]
    if problems:
        return None, _error("invalid_arguments",
                            f"arguments do not match the {name} schema: {'; '.join(problems)}",
                            details=problems)
    if not tool.read_only and ctx.tally.full:
        return None, _error("too_many_changes", ctx.over_cap)
    return await _run(ctx, tool, args, dropped)


async def _run(ctx: ToolContext, tool: Tool, args: Any,
               dropped: list[str]) -> tuple[ToolOutput | None, dict[str, Any] | None]:
    try:
        with counting(ctx.tally):  # every write the call makes, by the Store
            output = await tool.run(ctx, args)
        if tool.read_only:
            ctx.saw(output.data)
        return (_with_dropped(output, dropped) if dropped else output), None
    except StorageError as exc:
        return None, _storage_error(exc)
    except ToolError as exc:
        return None, _error(exc.code, exc.message, details=exc.details,
                            candidates=exc.candidates)
    except Exception as exc:  # a bug must reach the model as a result, not kill the turn
        down = unwritable(exc)
        if down is not None:
            raise StorageDown(down) from exc
        return None, _error("internal", f"tool failed: {type(exc).__name__}: {exc}"[:500])


async def execute(ctx: ToolContext, call_id: str, name: str, arguments: dict[str, Any] | None,
                  parse_error: str | None = None) -> Execution:
    """Run one tool call. Every failure of the call is an error Execution; storage that
    cannot be written (read-only, full) is not the call's failure and no answer for the
    model: StorageDown, and the turn waits for storage (bot/jobs/worker.py)."""
    started_at = datetime.now(UTC)
    started = time.perf_counter()
    output, error = await _outcome(ctx, name, arguments, parse_error)
    content = ""
    if output is not None:
        try:
            data = {k: v for k, v in output.data.items() if k != "ok"}
            content = cap_content({"ok": True, **data})
        except Exception as exc:  # data that is not JSON-safe is a tool bug
            output = None
            error = _error("internal", f"tool failed: {type(exc).__name__}: {exc}"[:500])
    if error is not None:
        content = cap_content({"ok": False, "error": error})
    return Execution(
        call_id=call_id,
        tool=name,
        arguments=arguments,
        status="ok" if error is None else "error",
        output=output,
        error=error,
        content=content,
        duration_ms=(time.perf_counter() - started) * 1000.0,
        started_at=started_at,
    )
