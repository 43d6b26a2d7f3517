"""Run `brain` in this process: `bot.cli.main(argv)` with a clean environment, a working
directory, piped stdin and captured output, as the console command would see them.

A subprocess costs ~0.5-1 s of interpreter start and imports per call; in-process the imports
are paid once per test session. Tests where the process boundary itself matters (the console
script, exit status seen by a shell, stdin of a real pipe, signals) start real processes.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
CONFIG_PREFIXES = ("BRAIN_", "SLACK_", "OPENAI_", "ANTHROPIC_")


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        assert self.code == 0, f"exit {self.code}: {self.err}"
        return json.loads(self.out)


def _configured(key: str) -> bool:
    return key.startswith(CONFIG_PREFIXES) or key == "DATABASE_URL"


class BrainCLI:
    """`brain(*argv, stdin=...)` -> Result. Environment: nothing of the caller's BRAIN_*,
    SLACK_*, OPENAI_*, ANTHROPIC_* or DATABASE_URL, plus `env`; cwd is `cwd` (no stray .env)."""

    def __init__(self, capsys: pytest.CaptureFixture[str], cwd: Path,
                 env: dict[str, str]) -> None:
        from tests.databases import database_env

        # The suite's database (SQLite under cwd, or PostgreSQL), unless the test names one.
        self._capsys, self.cwd, self.env = capsys, cwd, {**database_env(cwd), **env}

    def __call__(self, *argv: str, stdin: str = "", **env: str) -> Result:
        from bot.cli import main

        with pytest.MonkeyPatch.context() as mp:  # undone after each call
            for key in [k for k in os.environ if _configured(k)]:
                mp.delenv(key)
            for key, value in {**self.env, **env}.items():
                mp.setenv(key, value)
            mp.chdir(self.cwd)
            mp.setattr(sys, "stdin", io.StringIO(stdin))  # a pipe, not a terminal
            self._capsys.readouterr()  # drop anything printed before this call
            try:
                code = main(list(argv))
            except SystemExit as exc:  # argparse: --help, usage errors
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            captured = self._capsys.readouterr()
        return Result(code, captured.out, captured.err)


def process_env(cwd: Path, env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a real `brain` process: none of the caller's configuration, the
    suite's database, `env`."""
    from tests.databases import database_env

    full = {k: v for k, v in os.environ.items() if not _configured(k)}
    full.update(database_env(cwd))
    full.update(env or {})
    full["PYTHONPATH"] = str(REPO)
    return full


def brain_command() -> list[str]:
    script = Path(sys.executable).with_name("brain")
    return [str(script)] if script.exists() else [sys.executable, "-m", "bot.cli"]


def run_process(cwd: Path, *argv: str, stdin: str = "", env: dict[str, str] | None = None,
                timeout: float = 60) -> Result:
    """The real console command in a subprocess (same environment rules as BrainCLI)."""
    proc = subprocess.run([*brain_command(), *argv], input=stdin, cwd=cwd,
                          env=process_env(cwd, env), capture_output=True, text=True,
                          timeout=timeout, check=False)
    return Result(proc.returncode, proc.stdout, proc.stderr)
