"""The model's answer checked against the notes: every citation must name a note a tool
returned in this turn and quote that note's own text; a citation that fails is dropped, a
sentence left with none is removed, and an answer left with none says nothing was found.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from storage.types import Entry
from tools.answers.model import NOT_FOUND_WITH_MODEL, Answer, Source, nothing_found
from tools.answers.sentences import quote_in

Reader = Callable[[str], Awaitable[Entry | None]]


async def checked(question: str, sentences: list[dict[str, Any]], returned: dict[str, Any],
                  read: Reader) -> Answer:
    """`sentences`: [{"text", "citations": [{"id", "quote"}]}] as the model gave them;
    `returned`: the notes tools returned this turn, by id and by path."""
    kept: list[str] = []
    sources: list[Source] = []
    dropped: list[str] = []
    for sentence in sentences:
        text = str(sentence.get("text") or "").strip()
        survived = 0
        for cite in sentence.get("citations") or []:
            ref, quote = str(cite.get("id") or ""), str(cite.get("quote") or "")
            if ref not in returned:
                dropped.append(f"{ref!r}: not a note this turn's tools returned")
                continue
            entry = await read(ref)
            if entry is None:
                dropped.append(f"{ref!r}: no such note")
                continue
            if not quote_in(quote, entry):
                dropped.append(f"{ref!r}: the quote is not in the note")
                continue
            survived += 1
            source = Source.of(entry, quote.strip())
            if source not in sources:
                sources.append(source)
        if survived and text:
            kept.append(text)
    if not kept:
        near = list({n["path"]: n for n in returned.values()}.values())[:3]
        answer = nothing_found(question, near, what=NOT_FOUND_WITH_MODEL)
        return Answer(answer.question, answer.text, False, [], answer.closest, dropped)
    return Answer(question, " ".join(kept), True, sources, dropped=dropped)
