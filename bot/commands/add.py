"""`brain add`: a note from TEXT, files (`--file`, read by tools/readers and kept in the
vault's `attachments/`) and links (`--url`, fetched with the guards of tools/web), filed where
`--category` says, with its capture receipt."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from bot.commands.common import Opened, add_common, fail
from bot.commands.storage_cmds import (
    UsageError,
    _verb,
    checked_name,
    print_entry,
    title_from_text,
)
from storage.types import CATEGORIES, MAX_NAME, ReceiptDraft


def _shared_files(paths: list[str], max_mb: float) -> list[Any]:
    """`--file PATH` arguments as shared files (a file over the size limit is named, not
    read); UsageError for a path that is not a readable file."""
    from tools.readers.sections import SharedFile

    out = []
    for given in paths:
        path = Path(given).expanduser()
        if not path.is_file():
            raise UsageError(f"--file {given}: no such file")
        size = path.stat().st_size
        if size > max_mb * 1024 * 1024:
            out.append(SharedFile(path.name, None, link=str(path.resolve()),
                                  problem=f"it is {size / 1024 / 1024:.0f} MB, over "
                                          f"BRAIN_MAX_FILE_MB ({max_mb:g})"))
            continue
        try:
            out.append(SharedFile(path.name, path.read_bytes(), link=str(path.resolve())))
        except OSError as exc:
            raise UsageError(f"--file {given}: {exc.strerror or exc}") from None
    return out


def cmd_add(args: argparse.Namespace) -> int:
    text = " ".join(args.text).strip()
    if not text and not args.file and not args.url:
        return fail("nothing to add: give TEXT, --file PATH, --url URL or several")
    from tools.capture.limits import refusal

    refused = refusal(text) if text else None
    if refused is not None:  # too long, or not text: the same limit as every door
        return fail(refused)
    from bot.config import Settings

    try:
        given_name = checked_name(args.name) if (args.name or "").strip() else None
        settings = Settings()
        shared = _shared_files(args.file or [], settings.max_file_mb)
        for url in args.url or []:
            parsed = urlparse(url)
            if parsed.scheme not in ("http", "https") or not parsed.hostname:
                raise UsageError(f"--url {url}: not a web address (http:// or https://)")
    except UsageError as exc:
        return fail(str(exc))

    async def add(v: Opened) -> Any:
        from tools.readers.sections import file_sections, read_all
        from tools.web.links import shared_links

        limits = settings.reader_limits(v.user)
        done = await read_all(shared, limits)
        if args.url:
            done += await shared_links(args.url, allow_hosts=settings.fetch_allow_hosts,
                                       limits=limits)
        sections = await file_sections(v.store, done)
        name = given_name or title_from_text(text or sections.title or "file")
        body = (text + "\n" if text else "") + sections.text
        # A capture like any other: its receipt counts in the digests ("Captured N this week").
        entry = (await v.store.create_once(
            args.category, name, {"source": "cli"}, body, entry_id=None,
            receipt=ReceiptDraft(user_id=v.user, original_text=text or name,
                                 category=args.category, status="filed"))).entry
        for problem in sections.problems:
            print(f"brain: filed, but {problem}", file=sys.stderr)
        return entry

    return _verb(args, add, lambda entry: print_entry(entry, body=False), writes=True)


def register(sub: Any) -> None:  # argparse subparsers
    p = sub.add_parser("add", help="file TEXT (and files: their text, the files kept) as a "
                                    "new note")
    p.add_argument("text", nargs="*", metavar="TEXT",
                   help="the note's text: at most 40,000 characters (a longer text: --file)")
    p.add_argument("--file", action="append", metavar="PATH",
                   help="a PDF, Word, HTML or text file to read into the note and keep in "
                        "attachments/ (repeatable)")
    p.add_argument("--url", action="append", metavar="URL",
                   help="a web page (or a PDF) to read into the note: its title, author, "
                        "site and main text (repeatable; private addresses are refused)")
    p.add_argument("--category", required=True, choices=CATEGORIES)
    p.add_argument("--name", help=f"note name (default: the first line of TEXT); at most "
                                  f"{MAX_NAME} characters, invisible ones (bidi controls, "
                                  "zero-width) left out")
    add_common(p)
    p.set_defaults(handler=cmd_add)

