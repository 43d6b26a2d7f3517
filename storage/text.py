"""Text made safe to store, in the two places it goes.

`clean` / `clean_value`, for what we write (notes, YAML, our tables): lone surrogates (from
JSON like "\\udc80") cannot be encoded as UTF-8, control characters other than tab and line
breaks make YAML unreadable, NUL is refused by PostgreSQL; each becomes U+FFFD, so the user can
see that something was there.

`clean_text` / `clean_values`, for what we index and query from notes written by hand: only NUL
and lone surrogates (what a database refuses) become U+FFFD, the same on the way in and on the
way to a query, so a name holding one is still found by the same text.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from typing import Any

from storage.errors import InvalidValue
from storage.types import MAX_NAME

REPLACEMENT = "\ufffd"
# C0 controls but tab, LF, CR; DEL and C1 controls; lone surrogates; the two non-characters
# YAML rejects.
_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def clean(text: str) -> str:
    """`text` with every character a note or a database cannot hold replaced by U+FFFD."""
    return _BAD.sub(REPLACEMENT, text) if _BAD.search(text) else text


def clean_value(value: Any) -> Any:
    """`clean` applied to every string inside a JSON-like value (keys included)."""
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, list | tuple):
        return [clean_value(v) for v in value]
    if isinstance(value, Mapping):
        return {clean(str(k)) if isinstance(k, str) else k: clean_value(v)
                for k, v in value.items()}
    return value


def clean_text(value: str) -> str:
    """`value` with NUL and lone surrogates replaced by U+FFFD (unchanged, and fast, when it
    has neither)."""
    if "\x00" in value:
        value = value.replace("\x00", REPLACEMENT)
    if value.isascii():
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "".join(REPLACEMENT if "\ud800" <= c <= "\udfff" else c for c in value)
    return value


def clean_values(row: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `row` with every string value cleaned (`clean_text`)."""
    return {k: clean_text(v) if isinstance(v, str) else v for k, v in row.items()}


# --- names ------------------------------------------------------------------------------------

# Invisible characters that make a name read differently from what it is: bidirectional
# controls (marks, embeddings, overrides, isolates), zero-width spaces and joiners, the word
# joiner and BOM, Hangul fillers (blank letters). Other format characters (category Cf: soft
# hyphen, invisible operators, tag characters) go too.
# Embeddings, overrides and isolates reorder the text that follows them ("gpj.exe" shown as
# "exe.jpg"); the marks (LRM, RLM, ALM) only lean one character's direction.
BIDI_CONTROLS = re.compile("[\u202a-\u202e\u2066-\u2069]")
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_HIDDEN = re.compile(f"[{_BIDI}\u115f\u1160\u180e\u200b-\u200d\u2060-\u2065\u206a-\u206f"
                     "\u3164\ufeff\uffa0\U000e0000-\U000e007f]")
_JOINERS = "\u200c\u200d"


def _visible(name: str) -> str:
    out = []
    for i, ch in enumerate(name):
        if ch in _JOINERS:
            # A joiner between two characters of a script that needs it (Persian, Indic,
            # an emoji sequence) stays; next to ASCII or a space it only hides a difference.
            before, after = name[i - 1:i], name[i + 1:i + 2]
            if before and after and not (before + after).isascii() and \
                    not before.isspace() and not after.isspace():
                out.append(ch)
        elif not _HIDDEN.match(ch) and unicodedata.category(ch) != "Cf":
            out.append(ch)
    return "".join(out)


def visible_name(name: str) -> str:
    """A note's name as the app keeps and shows it: without bidirectional controls or
    zero-width and other invisible characters, every run of spaces and line breaks one space,
    control characters as U+FFFD (`clean`). May be empty or longer than MAX_NAME."""
    if not name.isascii():
        name = _visible(name)
    return " ".join(clean(name).split())


def name_text(name: str) -> str:
    """`visible_name`, cut to at most MAX_NAME characters (at a word, with "…"): a name read
    from a note written by hand. May be empty: the caller says what such a note is called."""
    name = visible_name(name)
    if len(name) > MAX_NAME:
        cut = name[:MAX_NAME - 1]
        at = cut.rfind(" ")
        name = (cut[:at] if at >= MAX_NAME // 2 else cut).rstrip() + "…"
    return name


def given_name(name: object) -> str:
    """A name given for a note (a capture, `--name`, an update): `visible_name`, or
    InvalidValue when nothing visible is left or it is longer than MAX_NAME."""
    shown = visible_name(name) if isinstance(name, str) else ""
    if not shown:
        raise InvalidValue("a note needs a name")
    if len(shown) > MAX_NAME:
        raise InvalidValue(f"a note's name is at most {MAX_NAME} characters; this one has "
                           f"{len(shown):,}")
    return shown
