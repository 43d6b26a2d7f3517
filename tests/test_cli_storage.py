"""The storage verbs of `brain`, run as the real console command in a subprocess.

Each test keeps its subprocess count small (each start costs ~0.5 s); bad inputs share one
prepared vault and check that nothing in it changed.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parent.parent
BRAIN = REPO / ".venv" / "bin" / "brain"
REAL_VAULT = Path("/work/shared/data/real-vault/docs")
ENTRY_KEYS = {"path", "id", "name", "category", "body"}
SUMMARY_KEYS = {"path", "id", "name", "category", "status", "snippet", "updated"}


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        assert self.code == 0, f"exit {self.code}: {self.err}"
        return json.loads(self.out)


def _command() -> list[str]:
    return [str(BRAIN)] if BRAIN.exists() else [sys.executable, "-m", "bot.cli"]


def make_brain(tmp: Path, vault: Path) -> Callable[..., Result]:
    """A runner for `brain VERB ... --vault vault` with its database under tmp/data."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("BRAIN_", "SLACK_", "OPENAI_", "ANTHROPIC_"))
           and k != "DATABASE_URL"}
    env["BRAIN_DATA_DIR"] = str(tmp / "data")
    env["PYTHONPATH"] = str(REPO)

    def brain(*args: str, vault_arg: bool = True) -> Result:
        argv = [*_command(), *args] + (["--vault", str(vault)] if vault_arg else [])
        # cwd=tmp so no stray .env is read and ./brain-data would land in tmp
        proc = subprocess.run(argv, cwd=tmp, env=env, capture_output=True, text=True,
                              timeout=60, check=False)
        return Result(proc.returncode, proc.stdout, proc.stderr)

    return brain


