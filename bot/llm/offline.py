"""The offline provider: deterministic rules, no network. Used without API keys and in tests.

It works from the request alone: the tool specs it is given (it calls only tools offered, with
arguments valid for their schemas, and answers in text when the tool it would call is not
offered), the conversation's messages (the note filed last comes from the tool results in
them, not from the prompt's text) and the per-request options, applied by the same
`requested_tools` as the SDK adapters. On the first iteration of a turn it makes the tool call
a real model would (`tools/rules/intent.py`); after tool results it sums them up in a short text, so
the loop ends. Relative dates are read in the provider's time zone (BRAIN_TZ). Token usage is
an estimate (characters / 4), so benchmarks see plausible numbers.
"""

from __future__ import annotations

import json
from datetime import date, tzinfo
from typing import Any

from bot.llm.offline_replies import CHANGES, FiledNote, last_filed, summarise
from bot.llm.schema_example import example_for_schema, fit_arguments
from bot.llm.sdk_provider import ToolPayloads
from bot.llm.types import (
    OFFLINE_CONFIG,
    Completion,
    LLMConfig,
    Message,
    NamedTool,
    RequestOptions,
    ToolCall,
    ToolChoice,
    ToolSpec,
    Usage,
    requested_tools,
)
from tools.readers.sections import without_files
from tools.rules.classify import UNSURE, AnySimilar, ask_similar, classify
from tools.rules.dates import today_in
from tools.rules.intent import Route, route

__all__ = ["OfflineProvider", "example_for_schema"]

Calls = list[tuple[str, dict[str, Any]]]


def _estimate_tokens(*texts: str) -> int:
    return sum(len(t) for t in texts) // 4


def _tool_chars(tools: Any) -> list[dict[str, Any]]:
    return [{"chars": len(json.dumps([[t.name, t.description, t.parameters] for t in tools]))}]


