"""`brain digest daily|weekly`: the digest of a vault, as text or (--json) its structure."""

from __future__ import annotations

import argparse
from datetime import date
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from bot.commands.common import add_common, fail, open_store, print_json, run, user_id


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {text!r}") from None


def register(sub: Any) -> None:  # argparse subparsers
    parser = sub.add_parser(
        "digest", help="daily or weekly review of a vault",
        description="Print the daily or weekly digest. Uses the configured LLM (BRAIN_LLM); "
                    "without one, or when it fails, a digest built by rules.")
    parser.add_argument("kind", choices=("daily", "weekly"))
    parser.add_argument("--date", type=_day, metavar="YYYY-MM-DD",
                        help="the digest's day (default: today in --tz)")
    parser.add_argument("--tz", metavar="ZONE", help="time zone (default: BRAIN_TZ)")
    add_common(parser)
    parser.set_defaults(handler=_digest)


def _digest(args: argparse.Namespace) -> int:
    # Imported here, not at the top: `brain --help` must not load the digest and LLM layers.
    from bot.digest import make_digest
    from bot.digest.data import local_today
    from bot.llm.configs import make_provider, select_config

    async def go() -> int:
        async with open_store(args) as (settings, store):
            tz = args.tz or settings.tz
            try:
                ZoneInfo(tz)
            except (ZoneInfoNotFoundError, ValueError):
                return fail(f"unknown time zone {tz!r}")
            try:
                provider = make_provider(select_config(settings), settings)
            except ValueError as exc:
                return fail(str(exc))
            digest = await make_digest(store, store.db, provider, user_id(settings, args),
                                       args.kind, today=args.date or local_today(tz), tz=tz)
        if args.json:
            print_json(digest.to_dict())
        else:
            print(digest.text)
        return 0

    return run(go)
