"""The offline provider: deterministic rules, no network. Used without API keys and in tests.

On the first iteration of a turn (the last message is the user's) it makes the tool calls a
real model would, with our tool names and argument shapes; after tool results it answers with
a short text summarising them, so the loop ends. Token usage is an estimate (characters / 4)
so benchmarks see plausible numbers; no tokenizer is involved.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import date
from typing import Any

from jsonschema import Draft202012Validator

from bot.llm.configs import BUILTIN_CONFIGS, LLMConfig
from bot.llm.types import (
    Completion,
    Message,
    NamedTool,
    RequestOptions,
    ToolCall,
    ToolChoice,
    ToolResult,
    ToolSpec,
    Usage,
)
from tools.classify_rules import classify

# The system prompt lists the notes filed in this conversation under this heading, one per
# line as "- <path> (id <id>): <name>", most recent last (bot/prompts.py writes it).
FILED_HEADING = "Notes filed in this conversation:"
_FILED_LINE = re.compile(r"^- (?P<path>\S.*?) \(id (?P<id>[^)]*)\): (?P<name>.*)$")

HELP = ("Hi! Send me a thought and I'll file it (people, projects, ideas, admin). "
        "Ask \"what's active?\", \"find <words>\", \"show note <name>\" or \"digest\"; "
        "reply \"fix: project\" to re-file the last note.")

_CATEGORY_WORDS = {
    "people": "people", "person": "people", "persons": "people",
    "project": "projects", "projects": "projects",
    "idea": "ideas", "ideas": "ideas",
    "admin": "admin", "admins": "admin", "task": "admin", "tasks": "admin", "todo": "admin",
    "inbox": "inbox",
}
_CAT = r"(?:a |an |the )?([a-z]+)"

_GREETING = re.compile(
    r"^(?:hi|hello|hey|hiya|yo|good (?:morning|afternoon|evening)|help|what can you do|"
    r"how does this work|who are you)(?: there)?[\s!.?]*$", re.I)
_THANKS = re.compile(r"^(?:thanks|thank you|thx|cheers|ty|great|perfect|ok|okay)"
                     r"(?: (?:a lot|so much|you))?[\s!.]*$", re.I)
_FIX = [
    re.compile(r"^fix\s*:\s*" + _CAT + r"\b", re.I),
    re.compile(r"^actually,?\s+(?:that|it|this)(?:'s|\s+is|\s+should\s+be)\s+(?:in\s+)?"
               + _CAT + r"\b", re.I),
    re.compile(r"^(?:make|file)\s+(?:it|that|this)\s+(?:as\s+|under\s+|in\s+)?" + _CAT + r"\b",
               re.I),
    re.compile(r"^move\s+(?:it|that|this)\s+to\s+" + _CAT + r"\b", re.I),
    re.compile(r"^(?:that|it|this)\s+should\s+be\s+(?:in\s+)?" + _CAT + r"\b", re.I),
]
_BACKLINKS = re.compile(r"^(?:backlinks\s+(?:to|for|of)|what\s+links\s+(?:to|here\s+to)|"
                        r"who\s+links\s+to|what\s+points\s+to)\s+(.+)$", re.I)
_GET = re.compile(r"^(?:show|open|get|read)\s+(?:me\s+)?(?:the\s+)?note\s+(.+)$|^open\s+(.+)$",
                  re.I)
_DIGEST = re.compile(r"^(?:(?:give|show|send)\s+me\s+)?(?:my\s+|the\s+|a\s+)?"
                     r"(?:(daily|weekly)\s+)?(?:digest|review|summary)(?:\s+please)?$", re.I)
_LIST = re.compile(
    r"^(?:list|show)(?:\s+me)?(?:\s+all)?(?:\s+(?:my|the))?(?:\s+(active|open|done|waiting|"
    r"blocked|todo))?\s+(projects?|people|persons?|ideas?|admin|tasks?|todos?|inbox|notes)\b",
    re.I)
_WHATS_ACTIVE = re.compile(
    r"^what(?:'s|\s+is|\s+are)\s+(?:my\s+|the\s+)?(active|open|in\s+(?:my|the)\s+inbox)"
    r"(?:\s+(projects?|people|ideas?|admin|tasks?|notes))?$", re.I)
# "what are my projects", "who are my people", "what ideas do I have"
_WHAT_LIST = re.compile(
    r"^(?:(?:what|which|who)(?:'s|\s+is|\s+are)\s+(?:all\s+)?(?:my|the)\s+"
    r"(?:(active|open|done|waiting|blocked|todo)\s+)?(projects?|people|ideas?|admin|tasks?|"
    r"todos?|inbox|notes)|(?:what|which)\s+(projects?|people|ideas?|admin|tasks?|notes)\s+"
    r"do\s+i\s+have)$", re.I)
_SEARCH = re.compile(
    r"^(?:find|search(?:\s+for)?|look\s+up|lookup|where\s+is|where's|"
    r"what\s+did\s+i\s+(?:note|write|say|save|jot\s+down)\s+about|"
    r"do\s+i\s+have\s+(?:any(?:thing)?\s+)?(?:notes?\s+)?(?:on|about)|anything\s+(?:on|about))"
    r"\s+(.+)$", re.I)
_QUESTION_LEAD = re.compile(
    r"^(?:what|who|when|where|which|how|why)(?:'s|\s+is|\s+are|\s+was|\s+were|\s+did|\s+do|"
    r"\s+does)?\s+(?:i\s+|we\s+)?(?:(?:have|know|note|noted|write|wrote|say|said)\s+)?"
    r"(?:about\s+)?", re.I)
_ARTICLES = re.compile(r"^(?:the|my|a|an|our)\s+", re.I)


@dataclass(frozen=True)
class Route:
    """What the rules decided: a tool call (tool + arguments) or a text answer."""

    tool: str | None = None
    arguments: dict[str, Any] | None = None
    text: str | None = None


def filed_notes(system: str) -> list[tuple[str, str, str]]:
    """(path, id, name) of the notes the system prompt lists as filed here, oldest first."""
    lines = system.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == FILED_HEADING)
    except StopIteration:
        return []
    out: list[tuple[str, str, str]] = []
    for line in lines[start + 1:]:
        match = _FILED_LINE.match(line.strip())
        if not match:
            break
        out.append((match["path"], match["id"], match["name"]))
    return out


def _category(word: str) -> str | None:
    return _CATEGORY_WORDS.get(word.lower())


def _clean_query(text: str) -> str:
    query = text.strip().rstrip("?!. ").strip()
    return _ARTICLES.sub("", query).strip(" \"'") or text.strip()


def route(text: str, system: str = "", today: date | None = None) -> Route:
    """The rules: one user message -> the tool call a model would make, or a text answer."""
    stripped = text.strip()
    plain = stripped.rstrip("!. ")
    if not stripped or _GREETING.match(stripped):
        return Route(text=HELP)
    if _THANKS.match(stripped):
        return Route(text="You're welcome!")

    for pattern in _FIX:
        match = pattern.match(plain)
        if match:
            target = _category(match.group(1))
            if target is None:
                if pattern is _FIX[0]:
                    return Route(text=f"I don't know the category \"{match.group(1)}\"; use "
                                      "people, projects, ideas, admin or inbox.")
                continue  # "make it happen" is not a correction
            notes = filed_notes(system)
            if not notes:
                return Route(text="Which note should I move? I haven't filed anything in this "
                                  "conversation yet; tell me its name or path.")
            return Route(tool="move_entry",
                         arguments={"path": notes[-1][0], "targetCategory": target})

    match = _BACKLINKS.match(plain.rstrip("?"))
    if match:
        return Route(tool="list_backlinks", arguments={"path": _clean_query(match.group(1))})
    match = _GET.match(plain)
    if match:
        return Route(tool="get_entry",
                     arguments={"path": _clean_query(match.group(1) or match.group(2))})
    match = _DIGEST.match(plain)
    if match or plain.lower() in ("weekly review", "daily review"):
        kind = "weekly" if "week" in plain.lower() else "daily"
        return Route(tool="generate_digest", arguments={"type": kind})

    match = _LIST.match(plain)
    if match:
        args: dict[str, Any] = {}
        category = _category(match.group(2))
        if category:
            args["category"] = category
        if match.group(1):
            args["status"] = _status(match.group(1), category)
        return Route(tool="list_entries", arguments=args)
    match = _WHATS_ACTIVE.match(stripped.rstrip("?!. "))
    if match:
        args = {}
        what = match.group(1).lower()
        if "inbox" in what:
            return Route(tool="list_entries", arguments={"category": "inbox"})
        category = _category(match.group(2) or "")
        if category:
            args["category"] = category
        args["status"] = _status(what, category)
        return Route(tool="list_entries", arguments=args)

    match = _WHAT_LIST.match(stripped.rstrip("?!. "))
    if match:
        args = {}
        category = _category(match.group(2) or match.group(3) or "")
        if category:
            args["category"] = category
        if match.group(1):
            args["status"] = _status(match.group(1), category)
        return Route(tool="list_entries", arguments=args)

    match = _SEARCH.match(stripped.rstrip("?"))
    if match:
        return Route(tool="search_entries", arguments={"query": _clean_query(match.group(1))})
    if stripped.endswith("?"):
        query = _clean_query(_QUESTION_LEAD.sub("", stripped.rstrip("?")))
        return Route(tool="search_entries", arguments={"query": query})

    result = classify(stripped, today)
    return Route(tool="classify_and_capture", arguments={"text": stripped,
                                                         "hints": result.hints()})


def _status(word: str, category: str | None) -> str:
    word = word.lower()
    if word in ("active", "open"):
        return "todo" if category == "admin" else "active"
    return word


# ---------------------------------------------------------------- summaries of tool results

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
    error = data.get("error")
    if result.is_error or data.get("ok") is False:
        message = error.get("message") if isinstance(error, dict) else error
        candidates = error.get("candidates") if isinstance(error, dict) else None
        if candidates:
            return f"Which one did you mean: {_names(candidates)}?"
        return f"Sorry, that didn't work: {message or result.content}"
    if isinstance(data.get("entries"), list):
        entries = data["entries"]
        if not entries:
            return "No matching notes found."
        total = data.get("total", len(entries))
        noun = "note" if total == 1 else "notes"
        return f"Found {total} {noun}: {_names(entries)}."
    if "newPath" in data:
        return f"Moved to {data['newPath']}."
    if isinstance(data.get("backlinks"), list):
        links = data["backlinks"]
        if not links:
            return f"Nothing links to {data.get('target')}."
        return f"{len(links)} note(s) link to {data.get('target')}: {_names(links)}."
    if data.get("status") in ("filed", "needs_review") and "path" in data:
        if data["status"] == "filed":
            return f"Filed to {data['path']}."
        return f"Saved to the inbox for review: {data['path']}."
    if data.get("type") in ("daily", "weekly"):
        focus = data.get("focus")
        if isinstance(focus, list):
            listed = f": {_names(focus)}" if focus else ""
            return (f"Daily digest: {len(focus)} item(s) in focus{listed}; "
                    f"{data.get('inbox_count', 0)} in the inbox.")
        return (f"{str(data['type']).capitalize()} digest: {data.get('total', 0)} notes, "
                f"{data.get('inbox_count', 0)} in the inbox.")
    if "path" in data and "name" in data:
        body = str(data.get("body") or "").strip().splitlines()
        first = f": {body[0][:200]}" if body else ""
        return f"{data['name']} ({data['path']}){first}"
    for key in ("text", "summary", "message"):
        if isinstance(data.get(key), str):
            return str(data[key])
    return "Done."


# ---------------------------------------------------------------- schemas -> minimal objects

_DATE_PATTERN = re.compile(r"\\d\{4\}-\\d\{2\}-\\d\{2\}")


def example_for_schema(schema: Any, text: str = "", today: date | None = None,
                       hints: dict[str, Any] | None = None) -> Any:
    """A small value valid for `schema`: required properties only (plus any property the
    classification `hints` can fill), strings from the user's text."""
    today = today or date.today()
    if not isinstance(schema, dict):
        return {}
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return example_for_schema(schema[key][0], text, today, hints)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind is None:
        kind = "object" if "properties" in schema else "string"
    if kind == "object":
        properties = schema.get("properties") or {}
        out: dict[str, Any] = {}
        hints = hints or {}
        for name, value in hints.items():
            sub = properties.get(name)
            if isinstance(sub, dict) and _fits(value, sub):
                out[name] = value
        for name in schema.get("required") or []:
            if name not in out:
                out[name] = example_for_schema(properties.get(name, {}), text, today, hints)
        return out
    if kind == "array":
        count = int(schema.get("minItems", 0))
        return [example_for_schema(schema.get("items", {}), text, today, hints)
                for _ in range(count)]
    if kind in ("number", "integer"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", -1) + 1)
        value = max(low, 0) if "maximum" not in schema else min(max(low, 0), schema["maximum"])
        return int(value) if kind == "integer" else float(value)
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    if schema.get("format") == "date" or _DATE_PATTERN.search(str(schema.get("pattern", ""))):
        return today.isoformat()
    if schema.get("format") == "date-time":
        return f"{today.isoformat()}T00:00:00Z"
    value = " ".join(text.split()) or "n/a"
    value = value[: int(schema.get("maxLength", 200))]
    return value.ljust(int(schema.get("minLength", 0)), ".")


def _fits(value: Any, schema: dict[str, Any]) -> bool:
    try:
        return bool(Draft202012Validator(schema).is_valid(value))
    except Exception:  # a schema jsonschema cannot handle: do not guess
        return False


# ---------------------------------------------------------------- the provider

def _estimate_tokens(*texts: str) -> int:
    return sum(len(t) for t in texts) // 4


class OfflineProvider:
    def __init__(self, config: LLMConfig | None = None, *, today: date | None = None) -> None:
        self.config = config or BUILTIN_CONFIGS["offline"]
        self.name = self.config.id
        self.model = self.config.model
        self.today = today  # fixed date for tests; None: the real today at each call

    async def complete(self, system: str, messages: list[Message], tools: list[ToolSpec],
                       tool_choice: ToolChoice = "auto",
                       options: RequestOptions | None = None) -> Completion:
        today = self.today or date.today()
        choice: ToolChoice = tool_choice
        if options is not None and options.tool_choice is not None:
            choice = options.tool_choice
        last = messages[-1] if messages else Message("user", "")
        user_text = next((m.content or "" for m in reversed(messages)
                          if m.role == "user"), "")
        calls: list[tuple[str, dict[str, Any]]] = []
        text: str | None = None
        parsed: dict[str, Any] | None = None

        if options is not None and options.tool_schema is not None:
            name = options.tool_name or self.config.default_tool_name
            if choice != "none":
                args = self._derive(name, options.tool_schema, user_text, today)
                calls.append((name, args))
                parsed = args
            else:
                text = "OK."
        elif last.role == "tool":
            text = summarise(last.tool_results)
        elif last.role == "user":
            calls, text = self._first_iteration(system, last.content or "", tools, choice,
                                                today)
        else:
            text = "OK."

        if options is not None and options.response_schema is not None:
            hints = classify(user_text, today).hints()
            value = example_for_schema(options.response_schema, user_text, today, hints)
            parsed = value if isinstance(value, dict) else parsed
            text = json.dumps(value)

        tool_calls = tuple(
            ToolCall(id=f"offline_{len(messages)}_{i}", name=name, arguments=args,
                     raw_arguments=json.dumps(args))
            for i, (name, args) in enumerate(calls, start=1))
        prompt = [system, json.dumps([[t.name, t.description, t.parameters] for t in tools])]
        for m in messages:
            prompt.append(m.content or "")
            prompt.extend(c.raw_arguments for c in m.tool_calls)
            prompt.extend(r.content for r in m.tool_results)
        usage = Usage(_estimate_tokens(*prompt),
                      _estimate_tokens(text or "", *(c.raw_arguments for c in tool_calls)))
        return Completion(text=text, tool_calls=tool_calls,
                          stop_reason="tool_use" if tool_calls else "end_turn",
                          usage=usage, model=self.model, parsed=parsed)

    def _derive(self, name: str, schema: dict[str, Any], text: str,
                today: date) -> dict[str, Any]:
        """Arguments for a tool: our own rules when they pick this tool, else a minimal object
        valid for its schema, filled from the text and its classification."""
        decided = route(text, "", today)
        if decided.tool == name and decided.arguments is not None:
            return decided.arguments
        if name == "classify_and_capture":
            return {"text": text or "(empty)", "hints": classify(text, today).hints()}
        value = example_for_schema(schema, text, today, classify(text, today).hints())
        return value if isinstance(value, dict) else {}

    def _first_iteration(self, system: str, text: str, tools: list[ToolSpec],
                         choice: ToolChoice, today: date
                         ) -> tuple[list[tuple[str, dict[str, Any]]], str | None]:
        offered = {t.name: t for t in tools}
        decided = route(text, system, today)
        if choice == "none" or not tools:
            return [], decided.text or self._no_tools_text(decided)
        if isinstance(choice, NamedTool):
            spec = offered.get(choice.name)
            schema = spec.parameters if spec else {"type": "object"}
            return [(choice.name, self._derive_routed(decided, choice.name, schema, text,
                                                      today))], None
        if decided.tool is not None and decided.tool in offered:
            return [(decided.tool, decided.arguments or {})], None
        if choice == "required":
            name = "classify_and_capture" if "classify_and_capture" in offered else tools[0].name
            return [(name, self._derive(name, offered[name].parameters, text, today))], None
        return [], decided.text or self._no_tools_text(decided)

    def _derive_routed(self, decided: Route, name: str, schema: dict[str, Any], text: str,
                       today: date) -> dict[str, Any]:
        if decided.tool == name and decided.arguments is not None:
            return decided.arguments
        return self._derive(name, schema, text, today)

    @staticmethod
    def _no_tools_text(decided: Route) -> str:
        if decided.tool == "classify_and_capture" and decided.arguments:
            hints = decided.arguments.get("hints") or {}
            return (f"I can't file notes right now; this reads like {hints.get('category')}: "
                    f"{hints.get('name')}.")
        return "I can't look that up right now."
