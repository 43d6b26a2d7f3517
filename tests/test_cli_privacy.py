"""`brain export` and `brain forget` as an operator runs them: real processes, the test's
database. What export writes is what the person has; after forget, export finds nothing."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

from tests.brain_cli import Result, run_process


def brain(tmp_path: Path, *argv: str, stdin: str = "") -> Result:
    """The real console command (export and forget are what an operator runs in a shell)."""
    return run_process(tmp_path, *argv, stdin=stdin,
                       env={"BRAIN_DATA_DIR": str(tmp_path / "data"), "BRAIN_LLM": "offline"})

USER = "U0SBUSR01"


def vault(tmp_path: Path, user: str = USER) -> Path:
    return tmp_path / "data" / "vaults" / user


def read_zip(path: Path) -> tuple[list[str], dict[str, object]]:
    with zipfile.ZipFile(path) as zf:
        names = sorted(zf.namelist())
        data = {n: json.loads(zf.read(n)) for n in names if n.endswith(".json")}
    return names, data


def test_export_then_forget_round_trip(tmp_path: Path) -> None:
    chat = brain(tmp_path, "chat", "--new", "--user", USER, "--create",
                 stdin="Call Sara about the Q3 budget\nwhat is active?\n")
    assert chat.code == 0, chat.err
    other = brain(tmp_path, "chat", "--new", "--user", "U0SBOTHER", "--create", stdin="Buy printer paper\n")
    assert other.code == 0, other.err
    note = next(vault(tmp_path).rglob("*.md"))

    out = tmp_path / "export.zip"
    done = brain(tmp_path, "export", "--user", USER, "--out", str(out))
    assert done.code == 0, done.err
    assert "1 vault file(s), 1 conversation(s)" in done.out
    names, data = read_zip(out)
    assert f"vault/{note.relative_to(vault(tmp_path)).as_posix()}" in names
    with zipfile.ZipFile(out) as zf:
        assert zf.read(f"vault/{note.relative_to(vault(tmp_path)).as_posix()}") == \
            note.read_bytes()
    (conv,) = data["conversations.json"]  # type: ignore[misc]
    assert [t["user_text"] for t in conv["turns"]] == ["Call Sara about the Q3 budget",
                                                      "what is active?"]
    assert "Printer" not in json.dumps(data) and "printer" not in json.dumps(data)
    # The history comes along: a git repository whose last commit filed the note.
    assert "history/repo.git/HEAD" in names and "history/changes.jsonl" in names
    with zipfile.ZipFile(out) as zf:
        listed = [json.loads(line) for line in zf.read("history/changes.jsonl").splitlines()]
    assert listed[-1]["action"] == "create" and listed[-1]["who"] == USER
    histories = tmp_path / "data" / "history"
    assert len(list(histories.iterdir())) == 2  # one per person

    refused = brain(tmp_path, "forget", "--user", USER)  # no terminal to confirm in
    assert refused.code == 2 and "--yes" in refused.err
    assert note.exists()

    gone = brain(tmp_path, "forget", "--user", USER, "--yes")
    assert gone.code == 0, gone.err
    assert "erased U0SBUSR01: 1 vault file(s)" in gone.out
    assert not vault(tmp_path).exists()
    assert any(vault(tmp_path, "U0SBOTHER").rglob("*.md"))  # someone else's notes stay
    (left,) = histories.iterdir()  # their history went with their vault; the other's stays
    assert (left / "changes.jsonl").read_text().count('"who": "U0SBOTHER"') >= 1

    # afterwards the person is unknown: said so, and no empty vault or zip appears
    again = brain(tmp_path, "export", "--user", USER, "--out", str(tmp_path / "after.zip"))
    assert again.code == 1 and "nothing is held of user 'U0SBUSR01'" in again.err
    assert "U0SBOTHER" in again.err  # the ids that are known
    assert not (tmp_path / "after.zip").exists()
    listed = brain(tmp_path, "list", "--user", USER, "--json")
    assert listed.code == 1 and json.loads(listed.out)["error"]["kind"] == "not_found"
    assert not vault(tmp_path).exists()


def test_a_bad_user_id_is_refused_plainly(tmp_path: Path) -> None:
    proc = brain(tmp_path, "forget", "--user", "../etc", "--yes")
    assert proc.code == 2 and "not a valid user id" in proc.err
    assert "Traceback" not in proc.err
