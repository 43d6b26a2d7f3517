"""What a note's frontmatter fields may hold: values YAML can carry, each category's status
words, list fields as lists of text, date fields as days; and a field's default."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from storage.errors import InvalidValue
from storage.types import DATE_FIELDS, DEFAULT_STATUS, LIST_FIELDS, STATUS_VALUES


def default_value(field: str, category: str) -> Any:
    if field == "status":
        return DEFAULT_STATUS.get(category)
    if field in LIST_FIELDS:
        return []
    return None


def _checked_value(key: str, value: Any) -> Any:
    """A value fit for YAML frontmatter (JSON types), or InvalidValue."""
    if value is None or isinstance(value, bool | int | float | str | dt.date):
        return value
    if isinstance(value, list | tuple):
        return [_checked_value(key, item) for item in value]
    if isinstance(value, Mapping):
        return {str(k): _checked_value(key, v) for k, v in value.items()}
    raise InvalidValue(f"field {key!r}: a {type(value).__name__} cannot be stored in a note")


def checked_fields(category: str | None, fields: Mapping[str, Any]) -> dict[str, Any]:
    """Validated copy: status per category, list fields as lists of strings."""
    out: dict[str, Any] = {}
    for key, value in fields.items():
        if not isinstance(key, str) or not key.strip() or "\n" in key:
            raise InvalidValue(f"field names must be non-empty one-line text, got {key!r}")
        value = _checked_value(key, value)
        if key in LIST_FIELDS:
            value = _as_str_list(key, value)
        if key in DATE_FIELDS and value is not None:
            value = _as_day(key, value)
        if key == "status" and category in STATUS_VALUES:
            allowed = STATUS_VALUES[category]
            if not isinstance(value, str) or value.strip().lower() not in allowed:
                raise InvalidValue(f"status {value!r} is not valid for {category}; "
                                   f"use one of: {', '.join(allowed)}")
            value = value.strip().lower()
        out[key] = value
    return out


def _as_day(key: str, value: Any) -> str:
    """A date field's value as YYYY-MM-DD; anything else is refused (a digest or reminder
    would silently skip it)."""
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return value.isoformat()
    text = value.strip() if isinstance(value, str) else ""
    try:
        if len(text) == 10 and text[4] == "-" and text[7] == "-":
            return dt.date.fromisoformat(text).isoformat()
    except ValueError:
        pass
    raise InvalidValue(f"{key} {value!r} is not a date (YYYY-MM-DD)")


def _as_str_list(key: str, value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value.strip()] if value.strip() else []
    if not isinstance(value, list):
        raise InvalidValue(f"field {key!r} must be a list of text items")
    items: list[str] = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, str | int | float):
            raise InvalidValue(f"field {key!r} must be a list of text items, got {item!r}")
        if str(item).strip():
            items.append(str(item).strip())
    return items
