"""`brain export` (a person's vault and conversations as a zip) and `brain forget` (erase
them), through the Brain. For an operator answering "what do you hold of me?" and "delete it"."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.commands.common import (
    EXIT_ERROR,
    EXIT_USAGE,
    CommandError,
    fail,
    known_users,
    run,
)

if TYPE_CHECKING:
    from bot.brain import Brain



WHOSE = ("whose data (a Slack user id); with BRAIN_OWNER, the owner, or someone else whose "
         "data is rows only: a folder of the owner's vault is never a person")


def register(sub: Any) -> None:
    e = sub.add_parser(
        "export", help="a user's vault and conversations as one zip",
        description="Write everything the brain holds of one user to a zip: their vault "
                    "(every file, the trash included) under vault/, and conversations.json, "
                    "captures.json, digest_subscriptions.json.")
    e.add_argument("--user", metavar="ID", required=True, help=WHOSE)
    e.add_argument("--out", metavar="FILE", type=Path,
                   help="the zip to write (default: brain-export-<user>-<date>.zip here)")
    e.set_defaults(handler=lambda args: run(lambda: _export(args)))

    f = sub.add_parser(
        "forget", help="erase a user's vault, conversations, captures and jobs",
        description="Erase everything the brain holds of one user: their vault, "
                    "conversations, capture receipts, queued jobs, digest settings and "
                    "reminders. Asks for the user id to confirm; it cannot be undone.")
    f.add_argument("--user", metavar="ID", required=True, help=WHOSE)
    f.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    f.set_defaults(handler=lambda args: run(lambda: _forget(args)))


async def _known(brain: Brain, user: str) -> None:
    """A mistyped id is said to be unknown (and no empty vault is made for it)."""
    from storage.errors import InvalidValue
    from storage.types import is_user_id

    if not is_user_id(user):
        raise CommandError(f"not a valid user id: {user!r}", EXIT_USAGE, "usage")
    try:
        held = await brain.accounts.holds(user)
    except InvalidValue as exc:  # with BRAIN_OWNER: a folder of the owner's vault
        raise CommandError(exc.message, EXIT_USAGE, "usage") from None
    if not held:
        raise CommandError(f"nothing is held of user {user!r}: no vault, no conversations; "
                           f"check the id{known_users(brain.settings)}", EXIT_ERROR,
                           "not_found")


async def _export(args: argparse.Namespace) -> int:
    from bot.brain import Brain
    from storage.types import is_user_id

    if not is_user_id(args.user):  # before it names a file
        return fail(f"not a valid user id: {args.user!r}", EXIT_USAGE)
    out = args.out or Path(f"brain-export-{args.user}-{datetime.now(UTC):%Y%m%d}.zip")
    if out.is_dir():
        return fail(f"--out {out} is a folder; name the zip file to write", EXIT_USAGE)
    if not out.parent.is_dir():
        return fail(f"--out {out}: the folder {out.parent} does not exist (make it first)",
                    EXIT_ERROR, "not_found")
    from bot.config import Settings

    brain = await Brain.start(Settings())
    try:
        await _known(brain, args.user)
        done = await brain.accounts.export(args.user, out)
    finally:
        await brain.close()
    print(f"wrote {out}: {done.files} vault file(s), {done.rows['conversations']} "
          f"conversation(s), {done.rows['receipts']} capture receipt(s)")
    return 0


async def _forget(args: argparse.Namespace) -> int:
    from bot.brain import Brain
    from bot.config import Settings

    brain = await Brain.start(Settings())
    try:
        await _known(brain, args.user)
        seen = await brain.accounts.footprint(args.user)
        if not args.yes:
            where = f"file(s) in {seen.vault}" if seen.vault else "file(s) (no vault here)"
            print(f"This erases everything the brain holds of {args.user}: {seen.files} "
                  f"{where}, {seen.rows['conversations']} conversation(s) "
                  f"({seen.rows['turns']} turns), {seen.rows['receipts']} capture receipt(s), "
                  "their queued jobs, digest settings and reminders. It cannot be undone.")
            if not sys.stdin.isatty():
                return fail("not erased: confirm in a terminal, or add --yes")
            answer = input(f"Type {args.user} to erase it all: ").strip()
            if answer != args.user:
                return fail("not erased (the answer did not match)", EXIT_ERROR)
        gone = await brain.accounts.forget(args.user)
    finally:
        await brain.close()
    rows = ", ".join(f"{n} {name}" for name, n in gone.rows.items() if n)
    print(f"erased {args.user}: {gone.files} vault file(s)" + (f"; {rows}" if rows else ""))
    return 0
