"""Debian's real `git`, as a person's own Obsidian runs it (obsidian-git runs git underneath):
its own empty configuration, and the token typed at git's password prompt (a GIT_ASKPASS
script answers the prompts as a person would: any user name, the token as the password)."""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

import pytest

from storage.vault.atomic import TEMP_NAME

GIT = shutil.which("git")
needs_git = pytest.mark.skipif(GIT is None, reason="Debian's git is not installed (.ci/run "
                               "installs it)")


@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str

    @property
    def ok(self) -> bool:
        return self.code == 0


class GitClient:
    """git with a home of its own under `root`; `token` (None: no answer at the prompt)."""

    def __init__(self, root: Path, token: str | None) -> None:
        self.root = root
        self.home = root / "git-home"
        self.home.mkdir(parents=True, exist_ok=True)
        self.token = token
        self.askpass = self.home / "askpass.sh"
        self.askpass.write_text('#!/bin/sh\ncase "$1" in\n  Username*) echo obsidian ;;\n'
                                '  *) printf "%s\\n" "$BRAIN_GIT_TOKEN" ;;\nesac\n')
        self.askpass.chmod(self.askpass.stat().st_mode | stat.S_IXUSR)

    def env(self) -> dict[str, str]:
        env = {"HOME": str(self.home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
               "LANG": "C", "LC_ALL": "C", "GIT_CONFIG_NOSYSTEM": "1",
               "GIT_TERMINAL_PROMPT": "0", "GIT_AUTHOR_NAME": "Alex Obsidian",
               "GIT_AUTHOR_EMAIL": "alex@example.com", "GIT_COMMITTER_NAME": "Alex Obsidian",
               "GIT_COMMITTER_EMAIL": "alex@example.com"}
        if self.token is not None:
            env.update(GIT_ASKPASS=str(self.askpass), BRAIN_GIT_TOKEN=self.token)
        return env

    async def __call__(self, *args: str, cwd: Path | None = None,
                       timeout: float = 120) -> Ran:
        assert GIT is not None
        proc = await asyncio.create_subprocess_exec(
            GIT, *args, cwd=str(cwd or self.root), env=self.env(),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
        return Ran(int(proc.returncode or 0), out.decode(errors="replace"),
                   err.decode(errors="replace"))

    async def ok(self, *args: str, cwd: Path | None = None) -> str:
        ran = await self(*args, cwd=cwd)
        assert ran.ok, f"git {' '.join(args)} exited {ran.code}:\n{ran.out}\n{ran.err}"
        return ran.out


def files_of(folder: Path) -> dict[str, bytes]:
    """A work tree's files (or a vault's), `.git` left out, and the app's own temp files (a
    killed write's, removed by the indexer or `brain doctor`: never a note)."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(folder).parts
            and not TEMP_NAME.match(p.name)}
