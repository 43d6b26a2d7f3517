"""The 30-message script (issue 24) driven through `brain chat --json` as a real process, and
what it showed: lost thoughts, untruthful replies, tool syntax shown, corrections filed as
notes, "can't reach the model" while the server was up, and how much the model did itself.

The checks are written here, apart from the bot's own (bot/replies, bot/llm/repair), so a bug
there cannot hide itself: a path a reply names must be one this turn's tools returned, a reply
that says it filed/moved/updated needs a tool run that did, and so on.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

# (kind, message). Corrections follow the thought they correct (the conversation's last note).
SCRIPT: list[tuple[str, str]] = [
    ("thought", "Renew the car insurance before March 20"),
    ("correction", "Rename it to Car insurance"),
    ("thought", "Call Sara about the Q3 budget on Friday"),
    ("question", "what are my projects?"),
    ("thought", "Idea: a weekly newsletter of what the team shipped"),
    ("correction", "make it a project"),
    ("thought", "Book the dentist appointment for next Tuesday"),
    ("correction", "actually it's due on the 20th"),
    ("smalltalk", "hello"),
    ("thought", "Project Apollo: migrate the billing service to the new cluster by December"),
    ("question", "what's in my inbox?"),
    ("thought", "Priya mentioned she wants to move to the data team"),
    ("question", "who is Priya?"),
    ("thought", "Buy a birthday present for Tom before Saturday"),
    ("correction", "mark it done"),
    ("question", "find the note about the dentist"),
    ("thought", "Could we gamify code reviews with a leaderboard?"),
    ("thought", "Pay the electricity bill by the 30th"),
    ("question", "list my ideas"),
    ("thought", "Ask Marco for feedback on the onboarding doc"),
    ("digest", "digest"),
    ("thought", "Plan the team offsite in Lisbon for spring"),
    ("question", "what did I note about Lisbon?"),
    ("thought", "Renew the passport before the Lisbon trip"),
    ("question", "anything about Tom?"),
    ("thought", "Try a standing desk for a month"),
    ("question", "what are my admin tasks?"),
    ("thought", "Follow up with the landlord about the heating repair"),
    ("digest", "weekly review"),
    ("thought", "Submit the expense report for the conference by Friday"),
]

LOOKUPS = {"search_entries", "list_entries", "get_entry", "list_backlinks", "related",
           "generate_digest"}
KEEPING = {"classify_and_capture", "move_entry", "update_entry"}
# What no reply to a person may hold: tool-call syntax, fake results, chat-template tags.
SYNTAX = re.compile(r"<\|[^|>]*\|>|</?tool_call>|</?tool_response>|\bfunctions\.\w+|"
                    r"\"(?:arguments|parameters|tool_call_id)\"\s*:|\[TOOL_CALLS\]|"
                    r"\[app receipt", re.I)
PATH = re.compile(r"\b(?:people|projects|ideas|admin|inbox)/[\w.\-]+\.md\b")
CLAIM = {
    "capture": re.compile(r"\b(?:filed|saved|stored|captured|in your inbox|noted)\b", re.I),
    "move": re.compile(r"\bmoved\b", re.I),
    "update": re.compile(r"\b(?:updated|renamed|marked)\b", re.I),
}
BY_APP = ("rescue", "rule_fix", "direct_fix")  # call ids of what the app did, not the model
UNREACHABLE = re.compile(r"can'?t reach the (?:language )?model", re.I)


@dataclass
class Turn:
    kind: str
    message: str
    reply: str
    seconds: float
    tools: list[dict[str, Any]]
    llm_calls: int
    outage: str | None
    problems: list[str] = field(default_factory=list)


@dataclass
class Figures:
    messages: int = 0
    thoughts: int = 0
    lost: int = 0
    untruthful: int = 0
    syntax_shown: int = 0
    corrections_filed_as_notes: int = 0
    unreachable_while_up: int = 0
    model_filed: int = 0  # thoughts the model itself filed
    questions: int = 0
    answered_from_tool: int = 0  # questions the model answered after a lookup of its own
    corrections_applied: int = 0
    seconds: float = 0.0
    llm_calls: int = 0
    turns: list[Turn] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if k != "turns"}
        out["model_filed_share"] = round(self.model_filed / max(self.thoughts, 1), 2)
        out["answered_from_tool_share"] = round(self.answered_from_tool / max(self.questions, 1),
                                                2)
        out["seconds_per_message"] = round(self.seconds / max(self.messages, 1), 1)
        return out


def _ok(turn: Turn, names: set[str]) -> list[dict[str, Any]]:
    return [t for t in turn.tools if t["status"] == "ok" and t["tool"] in names]


def _returned(turn: Turn) -> str:
    return json.dumps([t.get("result") for t in turn.tools], ensure_ascii=False)


def check(turn: Turn) -> None:
    """The problems a person would see in this turn's reply."""
    reply = turn.reply
    if SYNTAX.search(reply):
        turn.problems.append("syntax")
    returned = _returned(turn)
    for path in PATH.findall(reply):
        if path not in returned:
            turn.problems.append(f"untrue: names {path}, which no tool of the turn returned")
    kinds = {"capture": {"classify_and_capture", "update_entry"}, "move": {"move_entry"},
             "update": {"update_entry", "move_entry"}}
    for effect, pattern in CLAIM.items():
        if pattern.search(reply) and not _ok(turn, kinds[effect]) \
                and not re.search(r"\b(?:nothing|not|haven't|didn't)\b.{0,30}"
                                  + pattern.pattern, reply, re.I):
            turn.problems.append(f"untrue: says {effect} but no tool did it")
    if turn.kind == "correction" and any(t["tool"] == "classify_and_capture"
                                         and t["status"] == "ok" for t in turn.tools):
        turn.problems.append("correction filed as a note")


