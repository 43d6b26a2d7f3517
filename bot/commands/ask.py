"""`brain ask QUESTION`: an answer from your notes, each claim with the note it came from.

With a model configured, the model searches and answers, and its citations are checked
against the notes; without one, the sentences that answer the question are quoted from the
best notes. When the model gives no answer (it cannot be reached, refuses the key, or keeps
searching) the answer is the quoted one, and a notice (stderr; "notice" under --json) says so.
`--json` prints {"answer", "found", "sources": [{"id", "path", "name", "quote"}], "notice"?}.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from bot.commands.common import add_common, fail, meaning_ready, open_brain, print_json, run
from bot.commands.via_server import ask_server


def register(sub: Any) -> None:  # argparse subparsers
    p = sub.add_parser("ask", help="answer a question from your notes, with its sources",
                       description=__doc__)
    p.add_argument("question", nargs="+", metavar="QUESTION")
    add_common(p)
    p.set_defaults(handler=cmd_ask)


def cmd_ask(args: argparse.Namespace) -> int:
    question = " ".join(args.question).strip()
    if not question:
        return fail("nothing to ask: QUESTION is empty")
    served = ask_server(args, "ask", {"question": question})
    if served is not None:  # a running `brain serve`/`brain mcp` of this data answered
        print_json(served) if args.json else print_answer(served)
        return 0

    async def go() -> int:
        async with open_brain(args, meaning=True) as opened:
            await meaning_ready(opened, quiet=args.json)
            answer = await opened.brain.answers.ask(user_id=opened.user, question=question)
        if args.json:
            print_json(answer)
        else:
            print_answer(answer)
        return 0

    return run(go)


def print_answer(answer: dict[str, Any]) -> None:
    if answer.get("notice"):
        print(f"brain: {answer['notice']}", file=sys.stderr)
    print(answer["answer"])
    notes = list({s["path"]: s for s in answer.get("sources") or []}.values())
    if notes:
        print("\nSources:")
        for n, source in enumerate(notes, start=1):
            print(f"  [{n}] {source['name']} ({source['path']})")
