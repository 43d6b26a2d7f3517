"""The storage verbs of `brain`, run through `bot.cli.main` in this process (tests/brain_cli.py),
plus one run of the real console command for what only a process shows (exit status, streams).

Bad inputs share one prepared vault and check that nothing in it changed.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.brain_cli import BrainCLI, Result, run_process
from tests.databases import on_postgres
from tests.shared import REAL_VAULT as SHARED_REAL_VAULT

REAL_VAULT = SHARED_REAL_VAULT / "docs"
ENTRY_KEYS = {"path", "id", "name", "category", "body"}
SUMMARY_KEYS = {"path", "id", "name", "category", "status", "snippet", "updated"}


def make_brain(tmp: Path, vault: Path, capsys: pytest.CaptureFixture[str]) -> Callable[..., Result]:
    """A runner for `brain VERB ... --vault vault` with its database under tmp/data."""
    # cwd=tmp so no stray .env is read and ./brain-data would land in tmp
    cli = BrainCLI(capsys, tmp, {"BRAIN_DATA_DIR": str(tmp / "data")})
    vault.mkdir(parents=True, exist_ok=True)  # a missing --vault is an error (test_cli_bad_input)

    def brain(*args: str, vault_arg: bool = True) -> Result:
        return cli(*args, *(["--vault", str(vault)] if vault_arg else []))

    return brain


def tree_hashes(root: Path) -> dict[str, str]:
    """sha256 of every file under root (dot-folders included: nothing may appear there)."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()}


# --- the whole round trip -------------------------------------------------------------------