def run_chat(env: dict[str, str], data_dir: Path, messages: list[tuple[str, str]],
             timeout: float) -> list[Turn]:
    """Every message through one `brain chat --json` process, one conversation."""
    full = {**os.environ, **env, "BRAIN_DATA_DIR": str(data_dir)}
    process = subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "chat", "--new", "--json"], cwd=ROOT, env=full,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write("".join(m + "\n" for _, m in messages))
    process.stdin.close()
    turns: list[Turn] = []
    started = time.monotonic()
    last = started
    try:
        for kind, message in messages:
            data = _next_document(process.stdout)
            if data is None:
                break
            now = time.monotonic()
            turns.append(Turn(kind, message, data.get("text") or "", round(now - last, 1),
                              data.get("tools") or [], int(data.get("llm_calls") or 0),
                              data.get("outage")))
            last = now
            if now - started > timeout:
                break
        process.wait(timeout=max(timeout - (time.monotonic() - started), 10))
    except subprocess.TimeoutExpired:
        pass
    finally:
        if process.poll() is None:  # stopped half-way (a timeout, a signal): end it too
            process.kill()
            process.wait()
    if len(turns) < len(messages):
        raise RuntimeError(f"brain chat answered {len(turns)} of {len(messages)} messages: "
                           + (process.stderr.read()[-2000:] if process.stderr else ""))
    return turns


def _next_document(stream: Any) -> dict[str, Any] | None:
    """The next JSON document `brain chat --json` printed (indented: it ends with a '}' line)."""
    lines: list[str] = []
    for line in stream:
        lines.append(line)
        if line.startswith("}"):
            value = json.loads("".join(lines))
            return value if isinstance(value, dict) else None
    return None


def vault_text(data_dir: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8", errors="replace")
                     for p in (data_dir / "vaults").rglob("*.md")
                     if "/.trash/" not in p.as_posix())


def score(turns: list[Turn], data_dir: Path, server_up: bool) -> Figures:
    figures = Figures(messages=len(turns))
    vault = vault_text(data_dir)
    for turn in turns:
        check(turn)
        figures.seconds += turn.seconds
        figures.llm_calls += turn.llm_calls
        if turn.kind == "thought":
            figures.thoughts += 1
            if turn.message not in vault:
                turn.problems.append("lost: the thought is in no note")
            if any(t["tool"] == "classify_and_capture" and t["status"] == "ok"
                   and not str(t.get("call_id")).startswith(BY_APP) for t in turn.tools):
                figures.model_filed += 1
        if turn.kind == "question":
            figures.questions += 1
            if _ok(turn, LOOKUPS) and turn.reply.strip():
                figures.answered_from_tool += 1
        if turn.kind == "correction" and _ok(turn, {"move_entry", "update_entry"}):
            figures.corrections_applied += 1
        if server_up and UNREACHABLE.search(turn.reply):
            turn.problems.append("said it can't reach the model while the server was up")
        figures.lost += any(p.startswith("lost") for p in turn.problems)
        figures.untruthful += any(p.startswith("untrue") for p in turn.problems)
        figures.syntax_shown += "syntax" in turn.problems
        figures.corrections_filed_as_notes += "correction filed as a note" in turn.problems
        figures.unreachable_while_up += any("can't reach" in p for p in turn.problems)
    figures.seconds = round(figures.seconds, 1)
    figures.turns = turns
    return figures
