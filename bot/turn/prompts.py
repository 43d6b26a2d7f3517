"""The system prompt: role, tool guidance, today's date, a bounded vault summary, and the
notes filed in this conversation (so "actually that's a project" finds the right note)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from bot.llm.types import CONTEXT_HEADING
from storage.types import VaultSummary
from tools.capture.fence import RULE

FILED_HEADING = "Notes filed in this conversation:"
MAX_FILED = 10  # the prompt stays bounded however long the thread is


@dataclass(frozen=True)
class FiledNote:
    path: str
    id: str
    name: str


ROLE = """You are Second Brain, a personal knowledge-capture assistant in Slack.
The user sends thoughts to file and questions about their notes. Notes are markdown files in
categories: people, projects, ideas, admin, and inbox (unsure, waiting for review)."""

GUIDANCE = """How to act:
- A thought, task, reminder or fact to remember: call classify_and_capture once with hints
  (category, confidence 0-1, a short name, and the category's fields: next_action, due_date
  YYYY-MM-DD, follow_ups, one_liner, context). Be honest about confidence; below {threshold}
  it goes to the inbox. Do not also reply: the filed card is the answer.
- "actually that's a project", "fix: people", "make it admin": move_entry on the note filed in
  this conversation (its path below), then update_entry for any new field (e.g. a due date).
- Questions about notes: search_entries (words, names, meaning; reword and search again if
  needed), list_entries (by category/status), ask_notes (sentences that answer it), get_entry
  for details. Then call answer: each sentence with the id of a note those tools returned and
  a short quote copied exactly from it. Never invent notes; uncited claims are removed.
- "what links to X": list_backlinks. "digest"/"review": generate_digest.
- Destructive tools need an exact path or id; if a tool returns candidates, ask which one.
- Greetings and small talk: answer in one line, no tool.
- {data_rule}"""


def system_prompt(*, now: datetime, summary: VaultSummary, filed: Sequence[FiledNote],
                  threshold: float, viewing: str | None = None) -> str:
    """`viewing`: the Slack channel the person has open beside an assistant thread."""
    # What changes from message to message comes last, under its heading (CONTEXT_HEADING):
    # the start of the prompt stays the same, which a server's prompt cache reuses.
    parts = [ROLE, GUIDANCE.format(threshold=threshold, data_rule=RULE),
             f"{CONTEXT_HEADING}\nToday is {now:%A %Y-%m-%d}, {now:%H:%M} "
             f"({now.tzname() or 'UTC'})."]
    if viewing:
        parts.append(f"In Slack the person is viewing the channel <#{viewing}> (id {viewing}) "
                     "beside this conversation; \"this channel\" means that one.")
    counts = ", ".join(f"{k} {v}" for k, v in summary.counts.items() if v)
    vault = f"The vault has {summary.total} notes" + (f" ({counts})." if counts else ".")
    if summary.active_projects:
        vault += " Active projects include: " + "; ".join(summary.active_projects) + "."
    if summary.inbox_waiting == 1:
        vault += " 1 inbox note waits for review."
    elif summary.inbox_waiting:
        vault += f" {summary.inbox_waiting} inbox notes wait for review."
    parts.append(vault)
    recent = list(filed)[-MAX_FILED:]
    if recent:
        lines = [FILED_HEADING] + [f"- {n.path} (id {n.id}): {n.name}" for n in recent]
        parts.append("\n".join(lines) + "\n(most recent last)")
    return "\n\n".join(parts)
