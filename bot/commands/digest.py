"""`brain digest daily|weekly`: the digest of a vault, as text or (--json) its structure; and
`brain digest subscribe ... | off | status`: the scheduled digests, parsed by the same parser
as Slack's `/digest` (bot/digest/command.py), so both accept the same words."""

from __future__ import annotations

import argparse
from datetime import date
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from bot.commands.common import EXIT_ERROR, add_common, fail, open_brain, print_json, run

COMMAND = "brain digest"


def _zone(name: str) -> bool:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return False
    return True


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {text!r}") from None


def register(sub: Any) -> None:  # argparse subparsers
    parser = sub.add_parser(
        "digest", help="daily or weekly review of a vault; scheduled digests",
        description="Print the daily or weekly digest (the configured LLM, BRAIN_LLM; without "
                    "one, or when it fails, a digest built by rules), or manage scheduled "
                    "digests as Slack's /digest does: subscribe daily [HH:MM], subscribe "
                    "weekly [DAY HH:MM], off [daily|weekly] (or unsubscribe), status.")
    parser.add_argument("words", nargs="+", metavar="daily|weekly|subscribe|off|status",
                        help="what to do (the words of Slack's /digest)")
    parser.add_argument("--date", type=_day, metavar="YYYY-MM-DD",
                        help="the digest's day (default: today in --tz)")
    parser.add_argument("--tz", metavar="ZONE", help="time zone (default: BRAIN_TZ)")
    add_common(parser)
    parser.set_defaults(handler=_digest)


def _digest(args: argparse.Namespace) -> int:
    # Imported here, not at the top: `brain --help` must not load the digest and LLM layers.
    from bot.digest import parse_digest_request
    from bot.digest.command import worded_for
    from bot.digest.data import local_today

    request = parse_digest_request(" ".join(args.words))
    if request.action == "invalid":
        return fail(request.reply_to_invalid(COMMAND))
    if args.tz is not None and not _zone(args.tz):
        return fail(f"unknown time zone {args.tz!r} (use an IANA name, e.g. Europe/Berlin)")

    async def go() -> int:
        async with open_brain(args) as v:
            if request.action != "show":
                reply = await v.brain.digests.settings(user_id=v.user, request=request,
                                                       channel=None, tz=args.tz)
                print(worded_for(reply, COMMAND))
                return 0
            tz = args.tz or v.settings.tz
            if not _zone(tz):
                return fail(f"unknown time zone {tz!r} (BRAIN_TZ)", EXIT_ERROR)
            try:
                v.brain.provider  # noqa: B018  (the configured model, or a clear error)
            except ValueError as exc:
                return fail(str(exc), EXIT_ERROR)
            digest = await v.brain.digests.make(user_id=v.user, kind=str(request.kind),
                                          today=args.date or local_today(tz), tz=tz)
        if args.json:
            print_json(digest.to_dict())
        else:
            print(digest.text)
        return 0

    return run(go)
