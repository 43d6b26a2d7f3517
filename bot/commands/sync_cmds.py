"""`brain sync url`: the address of a person's vault as a git remote and a new token for it
(README "Sync with Obsidian"); `--list` their tokens, `--revoke` one or all."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from bot.commands.common import (
    EXIT_ERROR,
    EXIT_USAGE,
    CommandError,
    add_common,
    open_brain,
    print_json,
    run,
)

if TYPE_CHECKING:
    from bot.remotes import Remotes

SHOWN_ONCE = ("git asks for a user name (any) and a password: the token. It is shown this "
              "once; `brain sync url --list` lists tokens, `--revoke` ends one.")


def register(sub: Any) -> None:  # argparse subparsers
    url = sub.add_parser(
        "sync", help="your vault as a git remote: its address and a token (Obsidian's git "
                     "plugin clones, pulls and pushes it)",
        description="`brain sync url` prints the person's git remote (<BRAIN_PUBLIC_URL>/git/"
                    "<person>.git, served by `brain serve`) and a new token for it: the "
                    "password git asks for (any user name). --list and --revoke manage the "
                    "tokens instead. README, \"Sync with Obsidian\".")
    url.add_argument("what", choices=["url"], metavar="url", help="the remote's address and "
                     "a new token (a new one each time)")
    which = url.add_mutually_exclusive_group()
    which.add_argument("--list", action="store_true", help="the person's tokens (first "
                       "characters), when made, last used, when they expire unused")
    which.add_argument("--revoke", metavar="TOKEN", help="end the token that starts with "
                       "TOKEN (as --list shows it), or `all` of the person's")
    add_common(url)
    url.set_defaults(handler=lambda args: run(lambda: _url(args)))


async def _url(args: argparse.Namespace) -> int:
    if getattr(args, "vault", None) is not None:
        raise CommandError("--vault: a remote serves a person's vault (give --user)",
                           EXIT_USAGE, "usage")
    async with open_brain(args) as opened:
        remotes, user = opened.brain.remotes, opened.user
        if args.list:
            return await _list(remotes, user, args.json)
        if args.revoke is not None:
            return await _revoke(remotes, user, args.revoke, args.json)
        link = await remotes.link(user)
        if args.json:
            print_json(link.to_dict())
        else:
            print(f"url:   {link.url}\ntoken: {link.token}\n{SHOWN_ONCE}")
        return 0


async def _list(remotes: Remotes, user: str, as_json: bool) -> int:
    found = await remotes.tokens(user)
    if as_json:
        print_json([t.to_dict() for t in found])
        return 0
    for t in found:
        used = t.last_used.isoformat(timespec="seconds") if t.last_used else "never"
        print(f"{t.shown}…  made {t.created.isoformat(timespec='seconds')}  last used "
              f"{used}  expires {t.expires.isoformat(timespec='seconds')} unless used")
    if not found:
        print(f"no tokens for {user}")
    return 0


async def _revoke(remotes: Remotes, user: str, which: str, as_json: bool) -> int:
    try:
        gone = await remotes.revoke(user, None if which == "all" else which)
    except ValueError as exc:
        raise CommandError(str(exc), EXIT_USAGE, "usage") from None
    if not gone and which != "all":
        raise CommandError(f"no token of {user} starts with {which!r} (`brain "
                           "sync url --list` lists them)", EXIT_ERROR, "not_found")
    if as_json:
        print_json({"revoked": gone})
    else:
        print(f"revoked {gone} token(s) of {user}")
    return 0
