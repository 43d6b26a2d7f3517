"""`brain move` on a copy of a real Obsidian vault, as a process (issue 36): the file keeps its
name, no other file changes a byte (the 9 notes linking to it among them), its backlinks are
the same notes, and `brain undo` puts every file back byte for byte with no folder left
behind. On both databases."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from tests.brain_cli import Result, run_process
from tests.shared import REAL_VAULT

MOVED = "docs/Queries/Combining Filters.md"

pytestmark = pytest.mark.skipif(not (REAL_VAULT / MOVED).is_file(),
                                reason="real vault not present")


def state(root: Path) -> tuple[dict[str, str], set[str]]:
    """Each file's checksum, and every folder."""
    files = {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
             for p in root.rglob("*") if p.is_file()}
    return files, {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_dir()}


def test_a_move_keeps_the_name_and_every_other_byte_and_undo_restores_all(
        tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    shutil.copytree(REAL_VAULT, vault)
    env = {"BRAIN_DATA_DIR": str(tmp_path / "data"), "BRAIN_LLM": "offline"}

    def brain(*argv: str) -> Result:
        done = run_process(tmp_path, *argv, "--vault", str(vault), env=env, timeout=180)
        assert done.code == 0 and "Traceback" not in done.err, done.err
        return done

    linking = {b["path"] for b in brain("backlinks", MOVED, "--json").json()["backlinks"]}
    assert len(linking) >= 7  # the notes that link to it by name, alias and heading
    files, folders = state(vault)

    moved = brain("move", MOVED, "projects", "--json").json()
    assert moved["new_path"] == "projects/Combining Filters.md"
    after, _ = state(vault)
    assert set(after) == set(files) - {MOVED} | {moved["new_path"]}
    assert {rel: sha for rel, sha in after.items() if rel != moved["new_path"]} == {
        rel: sha for rel, sha in files.items() if rel != MOVED}  # not a byte elsewhere
    now = brain("backlinks", moved["new_path"], "--json").json()["backlinks"]
    assert {b["path"] for b in now} == linking

    brain("undo")
    assert state(vault) == (files, folders)  # byte for byte; `projects/` gone again
