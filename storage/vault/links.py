"""Wikilink extraction (`[[Name]]`, `[[folder/Name|alias]]`, `[[Name#heading]]`, `![[embed]]`).

Links inside fenced code blocks and inline code spans are not links, as in Obsidian.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass

MAX_LINE = 200
_LINK_RE = re.compile(r"(!?)\[\[([^\[\]\n]+?)\]\]")
_FENCE_RE = re.compile(r" {0,3}(`{3,}|~{3,})")
_TICKS_RE = re.compile(r"`+")


@dataclass(frozen=True)
class WikiLink:
    target: str  # as written, without heading/alias; "" for a link to a heading of the same note
    heading: str | None
    alias: str | None
    line: str  # the stripped source line, at most MAX_LINE characters
    embed: bool  # `![[...]]`


def _mask_code_spans(line: str) -> str:
    """The line with inline code spans blanked out (same length, so offsets stay)."""
    chars = list(line)
    pos = 0
    while (opening := _TICKS_RE.search(line, pos)) is not None:
        # A span closes at the next run of exactly the same number of backticks.
        ticks = opening.group()
        close = re.compile(r"(?<!`)" + ticks + r"(?!`)").search(line, opening.end())
        if close is None:
            pos = opening.end()
            continue
        chars[opening.start():close.end()] = " " * (close.end() - opening.start())
        pos = close.end()
    return "".join(chars)


def _parse_inner(inner: str) -> tuple[str, str | None, str | None]:
    target, bar, alias = inner.partition("|")
    target = target.rstrip("\\")  # `[[Name\|alias]]` inside a table
    target, hash_, heading = target.partition("#")
    return (target.strip(), heading.strip() if hash_ else None,
            alias.strip() if bar else None)


def _scan(body: str) -> Iterator[tuple[int, str, re.Match[str]]]:
    """(line number, line with its ending, match) of every wikilink outside code."""
    fence: str | None = None  # the opening fence while inside a fenced block
    for number, raw in enumerate(body.splitlines(keepends=True)):
        fence_match = _FENCE_RE.match(raw)
        if fence is not None:
            # Closes with the same character, at least as long, and nothing after it.
            if (fence_match and fence_match.group(1)[0] == fence[0]
                    and len(fence_match.group(1)) >= len(fence)
                    and not raw[fence_match.end():].strip()):
                fence = None
            continue
        if fence_match and not (fence_match.group(1)[0] == "`"
                                and "`" in raw[fence_match.end():]):
            fence = fence_match.group(1)
            continue
        if "[[" not in raw:
            continue
        for match in _LINK_RE.finditer(_mask_code_spans(raw)):
            yield number, raw, match


def extract_links(body: str) -> list[WikiLink]:
    links: list[WikiLink] = []
    for _number, raw, match in _scan(body):
        target, heading, alias = _parse_inner(match.group(2))
        if not target and not heading:
            continue
        links.append(WikiLink(target, heading or None, alias or None, raw.strip()[:MAX_LINE],
                              match.group(1) == "!"))
    return links


def retarget(text: str, new_target: Callable[[str], str | None]) -> str:
    """`text` with each wikilink whose target `new_target` gives a new one for aimed there
    instead: only the target's characters change (heading, alias, embed mark and spacing
    stay), as Obsidian does to links on a rename; every other byte as it was."""
    lines = text.splitlines(keepends=True)
    edits: dict[int, list[tuple[int, int, str]]] = {}
    for number, raw, match in _scan(text):
        inner = raw[match.start(2):match.end(2)]
        target = _parse_inner(inner)[0]
        aimed = new_target(target) if target else None
        if aimed is None:
            continue
        start = match.start(2) + inner.index(target)  # after any spaces before it
        edits.setdefault(number, []).append((start, start + len(target), aimed))
    for number, spans in edits.items():
        line = lines[number]
        for start, end, new in reversed(spans):
            line = line[:start] + new + line[end:]
        lines[number] = line
    return "".join(lines)


def link_key(target: str) -> str:
    """A link target normalised for resolution: POSIX, no `.md`, case-folded, NFC."""
    key = unicodedata.normalize("NFC", target).strip().replace("\\", "/")
    while key.startswith(("./", "/")):
        key = key[1:] if key.startswith("/") else key[2:]
    key = re.sub(r"/{2,}", "/", key)
    if key.lower().endswith(".md"):
        key = key[:-3]
    return key.strip().casefold()