def tree_hashes(root: Path) -> dict[str, str]:
    """sha256 of every file under root (dot-folders included: nothing may appear there)."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()}


# --- the whole round trip -------------------------------------------------------------------

def test_add_list_search_show_update_move_backlinks_round_trip(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    brain = make_brain(tmp_path, vault)

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

    linker = brain("add", "Use last year's spreadsheet for [[Q3 budget review]].",
                   "--category", "ideas", "--name", "Spreadsheet reuse", "--json").json()
    assert linker["name"] == "Spreadsheet reuse" and linker["category"] == "ideas"

    listed = brain("list", "--json").json()
    assert set(listed) == {"entries", "total"} and listed["total"] == 2
    assert all(e.keys() >= SUMMARY_KEYS for e in listed["entries"])
    assert {e["id"] for e in listed["entries"]} == {added["id"], linker["id"]}
    only_projects = brain("list", "--category", "projects", "--json").json()
    assert [e["id"] for e in only_projects["entries"]] == [added["id"]]

    found = brain("search", "finance", "--json").json()
    assert set(found) == {"entries", "total"}
    assert found["entries"] and found["entries"][0]["id"] == added["id"]

    shown = brain("show", added["id"], "--json").json()
    assert shown["path"] == added["path"] and shown["id"] == added["id"]
    assert shown["body"] == added["body"]
    human = brain("show", added["path"])
    assert human.code == 0 and "Q3 budget review" in human.out and "finance" in human.out

    updated = brain("update", added["path"], "status=waiting", "tags=finance, q3",
                    "next_action=null", "--append", "Finance replied.", "--json").json()
    assert updated["status"] == "waiting"
    assert updated["tags"] == ["finance", "q3"]
    assert updated["next_action"] is None
    assert updated["body"].rstrip().endswith("Finance replied.")
    assert "numbers from finance" in updated["body"]  # appended, not replaced
    assert updated["id"] == added["id"]

    moved = brain("move", added["id"], "admin", "--json").json()
    assert set(moved) >= {"oldPath", "newPath", "category"}
    assert moved["oldPath"] == added["path"] and moved["category"] == "admin"
    assert moved["newPath"].startswith("admin/")
    assert not (vault / added["path"]).exists() and (vault / moved["newPath"]).is_file()

    links = brain("backlinks", added["id"], "--json").json()
    assert links["target"] == moved["newPath"]
    assert links["total"] == 1 == len(links["backlinks"])
    assert links["backlinks"][0]["path"] == linker["path"]
    assert "Q3 budget review" in links["backlinks"][0]["context"]

    after_move = brain("show", moved["newPath"], "--json").json()
    assert after_move["category"] == "admin" and after_move["tags"] == ["finance", "q3"]

    stats = brain("reindex", "--json").json()
    assert set(stats) == {"added", "updated", "removed", "unchanged", "seconds"}
    assert stats["unchanged"] == 2 and stats["added"] == stats["removed"] == 0
    # the database stays in BRAIN_DATA_DIR, never inside the vault
    assert list((tmp_path / "data").rglob("*.db"))
    assert not [p for p in vault.rglob("*") if p.suffix in (".db", ".sqlite")]


# --- bad input: a clear message, exit 2, nothing changed ------------------------------------

@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Callable[..., Result], Path,
                                                                 str]:
    tmp = tmp_path_factory.mktemp("bad-input")
    vault = tmp / "vault"
    brain = make_brain(tmp, vault)
    first = brain("add", "Dana from finance", "--category", "people", "--name", "Dana",
                  "--json").json()
    brain("add", "Dana the designer", "--category", "ideas", "--name", "Dana", "--json").json()
    secret = tmp / "outside-secret.md"
    secret.write_text("---\nname: outside\n---\nTOP-SECRET-OUTSIDE\n", encoding="utf-8")
    (vault / "people" / "escape.md").symlink_to(secret)
    return brain, vault, first["path"]


BAD_INPUTS: list[tuple[list[str], str]] = [
    (["add", "hello", "--category", "bogus"], "invalid choice"),
    (["add", "   ", "--category", "ideas"], "empty"),
    (["list", "--limit", "0"], "limit"),
    (["search", "dana", "--limit", "-3"], "limit"),
    (["list", "--status", "sleeping"], "invalid choice"),
    (["move", "{first}", "nowhere"], "invalid choice"),
    (["update", "{first}", "status"], "key=value"),
    (["update", "{first}", "=x"], "field name"),
    (["update", "{first}", "id=e_000000000000"], "id"),
    (["update", "{first}"], "nothing to update"),
    (["update", "{first}", "tags=a", "tags=b"], "twice"),
    (["show", "no-such-note"], "no-such-note"),
    (["update", "people/missing.md", "context=x"], "missing"),
    (["update", "Dana", "context=x"], "people/dana.md"),  # ambiguous: candidates listed
    (["move", "Dana", "admin"], "ideas/dana.md"),
    (["show", "../../etc/passwd"], ""),
    (["show", "/etc/passwd"], ""),
    (["backlinks", "../outside-secret.md"], ""),
    (["show", "people/escape.md"], ""),  # a symlink out of the vault
]


@pytest.mark.parametrize(("argv", "needle"), BAD_INPUTS, ids=[" ".join(a) for a, _ in BAD_INPUTS])
def test_bad_input_fails_clearly_and_changes_nothing(
        prepared: tuple[Callable[..., Result], Path, str], argv: list[str], needle: str) -> None:
    brain, vault, first = prepared
    before = tree_hashes(vault)
    result = brain(*[a.replace("{first}", first) for a in argv])
    assert result.code == 2, (result.code, result.out, result.err)
    assert result.err.strip(), "the reason must be on stderr"
    assert "Traceback" not in result.err
    assert needle.lower() in result.err.lower(), result.err
    assert "root:" not in result.out and "TOP-SECRET-OUTSIDE" not in result.out + result.err
    assert tree_hashes(vault) == before


def test_ambiguous_name_lists_every_candidate(
        prepared: tuple[Callable[..., Result], Path, str]) -> None:
    brain, _, _ = prepared
    result = brain("show", "Dana")
    assert result.code == 2
    assert "people/dana.md" in result.err and "ideas/dana.md" in result.err
    # the symlink out of the vault is not indexed, and does not break the other notes
    listed = brain("list", "--json").json()
    assert sorted(e["path"] for e in listed["entries"]) == ["ideas/dana.md", "people/dana.md"]


# --- the real vault: every verb works, no file changes ---------------------------------------

@pytest.mark.skipif(not REAL_VAULT.is_dir(), reason="real vault not present")
def test_real_vault_is_read_but_never_rewritten(tmp_path: Path) -> None:
    before = tree_hashes(REAL_VAULT)
    brain = make_brain(tmp_path, REAL_VAULT)

    stats = brain("reindex", "--json").json()
    assert stats["added"] == sum(1 for rel in before if rel.endswith(".md")) == 118

    found = brain("search", "urgency", "--limit", "5", "--json").json()
    assert "Advanced/Urgency.md" in [e["path"] for e in found["entries"]]
    assert len(found["entries"]) <= 5 <= found["total"]

    listed = brain("list", "--limit", "7", "--json").json()
    assert len(listed["entries"]) == 7 and listed["total"] == 118

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

    again = brain("reindex", "--json").json()
    assert again["unchanged"] == 118 and again["added"] == again["updated"] == 0
    assert tree_hashes(REAL_VAULT) == before


@pytest.mark.skipif(not REAL_VAULT.is_dir(), reason="real vault not present")
def test_real_vault_copy_round_trip_leaves_other_files_alone(tmp_path: Path) -> None:
    # Writes only to a copy: updating one note must not touch any other file's bytes.
    vault = tmp_path / "vault"
    shutil.copytree(REAL_VAULT, vault)
    before = tree_hashes(vault)
    brain = make_brain(tmp_path, vault)
    target = "Advanced/Urgency.md"
    updated = brain("update", target, "owner=sam", "--json").json()
    assert updated["owner"] == "sam"
    after = tree_hashes(vault)
    assert {k for k in after if after[k] != before.get(k)} == {target}
    # a minimal edit: every original line is still there, one line added
    original = (REAL_VAULT / target).read_text(encoding="utf-8").splitlines()
    now = (vault / target).read_text(encoding="utf-8").splitlines()
    assert [ln for ln in now if ln in set(original)] == original
    assert [ln for ln in now if ln not in set(original)] == ["owner: sam"]


# --- pure helpers (in-process, no subprocess) -------------------------------------------------

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
