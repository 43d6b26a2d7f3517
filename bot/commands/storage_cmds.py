"""Storage verbs of `brain`: list, search, show, update, move, backlinks, reindex.

Each verb opens the user's Store (or the --vault DIR as it is), does one operation and prints
either a short human view or, with --json, the domain type's `to_dict()` shape.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import sys
import textwrap
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from bot.commands.common import (
    Opened,
    add_common,
    embed_written,
    fail,
    meaning_ready,
    open_brain,
    print_json,
    run,
)
from bot.commands.via_server import ask_server
from storage.types import (
    CATEGORIES,
    LIST_FIELDS,
    STATUS_VALUES,
    BacklinkList,
    Entry,
    EntryList,
    MoveResult,
    RefreshStats,
    mix_said,
)

if TYPE_CHECKING:  # the store (SQLAlchemy) is opened by the verb, not by `brain --help`
    pass

TITLE_MAX = 60
CONTEXT_MAX = 100  # backlink lines in the human view
LIMIT_MAX = 1000
# Fields the storage layer owns: changing them by hand would break ids, folders or timestamps.
READ_ONLY_FIELDS = {"id": "ids are stable", "category": "use `brain move` to change category",
                    "created": "set when the note is made", "updated": "set on every change"}
_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
ALL_STATUSES = tuple(sorted({s for values in STATUS_VALUES.values() for s in values}))


class UsageError(ValueError):
    """Bad command-line input found before anything is opened or changed."""


# --- argument types --------------------------------------------------------------------------

def positive_limit(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"limit must be a whole number, got {text!r}") from None
    if not 1 <= value <= LIMIT_MAX:
        raise argparse.ArgumentTypeError(f"limit must be between 1 and {LIMIT_MAX}, got {value}")
    return value


def _threads(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"threads must be a whole number, got {text!r}") from None
    if not 1 <= value <= 64:
        raise argparse.ArgumentTypeError(f"threads must be between 1 and 64, got {value}")
    return value


def title_from_text(text: str) -> str:
    """A note name from captured text: its first non-empty line, at most TITLE_MAX chars."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    line = line.lstrip("#").strip() or line
    if len(line) <= TITLE_MAX:
        return line
    short = textwrap.shorten(line, TITLE_MAX, placeholder="…")
    if short == "…":  # one very long word (a URL): cut it instead of losing it
        short = line[: TITLE_MAX - 1] + "…"
    return short


def checked_name(name: str) -> str:
    """A name given on the command line, by the vault's rule (no invisible characters, at most
    MAX_NAME characters), refused before anything is opened."""
    from storage.errors import InvalidValue
    from tools.rules.naming import given

    try:
        return given(name)
    except InvalidValue as exc:
        raise UsageError(exc.message) from None


def parse_assignments(items: list[str]) -> dict[str, Any]:
    """`key=value` pairs -> changes. Lists for list fields (`a,b`), `null` -> None."""
    changes: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep:
            raise UsageError(f"expected key=value, got {item!r}")
        if not _KEY_RE.match(key):
            raise UsageError(f"bad field name {key!r} in {item!r}")
        if key in READ_ONLY_FIELDS:
            raise UsageError(f"field {key!r} cannot be set here: {READ_ONLY_FIELDS[key]}")
        if key in changes:
            raise UsageError(f"field {key!r} given twice")
        value: Any
        if raw.strip() == "null":
            value = None
        elif key in LIST_FIELDS:
            value = [part.strip() for part in raw.split(",") if part.strip()]
        elif key == "name":
            value = checked_name(raw)
        else:
            value = raw
        changes[key] = value
    return changes


# --- printing --------------------------------------------------------------------------------

def _scalar(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):  # as written in YAML, not Python's True/False
        return "true" if value else "false"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "-"
    return str(value)


def print_entry(entry: Entry, *, body: bool = True) -> None:
    print(f"path:     {entry.path}")
    print(f"id:       {entry.id or '-'}")
    print(f"name:     {entry.name} {mix_said(entry.name)}".rstrip())  # a look-alike mix said
    print(f"category: {entry.category or '-'}")
    if not body:
        return
    for key, value in entry.fields.items():
        if key not in ("id", "name", "category"):
            print(f"{key}: {_scalar(value)}")
    if entry.body.strip():
        print()
        print(entry.body.strip("\n"))


