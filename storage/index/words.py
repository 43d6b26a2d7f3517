"""The words of a user's query, shared by every word and name matcher."""

from __future__ import annotations

import re
from dataclasses import dataclass

# Too common to carry a query on their own; dropped from OR retries and from name matching.
_STOPWORDS_TEXT = """a an and are as at be but by de der die for from has have i in is it of on
or so that the this to was we were what when where which who will with you"""
STOPWORDS = frozenset(_STOPWORDS_TEXT.split())
MAX_QUERY_TOKENS = 16  # a pasted essay is still a query, just a shorter one
MAX_TOKEN_CHARS = 64
PREFIX_MIN_CHARS = 3  # shorter words are all "similar" to something, or prefixes of everything
_WORD_RE = re.compile(r"[^\W_]+")


def query_tokens(query: str) -> list[str]:
    """The words of a user's query: letters and digits only, so no text is query syntax."""
    return [t[:MAX_TOKEN_CHARS] for t in _WORD_RE.findall(query or "")][:MAX_QUERY_TOKENS]


@dataclass(frozen=True)
class WordHits:
    """What a word search found: the best nids (best first), how many notes match in all, the
    expression that matched them (to ask later which other notes it matches), and whether the
    set was small enough to be ranked whole (then `total` is exact and asking is cheap)."""

    ranked: list[int]
    total: int
    expression: str
    complete: bool = True
