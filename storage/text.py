"""Text made safe to store: what a note file, YAML and every database can hold.

Lone surrogates (from JSON like "\\udc80") cannot be encoded as UTF-8; control characters
other than tab and line breaks make YAML unreadable; NUL is refused by PostgreSQL. Each becomes
U+FFFD, so the user can see that something was there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

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
