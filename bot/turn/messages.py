"""A conversation's earlier turns -> the messages of the next request.

The request carries whole turns only, and every tool call must be answered exactly once by the
message right after it (both providers answer 400 otherwise, and a single broken pair would
break the conversation for good). `ensure_paired` repairs what a crash left behind instead of
sending it broken.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from bot.llm.types import Message, ToolCall, ToolResult
from tools.capture.fence import BEGINS, shortened

# Marks the replies the app wrote itself (receipts of what its tools did, the rescue, error
# notices) in the history sent to the model, so a model does not copy them as its own words.
RECEIPT_MARK = "[app receipt: written by the app from its tool runs, not by the assistant] "
INTERRUPTED = "tool did not complete (the turn was interrupted); its outcome is unknown"
OLD_RESULT_CHARS = 300  # tool results and captured data of older turns are shortened to this
LEGACY_FILES = "\n\n[Shared "  # where a message stored before the fence had its files' text
LEGACY_LEFT_OUT = "\n\n(files were shared with this message; their text is in its note)"


def receipt_message(text: str) -> Message:
    """An assistant message the app wrote: stored (and sent back) with the mark."""
    return Message(role="assistant", content=RECEIPT_MARK + text if text else text)


def message_to_dict(message: Message) -> dict[str, Any]:
    return {
        "role": message.role,
        "content": message.content,
        "tool_calls": [
            {"id": c.id, "name": c.name, "arguments": c.arguments,
             "raw_arguments": c.raw_arguments, "parse_error": c.parse_error}
            for c in message.tool_calls
        ] or None,
        "tool_results": [
            {"call_id": r.call_id, "name": r.name, "content": r.content, "is_error": r.is_error}
            for r in message.tool_results
        ] or None,
    }


def message_from_dict(data: dict[str, Any]) -> Message:
    calls = tuple(
        ToolCall(id=c["id"], name=c["name"], arguments=c.get("arguments"),
                 raw_arguments=c.get("raw_arguments") or json.dumps(c.get("arguments") or {}),
                 parse_error=c.get("parse_error"))
        for c in data.get("tool_calls") or ()
    )
    results = tuple(
        ToolResult(call_id=r["call_id"], name=r.get("name", ""), content=r.get("content") or "",
                   is_error=bool(r.get("is_error")))
        for r in data.get("tool_results") or ()
    )
    return Message(role=data["role"], content=data.get("content"), tool_calls=calls,
                   tool_results=results)


def ensure_paired(messages: Sequence[Message]) -> list[Message]:
    """Return messages in which every tool call is answered once, right after it.

    - an assistant message whose calls lack results gets error results for the missing ones;
    - results that answer no call of the message before them are dropped;
    - a tool message that does not follow an assistant message with calls is dropped;
    - the history starts with a user message (Anthropic requires it).
    """
    out: list[Message] = []
    i = 0
    while i < len(messages):
        msg = messages[i]
        if msg.role == "tool":
            i += 1  # orphan results: their call is gone
            continue
        if msg.role == "assistant" and msg.tool_calls:
            nxt = messages[i + 1] if i + 1 < len(messages) else None
            given = {r.call_id: r for r in nxt.tool_results} if nxt and nxt.role == "tool" else {}
            results = []
            for call in msg.tool_calls:
                result = given.get(call.id)
                if result is None or not result.content:
                    result = ToolResult(call.id, call.name, INTERRUPTED, is_error=True)
                results.append(result)
            out.append(msg)
            out.append(Message(role="tool", tool_results=tuple(results)))
            i += 2 if given or (nxt is not None and nxt.role == "tool") else 1
            continue
        if msg.role == "assistant" and not (msg.content or "").strip():
            i += 1  # an empty assistant message is rejected by Anthropic
            continue
        out.append(msg)
        i += 1
    while out and out[0].role != "user":
        out.pop(0)
    return out


def shorten_results(message: Message, limit: int = OLD_RESULT_CHARS) -> Message:
    if message.role != "tool":
        return message
    shortened = tuple(
        r if len(r.content) <= limit
        else ToolResult(r.call_id, r.name, r.content[:limit] + f"… [shortened from {len(r.content)} chars]",
                        r.is_error)
        for r in message.tool_results
    )
    return Message(role="tool", tool_results=shortened)


def shorten_captured(message: Message, limit: int = OLD_RESULT_CHARS) -> Message:
    """A user message of an older turn with the captured data beside it (files, pages) cut
    to `limit` characters each, still fenced (tools/capture/fence.py); a message stored before the
    fence had its files' text after `LEGACY_FILES`: that part is left out."""
    text = message.content
    if message.role != "user" or not text:
        return message
    if LEGACY_FILES in text and BEGINS not in text:
        text = text.split(LEGACY_FILES, 1)[0] + LEGACY_LEFT_OUT
    return Message(role="user", content=shortened(text, limit))


def request_messages(turns: Iterable[Sequence[dict[str, Any]]], *, keep_full: int = 1) -> list[Message]:
    """Stored turns (oldest first) -> request messages; the last `keep_full` turns keep
    their tool results and captured data whole, older ones are shortened."""
    turn_list = [list(t) for t in turns]
    messages: list[Message] = []
    for index, turn in enumerate(turn_list):
        old = index < len(turn_list) - keep_full
        for data in turn:
            msg = message_from_dict(data)
            messages.append(shorten_captured(shorten_results(msg)) if old else msg)
    return ensure_paired(messages)


def is_paired(messages: Sequence[Message]) -> bool:
    """True when every call is answered exactly once by the next message, and every result
    answers a call of the message before it."""
    for i, msg in enumerate(messages):
        if msg.role == "assistant" and msg.tool_calls:
            if i + 1 >= len(messages) or messages[i + 1].role != "tool":
                return False
            ids = [c.id for c in msg.tool_calls]
            answered = [r.call_id for r in messages[i + 1].tool_results]
            if sorted(ids) != sorted(answered):
                return False
        if msg.role == "tool":
            prev = messages[i - 1] if i > 0 else None
            if prev is None or prev.role != "assistant" or not prev.tool_calls:
                return False
    return not messages or messages[0].role == "user"


def stored_message(row: Any) -> dict[str, Any]:
    """A stored message row (storage.repositories.MessageRow) as `request_messages` takes it."""
    return {"role": row.role, "content": row.content, "tool_calls": row.tool_calls,
            "tool_results": row.tool_results}
