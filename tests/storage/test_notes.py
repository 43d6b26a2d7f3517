"""parse_note / apply_changes / render_note: tolerant reads, surgical writes."""

from __future__ import annotations

import datetime as dt
import difflib
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage.errors import InvalidValue
from storage.vault.note_edits import apply_changes
from storage.vault.note_text import normalise_scalar, parse_note, render_note
from tests.storage.conftest import ODD_NOTES, real_vault_files

# --- parsing -----------------------------------------------------------------------------------


def test_parse_plain_frontmatter() -> None:
    note = parse_note("---\nname: Sara\ntags: [a, b]\n---\nBody\n")
    assert note.has_frontmatter
    assert note.frontmatter == {"name": "Sara", "tags": ["a", "b"]}
    assert note.frontmatter_error is None
    assert note.body == "Body\n"


def test_parse_without_frontmatter_keeps_whole_text_as_body() -> None:
    text = "# Title\n\n---\nnot: frontmatter\n---\n"
    note = parse_note(text)
    assert not note.has_frontmatter
    assert note.frontmatter == {}
    assert note.body == text


def test_parse_empty_block() -> None:
    note = parse_note("---\n---\nBody")
    assert note.has_frontmatter and note.frontmatter == {} and note.frontmatter_error is None
    assert note.body == "Body"


def test_parse_crlf_and_bom() -> None:
    crlf = parse_note(ODD_NOTES["crlf.md"])
    assert crlf.frontmatter == {"name": "Windows note", "tags": ["a"]}
    assert crlf.body == "Line one\r\nLine two\r\n"
    bom = parse_note(ODD_NOTES["bom.md"])
    assert bom.frontmatter == {"name": "With BOM"}
    assert bom.body == "Body after BOM\n"
    assert bom.text == ODD_NOTES["bom.md"]


def test_broken_yaml_keeps_body_and_reports_error() -> None:
    note = parse_note(ODD_NOTES["broken-yaml.md"])
    assert note.has_frontmatter
    assert note.frontmatter == {}
    assert note.frontmatter_error
    assert note.body == "Template body\n"


@pytest.mark.parametrize("yaml_text", ["- a\n- b\n", "just a string\n", "42\n"])
def test_non_mapping_yaml_is_treated_as_broken(yaml_text: str) -> None:
    note = parse_note(f"---\n{yaml_text}---\nBody\n")
    assert note.frontmatter == {}
    assert note.frontmatter_error and "mapping" in note.frontmatter_error
    assert note.body == "Body\n"


def test_invalid_date_is_broken_not_a_crash() -> None:
    note = parse_note("---\ndue: 2026-13-45\n---\nx")
    assert note.frontmatter == {} and note.frontmatter_error


def test_dates_become_iso_strings_and_comma_tags_stay() -> None:
    dates = parse_note(ODD_NOTES["dates.md"]).frontmatter
    assert dates == {"created": "2024-03-01", "seen": "2024-03-01T10:15:00+01:00"}
    assert parse_note(ODD_NOTES["comma-tags.md"]).frontmatter["tags"] == "work, q3 , budget"


def test_normalise_scalar() -> None:
    value = {"d": dt.date(2024, 1, 2), 3: [dt.datetime(2024, 1, 2, 3, 4, 5)],
             "n": None, "f": float("nan"), "s": {1, 2} - {1}}
    assert normalise_scalar(value) == {"d": "2024-01-02", "3": ["2024-01-02T03:04:05"],
                                       "n": None, "f": "nan", "s": [2]}


def test_unclosed_block_is_body() -> None:
    note = parse_note(ODD_NOTES["unclosed.md"])
    assert not note.has_frontmatter and note.body == ODD_NOTES["unclosed.md"]


# --- minimal edits -----------------------------------------------------------------------------

COMMENTED = """---
id: e_123
# a comment the user wrote
name: "Quoted name"
tags:
  - one
  - two

status: active   # trailing comment
nested:
  a: 1
---
Body with [[Link]].
"""


def changed_lines(before: str, after: str) -> list[str]:
    return sorted(line for line in difflib.ndiff(before.splitlines(), after.splitlines())
            if line[:1] in "+-")


def test_change_replaces_only_the_key_block() -> None:
    out = apply_changes(COMMENTED, {"tags": ["three"]})
    assert changed_lines(COMMENTED, out) == ["+ - three", "-   - one", "-   - two"]
    assert parse_note(out).frontmatter["tags"] == ["three"]