class OfflineProvider:
    def __init__(self, config: LLMConfig | None = None, *, today: date | None = None,
                 tz: str | tzinfo | None = None, similar: AnySimilar | None = None) -> None:
        """today: a fixed date (tests); else today in `tz` at each call (None: the machine's
        zone). similar: the classifier's nearest-example hook (sync or async), asked when the
        rules are unsure of a thought's category."""
        self.config = config or OFFLINE_CONFIG
        self.name = self.config.id
        self.model = self.config.model
        self.today = today
        self.tz = tz
        self.similar = similar
        self._tool_sizes = ToolPayloads(_tool_chars)

    def _today(self) -> date:
        return self.today or today_in(self.tz)

    async def complete(self, system: str, messages: list[Message], tools: list[ToolSpec],
                       tool_choice: ToolChoice = "auto",
                       options: RequestOptions | None = None) -> Completion:
        today = self._today()
        offered, choice = requested_tools(tools, tool_choice, options,
                                          self.config.default_tool_name)
        last = messages[-1] if messages else Message("user", "")
        user_text = without_files(  # the rules judge the message, not a file's text
            next((m.content or "" for m in reversed(messages) if m.role == "user"), ""))
        forced = isinstance(choice, NamedTool) or choice == "required"
        calls: Calls = []
        text: str | None
        if offered and choice != "none" and (forced or last.role == "user"):
            decided = await self._route(user_text, last_filed(messages), today)
            calls, text = self._calls(decided, user_text, offered, choice, today)
        elif last.role == "tool":
            instead = (await self._instead(last, user_text, messages, today)
                       if offered and choice != "none" else None)
            calls, text = (self._calls(instead, user_text, offered, choice, today)
                           if instead is not None else ([], summarise(last.tool_results)))
        elif last.role == "user":
            decided = await self._route(user_text, last_filed(messages), today)
            text = decided.text or _no_tool_text(decided)
        else:
            text = "OK."

        parsed: dict[str, Any] | None = None
        if options is not None and options.tool_schema is not None and calls:
            parsed = calls[0][1]
        if options is not None and options.response_schema is not None:
            value = example_for_schema(options.response_schema, user_text, today,
                                       self._hints(user_text, today))
            parsed = value if isinstance(value, dict) else parsed
            text = json.dumps(value)
        return self._completion(system, messages, offered, calls, text, parsed)

    async def _route(self, text: str, filed: FiledNote | None, today: date) -> Route:
        """The rules' decision; a capture they are unsure of asks `similar` once."""
        decided = route(text, filed=filed.path if filed else None, today=today)
        if self.similar is None or decided.tool != "classify_and_capture":
            return decided
        hints = (decided.arguments or {}).get("hints") or {}
        if float(hints.get("confidence", 1.0)) >= UNSURE:
            return decided
        found = await ask_similar(self.similar, text)
        if found is None:
            return decided
        return route(text, filed=filed.path if filed else None, today=today,
                     similar=lambda _text: found)

    async def _instead(self, last: Message, text: str, messages: list[Message],
                       today: date) -> Route | None:
        """A statement about a note that is not there ("the launch is done", no such note):
        the thought it is, to file instead; None otherwise."""
        if not any(r.is_error and r.name in CHANGES and '"not_found"' in r.content
                   for r in last.tool_results):
            return None
        return (await self._route(text, last_filed(messages), today)).or_else

    def _hints(self, text: str, today: date) -> dict[str, Any]:
        return classify(text, today=today).hints()

    def _calls(self, decided: Route, text: str, offered: list[ToolSpec], choice: ToolChoice,
               today: date) -> tuple[Calls, str | None]:
        """The calls of a first iteration, from the offered specs only."""
        specs = {t.name: t for t in offered}
        if isinstance(choice, NamedTool):
            spec = specs.get(choice.name)
            if spec is None:  # forced to a tool that is not offered: nothing valid to call
                return [], decided.text or _no_tool_text(decided)
            return [(spec.name, self._arguments(decided, spec, text, today))], None
        if decided.tool is not None and decided.tool in specs:
            fitted = fit_arguments(decided.arguments or {}, specs[decided.tool].parameters)
            if fitted is not None:
                return [(decided.tool, fitted)], None
        if choice == "required":  # some tool it must be: the routed one, else the first
            spec = specs.get(decided.tool or "") or offered[0]
            return [(spec.name, self._arguments(decided, spec, text, today))], None
        return [], decided.text or _no_tool_text(decided)

    def _arguments(self, decided: Route, spec: ToolSpec, text: str,
                   today: date) -> dict[str, Any]:
        """Our rules' arguments when they chose this tool and fit its schema; else a minimal
        object valid for the schema, filled from the text and its classification."""
        if decided.tool == spec.name and decided.arguments is not None:
            fitted = fit_arguments(decided.arguments, spec.parameters)
            if fitted is not None:
                return fitted
        value = example_for_schema(spec.parameters, text, today, self._hints(text, today))
        return value if isinstance(value, dict) else {}

    def _completion(self, system: str, messages: list[Message], tools: list[ToolSpec],
                    calls: Calls, text: str | None,
                    parsed: dict[str, Any] | None) -> Completion:
        tool_calls = tuple(
            ToolCall(id=f"offline_{len(messages)}_{i}", name=name, arguments=args,
                     raw_arguments=json.dumps(args))
            for i, (name, args) in enumerate(calls, start=1))
        prompt = [system]
        for m in messages:
            prompt.append(m.content or "")
            prompt.extend(c.raw_arguments for c in m.tool_calls)
            prompt.extend(r.content for r in m.tool_results)
        tool_tokens = self._tool_sizes.get(tools)[0]["chars"] // 4 if tools else 0
        usage = Usage(_estimate_tokens(*prompt) + tool_tokens,
                      _estimate_tokens(text or "", *(c.raw_arguments for c in tool_calls)))
        return Completion(text=text, tool_calls=tool_calls,
                          stop_reason="tool_use" if tool_calls else "end_turn",
                          usage=usage, model=self.model, parsed=parsed,
                          raw_stop_reason="tool_use" if tool_calls else "end_turn")


def _no_tool_text(decided: Route) -> str:
    """The answer when the tool the rules chose is not offered."""
    if decided.arguments and isinstance(decided.arguments.get("hints"), dict):
        hints = decided.arguments["hints"]
        return (f"I can't file notes right now; this reads like {hints.get('category')}: "
                f"{hints.get('name')}.")
    return "I can't look that up right now."
