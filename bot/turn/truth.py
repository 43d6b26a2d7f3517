"""Only true sentences about what happened.

A model may say it filed, moved or updated a note when no tool did (a small model copies the
bot's own receipts from the history, paths and all). Its reply is checked against this turn's
executions: a sentence that claims an effect no execution of the turn made, or names a note
path no execution of the turn returned, is dropped, and the reply says what really happened.
Tool syntax is never part of a reply either (`bot.llm.repair`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from bot.llm.repair import read_calls
from tools.registry import Execution

Effect = Literal["capture", "move", "update"]

NOTHING_DONE = "I haven't saved or changed anything for that message."

PATH = re.compile(r"\b(?:people|projects|ideas|admin|inbox|archive)/[\w.\-]+(?:\.md)?\b", re.I)
_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")
_CAPTURE = r"fil(?:e|ed|ing)|sav(?:e|ed|ing)|stor(?:e|ed|ing)|captur(?:e|ed|ing)|add(?:ed)?|" \
           r"put|creat(?:e|ed)|not(?:e|ed)|record(?:ed)?|logg?(?:ed)?|kept|remind(?:er)?"
_MOVE = r"mov(?:e|ed|ing)|re-?filed|recategori[sz]ed"
_UPDATE = r"renam(?:e|ed)|updat(?:e|ed)|chang(?:e|ed)|mark(?:ed)?|set|edit(?:ed)?"
_VERB = rf"(?P<verb>{_MOVE}|{_UPDATE}|{_CAPTURE})"
# First-person or passive claims of an effect, and receipt-like sentence openings.
_CLAIMS = (
    re.compile(r"\b(?:I|I've|I'?ll|I\s+have|I\s+will|I\s+just|we've|we\s+have)\s+(?:just\s+|now\s+"
               r"|also\s+|already\s+|gone\s+ahead\s+and\s+)?" + _VERB + r"\b", re.I),
    re.compile(r"\b(?:it|this|that|the\s+note|your\s+note|the\s+thought)(?:'s|\s+is|\s+has\s+"
               r"been|\s+was|\s+is\s+now|'s\s+now)\s+(?:now\s+|been\s+)?" + _VERB + r"\b", re.I),
    re.compile(r"^(?:\W*)" + _VERB + r"\b(?=\s+(?:to|in|as|it|the|your|under|into|:))", re.I),
)
_IN_VAULT = re.compile(r"\b(?:it'?s|it\s+is|is\s+now|now\s+in)\s+(?:now\s+)?in\s+(?:your|the)\s+"
                       r"(?:inbox|people|projects|ideas|admin)\b", re.I)


def _effect(verb: str) -> Effect:
    if re.fullmatch(_MOVE, verb, re.I):
        return "move"
    if re.fullmatch(_UPDATE, verb, re.I):
        return "update"
    return "capture"


def effects(executions: Sequence[Execution]) -> set[Effect]:
    """What this turn's successful executions did."""
    done: set[Effect] = set()
    for e in executions:
        if e.status != "ok" or e.output is None:
            continue
        kind = e.output.kind
        if kind in ("capture", "move", "update"):
            done.add(kind)  # type: ignore[arg-type]
    return done


def claims(sentence: str) -> set[Effect]:
    """The effects a sentence says happened (or will happen)."""
    found: set[Effect] = set()
    for pattern in _CLAIMS:
        for match in pattern.finditer(sentence):
            found.add(_effect(match.group("verb")))
    if _IN_VAULT.search(sentence):
        found.add("capture")
    return found


def _backed(claimed: set[Effect], done: set[Effect]) -> bool:
    for effect in claimed:
        if effect == "capture" and not done & {"capture", "update"}:
            return False
        if effect == "move" and "move" not in done:
            return False
        if effect == "update" and not done & {"update", "move"}:
            return False
    return True


def _known_paths(executions: Sequence[Execution]) -> str:
    """Everything the turn's tools returned, where a named path must be found."""
    parts = [e.content for e in executions]
    parts += [str(e.output.data) + e.output.text for e in executions if e.output is not None]
    return "\n".join(parts)


def untrue(sentence: str, executions: Sequence[Execution]) -> bool:
    """Does the sentence claim an effect, or name a path, that this turn's executions do not
    back?"""
    if not _backed(claims(sentence), effects(executions)):
        return True
    known = _known_paths(executions)
    return any(path.lower() not in known.lower() for path in PATH.findall(sentence))


def truthful(text: str, executions: Sequence[Execution]) -> tuple[str, bool]:
    """The reply with every untrue sentence dropped and what really happened said instead;
    and whether anything was dropped."""
    cleaned = read_calls(text, ())[0] or ""  # no tool syntax, whatever else is true
    kept: list[str] = []
    dropped = False
    for sentence in _SENTENCES.split(cleaned):
        if not sentence.strip():
            continue
        if untrue(sentence, executions):
            dropped = True
        else:
            kept.append(sentence.strip())
    if not dropped:
        return cleaned, cleaned != text
    real = [e.output.text for e in executions
            if e.status == "ok" and e.output is not None
            and e.output.kind in ("capture", "move", "update") and e.output.text]
    truth = "\n".join(real) if real else NOTHING_DONE
    return "\n".join([*kept, truth]).strip(), True
