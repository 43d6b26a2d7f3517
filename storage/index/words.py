"""The words of a user's query, shared by every word and name matcher."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

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
    scores: dict[int, float] = field(default_factory=dict)  # nid -> its rank's score (> 0)
    any_word: bool = False  # no note had every word: these have any of them


# Words that only frame a question ("how much did...", "what was my..."): left out of the
# any-word search of stems, where each word found adds to a note's score.
_FRAMING_TEXT = """about after all also any before can could did do does he her his how into
its just many me much my no not our own same she should some than their them then there these
they those too very whom whose why would your yes"""
FRAMING = STOPWORDS | frozenset(_FRAMING_TEXT.split())
_SUFFIXES = (("ational", "ate"), ("ations", ""), ("ation", ""), ("ies", "y"), ("ied", "y"),
             ("ing", ""), ("ers", ""), ("ed", ""), ("er", ""), ("es", ""), ("s", ""),
             ("ly", ""))


def stem(word: str) -> str:
    """A light stem (plural and verb endings) to mark a query's words in a passage:
    "researching" and "researched" both mark for "research"."""
    word = word.lower()
    for suffix, keep in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)] + keep
            break
    return word[:-1] if len(word) > 3 and word[-1] == "e" else word


# Words that ask for notes of a time rather than about something ("what did I write").
_ASKING_TEXT = """write wrote written note notes say said anything something happen happened
do done"""
_ASKING = frozenset(_ASKING_TEXT.split())


def required_words(tokens: Sequence[str]) -> list[str]:
    """The words a note must have to match a query in full: none of the stopwords (a note
    need not say "the"; bm25 gives them no weight anyway), or all, when only those are left."""
    return [t for t in tokens if t.lower() not in STOPWORDS] or list(tokens)


def content_words(tokens: list[str], *, strict: bool = False) -> list[str]:
    """The tokens that say what a query is about (none of FRAMING), or all of them (none
    with `strict`, which also leaves out words that only ask for notes)."""
    kept = [t for t in tokens if t.lower() not in FRAMING
            and not (strict and t.lower() in _ASKING)]
    return kept if kept or strict else tokens
