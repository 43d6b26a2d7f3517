"""Minimal-edit writing of a note's text: only the lines of the keys being changed are
rewritten, every other byte of the file stays as it was; an edit that would not read back as
meant is refused, never written blind."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from storage.errors import InvalidValue
from storage.vault.note_text import (
    BOM,
    YAML_LINE_RE,
    dump_mapping,
    find_block,
    key_text,
    newline_of,
    normalise_scalar,
    parse_note,
    read_frontmatter,
)


def _dump_key(key: str, value: Any, newline: str) -> list[str]:
    out = dump_mapping({key: value})
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
        if key_node.value in changes:
            edits.append((value_node.start_mark.index, value_node.end_mark.index,
                          _flow(changes[key_node.value])))
        elif gone[i] and (i == 0 or not gone[i - 1]):
            edits.append(_removed_run(yaml_text, pairs, gone, i))
    new_items = [f"{_flow(key)}: {_flow(value)}" for key, value in changes.items()
                 if key not in present]
    if new_items:
        kept = [k for k, _ in pairs if k.value not in remove]
        edits.append(_added_items(yaml_text, node, pairs, bool(kept), new_items, newline))
    for start, end, replacement in sorted(edits, reverse=True):
        yaml_text = yaml_text[:start] + replacement + yaml_text[end:]
    return yaml_text


def _removed_run(yaml_text: str, pairs: list[tuple[Any, Any]], gone: list[bool],
                 i: int) -> tuple[int, int, str]:
    """A run of removed items from item `i` on, as one edit (edits must not overlap): with the
    comma after it when an item follows, else with the comma before it."""
    start = pairs[i][0].start_mark.index
    run_end = i
    while run_end + 1 < len(pairs) and gone[run_end + 1]:
        run_end += 1
    end = pairs[run_end][1].end_mark.index
    after = yaml_text[end:].lstrip()
    if after.startswith(","):
        stop = len(yaml_text) - len(after) + 1
        stop += len(yaml_text[stop:]) - len(yaml_text[stop:].lstrip())
        return start, stop, ""
    before = yaml_text[:start].rstrip()
    if before.endswith(","):
        start = len(before) - 1
    return start, end, ""


def _added_items(yaml_text: str, node: yaml.MappingNode, pairs: list[tuple[Any, Any]],
                 any_kept: bool, new_items: list[str], newline: str) -> tuple[int, int, str]:
    """New items at the end of the mapping, in the layout it has."""
    close = node.end_mark.index - 1  # the `}`
    last = yaml_text[:close].rstrip()
    if last.endswith("{") or not any_kept:
        return close, close, ", ".join(new_items)
    indent = _own_line_indent(yaml_text, pairs[-1][0].start_mark.index)
    if indent is not None:  # one item per line (pretty JSON): the last item's indentation
        return len(last), len(last), "".join(f",{newline}{indent}{item}" for item in new_items)
    return len(last), len(last), "".join(f", {item}" for item in new_items)


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
    newline = newline_of(text)
    block = find_block(text)
    if block is None:
        return _new_frontmatter(text, changes, append_body, newline)

    yaml_text = text[block.yaml_start:block.yaml_end]
    data, node, error = read_frontmatter(yaml_text)
    if error is not None:
        raise InvalidValue(f"the note's frontmatter cannot be read, so it was not changed: "
                           f"{error}")
    if isinstance(node, yaml.MappingNode) and node.flow_style:
        new_yaml = _edit_flow(yaml_text, node, changes, remove, newline)
    else:
        new_yaml = _edit_lines(yaml_text, node, changes, remove, newline)
    body = text[block.end:]
    closing = text[block.yaml_end:block.end]
    if append_body is not None:
        if not block.closed_with_newline:
            closing += newline
        body = _append_body(body, append_body, newline)
    result = text[:block.yaml_start] + new_yaml + closing + body
    _check(result, data or {}, changes, remove)
    return result


def _new_frontmatter(text: str, changes: Mapping[str, Any], append_body: str | None,
                     newline: str) -> str:
    """A note without frontmatter: one made of `changes` (none when there are none)."""
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


def _edit_lines(yaml_text: str, node: Any, changes: Mapping[str, Any], remove: Iterable[str],
                newline: str) -> str:
    """Edit block-style YAML line by line: a changed key's lines replaced where they are (a
    duplicate key's other lines dropped), a removed key's dropped, a new key's at the end."""
    # Split where YAML itself sees line breaks, so the parser's line numbers index this list.
    lines = YAML_LINE_RE.findall(yaml_text)
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
    return "".join(out + tail)


def _check(result: str, before: Mapping[Any, Any], changes: Mapping[str, Any],
           remove: Iterable[str]) -> None:
    """Refuse an edit whose result would not read back as intended (odd YAML layouts)."""
    expected = normalise_scalar({k: v for k, v in before.items() if key_text(k) not in remove})
    expected.update(normalise_scalar(dict(changes)))
    parsed = parse_note(result)
    if parsed.frontmatter_error is not None or parsed.frontmatter != expected:
        raise InvalidValue("this note's frontmatter layout cannot be edited safely line by line; "
                           "it was not changed")
