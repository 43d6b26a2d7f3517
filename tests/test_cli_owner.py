"""With BRAIN_OWNER the vault root is the owner's vault, so `<root>/<name>` is one of the
owner's folders: `brain export/forget --user projects` exported and then erased the owner's
projects, and `--user .git` erased the vault's git repository (issue 31). A folder of the
vault is never a person: such a --user is refused with exit 2 and a plain message, and the
vault is byte for byte as it was. Someone else's rows (no folder) are still exported and
erased, and the owner's own export works. Real processes for forget (it erases), the test's
database (BRAIN_TEST_DB=postgres too)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from tests.brain_cli import BrainCLI, Result, run_process

OWNER = "U0OWNER01"
OTHER = "U0SBOTHER"
PARTS = ("projects", ".git", "attachments", "notes", ".obsidian", "inbox")


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every folder (None) and file (its bytes) under `root`."""
    return {p.relative_to(root).as_posix(): (p.read_bytes() if p.is_file() else None)
            for p in sorted(root.rglob("*"))}


@pytest.fixture
def owned(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """An owner's vault with notes, a git repository, attachments and a hand-written
    folder; and rows of another person (a chat kept elsewhere: no folder in the vault)."""
    data = tmp_path / "data"
    env = {"BRAIN_DATA_DIR": str(data), "BRAIN_LLM": "offline"}
    other = run_process(tmp_path, "chat", "--new", "--user", OTHER, "--create",
                        stdin="Buy printer paper\n",
                        env={**env, "BRAIN_VAULT_DIR": str(tmp_path / "elsewhere")})
    assert other.code == 0, other.err
    env["BRAIN_OWNER"] = OWNER
    made = run_process(tmp_path, "add", "--category", "projects", "Launch the website",
                       env=env)
    assert made.code == 0, made.err
    root = data / "vaults"
    for rel, text in ((".git/HEAD", "ref: refs/heads/main\n"), (".git/objects/ab/cdef", "blob"),
                      ("attachments/minutes.pdf", "%PDF-1.4"), ("notes/diary.md", "# Diary\n"),
                      (".obsidian/app.json", "{}")):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root, env


def forget(tmp_path: Path, env: dict[str, str], user: str) -> Result:
    return run_process(tmp_path, "forget", "--user", user, "--yes", env=env)


@pytest.mark.files_store
def test_a_folder_of_the_owners_vault_is_never_a_person(
        owned: tuple[Path, dict[str, str]], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    root, env = owned
    before = snapshot(root)
    assert "projects/launch-the-website.md" in before and ".git/HEAD" in before
    cli = BrainCLI(capsys, tmp_path, env)
    for part in PARTS:
        erased = forget(tmp_path, env, part)
        assert erased.code == 2, (part, erased.out, erased.err)
        assert f"{part!r} is a part of {OWNER}'s vault, not a person" in erased.err
        assert "Nothing was read or changed" in erased.err and "Traceback" not in erased.err
        out = tmp_path / f"export-{part}.zip"
        exported = cli("export", "--user", part, "--out", str(out))
        assert exported.code == 2 and "not a person" in exported.err, (part, exported.err)
        assert not out.exists()
        listed = cli("list", "--user", part)
        assert listed.code == 2 and "BRAIN_OWNER is set" in listed.err, (part, listed.err)
        assert snapshot(root) == before, part  # byte for byte, every file and folder

    # The owner's own export has their notes; another person's rows are theirs alone.
    mine = cli("export", "--user", OWNER, "--out", str(tmp_path / "mine.zip"))
    assert mine.code == 0, mine.err
    with zipfile.ZipFile(tmp_path / "mine.zip") as zf:
        assert "vault/projects/launch-the-website.md" in zf.namelist()
    theirs = cli("export", "--user", OTHER, "--out", str(tmp_path / "theirs.zip"))
    assert theirs.code == 0 and "0 vault file(s), 1 conversation(s)" in theirs.out, theirs.err
    with zipfile.ZipFile(tmp_path / "theirs.zip") as zf:
        assert not [n for n in zf.namelist() if n.startswith("vault/")]
        assert "printer paper" in json.dumps(json.loads(zf.read("conversations.json")))
    gone = forget(tmp_path, env, OTHER)
    assert gone.code == 0 and f"erased {OTHER}: 0 vault file(s)" in gone.out, gone.err
    assert snapshot(root) == before  # their rows went; nothing of the owner's vault did
    again = cli("export", "--user", OTHER, "--out", str(tmp_path / "again.zip"))
    assert again.code == 1 and f"nothing is held of user {OTHER!r}" in again.err
    assert f"known: {OWNER}, the owner" in again.err  # not the vault's folders
