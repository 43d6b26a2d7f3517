"""Where the project's shared material is: `../shared` beside the checkout (as in CI), or
BRAIN_SHARED_DIR. Tests that need it skip when it is absent."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _shared() -> Path:
    candidates = [os.environ.get("BRAIN_SHARED_DIR"), REPO.parent / "shared", "/work/shared"]
    for candidate in candidates:
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    return REPO.parent / "shared"


SHARED = _shared()
REAL_VAULT = SHARED / "data" / "real-vault"
SLACK_FIXTURES = SHARED / "fixtures" / "slack"


def ids_on_disk(root: Path) -> dict[str, list[str]]:
    """Each note id in the vault at `root` -> the files carrying it (a note made twice shows)."""
    from storage.vault.note_text import parse_note

    found: dict[str, list[str]] = {}
    for path in root.rglob("*.md"):
        note_id = parse_note(path.read_text(encoding="utf-8")).frontmatter.get("id")
        found.setdefault(str(note_id), []).append(path.relative_to(root).as_posix())
    return found


def patience(seconds: float) -> float:
    """How long to wait for work that takes well under `seconds` on a quiet machine: the
    deadline only catches work that never comes, so it stretches with the machine's load (CI
    runs two pytest workers and their servers on two cores, at loads of 5 and more)."""
    load = os.getloadavg()[0] / (os.cpu_count() or 1)
    return seconds * max(1.0, load)