def print_entry_list(result: EntryList) -> None:
    if not result.entries:
        print("no entries")
        return
    rows = [(e.category or "-", e.status or "-", (e.updated or "")[:10] or "-", e.name, e.path)
            for e in result.entries]
    widths = [min(max(len(r[i]) for r in rows), 40) for i in range(4)]
    for row in rows:
        cells = [row[i][: widths[i]].ljust(widths[i]) for i in range(4)]
        said = mix_said(row[3])  # a look-alike script mix, after the path: never cut
        print("  ".join(cells) + "  " + row[4] + (f"  {said}" if said else ""))
    print(f"({len(result.entries)} of {result.total})")


# --- verbs -----------------------------------------------------------------------------------

def _verb(args: argparse.Namespace, op: Callable[[Opened], Awaitable[Any]],
          show: Callable[[Any], None],
          as_json: Callable[[Any], Any] = lambda result: result.to_dict(), *,
          meaning: bool = False, threads: int = 1, writes: bool = False,
          searches: bool = False) -> int:
    """Open the store, run one operation, print the result as text or JSON. A verb that
    `searches` by meaning first gives notes without vectors theirs; one that `writes` gives
    the note it wrote its vectors after."""
    async def go() -> int:
        async with open_brain(args, meaning=meaning or writes or searches,
                              threads=threads) as opened:
            if searches:
                await meaning_ready(opened, quiet=args.json)
            result = await op(opened)
            if writes:
                await embed_written(opened)
        if args.json:
            print_json(as_json(result))
        else:
            show(result)
        return 0

    return _run_checked(go)


def cmd_list(args: argparse.Namespace) -> int:
    return _verb(args, lambda v: v.store.list(category=args.category, status=args.status,
                                                limit=args.limit), print_entry_list)


def cmd_search(args: argparse.Namespace) -> int:
    query = " ".join(args.query).strip()
    if not query:
        return fail("nothing to search for: QUERY is empty")
    served = ask_server(args, "search", {"query": query, "category": args.category,
                                         "limit": args.limit})
    if served is not None:  # a running `brain serve`/`brain mcp` of this data answered
        print_json(served) if args.json else print_entry_list(EntryList.from_dict(served))
        return 0
    return _verb(args, lambda v: v.store.search(query, category=args.category,
                                                limit=args.limit), print_entry_list,
                 searches=True)


def cmd_show(args: argparse.Namespace) -> int:
    return _verb(args, lambda v: v.store.get(args.ref), print_entry)


def cmd_update(args: argparse.Namespace) -> int:
    try:
        changes = parse_assignments(args.assignments)
    except UsageError as exc:
        return fail(str(exc))
    if not changes and args.append is None:
        return fail("nothing to update: give key=value pairs and/or --append TEXT")
    from bot.config import Settings
    from tools.rules.dates import today_in, with_dates

    try:  # due_date=tomorrow becomes its day, as in a capture; 2026-13-45 is refused
        changes = with_dates(changes, today_in(Settings().tz))
    except ValueError as exc:
        return fail(str(exc))
    return _verb(args, lambda v: v.store.update(args.ref, changes, append_body=args.append),
                 print_entry, writes=True)


def _print_move(result: MoveResult) -> None:
    if not result.changed:
        print(f"{result.new_path} is already in {result.category}: nothing moved")
    elif result.old_path == result.new_path:
        print(f"{result.new_path} is now filed as {result.category} (it was already in that "
              "folder)")
    else:
        print(f"moved {result.old_path} -> {result.new_path} ({result.category})")


def cmd_move(args: argparse.Namespace) -> int:
    return _verb(args, lambda v: v.brain.note_actions.move(user_id=v.user, ref=args.ref, category=args.category), _print_move)


def _print_backlinks(result: BacklinkList) -> None:
    notes = len({link.path for link in result.backlinks})
    links = len(result.backlinks)
    print(f"{notes} note(s) link to {result.target}"
          + (f" ({links} links)" if links != notes else ""))
    for link in result.backlinks:
        context = textwrap.shorten(link.context, CONTEXT_MAX, placeholder="…")
        print(f"  {link.path}  ({link.name}): {context}")


def cmd_backlinks(args: argparse.Namespace) -> int:
    return _verb(args, lambda v: v.store.backlinks(args.ref), _print_backlinks)


