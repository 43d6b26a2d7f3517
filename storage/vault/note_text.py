"""Parsing and minimal-edit writing of one note's text (YAML frontmatter + markdown body).

Reading is tolerant (broken YAML still yields a body); writing is strict and surgical: only the
lines of the keys being changed are rewritten, every other byte of the file stays as it was.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from storage.errors import InvalidValue
from storage.vault.yaml_bounds import check_size, check_tree

BOM = "\ufeff"
_OPEN_RE = re.compile(r"---[ \t]*(\r?\n)")
_YAML_LINE_RE = re.compile(r"[^\r\n\x85\u2028\u2029]*(?:\r\n|[\r\n\x85\u2028\u2029])|.+\Z",
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


def _find_block(text: str) -> _Block | None:
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


def _newline(text: str) -> str:
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
        return {_key(k): normalise_scalar(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [normalise_scalar(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def _key(key: Any) -> str:
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


def _read_frontmatter(yaml_text: str) -> tuple[Any, yaml.Node | None, str | None]:
    try:
        data, node = _load(yaml_text)
    except (yaml.YAMLError, ValueError, TypeError, RecursionError) as exc:
        # ValueError: e.g. `date: 2026-13-45` matches the timestamp pattern but is no date.
        return None, None, " ".join(str(exc).split()) or type(exc).__name__
    if data is not None and not isinstance(data, dict):
        return None, None, f"frontmatter is a {type(data).__name__}, not a mapping of fields"
    return data or {}, node, None


def parse_note(text: str) -> ParsedNote:
    block = _find_block(text)
    if block is None:
        body = text[1:] if text.startswith(BOM) else text
        return ParsedNote(text, False, {}, None, body)
    data, _node, error = _read_frontmatter(text[block.yaml_start:block.yaml_end])
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


def _dump(mapping: Mapping[str, Any]) -> str:
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
    text = "---\n" + _dump(frontmatter) + "---\n"
    if body and not body.endswith("\n"):
        body += "\n"
    return text + body


def _dump_key(key: str, value: Any, newline: str) -> list[str]:
    out = _dump({key: value})
    # Only "\n": other line-break characters inside a value are content (quoted or escaped).
    return [line + newline for line in out.rstrip("\n").split("\n")]


def _is_filler(line: str) -> bool:
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


def _key_blocks(lines: list[str], node: yaml.MappingNode) -> dict[str, list[tuple[int, int]]]:
    """Line ranges [start, end) of each top-level key: its line plus continuation lines.

    Trailing blank and comment lines stay outside the range (they are not the key's), except
    inside a block scalar, whose end the parser tells us.
    """
    starts = [(k.start_mark.line, k, v) for k, v in node.value]
    blocks: dict[str, list[tuple[int, int]]] = {}
    for index, (line, key_node, value_node) in enumerate(starts):
        limit = starts[index + 1][0] if index + 1 < len(starts) else len(lines)
        end = limit
        while end > line + 1 and _is_filler(lines[end - 1]):
            end -= 1
        if isinstance(value_node, yaml.ScalarNode) and value_node.style in ("|", ">"):
            mark = value_node.end_mark
            value_end = mark.line + (1 if mark.column > 0 else 0)
            end = max(end, min(value_end, limit))
        if isinstance(key_node, yaml.ScalarNode):
            blocks.setdefault(key_node.value, []).append((line, end))
    return blocks


class _FlowDumper(yaml.SafeDumper):
    """One-line values for flow blocks: double-quoted strings look like JSON and escape all."""


_FlowDumper.add_representer(
    str, lambda d, v: d.represent_scalar("tag:yaml.org,2002:str", v, style='"'))
_FlowDumper.add_representer(
    type(None), lambda d, _v: d.represent_scalar("tag:yaml.org,2002:null", "null"))


def _flow(value: Any) -> str:
    out = yaml.dump(normalise_scalar(value), Dumper=_FlowDumper, default_flow_style=True,
                    allow_unicode=True, width=1_000_000_000)
    return out.removesuffix("\n...\n").strip()


def _own_line_indent(text: str, index: int) -> str | None:
    """The indentation before `index` when only whitespace precedes it on its line."""
    line_start = text.rfind("\n", 0, index) + 1
    prefix = text[line_start:index]
    return prefix if line_start > 0 and not prefix.strip() else None


def _edit_flow(yaml_text: str, node: yaml.MappingNode, changes: Mapping[str, Any],
               remove: Iterable[str], newline: str) -> str:
    """Edit a flow mapping (`{a: 1}` or JSON) in place: values replaced, items added/removed."""
    edits: list[tuple[int, int, str]] = []
    pairs = [(k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode)]
    present = {k.value for k, _ in pairs}
    gone = [k.value in remove and k.value not in changes for k, _ in pairs]
    for i, (key_node, value_node) in enumerate(pairs):
        start, end = key_node.start_mark.index, value_node.end_mark.index
        if key_node.value in changes:
            edits.append((value_node.start_mark.index, end, _flow(changes[key_node.value])))
        elif gone[i] and (i == 0 or not gone[i - 1]):
            # A run of removed items goes as one edit (edits must not overlap): with the comma
            # after it when an item follows, else with the comma before it.
            run_end = i
            while run_end + 1 < len(pairs) and gone[run_end + 1]:
                run_end += 1
            end = pairs[run_end][1].end_mark.index
            after = yaml_text[end:].lstrip()
            if after.startswith(","):
                stop = len(yaml_text) - len(after) + 1
                stop += len(yaml_text[stop:]) - len(yaml_text[stop:].lstrip())
                edits.append((start, stop, ""))
            else:
                before = yaml_text[:start].rstrip()
                if before.endswith(","):
                    start = len(before) - 1
                edits.append((start, end, ""))
    new_items = [f"{_flow(key)}: {_flow(value)}" for key, value in changes.items()
                 if key not in present]
    if new_items:
        close = node.end_mark.index - 1  # the `}`
        last = yaml_text[:close].rstrip()
        kept = [k for k, _ in pairs if k.value not in remove]
        if last.endswith("{") or not kept:
            edits.append((close, close, ", ".join(new_items)))
        elif (indent := _own_line_indent(yaml_text, pairs[-1][0].start_mark.index)) is not None:
            # One item per line (pretty JSON): follow the last item's indentation.
            joined = "".join(f",{newline}{indent}{item}" for item in new_items)
            edits.append((len(last), len(last), joined))
        else:
            edits.append((len(last), len(last), "".join(f", {item}" for item in new_items)))
    for start, end, replacement in sorted(edits, reverse=True):
        yaml_text = yaml_text[:start] + replacement + yaml_text[end:]
    return yaml_text


def _append_body(body: str, extra: str, newline: str) -> str:
    extra = extra.replace("\r\n", "\n").strip("\n").replace("\n", newline) + newline
    if not body.strip():
        return extra
    return body.rstrip("\r\n") + newline + newline + extra


def apply_changes(text: str, changes: Mapping[str, Any], *, remove: Iterable[str] = (),
                  append_body: str | None = None) -> str:
    """Change only the lines of the keys in `changes`/`remove`; every other byte stays.

    Raises InvalidValue when the frontmatter cannot be read (it is never rewritten blind).
    """
    remove = [key for key in remove if key not in changes]
    for key in changes:
        if not isinstance(key, str) or not key.strip():
            raise InvalidValue(f"field names must be non-empty strings, got {key!r}")
    newline = _newline(text)
    block = _find_block(text)
    if block is None:
        bom = BOM if text.startswith(BOM) else ""
        body = text[len(bom):]
        if append_body is not None:
            body = _append_body(body, append_body, newline)
        if not changes:
            return bom + body
        head = "".join(line for key, value in changes.items()
                       for line in _dump_key(key, value, newline))
        result = bom + "---" + newline + head + "---" + newline + body
        _check(result, {}, changes, ())
        return result

    yaml_text = text[block.yaml_start:block.yaml_end]
    data, node, error = _read_frontmatter(yaml_text)
    if error is not None:
        raise InvalidValue(f"the note's frontmatter cannot be read, so it was not changed: "
                           f"{error}")
    # Split where YAML itself sees line breaks, so the parser's line numbers index this list.
    lines = _YAML_LINE_RE.findall(yaml_text)
    if isinstance(node, yaml.MappingNode) and node.flow_style:
        new_yaml = _edit_flow(yaml_text, node, changes, remove, newline)
    else:
        blocks = _key_blocks(lines, node) if isinstance(node, yaml.MappingNode) else {}
        replace: dict[int, list[str]] = {}
        drop: set[int] = set()
        tail: list[str] = []
        for key, value in changes.items():
            new_lines = _dump_key(key, value, newline)
            ranges = blocks.get(key)
            if not ranges:
                tail.extend(new_lines)
                continue
            first, *rest = ranges
            replace[first[0]] = new_lines
            drop.update(range(first[0], first[1]))
            for start, end in rest:  # duplicate keys: keep one
                drop.update(range(start, end))
        for key in remove:
            for start, end in blocks.get(key, []):
                drop.update(range(start, end))
        out: list[str] = []
        for number, line in enumerate(lines):
            if number in replace:
                out.extend(replace[number])
            if number not in drop:
                out.append(line)
        if tail and out and not out[-1].endswith("\n"):
            out[-1] += newline
        new_yaml = "".join(out + tail)

    body = text[block.end:]
    closing = text[block.yaml_end:block.end]
    if append_body is not None:
        if not block.closed_with_newline:
            closing += newline
        body = _append_body(body, append_body, newline)
    result = text[:block.yaml_start] + new_yaml + closing + body
    _check(result, data or {}, changes, remove)
    return result


def _check(result: str, before: Mapping[Any, Any], changes: Mapping[str, Any],
           remove: Iterable[str]) -> None:
    """Refuse an edit whose result would not read back as intended (odd YAML layouts)."""
    expected = normalise_scalar({k: v for k, v in before.items() if _key(k) not in remove})
    expected.update(normalise_scalar(dict(changes)))
    parsed = parse_note(result)
    if parsed.frontmatter_error is not None or parsed.frontmatter != expected:
        raise InvalidValue("this note's frontmatter layout cannot be edited safely line by line; "
                           "it was not changed")
