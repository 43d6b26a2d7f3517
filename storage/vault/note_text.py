"""Parsing one note's text (YAML frontmatter + markdown body), and rendering a new one.

Reading is tolerant (broken YAML still yields a body); writing an existing note is strict and
surgical (storage/vault/note_edits.py)."""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from storage.errors import InvalidValue
from storage.vault.yaml_bounds import check_size, check_tree

BOM = "\ufeff"
_OPEN_RE = re.compile(r"---[ \t]*(\r?\n)")
YAML_LINE_RE = re.compile(r"[^\r\n\x85\u2028\u2029]*(?:\r\n|[\r\n\x85\u2028\u2029])|.+\Z",
                           re.DOTALL)
_CLOSE_RE = re.compile(r"^---[ \t]*(?:\r?\n|\Z)", re.MULTILINE)


@dataclass(frozen=True)
class ParsedNote:
    text: str  # the file's text exactly as read
    has_frontmatter: bool
    frontmatter: dict[str, Any]  # JSON-safe: dates -> ISO strings, None kept; {} when absent/broken
    frontmatter_error: str | None  # YAML that did not parse (the note is still indexed, as body)
    body: str  # the text after the frontmatter block


@dataclass(frozen=True)
class _Block:
    """Offsets of the frontmatter block inside a note's text."""

    start: int  # index of the opening `---` (after a BOM)
    yaml_start: int  # first character of the YAML
    yaml_end: int  # index of the closing `---` line
    end: int  # first character of the body
    closed_with_newline: bool


def find_block(text: str) -> _Block | None:
    start = 1 if text.startswith(BOM) else 0
    opening = _OPEN_RE.match(text, start)
    if opening is None:
        return None
    yaml_start = opening.end()
    closing = _CLOSE_RE.search(text, yaml_start)
    if closing is None:
        return None
    closed_nl = closing.group().endswith("\n")
    return _Block(start, yaml_start, closing.start(), closing.end(), closed_nl)


def newline_of(text: str) -> str:
    """The file's newline style, judged by its first line ending."""
    index = text.find("\n")
    return "\r\n" if index > 0 and text[index - 1] == "\r" else "\n"


def normalise_scalar(value: Any) -> Any:
    """A JSON-safe copy of a YAML value: dates as ISO strings, containers recursively."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {key_text(k): normalise_scalar(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [normalise_scalar(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def key_text(key: Any) -> str:
    if key is None:
        return "null"
    if isinstance(key, bool):
        return "true" if key else "false"
    return str(normalise_scalar(key))


# libyaml when it is there: same safe schema and node marks, several times faster.
_SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _load(yaml_text: str) -> tuple[Any, yaml.Node | None]:
    """The loaded data and its node tree (for line numbers); raises on broken YAML and on
    YAML past storage/vault/yaml_bounds.py's bounds (FrontmatterRefused)."""
    check_size(yaml_text)
    loader = _SafeLoader(yaml_text)
    try:
        node = loader.get_single_node()
        if node is not None:
            check_tree(node)
        data = loader.construct_document(node) if node is not None else None
    finally:
        loader.dispose()
    return data, node


def load_yaml(yaml_text: str) -> Any:
    """A frontmatter block's data, within the bounds; raises as `_load` does."""
    return _load(yaml_text)[0]


def read_frontmatter(yaml_text: str) -> tuple[Any, yaml.Node | None, str | None]:
    try:
        data, node = _load(yaml_text)
    except (yaml.YAMLError, ValueError, TypeError, RecursionError) as exc:
        # ValueError: e.g. `date: 2026-13-45` matches the timestamp pattern but is no date.
        return None, None, " ".join(str(exc).split()) or type(exc).__name__
    if data is not None and not isinstance(data, dict):
        return None, None, f"frontmatter is a {type(data).__name__}, not a mapping of fields"
    return data or {}, node, None


def parse_note(text: str) -> ParsedNote:
    block = find_block(text)
    if block is None:
        body = text[1:] if text.startswith(BOM) else text
        return ParsedNote(text, False, {}, None, body)
    data, _node, error = read_frontmatter(text[block.yaml_start:block.yaml_end])
    frontmatter = normalise_scalar(data) if data else {}
    return ParsedNote(text, True, frontmatter, error, text[block.end:])


# --- writing ---------------------------------------------------------------------------------


class _Dumper(yaml.SafeDumper):
    """safe_dump with empty values written as `key:` and multi-line strings as `|` blocks."""


def _represent_none(dumper: yaml.SafeDumper, _value: None) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:null", "")


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    # PyYAML's plain/single-quoted output folds these breaks wrongly; escape them instead.
    if any(ch in value for ch in "\r\x85\u2028\u2029"):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style='"')
    # `|+` (several trailing newlines) makes PyYAML end the document with `...`; avoid it.
    if "\n" in value and not value.endswith("\n\n"):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_str(value)


_Dumper.add_representer(type(None), _represent_none)
_Dumper.add_representer(str, _represent_str)


def dump_mapping(mapping: Mapping[str, Any]) -> str:
    if not mapping:
        return ""
    try:
        out = yaml.dump(dict(mapping), Dumper=_Dumper, default_flow_style=False,
                        allow_unicode=True, sort_keys=False, width=1_000_000_000)
    except yaml.YAMLError as exc:
        raise InvalidValue(f"cannot write that value as YAML: {exc}") from exc
    if any(line.startswith(("---", "...")) for line in out.split("\n")):
        # A document marker inside the block would end the frontmatter early: use plain quoting.
        out = yaml.safe_dump(dict(mapping), default_flow_style=False, allow_unicode=True,
                             sort_keys=False, width=1_000_000_000)
    return out


def render_note(frontmatter: Mapping[str, Any], body: str) -> str:
    """A new note: a frontmatter block with keys in the given order, then the body."""
    text = "---\n" + dump_mapping(frontmatter) + "---\n"
    if body and not body.endswith("\n"):
        body += "\n"
    return text + body
