"""The bounds of a note's frontmatter, checked on the parsed node tree before anything is built.

A note is a file anyone with the vault can write (a sync, a shared folder). 352 bytes of YAML
aliases ("billion laughs") expand to ~390 million strings when copied out, and 500 nested
brackets overflow Python's stack. Frontmatter past these bounds is broken frontmatter: the note
is indexed as text, never rewritten, and `brain doctor` names it.
"""

from __future__ import annotations

import yaml

MAX_FRONTMATTER_CHARS = 512 * 1024
MAX_NODES = 50_000
MAX_DEPTH = 64


class FrontmatterRefused(ValueError):
    """YAML that parses but is not read as a note's fields (aliases, too big, too deep)."""


def check_tree(root: yaml.Node) -> None:
    """Refuse aliases (a node reached twice), more than MAX_NODES nodes, nesting past
    MAX_DEPTH: before anything is constructed, so nothing is ever expanded. One level at a
    time (a note's dozen fields cost a few microseconds)."""
    seen: set[int] = set()
    level = [root]
    depth = 0
    while level:
        depth += 1
        if depth > MAX_DEPTH:
            raise FrontmatterRefused(f"frontmatter is nested more than {MAX_DEPTH} levels deep")
        below: list[yaml.Node] = []
        for node in level:
            if id(node) in seen:
                raise FrontmatterRefused("frontmatter uses YAML aliases (*name), which notes "
                                         "do not read")
            seen.add(id(node))
            value = node.value
            if type(value) is list:  # a scalar's value is its text
                if isinstance(node, yaml.MappingNode):
                    for key, item in value:
                        below.append(key)
                        below.append(item)
                else:
                    below.extend(value)
        if len(seen) + len(below) > MAX_NODES:
            raise FrontmatterRefused(f"frontmatter has more than {MAX_NODES} values")
        level = below


def check_size(yaml_text: str) -> None:
    if len(yaml_text) > MAX_FRONTMATTER_CHARS:
        raise FrontmatterRefused(f"frontmatter is over {MAX_FRONTMATTER_CHARS // 1024} KB")
