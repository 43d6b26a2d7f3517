"""ask_notes: answer a question from the notes, without a model: the sentences that answer it,
each quoted from its note (tools/answers/extract.py), or "nothing found" with the closest
notes. The offline provider answers questions with it; a model may use it to gather quotes.
"""

from __future__ import annotations

from typing import Any

from tools.answers.extract import extractive
from tools.answers.question import read_question
from tools.base import Tool, ToolContext, ToolOutput
from tools.rules.dates import today_in

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "question": {"type": "string", "minLength": 1, "maxLength": 1000},
    },
    "required": ["question"],
    "additionalProperties": False,
}

DESCRIPTION = (
    "Sentences from the notes that answer a question, each with its note, or that nothing was "
    "found. \"due this week\", \"overdue\", \"blocked\" in it are filters."
)


async def run(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    question = read_question(args["question"], today_in(ctx.deps.tz))
    answer = await extractive(ctx.deps.store, question)
    data = answer.to_dict()
    data["question"] = args["question"]
    return ToolOutput(kind="answer", data=data, text=answer.text)


TOOL = Tool(name="ask_notes", description=DESCRIPTION, parameters=SCHEMA, run=run,
            terminal=True)
