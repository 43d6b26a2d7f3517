"""Names that spoof, through the CLI (issue 31, finding 9), on the test's database
(BRAIN_TEST_DB=postgres too): `--name` and `update name=` keep no bidi control or zero-width
character, a name over 120 characters is refused with exit 2 and nothing written (it took a
10,200-character one), and a listing says when a name's word mixes look-alike scripts. The
long name goes through the real console command, as a shell runs it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.brain_cli import BrainCLI, run_process

HIDDEN = re.compile("[\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")


@pytest.fixture
def cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> BrainCLI:
    return BrainCLI(capsys, tmp_path, {"BRAIN_DATA_DIR": str(tmp_path / "data"),
                                       "BRAIN_LLM": "offline"})


def vault(tmp_path: Path) -> Path:
    return tmp_path / "data" / "vaults" / "local"


def notes(tmp_path: Path) -> list[Path]:
    return sorted(vault(tmp_path).rglob("*.md")) if vault(tmp_path).exists() else []


def test_a_name_keeps_no_invisible_characters(cli: BrainCLI, tmp_path: Path) -> None:
    added = cli("add", "--category", "ideas", "--json", "--name",
                "\u202egpj.exe\u202c Bud\u200bget \u2066Q3\u2069\u00a0review", "Plan it")
    note = added.json()
    assert note["name"] == "gpj.exe Budget Q3 review"
    text = Path(vault(tmp_path) / note["path"]).read_text(encoding="utf-8")
    assert "name: gpj.exe Budget Q3 review" in text and not HIDDEN.search(text)
    changed = cli("update", note["id"], "name=\u2067Kick\u200coff\u2069 agenda", "--json")
    assert changed.json()["name"] == "Kickoff agenda"
    shown = cli("show", note["id"])
    assert "name:     Kickoff agenda" in shown.out and not HIDDEN.search(shown.out)


def test_a_name_over_the_cap_is_refused_and_nothing_is_written(
        cli: BrainCLI, tmp_path: Path) -> None:
    attached = tmp_path / "minutes.txt"
    attached.write_text("Minutes of the review")
    huge = run_process(tmp_path, "add", "--category", "ideas", "--name", "x" * 10_200,
                       "--file", str(attached), "Plan it",
                       env={"BRAIN_DATA_DIR": str(tmp_path / "data"), "BRAIN_LLM": "offline"})
    assert huge.code == 2 and "at most 120 characters; this one has 10,200" in huge.err
    assert "Traceback" not in huge.err
    assert not vault(tmp_path).exists() or not any(vault(tmp_path).rglob("*"))
    fits = cli("add", "--category", "ideas", "--name", "y" * 120, "--json", "Plan it").json()
    assert fits["name"] == "y" * 120
    # Invisible characters do not count: 120 letters with zero-width spaces between fit.
    padded = "\u200b".join("z" * 120)
    assert cli("add", "--category", "ideas", "--name", padded, "--json", "x").json()[
        "name"] == "z" * 120
    before = {p: p.read_bytes() for p in notes(tmp_path)}
    too_long = cli("update", fits["id"], "name=" + "w" * 121)
    assert too_long.code == 2 and "at most 120 characters; this one has 121" in too_long.err
    assert {p: p.read_bytes() for p in notes(tmp_path)} == before
    blank = cli("add", "--category", "ideas", "--name", "\u200b\u202e", "x")
    assert blank.code == 2 and "a note needs a name" in blank.err
    assert len(notes(tmp_path)) == 2


def test_a_look_alike_script_mix_is_said(cli: BrainCLI, tmp_path: Path) -> None:
    cli("add", "--category", "admin", "--name", "P\u0430ypal invoice", "--json", "Pay").json()
    cli("add", "--category", "admin", "--name", "Москва trip", "--json", "Book it").json()
    listed = cli("list")
    (row,) = [line for line in listed.out.splitlines() if "P\u0430ypal" in line]
    assert row.endswith("admin/p\u0430ypal-invoice.md  (mixes Cyrillic and Latin letters)")
    assert "Москва trip  " in listed.out and "Москва trip (" not in listed.out
    rows = json.loads(cli("list", "--json").out)["entries"]
    assert {e["name"] for e in rows} == {"P\u0430ypal invoice", "Москва trip"}  # kept as written
