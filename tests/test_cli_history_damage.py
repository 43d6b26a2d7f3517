"""A damaged or locked history, through the CLI as a process (issue 31): a lock file a dead
writer left in the history repository, and an object missing from it. A change still happens
once and is recorded late; `brain doctor` says what is wrong; an undo that cannot be recorded
is refused before it changes anything, with a message and no traceback. On both databases."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from dulwich.objects import Commit, Tree
from dulwich.repo import Repo

from tests.brain_cli import Result, run_process
from tests.e2e.slack_harness import vault_files


class CLI:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.data = tmp / "data"
        self.vault = self.data / "vaults" / "local"
        self.env = {"BRAIN_DATA_DIR": str(self.data), "BRAIN_LLM": "offline"}

    def __call__(self, *argv: str) -> Result:
        done = run_process(self.tmp, *argv, env=self.env)
        assert "Traceback" not in done.err, done.err
        return done

    def history(self) -> list[dict[str, Any]]:
        changes: list[dict[str, Any]] = self("history", "--limit", "100", "--json").json()
        return changes

    def doctor_line(self) -> tuple[int, str]:
        done = self("doctor", "--offline", "--local")
        [line] = [line for line in done.out.splitlines() if " History " in line]
        return done.code, line

    @property
    def repo(self) -> Path:
        [repo] = list((self.data / "history").glob("*/repo.git"))
        return repo

    def files(self) -> dict[str, bytes]:
        return {p.relative_to(self.vault).as_posix(): p.read_bytes()
                for p in sorted(self.vault.rglob("*")) if p.is_file()}


def age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


@pytest.fixture
def cli(tmp_path: Path) -> CLI:
    brain = CLI(tmp_path)
    assert brain("add", "--create", "--category", "people", "Sara Lopez prefers email").code == 0
    return brain


def test_a_held_lock_keeps_the_change_once_and_records_it_once_the_lock_is_stale(
        cli: CLI) -> None:
    lock = cli.repo / "refs" / "heads" / "main.lock"
    lock.write_bytes(b"")  # a writer died holding it, a moment ago
    done = cli("add", "--category", "ideas", "A lending library for the office")
    assert done.code == 0 and "history" in done.err  # said once, on stderr
    assert sorted(vault_files(cli.vault)) == ["ideas/a-lending-library-for-the-office.md",
                                               "people/sara-lopez-prefers-email.md"]
    listed = run_process(cli.tmp, "history", "--json", env=cli.env)
    assert listed.code == 0 and "the history is behind" in listed.err
    assert [c["summary"] for c in listed.json() if c["action"] == "create"] == [
        "Sara Lopez prefers email in people"]
    code, line = cli.doctor_line()
    assert code == 1 and line.startswith("FAIL") and "not recorded yet" in line, line

    age(lock, 120)  # now a minute old: the next command clears it and records the change
    created = [c for c in cli.history() if c["action"] == "create"]
    assert not lock.exists()
    assert [c["paths"] for c in created] == [["ideas/a-lending-library-for-the-office.md"],
                                             ["people/sara-lopez-prefers-email.md"]]
    assert "recorded late" in created[0]["summary"]
    code, line = cli.doctor_line()
    assert line.startswith("ok") and "can be written" in line, line
    undone = cli("undo", "--json").json()  # the late change undoes like any other
    assert undone["paths"] == ["ideas/a-lending-library-for-the-office.md"]
    assert vault_files(cli.vault) == ["people/sara-lopez-prefers-email.md"]


def test_a_stale_lock_is_cleared_by_the_next_change(cli: CLI) -> None:
    lock = cli.repo / "refs" / "heads" / "main.lock"
    lock.write_bytes(b"")
    age(lock, 61)
    done = cli("add", "--category", "ideas", "A lending library for the office")
    assert done.code == 0 and done.err == ""
    assert not lock.exists()
    [made] = [c for c in cli.history() if c["paths"] == [
        "ideas/a-lending-library-for-the-office.md"]]
    assert "recorded late" not in made["summary"]


def _object_file(repo: Path, sha: bytes) -> Path:
    return repo / "objects" / sha[:2].decode() / sha[2:].decode()


def _blob_before_the_move(repo: Path) -> Path:
    """The note's bytes as the move found them: what an undo of the move puts back."""
    with Repo(str(repo)) as git:
        head = git[git.refs[b"refs/heads/main"]]
        assert isinstance(head, Commit)
        parent = git[head.parents[0]]
        assert isinstance(parent, Commit)
        root = git[parent.tree]
        assert isinstance(root, Tree)
        people = git[root[b"people"][1]]
        assert isinstance(people, Tree)
        [(_name, _mode, sha)] = people.items()
    return _object_file(repo, sha)


def _folder_tree_at_head(repo: Path) -> Path:
    """The `projects` folder of the newest commit: what any later commit there reads."""
    with Repo(str(repo)) as git:
        head = git[git.refs[b"refs/heads/main"]]
        assert isinstance(head, Commit)
        root = git[head.tree]
        assert isinstance(root, Tree)
        return _object_file(repo, root[b"projects"][1])


@pytest.mark.parametrize("lost", [_blob_before_the_move, _folder_tree_at_head])
def test_an_undo_the_history_cannot_record_is_refused_and_changes_nothing(
        cli: CLI, lost: Any) -> None:
    assert cli("move", "people/sara-lopez-prefers-email.md", "projects").code == 0
    lost(cli.repo).unlink()
    if lost is _folder_tree_at_head:  # the next change cannot be recorded: it waits
        assert cli("add", "--category", "projects", "Phoenix beta in May").code == 0
    files, changes = cli.files(), cli.history()
    for argv in (("undo",), ("undo", "--json"), ("undo", changes[0]["id"][:8])):
        done = cli(*argv)
        assert done.code == 1, done
        if "--json" in argv:
            assert '"kind": "history"' in done.out
        else:
            assert "not undone" in done.err and "missing" in done.err, done.err
        assert cli.files() == files  # nothing deleted, nothing written
    assert [c["id"] for c in cli.history()] == [c["id"] for c in changes]
    code, line = cli.doctor_line()
    assert code == 1 and line.startswith("FAIL") and (
        "damaged" in line or "missing" in line), line
