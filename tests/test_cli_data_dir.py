"""Data lives in one place whatever folder `brain` runs from (storage/places.py): the
platform's data folder unless BRAIN_DATA_DIR says otherwise, and models made on first use in
one shared cache. A `./brain-data` left by an older version is still used where it is, and
said once, with how to move it. The CLI as a process; the platform folders are the test's
(XDG_DATA_HOME, XDG_CACHE_HOME), never the real user's.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.brain_cli import run_process
from tests.databases import database_env, on_postgres

NOTES = {f"note-{i}.md": f"# Note {i}\n\nThe river budget meeting number {i} is on Friday.\n"
         for i in range(12)}


def _vault(root: Path) -> Path:
    root.mkdir(parents=True)
    for name, text in NOTES.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def _platform_data() -> Path:
    return Path(os.environ["XDG_DATA_HOME"]) / "second-brain"


def test_two_folders_use_one_data_dir_and_the_second_search_does_not_embed_again(
        tmp_path: Path) -> None:
    vault = _vault(tmp_path / "vault")
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    one_db = database_env(tmp_path)  # on PostgreSQL: one database for both folders too
    first = run_process(here, "search", "budget meeting", "--vault", str(vault), env=one_db)
    second = run_process(there, "search", "budget meeting", "--vault", str(vault), env=one_db)
    assert first.code == 0 and second.code == 0, first.err + second.err
    assert "giving 12 passage(s) of your notes vectors" in first.err  # the first search embeds the vault
    assert "vectors" not in second.err, second.err  # the second finds them where they are
    assert first.out == second.out
    assert not (here / "brain-data").exists() and not (there / "brain-data").exists()
    if not on_postgres():  # (on PostgreSQL the database is DATABASE_URL's)
        assert (_platform_data() / "brain.db").is_file()


def test_a_brain_data_folder_left_here_is_still_used_and_said_once(tmp_path: Path) -> None:
    note = tmp_path / "brain-data" / "vaults" / "local" / "ideas" / "old-idea.md"
    note.parent.mkdir(parents=True)
    note.write_text("---\nid: e_old\nname: Old idea\ncategory: ideas\n---\nKept here.\n",
                    encoding="utf-8")
    first = run_process(tmp_path, "list", "--json")
    assert first.code == 0, first.err
    assert "Old idea" in first.out  # nobody's notes disappear
    assert "./brain-data in this folder" in first.err and "mv " in first.err
    assert str(_platform_data()) in first.err  # where data lives now
    again = run_process(tmp_path, "list")
    assert again.code == 0 and "brain-data" not in again.err  # said once
    doctor = run_process(tmp_path, "doctor", "--local")
    line = next(x for x in doctor.out.splitlines() if "Data directory" in x)
    assert line.startswith("WARN") and "old default place" in line
    assert not _platform_data().exists()  # nothing was made there meanwhile


def test_brain_data_dir_still_decides(tmp_path: Path) -> None:
    (tmp_path / "brain-data").mkdir()  # even with an old folder here
    chosen = tmp_path / "mine"
    added = run_process(tmp_path, "add", "Water the plants", "--category", "admin",
                        env={"BRAIN_DATA_DIR": str(chosen)})
    assert added.code == 0, added.err
    assert list((chosen / "vaults" / "local").rglob("*.md"))
    assert "brain-data" not in added.err
    assert not list((tmp_path / "brain-data").iterdir())


def test_the_speech_model_is_joined_once_into_the_shared_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.media import spoken_wav

    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    clip = tmp_path / "memo.wav"
    clip.write_bytes(spoken_wav("Remember to water the tomatoes on the balcony.", tmp_path))
    models = cache / "second-brain" / "models"
    joined: list[tuple[int, int]] = []
    for folder in ("one", "two"):
        (tmp_path / folder).mkdir()
        added = run_process(tmp_path / folder, "add", "--file", str(clip), "--category",
                            "ideas", timeout=300)
        assert added.code == 0, added.err
        (model,) = models.glob("whisper-base-*/model.bin")
        joined.append((model.stat().st_ino, model.stat().st_mtime_ns))
        assert not (tmp_path / folder / "brain-data").exists()
    assert joined[0] == joined[1]  # the second clip used the model the first one joined
    assert not (_platform_data() / "models").exists()  # not in the data folder
