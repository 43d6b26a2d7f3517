"""An error no verb expected reaches the person as one line (JSON on stdout under --json),
never as a traceback; the traceback is kept in a private file the line names, for a report.
Made real: a data folder whose database file is not a database. The CLI as a process."""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path

import pytest

from tests.brain_cli import run_process


@pytest.mark.sqlite_only  # (the database file of the default SQLite)
def test_a_broken_database_is_one_line_and_json_under_json(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "brain.db").write_bytes(b"this is not a database, it is a text file\n" * 100)
    env = {"BRAIN_DATA_DIR": str(data)}
    plain = run_process(tmp_path, "list", env=env)
    assert plain.code == 1 and "Traceback" not in plain.err + plain.out
    (line,) = plain.err.strip().splitlines()
    assert line.startswith("brain: unexpected error (") and "not a database" in line
    details = Path(re.findall(r"the details are in (\S+\.txt)", line)[0])
    assert "Traceback" in details.read_text(encoding="utf-8")
    assert stat.S_IMODE(details.stat().st_mode) == 0o600
    details.unlink()
    as_json = run_process(tmp_path, "list", "--json", env=env)
    assert as_json.code == 1 and "Traceback" not in as_json.err
    error = json.loads(as_json.out)["error"]
    assert error["kind"] == "internal" and error["exit"] == 1
    Path(re.findall(r"the details are in (\S+\.txt)", error["message"])[0]).unlink()


@pytest.mark.parametrize(("setting", "said"), [
    ({"BRAIN_JOB_LEASE_SECONDS": "abc"}, "BRAIN_JOB_LEASE_SECONDS: Input should be a valid number"),
    ({"BRAIN_STORE": "nonsense"}, "BRAIN_STORE must be files or database, not 'nonsense'"),
    ({"BRAIN_STORE": "database", "DATABASE_URL": ""},
     "BRAIN_STORE=database keeps the notes in PostgreSQL: set DATABASE_URL"),
])
def test_settings_that_cannot_be_used_are_said_as_such_and_open_nothing(
        tmp_path: Path, setting: dict[str, str], said: str) -> None:
    data = tmp_path / "data"
    env = {"BRAIN_DATA_DIR": str(data), **setting}
    for argv in (("list",), ("mcp",)):
        plain = run_process(tmp_path, *argv, env=env)
        assert plain.code == 2 and "Traceback" not in plain.err + plain.out
        (line,) = plain.err.strip().splitlines()
        assert line.startswith("brain: the configuration cannot be used: ") and said in line
        assert "details are in" not in line
    as_json = run_process(tmp_path, "list", "--json", env=env)
    error = json.loads(as_json.out)["error"]
    assert (as_json.code, error["kind"], error["exit"]) == (2, "config", 2)
    assert said in error["message"]
    assert not (data / "vaults").exists() and not (data / "brain.db").exists()  # nothing made