def test_new_key_is_appended_at_the_end_of_the_block() -> None:
    out = apply_changes(COMMENTED, {"due_date": "2026-01-01"})
    assert changed_lines(COMMENTED, out) == ["+ due_date: '2026-01-01'"]
    assert out.index("due_date") < out.index("---\nBody")


def test_remove_key() -> None:
    out = apply_changes(COMMENTED, {}, remove=["nested"])
    assert changed_lines(COMMENTED, out) == ["-   a: 1", "- nested:"]


def test_no_changes_is_byte_identical() -> None:
    for text in ODD_NOTES.values():
        if "{{" in text or "- a\n- b" in text:
            continue
        assert apply_changes(text, {}) == text


@pytest.mark.parametrize("value", ["2026-01-01", "yes", "null", "[[Link]]", "a: b", "#x",
                                   "- item", "  spaced  ", "multi\nline\n", "", "---", "123",
                                   "Ünïcödé", "'quoted'", '"dq"', "trailing\n\n", "{a: 1}"])
def test_strings_round_trip_as_strings(value: str) -> None:
    out = apply_changes(COMMENTED, {"field": value, "status": value})
    fm = parse_note(out).frontmatter
    assert fm["field"] == value and fm["status"] == value
    assert parse_note(out).body == parse_note(COMMENTED).body


def test_note_without_frontmatter_gets_a_block() -> None:
    text = ODD_NOTES["no-frontmatter.md"]
    out = apply_changes(text, {"category": "ideas"})
    assert out == "---\ncategory: ideas\n---\n" + text


def test_crlf_is_preserved() -> None:
    out = apply_changes(ODD_NOTES["crlf.md"], {"status": "done"}, append_body="Added")
    assert "\n" not in out.replace("\r\n", "")
    assert out.endswith("Line two\r\n\r\nAdded\r\n")
    assert parse_note(out).frontmatter["status"] == "done"


def test_bom_is_preserved() -> None:
    out = apply_changes(ODD_NOTES["bom.md"], {"x": 1})
    assert out.startswith("\ufeff---\n") and parse_note(out).frontmatter == {"name": "With BOM",
                                                                           "x": 1}


def test_empty_block_gets_keys() -> None:
    out = apply_changes("---\n---\nBody", {"a": 1})
    assert out == "---\na: 1\n---\nBody"


def test_append_body_separates_with_blank_line() -> None:
    assert apply_changes("---\na: 1\n---\nOld\n", {}, append_body="New") == \
        "---\na: 1\n---\nOld\n\nNew\n"
    assert apply_changes("---\na: 1\n---", {}, append_body="New") == "---\na: 1\n---\nNew\n"


@pytest.mark.parametrize("name", ["broken-yaml.md", "list-yaml.md"])
def test_broken_yaml_is_never_rewritten(name: str) -> None:
    with pytest.raises(InvalidValue, match="not"):
        apply_changes(ODD_NOTES[name], {"status": "done"})


def test_duplicate_keys_collapse_to_the_new_value() -> None:
    out = apply_changes("---\na: 1\nb: 2\na: 3\n---\n", {"a": 9})
    assert parse_note(out).frontmatter == {"a": 9, "b": 2}


def test_flow_mapping_block_is_edited() -> None:
    out = apply_changes("---\n{a: 1, b: x}\n---\nBody\n", {"a": 2})
    assert parse_note(out).frontmatter == {"a": 2, "b": "x"}
    assert parse_note(out).body == "Body\n"


def test_render_note_keeps_key_order() -> None:
    text = render_note({"id": "e_1", "name": "N", "tags": [], "next_action": None}, "Body")
    assert text == "---\nid: e_1\nname: N\ntags: []\nnext_action:\n---\nBody\n"
    assert list(parse_note(text).frontmatter) == ["id", "name", "tags", "next_action"]


# --- properties --------------------------------------------------------------------------------

keys = st.sampled_from(["id", "name", "status", "tags", "next_action", "due_date", "x", "a b",
                        "created", "weird: key", "ü"])
scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
                    st.text(st.characters(blacklist_categories=("Cs",)), max_size=30),
                    st.sampled_from(["2026-01-01", "yes", "no", "null", "~", "[[Link]]", "a: b",
                                     "#c", "---", "...", "12:30", "0x1F", "1e3"]))
values = st.one_of(scalars, st.lists(scalars, max_size=3),
                   st.dictionaries(st.text(string.ascii_letters, min_size=1, max_size=5),
                                   scalars, max_size=2))
