"""The question sets of bench/answer_questions.yaml and the captures vault they ask about
(bench/captures_vault.yaml), for bench/bench_answers.py and the answer tests."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = ROOT / "bench" / "answer_questions.yaml"
CAPTURES = ROOT / "bench" / "captures_vault.yaml"
REAL_VAULT = ROOT.parent / "shared" / "data" / "real-vault"
TODAY = date(2026, 11, 25)  # the day the questions are asked (a Wednesday)


@dataclass(frozen=True)
class Asked:
    question: str
    expect: tuple[str, ...]  # notes any one of which answers it; () = nothing should be found

    @property
    def answerable(self) -> bool:
        return bool(self.expect)


def questions(vault: str) -> list[Asked]:
    """The questions of one set ("real" or "captures")."""
    raw = yaml.safe_load(QUESTIONS.read_text(encoding="utf-8"))
    return [Asked(str(q["q"]), tuple(q["expect"])) for q in raw[vault]]


def write_captures(root: Path) -> Path:
    """Write the captures vault under `root` (as the bot's own notes look) and return it."""
    raw: dict[str, Any] = yaml.safe_load(CAPTURES.read_text(encoding="utf-8"))
    for n, note in enumerate(raw["notes"], start=1):
        path = root / note["path"]
        path.parent.mkdir(parents=True, exist_ok=True)
        fields = {"id": f"e_capture{n:03d}", **note["fields"], "created": "2026-11-01T09:00:00Z",
                  "updated": "2026-11-20T09:00:00Z", "source": "cli"}
        front = yaml.safe_dump(fields, sort_keys=False, allow_unicode=True)
        path.write_text(f"---\n{front}---\n\n{note['body']}", encoding="utf-8")
    return root
