"""The offline classifier on realistic thoughts: category, names, due dates, routing.

    python bench/bench_classifier.py [--verbose]

Every thought of tests/tools/thoughts.yaml goes through the offline provider with the real
tool specs, exactly as a DM does without a model key, and the hints of its
`classify_and_capture` call are scored against what a careful human would file:

- category: the folder it lands in (a confidence below the 0.6 threshold is the inbox; a
  thought the router does not capture at all counts as a miss);
- sensible name: contains the subject's key words (a person's name exactly), at most 7 words,
  no date phrase, no filler lead ("I need to", "Remember that");
- due date: exactly the expected date, or none when the text names none; a date where the text
  names none is a false due date.

The questions of the file must route to their tool, never to a capture. The file's `holdout`
thoughts were written after the rules were tuned on `thoughts`; both sets are reported.
Targets: category >= 80 %, names >= 80 %, due dates >= 90 %, 0 false due dates.

With `--similar`, the classifier's nearest-labelled-examples hook runs as the Brain wires it
(bot/stores.py: the nearest filed notes of the user's own vault by meaning, the real
model and database): the vault holds the *other* set's thoughts filed where they belong (for
`thoughts`, the `holdout` ones, and the other way round), so no thought is its own example.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.llm.offline import OfflineProvider  # noqa: E402
from bot.llm.types import Message, ToolSpec  # noqa: E402
from tools.registry import tool_specs  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "tests" / "tools" / "thoughts.yaml"
THRESHOLD = 0.6
MAX_WORDS = 7
_STOP = frozenset({"the", "a", "an", "of", "for", "to", "on", "in", "with", "and", "our", "my",
                   "about", "set", "s"})
_DATE_WORDS = re.compile(
    r"\b(?:today|tonight|tomorrow|yesterday|next\s+week|monday|tuesday|wednesday|thursday|"
    r"friday|saturday|sunday|january|february|march|april|june|july|august|september|"
    r"october|november|december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec|"
    r"end\s+of\s+the\s+month|\d{4}-\d{2}-\d{2}|in\s+\w+\s+(?:days?|weeks?))\b", re.I)
_FILLER = re.compile(r"^(?:i\s+(?:need|have|want|should|must)|need\s+to|remember|don'?t\s+"
                     r"forget|note|todo|reminder|thought|idea)\b", re.I)


@dataclass
class Row:
    text: str
    expected: dict[str, Any]
    tool: str | None = None
    category: str | None = None
    name: str = ""
    due: str | None = None
    category_ok: bool = False
    name_ok: bool = False
    due_ok: bool = False
    false_due: bool = False


@dataclass
class Report:
    rows: list[Row] = field(default_factory=list)
    question_misses: list[tuple[str, str, str | None]] = field(default_factory=list)
    questions: int = 0

    def share(self, attr: str) -> float:
        return sum(getattr(r, attr) for r in self.rows) / len(self.rows)

    @property
    def dated(self) -> list[Row]:
        return [r for r in self.rows if r.expected.get("due")]

    @property
    def due_accuracy(self) -> float:
        return sum(r.due_ok for r in self.dated) / max(1, len(self.dated))

    @property
    def false_dues(self) -> int:
        return sum(r.false_due for r in self.rows)


def load(path: Path = DATA) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    for item in [*data["thoughts"], *data.get("holdout", [])]:  # YAML reads dates as dates
        if isinstance(item.get("due"), date):
            item["due"] = item["due"].isoformat()
    return data


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def sensible_name(name: str, expected: dict[str, Any]) -> bool:
    if not name or len(name) > 60:
        return False
    if expected["category"] == "people":
        return words(name) == words(expected["name"])
    key = expected.get("key") or [w for w in words(expected["name"]) if w not in _STOP]
    got = " ".join(words(name))
    if not all(re.search(rf"\b{re.escape(' '.join(words(k)))}", got) for k in key):
        return False
    return (len(name.split()) <= MAX_WORDS and not _DATE_WORDS.search(name)
            and not _FILLER.match(name))


async def evaluate(path: Path = DATA, section: str = "thoughts",
                   similar: Any = None) -> Report:
    """Score the thoughts of `section` ("thoughts" or "holdout") and the questions."""
    data = load(path)
    today: date = data["today"]
    provider = OfflineProvider(today=today, similar=similar)
    specs = [ToolSpec(s["name"], s["description"], s["parameters"]) for s in tool_specs()]
    report = Report()
    for item in data[section]:
        row = Row(item["text"], item)
        completion = await provider.complete("", [Message("user", item["text"])], specs)
        call = completion.tool_calls[0] if completion.tool_calls else None
        row.tool = call.name if call else None
        if call is not None and call.name == "classify_and_capture" and call.arguments:
            hints = call.arguments.get("hints") or {}
            confident = float(hints.get("confidence", 0)) >= THRESHOLD
            row.category = str(hints.get("category")) if confident else "inbox"
            row.name = str(hints.get("name") or "")
            row.due = hints.get("due_date")
        row.category_ok = row.category == item["category"]
        row.name_ok = row.tool == "classify_and_capture" and sensible_name(row.name, item)
        row.due_ok = row.tool == "classify_and_capture" and row.due == item.get("due")
        row.false_due = row.due is not None and row.due != item.get("due")
        report.rows.append(row)
    for item in data.get("questions") or []:
        report.questions += 1
        completion = await provider.complete("", [Message("user", item["text"])], specs)
        tool = completion.tool_calls[0].name if completion.tool_calls else None
        if tool != item["tool"]:
            report.question_misses.append((item["text"], item["tool"], tool))
    return report


def print_report(report: Report, verbose: bool = False) -> None:
    n = len(report.rows)
    print(f"thoughts: {n}, with a due date: {len(report.dated)}, questions: {report.questions}")
    print(f"category accuracy : {report.share('category_ok'):6.1%}  "
          f"({sum(r.category_ok for r in report.rows)}/{n})  target >= 80 %")
    print(f"sensible names    : {report.share('name_ok'):6.1%}  "
          f"({sum(r.name_ok for r in report.rows)}/{n})  target >= 80 %")
    print(f"due dates         : {report.due_accuracy:6.1%}  "
          f"({sum(r.due_ok for r in report.dated)}/{len(report.dated)})  target >= 90 %")
    print(f"false due dates   : {report.false_dues}  target 0")
    print(f"questions routed  : {report.questions - len(report.question_misses)}"
          f"/{report.questions}")
    if not verbose:
        return
    for r in report.rows:
        marks = "".join("." if ok else x for ok, x in
                        ((r.category_ok, "C"), (r.name_ok, "N"),
                         (r.due_ok or not r.expected.get("due"), "D"), (not r.false_due, "F")))
        if marks != "....":
            print(f"  {marks} {r.text[:70]!r}\n       -> {r.tool} {r.category} {r.name!r} "
                  f"due {r.due}; expected {r.expected['category']} {r.expected['name']!r} "
                  f"due {r.expected.get('due')}")
    for text, want, got in report.question_misses:
        print(f"  Q {text!r}: expected {want}, got {got}")


async def with_examples(path: Path, section: str, verbose: bool) -> Report:
    """`evaluate` with the Brain's `similar` hook over a vault of the other set's thoughts."""
    import tempfile

    from bot.stores import NEIGHBOUR_FLOOR, NEIGHBOURS
    from storage.db import Database
    from storage.index.indexer import embed_pending
    from storage.meaning.shared_model import Meaning
    from storage.vault.files import Vault
    from storage.vault.store import Store
    from tools.rules.classify import neighbour_vote

    other = "holdout" if section == "thoughts" else "thoughts"
    meaning = Meaning.load()
    if not meaning.available:
        raise SystemExit(f"--similar needs the embedding model: {meaning.why}")
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Vault(Path(tmp) / "vault"), await Database.open(
            f"sqlite+aiosqlite:///{tmp}/b.db"), meaning=meaning)
        try:
            for item in load(path)[other]:
                if item["category"] != "inbox":
                    await store.create(item["category"], item["name"], {}, item["text"] + "\n")
            await embed_pending(store.db, store.index.key, meaning)
            asked: list[str] = []

            async def similar(text: str) -> list[tuple[str, float]]:
                near = await store.nearby(text, k=NEIGHBOURS, floor=NEIGHBOUR_FLOOR)
                found = [(e.category or "", float(e.score or 0)) for e in near]
                asked.append(f"  asked {text[:60]!r}: " + ", ".join(
                    f"{c} {s:.2f}" for c, s in found) + f" -> {neighbour_vote(found)}")
                return found

            report = await evaluate(path, section, similar)
            print(f"(the rules were unsure of {len(asked)} thought(s): the hook was asked)")
            if verbose:
                print("\n".join(asked))
            return report
        finally:
            await store.db.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--verbose", "-v", action="store_true", help="list every miss")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--similar", action="store_true",
                        help="with the nearest-labelled-examples hook (the other set as vault)")
    args = parser.parse_args(argv)
    for section in ("thoughts", "holdout"):
        print(f"== {section}" + (" (with the similar hook)" if args.similar else ""))
        if args.similar:
            report = asyncio.run(with_examples(args.data, section, args.verbose))
        else:
            report = asyncio.run(evaluate(args.data, section))
        print_report(report, args.verbose)


if __name__ == "__main__":
    main()