def cmd_reindex(args: argparse.Namespace) -> int:
    from bot.commands.progress import ProgressLine

    async def reindex(v: Opened) -> tuple[str, RefreshStats, Any]:
        store = v.store
        stats = await store.refresh()  # the words index first: keyword search works at once
        line = ProgressLine(sys.stderr, quiet=args.json)
        embedded = await v.brain.stores.reindex(store, progress=line.update)
        line.done()
        return str(store.vault.root), stats, (embedded, store.meaning.why)

    def show(result: tuple[str, RefreshStats, Any]) -> None:
        root, stats, (embedded, why) = result
        print(f"indexed {root}: added {stats.added}, updated {stats.updated}, "
              f"removed {stats.removed}, unchanged {stats.unchanged} in {stats.seconds:.2f}s")
        if why is not None:
            print(f"search by meaning is off: {why}")
        else:
            rate = f" ({embedded.notes / embedded.seconds:.1f} notes/s)" if embedded.notes and \
                embedded.seconds > 0 else ""
            print(f"vectors: {embedded.notes} note(s) given vectors ({embedded.embedded} "
                  f"embedded) in {embedded.seconds:.1f}s{rate}; {embedded.pruned} unused "
                  "removed")

    def as_json(result: tuple[str, RefreshStats, Any]) -> dict[str, Any]:
        _, stats, (embedded, why) = result
        counts = {k: v for k, v in dataclasses.asdict(stats).items() if k != "changed"}
        return {**counts, "vectors": dataclasses.asdict(embedded),
                "meaning": why or "on"}

    return _verb(args, reindex, show, as_json, meaning=True, threads=args.threads)


def _run_checked(go: Any) -> int:
    """`run`, plus a reader that stopped early (`brain show X | head`): not an error."""
    try:
        return run(go)
    except BrokenPipeError:
        # Python would complain again when flushing stdout at exit; point it at nothing.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


# --- registration ----------------------------------------------------------------------------

def register(sub: Any) -> None:  # argparse subparsers
    p = sub.add_parser("list", help="list notes, newest first")
    p.add_argument("--category", choices=CATEGORIES)
    p.add_argument("--status", choices=ALL_STATUSES)
    p.add_argument("--limit", type=positive_limit, default=10)
    add_common(p)
    p.set_defaults(handler=cmd_list)

    p = sub.add_parser("search", help="search by words, names (typos too) and meaning",
                       description="Search notes by their words (full text), their names "
                                   "(typo-tolerant) and their meaning (sentence vectors), "
                                   "fused into one ranking.")
    p.add_argument("query", nargs="+", metavar="QUERY")
    p.add_argument("--category", choices=CATEGORIES)
    p.add_argument("--limit", type=positive_limit, default=10)
    add_common(p)
    p.set_defaults(handler=cmd_search)

    p = sub.add_parser("show", help="print one note (path, id or exact name)")
    p.add_argument("ref", metavar="PATH_OR_ID")
    add_common(p)
    p.set_defaults(handler=cmd_show)

    p = sub.add_parser("update", help="change fields (key=value) or append to the body")
    p.add_argument("ref", metavar="PATH_OR_ID")
    p.add_argument("assignments", nargs="*", metavar="KEY=VALUE",
                   help="`a,b` for list fields (tags, follow_ups); `null` clears")
    p.add_argument("--append", metavar="TEXT", help="append TEXT to the body")
    add_common(p)
    p.set_defaults(handler=cmd_update)

    p = sub.add_parser("move", help="move a note to another category's folder (it keeps its "
                                     "file name; links that would no longer reach it follow)")
    p.add_argument("ref", metavar="PATH_OR_ID")
    p.add_argument("category", choices=CATEGORIES)
    add_common(p)
    p.set_defaults(handler=cmd_move)

    p = sub.add_parser("backlinks", help="notes that link to this one")
    p.add_argument("ref", metavar="PATH_OR_ID")
    add_common(p)
    p.set_defaults(handler=cmd_backlinks)

    p = sub.add_parser("reindex", help="bring the search index up to date with the vault, "
                                        "and give every note its vector (resumable)")
    p.add_argument("--threads", type=_threads, default=os.cpu_count() or 1,
                   help="threads for embedding (default: every core)")
    add_common(p)
    p.set_defaults(handler=cmd_reindex)