ORIGINALS = [COMMENTED, ODD_NOTES["crlf.md"], ODD_NOTES["dates.md"], ODD_NOTES["comments.md"],
             ODD_NOTES["empty-block.md"], ODD_NOTES["bom.md"], ODD_NOTES["no-frontmatter.md"],
             "---\nnotes: |\n  line\n\n  more\n# after\nk: v\n---\nbody"]


@settings(max_examples=300, deadline=None)
@given(original=st.sampled_from(ORIGINALS), changes=st.dictionaries(keys, values, max_size=4),
       remove=st.lists(keys, max_size=2))
def test_apply_changes_gives_exactly_the_intended_frontmatter(
        original: str, changes: dict[str, object], remove: list[str]) -> None:
    before = parse_note(original)
    out = apply_changes(original, changes, remove=remove)
    after = parse_note(out)
    expected = {k: v for k, v in before.frontmatter.items() if k not in remove or k in changes}
    expected.update(normalise_scalar(changes))
    assert after.frontmatter == expected
    assert after.body == before.body
    if not changes and not set(remove) & set(before.frontmatter):
        assert out == original


# --- the real vault ----------------------------------------------------------------------------

REAL = real_vault_files()


@pytest.mark.skipif(not REAL, reason="real vault not present")
def test_real_vault_parses_and_edits_minimally() -> None:
    edited = 0
    for path in REAL:
        text = path.read_bytes().decode("utf-8", errors="replace")
        note = parse_note(text)
        if not note.has_frontmatter or note.frontmatter_error:
            continue
        out = apply_changes(text, {"x_test": "v"})
        assert parse_note(out).frontmatter == {**note.frontmatter, "x_test": "v"}, path
        if text.lstrip("\ufeff-\r\n \t").startswith("{"):
            # JSON-style block: the previous last item gains a comma.
            assert len(changed_lines(text, out)) <= 3, path
        else:
            assert changed_lines(text, out) == ["+ x_test: v"], path
        assert parse_note(out).body == note.body, path
        edited += 1
    assert edited > 0


@st.composite
def generated_notes(draw: st.DrawFn) -> str:
    """Frontmatter as tools and people write it: block or flow style, comments, CRLF."""
    import yaml

    data = draw(st.dictionaries(st.sampled_from(["a", "tags", "name", "x y", "n"]), values,
                                max_size=4))
    style = draw(st.sampled_from(["block", "flow", "json"]))
    if style == "json":
        import json

        yaml_text = json.dumps(data, indent=draw(st.sampled_from([None, 2])),
                               ensure_ascii=False) + "\n"
    else:
        yaml_text = yaml.safe_dump(data, default_flow_style=style == "flow",
                                   allow_unicode=True, sort_keys=False) if data else ""
        if style == "block" and draw(st.booleans()):
            lines = yaml_text.splitlines(keepends=True)
            lines.insert(draw(st.integers(0, len(lines))), "# a comment\n")
            yaml_text = "".join(lines)
    text = "---\n" + yaml_text + "---\n" + draw(st.text(max_size=20))
    if draw(st.booleans()):
        text = text.replace("\n", "\r\n")
    return text


@settings(max_examples=300, deadline=None)
@given(original=generated_notes(), changes=st.dictionaries(keys, values, max_size=3),
       remove=st.lists(keys, max_size=2))
def test_apply_changes_on_generated_notes(original: str, changes: dict[str, object],
                                          remove: list[str]) -> None:
    before = parse_note(original)
    if before.frontmatter_error:  # e.g. a drawn body line "---" ends up inside
        return
    out = apply_changes(original, changes, remove=remove)
    expected = {k: v for k, v in before.frontmatter.items() if k not in remove or k in changes}
    expected.update(normalise_scalar(changes))
    assert parse_note(out).frontmatter == expected
    assert parse_note(out).body == before.body


def test_removing_the_last_two_keys_of_a_flow_mapping_keeps_it_whole() -> None:
    # Found by the property test above: both removals claimed the comma between them.
    text = "---\n{tags: null, name: null}\n---\nbody\n"
    out = apply_changes(text, {}, remove=["name", "tags"])
    assert parse_note(out).frontmatter == {} and parse_note(out).body == "body\n"
    out = apply_changes(text, {"id": "x"}, remove=["name", "tags"])
    assert parse_note(out).frontmatter == {"id": "x"} and parse_note(out).body == "body\n"
    out = apply_changes("---\n{a: 1, b: 2, c: 3}\n---\n", {}, remove=["b", "c"])
    assert out == "---\n{a: 1}\n---\n"
