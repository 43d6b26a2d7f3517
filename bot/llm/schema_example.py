"""Small values valid for a JSON schema, for the offline provider: arguments of a tool it must
call but has no rule for, and structured output it is asked for. Strings come from the user's
text, and any property the classification hints can fill (category, name, due_date, ...) gets
the hint, at any depth, so a capture-shaped schema gets real hints rather than placeholders.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from typing import Any

from jsonschema import Draft202012Validator

_DATE_PATTERN = re.compile(r"\\d\{4\}-\\d\{2\}-\\d\{2\}")
_VALIDATORS: dict[int, tuple[Any, Draft202012Validator]] = {}


def validator(schema: dict[str, Any]) -> Draft202012Validator:
    """One validator per schema object (schemas are built once and never changed)."""
    hit = _VALIDATORS.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    made = Draft202012Validator(schema)
    if len(_VALIDATORS) > 256:  # per-request schemas come and go; keep the table small
        _VALIDATORS.clear()
    _VALIDATORS[id(schema)] = (schema, made)
    return made


def fits(value: Any, schema: Any) -> bool:
    if not isinstance(schema, dict):
        return False
    try:
        return bool(validator(schema).is_valid(value))
    except Exception:  # a schema jsonschema cannot handle: do not guess
        return False


def fit_arguments(arguments: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any] | None:
    """`arguments` as the schema accepts them: unchanged when valid, else without the
    properties the schema does not declare; None when even that is not valid."""
    if fits(arguments, schema):
        return arguments
    declared = schema.get("properties")
    if isinstance(declared, dict):
        kept = {k: v for k, v in arguments.items() if k in declared}
        if fits(kept, schema):
            return kept
    return None


@dataclass(frozen=True)
class _Source:
    """What an example is made of: the user's text, today, and the classification hints."""

    text: str
    today: date
    hints: dict[str, Any]


def example_for_schema(schema: Any, text: str = "", today: date | None = None,
                       hints: dict[str, Any] | None = None) -> Any:
    """A small value valid for `schema`: required properties (plus any property the `hints`
    can fill, and nested objects they fill), strings from the user's text."""
    return _example(schema, _Source(text, today or date.today(), hints or {}))


def _example(schema: Any, source: _Source) -> Any:
    if not isinstance(schema, dict):
        return {}
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return _example(schema[key][0], source)
    return _of_kind(schema, _kind(schema), source)


def _kind(schema: dict[str, Any]) -> Any:
    """The schema's type: the first that is not null of a list, else guessed from its shape."""
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind is None:
        kind = "object" if "properties" in schema else "string"
    return kind


def _of_kind(schema: dict[str, Any], kind: Any, source: _Source) -> Any:
    if kind == "object":
        return _object(schema, source)
    if kind == "array":
        count = int(schema.get("minItems", 0))
        return [_example(schema.get("items", {}), source) for _ in range(count)]
    if kind in ("number", "integer"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", -1) + 1)
        value = max(low, 0) if "maximum" not in schema else min(max(low, 0), schema["maximum"])
        return int(value) if kind == "integer" else float(value)
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return _string(schema, source)


def _string(schema: dict[str, Any], source: _Source) -> str:
    """Today for a date, else the user's text within the schema's lengths."""
    today = source.today
    if schema.get("format") == "date" or _DATE_PATTERN.search(str(schema.get("pattern", ""))):
        return today.isoformat()
    if schema.get("format") == "date-time":
        return f"{today.isoformat()}T00:00:00Z"
    value = " ".join(source.text.split()) or "n/a"
    value = value[: int(schema.get("maxLength", 200))]
    return value.ljust(int(schema.get("minLength", 0)), ".")


def _object(schema: dict[str, Any], source: _Source) -> dict[str, Any]:
    hints = source.hints
    properties = schema.get("properties") or {}
    out: dict[str, Any] = {}
    for name, value in hints.items():
        sub = properties.get(name)
        if isinstance(sub, dict) and fits(value, sub):
            out[name] = value
    for name, sub in properties.items():
        # An optional object the hints can fill (e.g. a capture's "hints"): fill it.
        if name in out or not isinstance(sub, dict) or sub.get("type") != "object":
            continue
        inner = sub.get("properties") or {}
        if hints and set(hints) & set(inner):
            value = _example(sub, source)
            if fits(value, sub):
                out[name] = value
    for name in schema.get("required") or []:
        if name not in out:
            out[name] = _example(properties.get(name, {}), source)
    return out
