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
