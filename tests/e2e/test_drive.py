"""The README's "try it without a workspace" command, run as the README gives it: a process
that drives a real `brain serve --http` against the fake Slack and prints one PASS/FAIL line
per entry point. Kept in the suite so the command cannot drift from the code."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.databases import database_env

ROOT = Path(__file__).resolve().parents[2]


def readme_command() -> list[str]:
    """The command as the README writes it (`.venv/bin/python` is this interpreter)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"`(\.venv/bin/python -m tests\.e2e\.drive[^`]*)`", text)
    assert found, "the README no longer gives the drive command"
    words = shlex.split(found.group(1))
    assert words[:3] == [".venv/bin/python", "-m", "tests.e2e.drive"], words
    return [sys.executable, *words[1:]]


@pytest.mark.slow
def test_the_readmes_drive_command_passes_every_check(tmp_path: Path) -> None:
    env = {**os.environ, "TMPDIR": str(tmp_path), **database_env(tmp_path)}
    env.pop("BRAIN_DATA_DIR", None)  # the drive makes its own data directory
    proc = subprocess.run(readme_command(), cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=900)
    lines = [line for line in proc.stdout.splitlines() if line.startswith(("PASS", "FAIL"))]
    failed = [line for line in lines if not line.startswith("PASS")]
    assert proc.returncode == 0 and not failed, proc.stdout + proc.stderr[-3000:]
    assert len(lines) >= 21, proc.stdout  # every entry point printed its line
    assert re.search(rf"^{len(lines)} passed, 0 failed", proc.stdout, re.M), proc.stdout