def test_add_list_search_show_update_move_backlinks_round_trip(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    vault = tmp_path / "vault"
    brain = make_brain(tmp_path, vault, capsys)

    added = brain("add", "Q3 budget review\nNeed the numbers from finance by Friday.",
                  "--category", "projects", "--json").json()
    assert added.keys() >= ENTRY_KEYS
    assert added["category"] == "projects"
    assert added["name"] == "Q3 budget review"  # title from the first line
    assert added["source"] == "cli"
    assert added["path"].startswith("projects/") and added["path"].endswith(".md")
    assert re.fullmatch(r"e_[0-9a-f]{12}", added["id"])
    assert "numbers from finance" in added["body"]
    assert (vault / added["path"]).is_file()

    # wikilinks resolve by file name, as in Obsidian
    stem = Path(added["path"]).stem
    linker = brain("add", f"Use last year's spreadsheet for [[{stem}|the Q3 budget]].",
                   "--category", "ideas", "--name", "Spreadsheet reuse")
    assert linker.code == 0, linker.err
    linker_path = re.search(r"^path:\s+(\S+)$", linker.out, re.M)
    assert linker_path and linker_path[1].startswith("ideas/"), linker.out
    assert "Spreadsheet reuse" in linker.out and "ideas" in linker.out

    listed = brain("list", "--json").json()
    assert set(listed) == {"entries", "total"} and listed["total"] == 2
    assert all(e.keys() >= SUMMARY_KEYS for e in listed["entries"])
    assert {e["path"] for e in listed["entries"]} == {added["path"], linker_path[1]}
    table = brain("list", "--category", "projects")
    assert table.code == 0 and added["path"] in table.out and linker_path[1] not in table.out

    found = brain("search", "finance", "--json").json()
    assert set(found) == {"entries", "total"}
    assert found["entries"] and found["entries"][0]["id"] == added["id"]

    shown = brain("show", added["id"], "--json").json()
    assert shown["path"] == added["path"] and shown["id"] == added["id"]
    assert shown["body"] == added["body"] and shown["source"] == "cli"

    updated = brain("update", added["path"], "status=waiting", "tags=finance, q3",
                    "next_action=null", "--append", "Finance replied.", "--json").json()
    assert updated["status"] == "waiting"
    assert updated["tags"] == ["finance", "q3"]
    assert updated["next_action"] is None
    assert updated["body"].rstrip().endswith("Finance replied.")
    assert "numbers from finance" in updated["body"]  # appended, not replaced
    assert updated["id"] == added["id"]

    moved = brain("move", added["id"], "admin", "--json").json()
    assert set(moved) >= {"old_path", "new_path", "category"}
    assert moved["old_path"] == added["path"] and moved["category"] == "admin"
    assert moved["new_path"].startswith("admin/")
    assert not (vault / added["path"]).exists()
    moved_text = (vault / moved["new_path"]).read_text(encoding="utf-8")
    assert added["id"] in moved_text and "Finance replied." in moved_text

    links = brain("backlinks", added["id"], "--json").json()
    assert links["target"] == moved["new_path"]
    assert links["total"] == 1 == len(links["backlinks"])
    assert links["backlinks"][0]["path"] == linker_path[1]
    assert f"[[{stem}|the Q3 budget]]" in links["backlinks"][0]["context"]

    stats = brain("reindex", "--json").json()
    assert set(stats) == {"added", "updated", "removed", "unchanged", "seconds", "vectors",
                          "meaning"}
    assert stats["unchanged"] == 2 and stats["added"] == stats["removed"] == 0
    assert stats["meaning"] == "on" and stats["vectors"]["pending"] == 0
    # the database stays in BRAIN_DATA_DIR (SQLite) or the server, never inside the vault
    assert bool(list((tmp_path / "data").rglob("*.db"))) is not on_postgres()
    assert not [p for p in vault.rglob("*") if p.suffix in (".db", ".sqlite")]


# --- bad input: a clear message, its exit code, nothing changed ------------------------------------

DANA = "---\nname: Dana\ncategory: {category}\n---\nDana, {what}.\n"


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A hand-made vault: two notes named Dana, and a symlink that points out of the vault."""
    tmp = tmp_path_factory.mktemp("bad-input")
    vault = tmp / "vault"
    for category, what in (("people", "from finance"), ("ideas", "the design idea")):
        (vault / category).mkdir(parents=True)
        (vault / category / "dana.md").write_text(DANA.format(category=category, what=what),
                                                 encoding="utf-8")
    secret = tmp / "outside-secret.md"
    secret.write_text("---\nname: outside\n---\nTOP-SECRET-OUTSIDE\n", encoding="utf-8")
    (vault / "people" / "escape.md").symlink_to(secret)
    return tmp, vault


@pytest.fixture
def on_prepared(prepared: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> tuple[Callable[..., Result], Path]:
    tmp, vault = prepared
    return make_brain(tmp, vault, capsys), vault


# (argv, exit code, what the message names): 2 a wrong command line, 1 a command that cannot
# be done (README "Exit codes")
BAD_INPUTS: list[tuple[list[str], int, list[str]]] = [
    (["add", "hello", "--category", "bogus"], 2, ["invalid choice", "bogus"]),
    (["list", "--limit", "0"], 2, ["limit must be"]),
    (["update", "people/dana.md", "status"], 2, ["key=value"]),
    (["update", "people/dana.md", "due_date=2026-13-45"], 2, ["due_date", "2026-13-45"]),
    (["update", "people/dana.md", "due_date=someday soon"], 2, ["due_date", "someday soon"]),
    (["show", "no-such-note"], 1, ["no-such-note"]),
    # a name two notes share: never a guess, every candidate named
    (["update", "Dana", "context=x"], 1, ["people/dana.md", "ideas/dana.md"]),
    (["show", "../../etc/passwd"], 1, ["../../etc/passwd"]),
    (["show", "people/escape.md"], 1, ["people/escape.md", "outside"]),  # a symlink out
]


@pytest.mark.parametrize(("argv", "code", "needles"), BAD_INPUTS,
                         ids=[" ".join(a) for a, _, _ in BAD_INPUTS])
def test_bad_input_fails_clearly_and_changes_nothing(
        on_prepared: tuple[Callable[..., Result], Path], argv: list[str], code: int,
        needles: list[str]) -> None:
    brain, vault = on_prepared
    before = tree_hashes(vault)
    result = brain(*argv)
    assert result.code == code, (result.code, result.out, result.err)
    assert "Traceback" not in result.err and not result.out.strip()
    for needle in needles:
        assert needle.lower() in result.err.lower(), result.err
    assert "TOP-SECRET-OUTSIDE" not in result.out + result.err
    assert tree_hashes(vault) == before
    as_json = brain(*argv, "--json")  # the same refusal, as JSON on stdout
    assert as_json.code == code and as_json.err == ""
    error = json.loads(as_json.out)["error"]
    assert error["exit"] == code and error["kind"] != ""
    for needle in needles:
        assert needle.lower() in json.dumps(error).lower(), error
    assert tree_hashes(vault) == before
    assert tree_hashes(vault) == before


def test_console_script_exit_status_and_streams(prepared: tuple[Path, Path]) -> None:
    """The real `brain` process: what a shell sees (status 1, a message on stderr only)."""
    tmp, vault = prepared
    before = tree_hashes(vault)
    env = {"BRAIN_DATA_DIR": str(tmp / "data")}
    missing = run_process(tmp, "show", "no-such-note", "--vault", str(vault), env=env)
    assert missing.code == 1, (missing.out, missing.err)
    assert missing.out == "" and "no-such-note" in missing.err
    assert "Traceback" not in missing.err
    assert tree_hashes(vault) == before


def test_symlink_out_of_the_vault_is_not_indexed(
        on_prepared: tuple[Callable[..., Result], Path]) -> None:
    brain, vault = on_prepared
    before = tree_hashes(vault)
    listed = brain("list", "--json").json()
    assert sorted(e["path"] for e in listed["entries"]) == ["ideas/dana.md", "people/dana.md"]
    assert tree_hashes(vault) == before  # hand-written notes are indexed, never rewritten


# --- the real vault: every verb works, no file changes ---------------------------------------

@pytest.mark.skipif(not REAL_VAULT.is_dir(), reason="real vault not present")
def test_real_vault_is_read_but_never_rewritten(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = tree_hashes(REAL_VAULT)
    brain = make_brain(tmp_path, REAL_VAULT, capsys)

    stats = brain("reindex", "--json").json()
    notes = sum(1 for rel in before if rel.endswith(".md"))
    assert stats["added"] == notes and stats["updated"] == stats["removed"] == 0

    found = brain("search", "urgency", "--limit", "5", "--json").json()
    assert "Advanced/Urgency.md" in [e["path"] for e in found["entries"]]
    assert len(found["entries"]) <= 5 <= found["total"]

    listed = brain("list", "--limit", "7", "--json").json()
    assert len(listed["entries"]) == 7 and listed["total"] == notes

    target = "Getting Started/Task Dependencies.md"
    shown = brain("show", target, "--json").json()
    assert shown["path"] == target and shown["name"] == "Task Dependencies"
    assert shown["body"] in (REAL_VAULT / target).read_text(encoding="utf-8")

    links = brain("backlinks", target, "--json").json()
    pattern = re.compile(r"\[\[(?:[^]|#]*/)?Task Dependencies(?:[|#][^]]*)?\]\]")
    mentioning = {rel for rel in before
                  if pattern.search((REAL_VAULT / rel).read_text(encoding="utf-8"))}
    paths = {b["path"] for b in links["backlinks"]}
    assert len(paths) >= 5 and paths <= mentioning
    assert links["total"] == len(links["backlinks"])

    assert tree_hashes(REAL_VAULT) == before


# --- pure helpers -----------------------------------------------------------------------------

def test_title_from_text() -> None:
    from bot.commands.storage_cmds import title_from_text

    assert title_from_text("\n  # Call Dana  \nabout the budget") == "Call Dana"
    long_line = "word " * 30
    title = title_from_text(long_line)
    assert len(title) <= 60 and title.endswith("…") and title.startswith("word word")
    assert len(title_from_text("x" * 200)) == 60


@given(st.text(min_size=1).filter(lambda t: t.strip() != ""))
def test_title_is_short_and_from_the_first_line(text: str) -> None:
    from bot.commands.storage_cmds import title_from_text

    title = title_from_text(text)
    assert 0 < len(title) <= 60 and "\n" not in title


def test_parse_assignments() -> None:
    from bot.commands.storage_cmds import UsageError, parse_assignments

    assert parse_assignments(["tags=a, b,,c", "follow_ups=null", "context=x=y", "due_date="]) == {
        "tags": ["a", "b", "c"], "follow_ups": None, "context": "x=y", "due_date": ""}
    for bad in (["nokey"], ["=v"], ["bad key=v"], ["category=ideas"], ["a=1", "a=2"]):
        with pytest.raises(UsageError):
            parse_assignments(bad)


@given(st.dictionaries(st.from_regex(r"[a-z][a-z_]{0,10}", fullmatch=True),
                       st.text(alphabet=st.characters(blacklist_characters=","), max_size=20)))
def test_parse_assignments_keeps_plain_values(pairs: dict[str, str]) -> None:
    from bot.commands.storage_cmds import READ_ONLY_FIELDS, parse_assignments
    from storage.types import LIST_FIELDS

    pairs = {k: v for k, v in pairs.items() if k not in READ_ONLY_FIELDS}
    parsed = parse_assignments([f"{k}={v}" for k, v in pairs.items()])
    for key, value in pairs.items():
        if value.strip() == "null":
            assert parsed[key] is None
        elif key in LIST_FIELDS:
            assert parsed[key] == ([value.strip()] if value.strip() else [])
        else:
            assert parsed[key] == value


def test_positive_limit() -> None:
    import argparse

    from bot.commands.storage_cmds import positive_limit

    assert positive_limit("1") == 1 and positive_limit("50") == 50
    for bad in ("0", "-3", "x", "2.5", "100000"):
        with pytest.raises(argparse.ArgumentTypeError):
            positive_limit(bad)


def test_a_note_added_by_hand_counts_in_the_weekly_digest(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`brain add` is a capture like any other: the weekly digest counts it (it said "No
    captures this week" after one)."""
    brain = make_brain(tmp_path, tmp_path / "vault", capsys)
    assert "No captures this week." in brain("digest", "weekly").out
    assert brain("add", "Website relaunch with the agency", "--category", "projects").code == 0
    assert brain("add", "Passport renewal form", "--category", "admin").code == 0
    weekly = brain("digest", "weekly").out
    assert "Captured 2 this week: " in weekly and "projects 1" in weekly and "admin 1" in weekly
