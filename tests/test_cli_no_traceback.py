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
