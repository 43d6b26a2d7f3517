"""`brain history` and `brain undo`: every change the app (or someone outside it) made to a
vault, newest first, and putting one back (storage/history)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from bot.commands.common import Opened, add_common
from bot.commands.storage_cmds import _verb, positive_limit
from storage.types import Change

WHEN_CHARS = 16  # 2026-11-25T09:30


def change_line(change: Change) -> str:
    paths = ", ".join(change.paths[:3]) + (f" (+{len(change.paths) - 3})"
                                             if len(change.paths) > 3 else "")
    when = change.at.replace("+00:00", "Z")[:WHEN_CHARS]
    return (f"{change.id[:8]}  {when}  {change.who:<10}  {change.source:<12}  "
            f"{change.action}: {change.summary}  [{paths}]")


def _print_history(changes: list[Change]) -> None:
    if not changes:
        print("no changes recorded yet")
        return
    for change in changes:
        print(change_line(change))


def cmd_history(args: argparse.Namespace) -> int:
    async def listed(v: Opened) -> list[Change]:
        changes = await v.store.changes(args.ref, limit=args.limit)
        trouble = v.store.history_trouble()
        if trouble:  # the list is not the whole story yet: say why (stderr, also with --json)
            print(f"brain: the history is behind: {trouble}; they are recorded once it can "
                  "be written (`brain doctor` says more)", file=sys.stderr)
        return changes

    return _verb(args, listed, _print_history, lambda changes: [c.to_dict() for c in changes])


def _print_undo(change: Change) -> None:
    print(f"undone {change.undoes and change.undoes[:8]} ({change.summary}): "
          f"{', '.join(change.paths)}; this undo is change {change.id[:8]}")


def cmd_undo(args: argparse.Namespace) -> int:
    async def undo(v: Opened) -> Any:
        return await v.store.undo(args.change)

    return _verb(args, undo, _print_undo, lambda change: change.to_dict(), writes=True)


def register(sub: Any) -> None:  # argparse subparsers
    p = sub.add_parser("history", help="the changes made to the vault (or to one note), "
                                        "newest first")
    p.add_argument("ref", nargs="?", metavar="NOTE", help="a note's path, id or name")
    p.add_argument("--limit", type=positive_limit, default=20)
    add_common(p)
    p.set_defaults(handler=cmd_history)

    p = sub.add_parser("undo", help="put back the files of one change (default: the app's "
                                     "last change); refused if they changed since")
    p.add_argument("change", nargs="?", metavar="CHANGE", help="a change id from "
                   "`brain history` (7 or more characters)")
    add_common(p)
    p.set_defaults(handler=cmd_undo)
