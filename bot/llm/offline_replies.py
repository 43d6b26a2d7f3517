"""What the offline provider reads from a conversation and says about it: the note filed last
(from the tool results in the request, as a model would see it) and a short text summing up a
round of tool results."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bot.llm.types import Message, ToolResult

# Tool results may be shortened mid-JSON in older turns (bot/turn/messages.py): read the fields
# that identify a note with a pattern rather than a JSON parser. Paths and ids come first in
# those results, so they survive the shortening.
_STRING = r'"((?:[^"\\]|\\.)*)"'
_NEW_PATH = re.compile(r'"(?:new_path|newPath)"\s*:\s*' + _STRING)  # newPath: older turns
_PATH = re.compile(r'"path"\s*:\s*' + _STRING)
_ID = re.compile(r'"id"\s*:\s*' + _STRING)
# A capture's result: its status, or (when shortened before it) the confidence that precedes it.
_FILED = re.compile(r'"status"\s*:\s*"(?:filed|needs_review)"|"confidence"\s*:')
_LISTING = re.compile(r'"(?:entries|backlinks|candidates)"\s*:')
CHANGES = ("update_entry", "move_entry")  # tools that change a note the message names


@dataclass(frozen=True)
class FiledNote:
    path: str
    id: str | None = None


def _unquote(raw: str) -> str:
    try:
        value = json.loads(f'"{raw}"')
    except json.JSONDecodeError:
        return raw
    return value if isinstance(value, str) else raw


def last_filed(messages: list[Message]) -> FiledNote | None:
    """The note this conversation filed or moved most recently, from its tool results: a
    capture's result (`"status": "filed"` or `"needs_review"` with a path) or a move's
    (`new_path`)."""
    for message in reversed(messages):
        for result in reversed(message.tool_results):
            if result.is_error:
                continue
            content = result.content
            moved = _NEW_PATH.search(content)
            if moved:
                note_id = _ID.search(content)
                return FiledNote(_unquote(moved.group(1)),
                                 _unquote(note_id.group(1)) if note_id else None)
            path = _PATH.search(content)
            if path and _FILED.search(content) and not _LISTING.search(content):
                note_id = _ID.search(content)
                return FiledNote(_unquote(path.group(1)),
                                 _unquote(note_id.group(1)) if note_id else None)
    return None


def summarise(results: tuple[ToolResult, ...]) -> str:
    parts = [_summarise_one(r) for r in results]
    return " ".join(p for p in parts if p) or "Done."


def _names(entries: list[Any], limit: int = 5) -> str:
    names = [str(e.get("name") or e.get("path")) for e in entries[:limit] if isinstance(e, dict)]
    more = len(entries) - limit
    return ", ".join(names) + (f" and {more} more" if more > 0 else "")


def _summarise_one(result: ToolResult) -> str:
    try:
        data = json.loads(result.content)
    except (json.JSONDecodeError, TypeError):
        data = None
    if not isinstance(data, dict):
        text = result.content.strip()
        return f"Sorry, that didn't work: {text}" if result.is_error else text
    if result.is_error or data.get("ok") is False:
        return _failure(result, data)
    for describe in _DESCRIBERS:  # the first that knows this kind of result says it
        said = describe(result.name, data)
        if said is not None:
            return said
    return "Done."


def _failure(result: ToolResult, data: dict[str, Any]) -> str:
    """A tool's error: the candidates to choose from, a note not found, or its message."""
    error = data.get("error")
    message = error.get("message") if isinstance(error, dict) else error
    candidates = error.get("candidates") if isinstance(error, dict) else None
    changing = result.name in CHANGES
    if candidates:
        return (f"Which one did you mean: {_names(candidates)}?"
                + (" Nothing was changed." if changing else ""))
    code = error.get("code") if isinstance(error, dict) else None
    if changing and code == "not_found" and message:
        return f"{str(message)[:1].upper()}{str(message)[1:]}; nothing was changed or saved."
    return f"Sorry, that didn't work: {message or result.content}"


# Each says what one kind of result reports, or None when the result is not of its kind.

def _updated(tool: str, data: dict[str, Any]) -> str | None:
    if tool != "update_entry" or not isinstance(data.get("changed_fields"), list):
        return None
    done = ", ".join(f"{k} {data[k]}" if isinstance(data.get(k), str | int | float)
                     else str(k) for k in data["changed_fields"])
    return f"Updated {data.get('name')}: {done} [{data.get('path')}]"


def _found(tool: str, data: dict[str, Any]) -> str | None:
    if not isinstance(data.get("entries"), list):
        return None
    entries = data["entries"]
    if not entries:
        return "No matching notes found."
    total = data.get("total", len(entries))
    noun = "note" if total == 1 else "notes"
    return f"Found {total} {noun}: {_names(entries)}."


def _moved(tool: str, data: dict[str, Any]) -> str | None:
    moved_to = data.get("new_path") or data.get("newPath")  # newPath: older turns
    return f"Moved to {moved_to}." if moved_to else None


def _linked(tool: str, data: dict[str, Any]) -> str | None:
    if not isinstance(data.get("backlinks"), list):
        return None
    links = data["backlinks"]
    if not links:
        return f"Nothing links to {data.get('target')}."
    return f"{len(links)} note(s) link to {data.get('target')}: {_names(links)}."


def _filed(tool: str, data: dict[str, Any]) -> str | None:
    if data.get("status") not in ("filed", "needs_review") or "path" not in data:
        return None
    if data["status"] == "filed":
        return f"Filed to {data['path']}."
    return f"Saved to the inbox for review: {data['path']}."


def _digested(tool: str, data: dict[str, Any]) -> str | None:
    return _digest(data) if data.get("type") in ("daily", "weekly") else None


def _note(tool: str, data: dict[str, Any]) -> str | None:
    if "path" not in data or "name" not in data:
        return None
    body = str(data.get("body") or "").strip().splitlines()
    first = f": {body[0][:200]}" if body else ""
    return f"{data['name']} ({data['path']}){first}"


def _said(tool: str, data: dict[str, Any]) -> str | None:
    for key in ("text", "summary", "message"):
        if isinstance(data.get(key), str):
            return str(data[key])
    return None


# In this order: a result with the fields of two kinds is said as the first.
_DESCRIBERS: tuple[Callable[[str, dict[str, Any]], str | None], ...] = (
    _updated, _found, _moved, _linked, _filed, _digested, _note, _said)


def _digest(data: dict[str, Any]) -> str:
    focus = data.get("focus")
    if isinstance(focus, list):
        listed = f": {_names(focus)}" if focus else ""
        return (f"Daily digest: {len(focus)} item(s) in focus{listed}; "
                f"{data.get('inbox_count', 0)} in the inbox.")
    return (f"{str(data['type']).capitalize()} digest: {data.get('total', 0)} notes, "
            f"{data.get('inbox_count', 0)} in the inbox.")
