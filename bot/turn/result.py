"""What one turn produced, and the rules that keep a thought from being lost in it.

`TurnResult` is what the Brain hands an adapter; it round-trips through JSON so a job that runs
again after a crash answers with the turn it already took instead of taking it twice.

`trouble` decides whether a turn that filed nothing went wrong (a tool error, the iteration
cap, an empty answer, a refusal, the model chatting past a thought); the Brain then files the
message to the inbox with that reason, so nothing the user sent is lost and no reply claims
more than happened.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

from bot.llm.types import Message, ToolCall, ToolResult, Usage
from bot.turn.loop import LoopOutcome
from bot.turn.messages import receipt_message
from bot.turn.prompts import FiledNote
from bot.turn.truth import truthful
from tools.base import MAX_CHANGES_PER_TURN, ToolOutput
from tools.registry import Execution, keeping_names
from tools.rules.intent import route

if TYPE_CHECKING:
    from storage.repositories import ReceiptRow

ANSWERED_WITHOUT_FILING = "the model answered without filing it"
MAX_VIEW = 2000  # a longer message reaches the model shortened; a capture keeps all of it
# Tools whose success means the user's words were kept (filed, or written into a note).
KEEPING_TOOLS = keeping_names()  # the registry's tools that change a note
# Hears each tool call of a turn: (call, None) as it starts, (call, its execution) as it ends.
Progress = Callable[[ToolCall, Execution | None], Awaitable[None]]


@dataclass(frozen=True)
class TurnResult:
    text: str
    executions: list[Execution] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    llm_calls: int = 0
    turn_id: int | None = None
    outage: str | None = None  # LLMError.kind when the LLM could not be reached
    rescued: str | None = None  # why the message was filed to the inbox by the rescue
    changes: tuple[str, ...] = ()  # the vault history's changes this turn made (its Undo)

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "executions": [_execution_dict(e) for e in self.executions],
                "usage": {"input_tokens": self.usage.input_tokens,
                          "output_tokens": self.usage.output_tokens},
                "llm_calls": self.llm_calls, "turn_id": self.turn_id, "outage": self.outage,
                "rescued": self.rescued, "changes": list(self.changes)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TurnResult:
        usage = data.get("usage") or {}
        return cls(text=str(data.get("text") or ""),
                   executions=[_execution(e) for e in data.get("executions") or []],
                   usage=Usage(int(usage.get("input_tokens") or 0),
                               int(usage.get("output_tokens") or 0)),
                   llm_calls=int(data.get("llm_calls") or 0), turn_id=data.get("turn_id"),
                   outage=data.get("outage"), rescued=data.get("rescued"),
                   changes=tuple(str(c) for c in data.get("changes") or ()))

    @property
    def changed(self) -> bool:
        """Did the turn change a note (filed, updated or moved one)?"""
        return any(e.status == "ok" and e.tool in KEEPING_TOOLS for e in self.executions)

    @property
    def filed(self) -> list[Execution]:
        """The successful captures of the turn."""
        return [e for e in self.executions
                if e.status == "ok" and e.output is not None and e.output.kind == "capture"]


def _execution_dict(e: Execution) -> dict[str, Any]:
    output = None if e.output is None else {"kind": e.output.kind, "data": e.output.data,
                                            "text": e.output.text}
    # `content` (what the model read, up to 6,000 characters) is in the stored turn's
    # messages already; a replayed result only renders cards, from `output`.
    return {"call_id": e.call_id, "tool": e.tool, "arguments": e.arguments, "status": e.status,
            "output": output, "error": e.error, "duration_ms": e.duration_ms,
            "started_at": e.started_at.isoformat() if e.started_at else None}


def _execution(d: dict[str, Any]) -> Execution:
    out = d.get("output")
    output = None if not out else ToolOutput(str(out["kind"]), dict(out["data"]),
                                             str(out["text"]))
    return Execution(call_id=str(d["call_id"]), tool=str(d["tool"]), arguments=d.get("arguments"),
                     status=str(d["status"]), output=output, error=d.get("error"),
                     content=str(d.get("content") or ""),
                     duration_ms=float(d.get("duration_ms") or 0.0),
                     started_at=datetime.fromisoformat(d["started_at"])
                     if d.get("started_at") else None)


def message_view(text: str) -> str:
    """What the model sees of a message: all of it, or the start of a long paste."""
    if len(text) <= MAX_VIEW:
        return text
    head = text[:MAX_VIEW].rsplit(" ", 1)[0]
    return (f"{head} […] ({len(text) - len(head)} more characters not shown; capturing this "
            "message with this text files all of it)")


def kept(outcome: LoopOutcome) -> bool:
    """Did the turn keep the user's words somewhere (a capture, an update, a move)?"""
    return any(e.status == "ok" and e.tool in KEEPING_TOOLS for e in outcome.executions)


