"""Frontmatter past storage/vault/yaml_bounds.py's bounds is broken frontmatter, never a hang, a stack
overflow or gigabytes: the YAML alias bomb ("billion laughs"), deep nesting, huge blocks.

The parsing runs in a child process with a time and memory limit, so a regression fails the
test instead of hanging the suite or the machine.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from storage.errors import InvalidValue
from storage.index.extract import extract_note, read_note
from storage.vault.files import Vault
from storage.vault.note_text import parse_note
from storage.vault.yaml_bounds import MAX_DEPTH, MAX_FRONTMATTER_CHARS, MAX_NODES

REPO = Path(__file__).resolve().parents[2]


def alias_bomb() -> str:
    """The classic: nine levels of nine aliases each, ~390 million strings when expanded."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    return "---\n" + "\n".join(lines) + "\n---\nThe lol note.\n"


HOSTILE = {
    "alias-bomb": alias_bomb(),
    "deep-flow": "---\nx: " + "[" * 900 + "1" + "]" * 900 + "\n---\ndeep\n",
    "deep-block": "---\n" + "".join(" " * i + f"k{i}:\n" for i in range(200)) + "---\nb\n",
    "compact-seqs": "---\nx: " + "- " * 300 + "1\n---\nb\n",
    "many-nodes": "---\nx: [" + ",".join("1" for _ in range(MAX_NODES + 10)) + "]\n---\nb\n",
    "huge-block": "---\nx: \"" + "a" * (MAX_FRONTMATTER_CHARS + 10) + "\"\n---\nb\n",
    "recursive": "---\na: &a [*a]\n---\nb\n",
    "merge-key": "---\nbase: &b {k: v}\nuse:\n  <<: *b\n---\nb\n",
}

CHILD = """
import json, resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))  # 1 GB: the bomb wanted > 6 GB
from storage.index.extract import read_note
from storage.vault.note_text import parse_note
text = sys.stdin.read()
out = {}
for f in (parse_note, read_note):
    started = time.process_time()  # CPU, not wall: the bomb burns CPU; a busy machine does not
    note = f(text)
    out[f.__name__] = [note.frontmatter_error, note.frontmatter, note.body,
                       time.process_time() - started]
print(json.dumps(out))
"""


def _parse_in_child(text: str) -> dict[str, list[object]]:
    proc = subprocess.run([sys.executable, "-c", CHILD], input=text, capture_output=True,
                          text=True, cwd=REPO, timeout=30)  # a hang fails here
    assert proc.returncode == 0, proc.stderr[-2000:]
    parsed: dict[str, list[object]] = json.loads(proc.stdout)
    return parsed


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_frontmatter_is_broken_not_a_hang(name: str) -> None:
    text = HOSTILE[name]
    parsed = _parse_in_child(text)
    for how, (error, fields, body, seconds) in parsed.items():
        assert isinstance(error, str) and error, how  # named, so doctor can show it
        assert fields == {}, how  # nothing of it is read as fields
        assert isinstance(body, str) and body.strip(), how  # the body is still the note's text
        assert isinstance(seconds, float) and seconds < 2.0, (how, seconds)
    assert parsed["parse_note"][0] == parsed["read_note"][0]  # both readers say the same


def test_the_errors_say_what_was_refused() -> None:
    assert "aliases" in str(parse_note(HOSTILE["alias-bomb"]).frontmatter_error)
    assert f"{MAX_DEPTH} levels" in str(parse_note(HOSTILE["deep-flow"]).frontmatter_error)
    assert f"{MAX_NODES} values" in str(parse_note(HOSTILE["many-nodes"]).frontmatter_error)
    assert "KB" in str(parse_note(HOSTILE["huge-block"]).frontmatter_error)


def test_the_bomb_is_small() -> None:
    assert len(HOSTILE["alias-bomb"].encode()) < 400  # the note was 352 bytes


def test_anchors_without_aliases_and_ordinary_notes_still_read() -> None:
    note = parse_note("---\nname: &n Sara\ntags: [a, b]\nnested: {x: {y: [1, 2]}}\n---\nhi\n")
    assert note.frontmatter_error is None
    assert note.frontmatter == {"name": "Sara", "tags": ["a", "b"], "nested": {"x": {"y": [1, 2]}}}
    assert read_note(note.text).frontmatter == note.frontmatter


def test_index_row_of_a_bomb_is_its_text(tmp_path: Path) -> None:
    data = HOSTILE["alias-bomb"].encode()
    row = extract_note("v", "ideas/lol.md", data, 0, len(data)).row
    assert row["name"] == "lol" and row["category"] == "ideas"
    assert "The lol note." in row["body"] and json.loads(row["frontmatter"]) == {}


def test_a_bomb_is_never_rewritten_and_doctor_names_it(tmp_path: Path) -> None:
    vault = Vault(tmp_path / "v")
    (vault.root / "ideas").mkdir(parents=True)
    path = vault.root / "ideas" / "lol.md"
    path.write_text(HOSTILE["alias-bomb"], encoding="utf-8")
    (vault.root / "ideas" / "fine.md").write_text("---\nname: Fine\n---\nok\n", encoding="utf-8")
    with pytest.raises(InvalidValue, match="aliases.*fix it by hand"):
        vault.update("ideas/lol.md", {"status": "done"})
    assert path.read_text(encoding="utf-8") == HOSTILE["alias-bomb"]
    broken = vault.broken_notes()
    assert [rel for rel, _ in broken] == ["ideas/lol.md"]
    assert "aliases" in broken[0][1]


def test_the_child_limit_would_catch_an_expansion() -> None:
    """A memory limit is real protection here: expanding the bomb the old way grows without
    bound (~390 million strings, > 6 GB) and dies of MemoryError. Shown under 96 MB, which
    it reaches in a few seconds (filling the children's 1 GB burns 20 s of CPU)."""
    code = ("import resource, yaml, sys\n"
            "resource.setrlimit(resource.RLIMIT_AS, (96 << 20, 96 << 20))\n"
            "from storage.vault.note_text import normalise_scalar\n"
            "data = yaml.load(sys.stdin.read().split('---')[1], Loader=yaml.CSafeLoader)\n"
            "normalise_scalar(data)\n")
    try:
        proc = subprocess.run([sys.executable, "-c", code], input=HOSTILE["alias-bomb"],
                              capture_output=True, text=True, cwd=REPO, timeout=20)
    except subprocess.TimeoutExpired:
        return  # slow enough to be stopped: also what the bounds prevent
    assert proc.returncode != 0 and "MemoryError" in proc.stderr
    assert "normalise_scalar" in proc.stderr  # the expansion ran out, not the imports
