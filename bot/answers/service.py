"""`brain.answers`: one question answered from one person's notes, for `brain ask` and the MCP
`ask` tool (a question in Slack or `brain chat` is a turn, which reaches the same tools).

With a model: the model searches (as often as it likes, in its own words), then answers
through the `answer` tool, whose citations are checked (tools/answers/cite.py); prose without
citations goes through the constrained final step (bot/answers/final.py). Without one: the
extractive answer (tools/ask_notes.py). A model that gives no answer (unreachable, a refused
key, searching until its budget is spent, saying nothing) gets the extractive answer too, with
a `notice` that says why the model did not answer.
"""

from __future__ import annotations

from typing import Any

from bot.answers.final import cite_prose
from bot.core import Core
from bot.llm.offline import OfflineProvider
from bot.llm.types import Provider, ToolCall, ToolSpec
from bot.turn import wording
from bot.turn.loop import LoopOutcome, run_turn
from bot.turn.tool_calls import ToolCalls
from tools.answers.model import NOT_FOUND_WITH_MODEL
from tools.registry import TOOLS, Execution, execute

READ_TOOLS = ("search_entries", "list_entries", "get_entry", "ask_notes", "list_backlinks")
SYSTEM = """You answer one question from the user's own notes (markdown files in categories
people, projects, ideas, admin, inbox). Search first (search_entries; reword and search again
if nothing fits), read what you need (get_entry), then call answer: each sentence with the id
of a note the tools returned and a short quote copied exactly from it. Say only what the notes
say. Today is {today}."""
MAX_ITERATIONS = 6
CAPPED = "the model kept searching without giving an answer"
SILENT = "the model gave no answer"


class Answers:
    def __init__(self, core: Core, tools: ToolCalls) -> None:
        self.core = core
        self.tools = tools

    async def ask(self, *, user_id: str, question: str, source: str = "cli") -> dict[str, Any]:
        """{"answer", "found", "sources": [{"id", "path", "name", "quote"}], ...}; with
        "notice" when a model was configured but the answer is the extractive one."""
        provider, _notice = await self.core.provider_for(user_id)  # the turn path says it
        trouble: str | None = None
        execution: Execution | None = None
        if not isinstance(provider, OfflineProvider):
            execution, trouble = await self._with_model(provider, user_id, question, source)
        if execution is None:
            execution = await self.tools.call(user_id=user_id, name="ask_notes",
                                              arguments={"question": question}, source=source)
        if execution.output is None:
            message = (execution.error or {}).get("message", "the question could not be read")
            raise ValueError(message)
        data = dict(execution.output.data)
        data.pop("question", None)
        if trouble is not None:
            data["notice"] = (f"{trouble[0].upper()}{trouble[1:]}, so this answer is quoted "
                              "from your notes without the model.")
        return data

    async def _with_model(self, provider: Provider, user_id: str, question: str,
                          source: str) -> tuple[Execution | None, str | None]:
        """The model's checked answer, or (None, why the model gave none)."""
        ctx = self.tools.context(user_id, source=source, message=question)
        specs = [ToolSpec(TOOLS[n].name, TOOLS[n].description, TOOLS[n].parameters)
                 for n in (*READ_TOOLS, "answer")]
        system = SYSTEM.format(today=self.core.today().isoformat())
        calls = 0

        async def run_call(call: ToolCall) -> Execution:
            nonlocal calls
            calls += 1
            # The result answers the model's own call id (a server refuses any other).
            return await execute(ctx, call.id or f"ask_{calls}", call.name, call.arguments,
                                 call.parse_error)

        outcome = await run_turn(provider, system=system, earlier=[],
                                 user_text=question, tools=specs, execute=run_call,
                                 max_iterations=MAX_ITERATIONS, terminal={"answer"},
                                 parallel=READ_TOOLS)
        failure = outcome.error
        if not _answered(outcome) and failure is None and outcome.text.strip():
            failure = await cite_prose(provider, system=system, earlier=[], outcome=outcome,
                                       execute=run_call)
        done = _answered(outcome)
        if done:
            return done[-1], None
        if failure is not None:
            return None, wording.problem(failure)
        if outcome.capped:
            return None, CAPPED
        if not outcome.text.strip():
            return None, SILENT
        # The model answered, but not in a form its notes back: nothing is claimed.
        return await execute(ctx, "ask_none", "answer", {
            "sentences": [{"text": NOT_FOUND_WITH_MODEL, "citations": []}]}), None


def _answered(outcome: LoopOutcome) -> list[Execution]:
    return [e for e in outcome.executions if e.tool == "answer" and e.output is not None]