def trouble(outcome: LoopOutcome) -> str | None:
    """Why a turn that kept nothing went wrong, in a few words; None when it did not (the
    model looked things up and answered)."""
    errors = [e for e in outcome.executions if e.status != "ok"]
    if outcome.capped:
        return "the model kept calling tools without finishing"
    if errors:
        err = errors[-1].error or {}
        code = str(err.get("code") or "error")
        if code == "ambiguous" and outcome.text.strip():
            return None  # several notes matched and the reply asks which: nothing went wrong
        what = {"unknown_tool": f"the model asked for an unknown tool ({errors[-1].tool[:40]})",
                "invalid_json": "the model's tool arguments were not valid JSON",
                "invalid_arguments": "the model's tool arguments did not fit the tool",
                "not_run": "the model's tool call was cut off"}.get(code)
        return what or f"a tool failed ({code})"
    if outcome.stop_reason == "refusal":
        return "the model declined to answer"
    if not outcome.text.strip():
        return "the model gave no answer"
    if not outcome.executions:
        return ANSWERED_WITHOUT_FILING
    return None


def rescue_text(reason: str, path: str) -> str:
    return (f"I couldn't file this cleanly ({reason}), so it's in your inbox: {path}. "
            "Nothing is lost; use the buttons to file it.")


def with_filed_summary(outcome: LoopOutcome) -> str:
    """The reply never hides a capture behind "Done.": each filed note is named in it."""
    text = outcome.text.strip()
    lines = [e.output.text for e in outcome.executions
             if e.status == "ok" and e.output is not None and e.output.kind == "capture"
             and e.output.text and e.output.text not in text]
    return "\n".join([*lines, text] if text else lines) if lines else text


def over_cap(executions: list[Execution]) -> str | None:
    """What the reply says when the turn's writes hit the cap (tools/base.py): how many
    changes were made and how many calls were refused; None when none was."""
    refused = sum(1 for e in executions if (e.error or {}).get("code") == "too_many_changes")
    if not refused:
        return None
    made = sum(1 for e in executions if e.status == "ok" and e.tool in KEEPING_TOOLS)
    return (f"This message asked for more changes than one message may make "
            f"({MAX_CHANGES_PER_TURN}): {made} {'was' if made == 1 else 'were'} made (listed "
            f"here), {refused} more {'was' if refused == 1 else 'were'} refused and changed "
            "nothing. Send those again if you meant them.")


def direct_move_outcome(text: str, call: ToolCall, execution: Execution) -> LoopOutcome:
    """The turn of a `fix: <category>` that needed no LLM call, as if the model had made it."""
    outcome = LoopOutcome(text="", messages=[Message(role="user", content=text)])
    applied_by_rules(outcome, call, execution)
    return outcome


def applied_by_rules(outcome: LoopOutcome, call: ToolCall, execution: Execution) -> None:
    """A change the rules made (a `fix:`, a correction the model did not apply) joins the
    turn as a call and its result; the reply is written from the result."""
    outcome.messages.append(Message(role="assistant", tool_calls=(call,)))
    outcome.messages.append(Message(role="tool", tool_results=(
        ToolResult(call.id, call.name, execution.content, is_error=execution.status != "ok"),)))
    outcome.executions.append(execution)
    if execution.output is not None:
        outcome.text = execution.output.text
    else:
        message = (execution.error or {}).get("message", "unknown error")
        outcome.text = f"I couldn't change that note: {message}"
    outcome.messages.append(receipt_message(outcome.text))


def changed_note(outcome: LoopOutcome) -> bool:
    """Did the model change an existing note in this turn (moved or updated one)?"""
    return any(e.status == "ok" and e.tool in ("move_entry", "update_entry")
               for e in outcome.executions)


def not_a_new_note(call: ToolCall, note: FiledNote) -> Execution:
    """The answer to a capture of a reply that corrects the thread's note: not run."""
    message = (f"not filed: this message changes the note {note.path} (id {note.id}) filed "
               "in this conversation. Apply it to that note with update_entry (name, "
               "due_date, status, ...) or move_entry (category); do not file a new note.")
    error = {"code": "correction", "message": message}
    return Execution(call_id=call.id, tool=call.name, arguments=call.arguments, status="error",
                     output=None, error=error, content=json.dumps({"ok": False, "error": error}),
                     duration_ms=0.0)


def told_truth(outcome: LoopOutcome) -> None:
    """The model's reply without a sentence that claims what this turn did not do; the
    stored reply, when it had to be corrected, is marked as the app's."""
    text, corrected = truthful(outcome.text, outcome.executions)
    if not corrected:
        return
    outcome.text = text
    last = outcome.messages[-1] if outcome.messages else None
    if last is not None and last.role == "assistant" and not last.tool_calls:
        outcome.messages[-1] = receipt_message(text)
    elif text:
        outcome.messages.append(receipt_message(text))


def filed_notes(captures: list[ReceiptRow]) -> list[FiledNote]:
    """The notes a conversation filed, as the system prompt names them."""
    return [FiledNote(c.path, c.entry_id, _name_of(c)) for c in captures if c.entry_id]


def _name_of(capture: ReceiptRow) -> str:
    text = capture.original_text.strip().splitlines()[0] if capture.original_text.strip() else ""
    return text[:60] or capture.path


def looks_like_thought(text: str) -> bool:
    """Would a model file this? The rules of tools/rules/intent.py answer it without one. A request
    to change a note ("mark the passport as done") is not a thought; a statement about one
    ("the launch is blocked") is, when no note takes it."""
    decided = route(text, today=date.today())
    return "classify_and_capture" in (decided.tool, decided.or_else and decided.or_else.tool)
