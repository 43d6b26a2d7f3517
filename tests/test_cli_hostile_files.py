"""Small files that cost minutes of CPU or gigabytes of memory to read (issue 31), given to
`brain add --file` as a real process: each is read within 60 s and under 1 GB of peak memory
in every process involved (the CLI and its reader processes, killed ones included), the note
is filed, and it says the file was too large to read safely. The files are made here."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.brain_cli import brain_command, process_env
from tests.hostile_files import docx_bomb, flac_bomb, pdf_bomb, png_bomb
from tests.peaks import measured

HOSTILE: dict[str, tuple[Callable[[], bytes], str]] = {  # name -> (made by, what is said)
    "minutes.pdf": (pdf_bomb, "the PDF is too large to read safely (8 pages with over 2 MB "
                              "of drawing instructions)"),
    "minutes.docx": (docx_bomb, "the DOCX is too large to read safely (it unpacks to 2.5 GB)"),
    "whiteboard.png": (png_bomb, "the image is too large to read safely (10000×10000, 100 "
                                 "megapixels; up to 60 are read)"),
    "memo.flac": (flac_bomb, "the clip is too large to read safely (8:59:59 long; clips up to "
                             "10 minutes are transcribed)"),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_file_is_refused_in_time_and_memory_and_the_note_is_filed(
        tmp_path: Path, name: str) -> None:
    make, said = HOSTILE[name]
    path = tmp_path / name
    path.write_bytes(make())
    env = process_env(tmp_path, {"BRAIN_DATA_DIR": str(tmp_path / "data")})
    run = measured([*brain_command(), "add", "Project Phoenix: launch notes", "--file",
                    str(path), "--category", "projects", "--json"], cwd=tmp_path, env=env)
    assert run.stopped is None, run.stopped
    assert run.seconds < 60, f"{run.seconds:.1f} s"
    assert run.peak_mb < 1024, f"{run.peak_mb:.0f} MB"
    added = run.json()
    assert isinstance(added, dict)
    note = (tmp_path / "data" / "vaults" / "local" / added["path"]).read_text(encoding="utf-8")
    assert "launch notes" in note and f"## From {name}" in note
    assert f"_Could not read it: {said}._" in note
    assert f"brain: filed, but {name}: {said}" in run.err
    kept = tmp_path / "data" / "vaults" / "local" / "attachments" / name
    assert kept.read_bytes() == path.read_bytes()  # the file itself is kept, as it came
