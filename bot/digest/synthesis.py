"""From DigestData to a Digest: one LLM call with the output schema injected, validation,
one repair retry, and a deterministic offline digest when the LLM cannot help.

Validation has two layers. The answer must match the JSON schema (else one repair call with the
errors in the prompt, then the offline digest). Then every id an item names must be in the data:
unknown ids are dropped and reported as `gaps`; an item left without ids is dropped, so nothing
the notes do not hold is shown as fact.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from jsonschema import Draft202012Validator

from bot.digest.model import (
    MAX_ITEMS,
    SECTIONS,
    TITLES,
    WORD_LIMITS,
    Digest,
    DigestData,
    Item,
    NoteRef,
)
from bot.digest.render import finish
from bot.llm.types import LLMError, Message, Provider, RequestOptions

log = logging.getLogger(__name__)

MAX_ITEM_WORDS = 25
MAX_IDS = 5

_GUIDE = {
    "top_actions": "at most 3 concrete next steps for today, most urgent first "
                   "(overdue admin, due today, next actions of active projects)",
    "people": "who to connect with today and why (open follow-ups)",
    "watch_out": "what is overdue, stuck or piling up (e.g. the inbox)",
    "small_win": "one quick thing that can be finished today",
    "suggested_focus": "what to focus on next week",
    "moved_forward": "projects that moved this week (status changes)",
    "open_loops": "projects waiting, blocked or untouched for two weeks",
    "patterns": "patterns in this week's captures (topics, categories)",
    "needs_review": "notes waiting for review (inbox, unsure captures)",
}


def _item_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["text", "ids"],
        "properties": {
            "text": {"type": "string", "description": "one short plain sentence"},
            "ids": {"type": "array", "minItems": 1, "maxItems": MAX_IDS,
                    "items": {"type": "string"},
                    "description": "ids of the notes this item is about, copied from the data"},
        },
    }


def output_schema(kind: str) -> dict[str, Any]:
    """The structured-output schema of one digest kind (every key required, no extras)."""
    keys = SECTIONS[kind]
    return {
        "type": "object",
        "additionalProperties": False,
        "required": list(keys),
        "properties": {
            k: {"type": "array", "maxItems": MAX_ITEMS[k], "items": _item_schema(),
                "description": _GUIDE[k]}
            for k in keys
        },
    }


def system_prompt(kind: str) -> str:
    sections = "\n".join(f"- {k} ({TITLES[k]}): {_GUIDE[k]}" for k in SECTIONS[kind])
    return (
        f"You write a {kind} review for one person from the notes of their second brain.\n"
        "Use only the data given. Each item is {\"text\", \"ids\"}: `text` is one short plain "
        f"sentence (at most {MAX_ITEM_WORDS} words, no markdown) and `ids` are the `id`s of the "
        "notes it is about, copied exactly from the data. Never invent ids, names or facts. "
        "Leave a section empty when nothing fits.\n"
        f"Sections:\n{sections}\n"
        f"The whole {kind} digest must stay under {WORD_LIMITS[kind]} words."
    )


def _clip_words(text: str) -> str:
    words = text.split()
    if len(words) <= MAX_ITEM_WORDS:
        return " ".join(words)
    return " ".join(words[:MAX_ITEM_WORDS]) + "…"


def schema_errors(answer: Any, kind: str) -> list[str]:
    validator = Draft202012Validator(output_schema(kind))
    errors = sorted(validator.iter_errors(answer), key=lambda e: list(e.absolute_path))
    out = []
    for err in errors[:10]:
        where = "/".join(str(p) for p in err.absolute_path) or "(root)"
        out.append(f"{where}: {err.message}")
    return out


def check_ids(answer: dict[str, Any], kind: str,
              known: dict[str, str]) -> tuple[dict[str, tuple[Item, ...]], tuple[str, ...]]:
    """Keep only known ids; drop items left with none. Returns (sections, unknown ids)."""
    gaps: list[str] = []
    sections: dict[str, tuple[Item, ...]] = {}
    for key in SECTIONS[kind]:
        items: list[Item] = []
        for raw in answer.get(key, []):
            ids = tuple(dict.fromkeys(str(i) for i in raw["ids"]))
            good = tuple(i for i in ids if i in known)
            gaps.extend(i for i in ids if i not in known and i not in gaps)
            text = _clip_words(str(raw["text"]))
            if good and text:
                items.append(Item(text, good))
        sections[key] = tuple(items[: MAX_ITEMS[key]])
    return sections, tuple(gaps)


def _parse(text: str | None, parsed: dict[str, Any] | None) -> Any:
    if parsed is not None:
        return parsed
    if not text:
        raise ValueError("the answer was empty")
    body = text.strip()
    if body.startswith("```"):  # a fenced block despite the schema
        body = body.strip("`").removeprefix("json").strip()
    try:
        return json.loads(body)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the answer is not JSON ({exc.msg} at char {exc.pos})") from exc


async def _ask_llm(data: DigestData, provider: Provider) -> tuple[dict[str, Any], int] | None:
    """The validated answer and the number of calls made, or None to fall back offline."""
    kind = data.kind
    options = RequestOptions(response_schema=output_schema(kind),
                             response_name=f"{kind}_digest", max_tokens=1200)
    prompt = json.dumps(data.to_prompt(), ensure_ascii=False)
    messages = [Message(role="user", content=f"Write my {kind} digest from this data:\n{prompt}")]
    for attempt in (1, 2):
        completion = await provider.complete(system_prompt(kind), messages, [], "auto", options)
        try:
            answer = _parse(completion.text, completion.parsed)
            errors = schema_errors(answer, kind)
        except ValueError as exc:
            errors = [str(exc)]
        if not errors:
            return answer, attempt
        # The problems quote the model's text (the user's notes): counted here, not logged.
        log.warning("digest answer failed validation (attempt %d): %d problem(s)", attempt,
                    len(errors))
        messages = [
            *messages,
            Message(role="assistant", content=completion.text or json.dumps(completion.parsed)),
            Message(role="user", content=(
                "That answer does not match the required JSON schema:\n- "
                + "\n- ".join(errors)
                + "\nAnswer again with only a JSON object that matches the schema.")),
        ]
    return None


async def synthesize(data: DigestData, provider: Provider) -> Digest:
    """One LLM call (plus at most one repair); the offline digest when that fails."""
    known = data.names()
    if provider.name != "offline" and not data.is_empty():
        try:
            result = await _ask_llm(data, provider)
        except LLMError as exc:
            log.warning("digest LLM unavailable (%s): %s", exc.kind, exc.message)
            result = None
        if result is not None:
            sections, gaps = check_ids(result[0], data.kind, known)
            return finish(Digest(kind=data.kind, date=data.today, sections=sections,
                                 names=known, source="llm", gaps=gaps,
                                 counts=dict(data.capture_counts)))
    return finish(offline_digest(data))


# -- the deterministic digest ---------------------------------------------------------------


def _action(note: NoteRef) -> str:
    return note.next_action or note.name


def _admin_line(note: NoteRef, data: DigestData) -> str:
    if note.due_date and note.due_date < data.today.isoformat():
        return f"Overdue since {note.due_date}: {_action(note)}"
    return f"Due today: {_action(note)}"


def _daily(data: DigestData) -> dict[str, list[Item]]:
    top: list[Item] = [Item(_admin_line(n, data), (n.ref,)) for n in data.admin]
    top += [Item(f"{n.name}: {n.next_action}", (n.ref,)) for n in data.projects if n.next_action]
    people = [Item(f"Follow up with {n.name}: {n.follow_ups[0]}", (n.ref,))
              for n in data.people if n.follow_ups]
    watch: list[Item] = []
    more_admin = data.admin[3:]
    if more_admin:
        watch.append(Item(f"{data.totals.get('admin', len(data.admin)) - 3} more admin tasks "
                          "are due or overdue", tuple(n.ref for n in more_admin[:MAX_IDS])))
    if data.inbox:
        total = data.totals.get("inbox", len(data.inbox))
        watch.append(Item(f"{total} inbox note{'s' if total != 1 else ''} waiting for review",
                          tuple(n.ref for n in data.inbox[:MAX_IDS])))
    stuck = [n for n in data.projects if not n.next_action]
    if stuck:
        watch.append(Item(f"{stuck[0].name} has no next action", (stuck[0].ref,)))
    win: list[Item] = []
    if data.captures:
        n = len(data.captures)
        win.append(Item(f"You captured {n} thought{'s' if n != 1 else ''} yesterday",
                        tuple(dict.fromkeys(c.ref for c in data.captures))[:MAX_IDS]))
    elif len(top) > 3:
        win.append(Item(f"Quick step: {top[3].text}", top[3].ids))
    return {"top_actions": top, "people": people, "watch_out": watch, "small_win": win}


def _loop_line(note: NoteRef) -> str:
    if note.status == "blocked":
        return f"Unblock {note.name}"
    if note.status == "waiting":
        return f"Check on {note.name} (waiting)"
    return f"Restart or park {note.name} (untouched since {note.updated or 'long ago'})"


def _weekly(data: DigestData) -> dict[str, list[Item]]:
    loops = [Item(_loop_line(n), (n.ref,)) for n in data.open_loops]
    focus = loops[:2]
    moved = [Item(f"{n.name} is now {n.status or 'changed'}", (n.ref,))
             for n in data.changed_projects]
    patterns: list[Item] = []
    if data.capture_counts:
        cat, count = max(data.capture_counts.items(), key=lambda kv: (kv[1], kv[0]))
        total = sum(data.capture_counts.values())
        refs = tuple(dict.fromkeys(c.ref for c in data.captures if c.category == cat))
        if refs:
            patterns.append(Item(f"Most captures were {cat} ({count} of {total})",
                                 refs[:MAX_IDS]))
    review = [Item(f"{n.name}: {n.detail}" if n.detail else n.name, (n.ref,))
              for n in data.needs_review]
    return {"suggested_focus": focus, "moved_forward": moved, "open_loops": loops[2:],
            "patterns": patterns, "needs_review": review}


def offline_digest(data: DigestData) -> Digest:
    """The same structure, built by rules from the same data (no LLM)."""
    raw = _daily(data) if data.kind == "daily" else _weekly(data)
    sections = {k: tuple(Item(_clip_words(i.text), i.ids) for i in raw[k][: MAX_ITEMS[k]])
                for k in SECTIONS[data.kind]}
    return Digest(kind=data.kind, date=data.today, sections=sections, names=data.names(),
                  source="offline", counts=dict(data.capture_counts))
