"""Every name the vault makes, changes or reads carries no bidi control and no zero-width
character, and is at most MAX_NAME characters (issue 31, finding 9): property tests over the
three places a note's name comes from (Vault.create, Vault.update, a file written by hand, as
the vault reads it and as the index stores it). A joiner stays only inside a script that needs
it (Persian, an emoji sequence), never next to ASCII, where it would only hide a difference.

And the text of a thought is read in linear time: `strip_dates` and `subject` on runs of tens
of thousands of (no-break) spaces took minutes (quadratic regular expressions)."""

from __future__ import annotations

import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storage.errors import InvalidValue
from storage.index.extract import extract_note
from storage.text import name_text
from storage.types import MAX_NAME
from storage.vault.files import Vault

BIDI = set("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
ZERO_WIDTH = set("\u200b\u2060\ufeff\u180e")
JOINERS = set("\u200c\u200d")
TRICKY = sorted(BIDI | ZERO_WIDTH | JOINERS) + list("aZ9 .-\n\t\u00a0\u0430\u03b1ه👨")

names = st.text(alphabet=st.one_of(st.sampled_from(TRICKY), st.characters()), max_size=400)
EXAMPLES = settings(max_examples=200, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


def assert_safe(name: str) -> None:
    assert len(name) <= MAX_NAME, len(name)
    assert not BIDI & set(name) and not ZERO_WIDTH & set(name), repr(name)
    assert not any(unicodedata.category(c) in ("Cc", "Cf") and c not in JOINERS for c in name)
    for i, ch in enumerate(name):
        if ch in JOINERS:  # only between two characters of a script that needs it
            assert 0 < i < len(name) - 1, repr(name)
            around = name[i - 1] + name[i + 1]
            assert not around.isascii() and not any(c.isspace() for c in around), repr(name)
    assert name == name.strip() and "  " not in name and "\n" not in name


@EXAMPLES
@given(raw=names)
def test_a_name_read_from_any_text_is_safe(raw: str) -> None:
    assert_safe(name_text(raw))


@EXAMPLES
@given(raw=names)
def test_a_name_given_to_create_or_update_is_safe_or_refused(tmp_path: Path, raw: str) -> None:
    vault = Vault(tmp_path / "v")
    try:
        made = vault.create("ideas", raw, {}, "body\n")
    except InvalidValue as exc:  # nothing visible left, or longer than MAX_NAME
        assert "needs a name" in exc.message or f"at most {MAX_NAME}" in exc.message
        return
    for entry in (made, vault.read(made.path)):
        assert_safe(entry.name)
        assert_safe(entry.fields["name"])
    changed = vault.update(made.path, {"name": "Old " + raw[:60]})
    assert_safe(changed.name)
    assert_safe(vault.read(made.path).fields["name"])


@EXAMPLES
@given(raw=names)
def test_a_name_written_by_hand_is_shown_and_indexed_safe(tmp_path: Path, raw: str) -> None:
    vault = Vault(tmp_path / "v")
    text = "---\n" + yaml.safe_dump({"name": raw}, allow_unicode=True) + "---\nBody.\n"
    path = vault.root / "notes" / "by-hand.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    shown = vault.read("notes/by-hand.md").name
    assert_safe(shown)
    row = extract_note("v", "notes/by-hand.md", text.encode(), 0, len(text)).row
    assert row["name"] == shown  # the index names it as the vault reads it


RUNS = {  # texts with long runs of spaces, of each kind
    "no-break spaces": "\u00a0" * 40_000,
    "a word, no-break spaces, a word": "Call" + "\u00a0" * 40_000 + "Sara",
    "spaces and no-break spaces": "Idea: " + "\u00a0 " * 20_000 + "kayaks next week",
    "spaces": "Plan" + " " * 40_000 + "the offsite",
    "line breaks": "Plan" + "\n" * 40_000 + "the offsite",
}
LINEAR = """
import sys, time
from tools.rules.dates import strip_dates
from tools.rules.naming import subject
text = sys.stdin.read()
started = time.perf_counter()
strip_dates(text)
subject(text)
print(time.perf_counter() - started)
"""


@pytest.mark.parametrize("case", list(RUNS))
def test_long_runs_of_spaces_are_read_in_linear_time(case: str) -> None:
    # A child process, so the quadratic code (minutes) fails at the deadline, not much later.
    # The linear code takes ~0.1 s; the deadline allows for a loaded machine.
    try:
        done = subprocess.run([sys.executable, "-c", LINEAR], input=RUNS[case], text=True,
                              capture_output=True, timeout=20, check=True,
                              cwd=Path(__file__).resolve().parents[2])
    except subprocess.TimeoutExpired:
        pytest.fail(f"{case}: strip_dates and subject took over 20 s on 40,000 characters")
    assert float(done.stdout) < 5.0, (case, done.stdout)
