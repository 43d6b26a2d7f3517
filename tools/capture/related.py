"""Related notes of a new thought: the few existing notes closest to it by meaning.

A note counts when its cosine to the thought is at least RELATED_FLOOR, or at least
NAMED_FLOOR when the thought names it (a word of the note's name is in the thought: "Call
Sara about..." and the person note "Sara Chen"). Calibrated on the real vault (docs/
performance.md, "Related notes on capture"): with these floors 3 of 88 realistic thoughts
get a link into the Obsidian Tasks documentation, all three to a page on the same subject,
while "Call Sara about the Q3 budget" links Sara's person note (cosine ~0.4) and the budget
project (~0.56) of a personal vault.

The new note gets them under a "Related" heading as `[[wikilinks]]` by file name (what
Obsidian writes; it survives moves between folders), or by path when another note has the
same file name, with the display name as the alias.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from storage.types import EntrySummary
    from storage.vault.store import Store

RELATED_MAX = 3
RELATED_FLOOR = 0.5
NAMED_FLOOR = 0.35
HEADING = "## Related"
_WORD = re.compile(r"[^\W_]+")
# Too common to say a thought names a note.
_COMMON_TEXT = """the and for with from that this into about next new our your my their
call email meet note notes idea ideas project projects task tasks"""
_COMMON = frozenset(_COMMON_TEXT.split())


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.casefold()) if len(w) >= 3 and w not in _COMMON}


async def related_notes(store: Store, text: str,
                        exclude: Collection[str] = ()) -> list[EntrySummary]:
    """Up to RELATED_MAX notes related to `text`, closest first ([] without the model)."""
    near = await store.nearby(text, k=RELATED_MAX * 3, floor=NAMED_FLOOR, exclude=exclude)
    said = _words(text)
    found = [e for e in near if (e.score or 0.0) >= RELATED_FLOOR
             or _words(e.name) & said]
    return found[:RELATED_MAX]


def wikilink(entry: EntrySummary, target: str | None = None) -> str:
    """`[[target|Name]]`; the target is the note's stem unless told otherwise (the path, when
    another note has the same stem: `Store.link_to`)."""
    target = target or PurePosixPath(entry.path).stem
    name = " ".join(entry.name.replace("[", " ").replace("]", " ").replace("|", " ").split())
    return f"[[{target}]]" if name == target or not name else f"[[{target}|{name}]]"


def related_section(entries: Sequence[EntrySummary],
                    targets: Sequence[str] | None = None) -> str:
    """The body's "Related" section, or "" for none."""
    if not entries:
        return ""
    return HEADING + "\n" + "".join(
        f"- {wikilink(e, targets[i] if targets else None)}\n" for i, e in enumerate(entries))
