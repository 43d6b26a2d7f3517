"""answer: the model's final step on a question: the answer, sentence by sentence, each with
the notes it came from (a note id or path a tool returned in this turn, and a short exact
quote). Checked before anyone sees it (tools/answers/cite.py); the result renders itself.
"""

from __future__ import annotations

from typing import Any

from storage.errors import StorageError
from storage.types import Entry
from tools.answers.cite import checked
from tools.base import Tool, ToolContext, ToolOutput

CITATION: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "minLength": 1, "maxLength": 300},
        "quote": {"type": "string", "minLength": 1, "maxLength": 500},
    },
    "required": ["id", "quote"],
    "additionalProperties": False,
}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "sentences": {
            "type": "array", "minItems": 1, "maxItems": 12,
            "items": {
                "type": "object",
                "properties": {
                    "text": {"type": "string", "minLength": 1, "maxLength": 1000},
                    "citations": {"type": "array", "maxItems": 5, "items": CITATION},
                },
                "required": ["text", "citations"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["sentences"],
    "additionalProperties": False,
}

DESCRIPTION = (
    "The final answer to a question about the notes, sentence by sentence, each citing the id "
    "of a note a tool returned this turn and a short quote copied exactly from it. Uncited "
    "claims are removed."
)


async def run(ctx: ToolContext, args: dict[str, Any]) -> ToolOutput:
    async def read(ref: str) -> Entry | None:
        try:
            return await ctx.deps.store.get(ref)
        except StorageError:
            return None

    question = ctx.message or ""
    answer = await checked(question, args["sentences"], ctx.returned, read)
    data = answer.to_dict()
    data["question"] = question
    return ToolOutput(kind="answer", data=data, text=answer.text)


TOOL = Tool(name="answer", description=DESCRIPTION, parameters=SCHEMA, run=run, terminal=True,
            internal=True)
