"""Where data lives unless `BRAIN_DATA_DIR` says: the platform's folder for a person's data
(`~/.local/share/second-brain` on Linux, `~/Library/Application Support/second-brain` on
macOS, `%LOCALAPPDATA%\\second-brain` on Windows: platformdirs), the same from whatever folder
`brain` runs in; models made on first use (the speech model's two halves joined) go to one
shared cache (`~/.cache/second-brain/models` on Linux). A `./brain-data` in the working
directory, the old default, is still used where it is, so nobody's notes disappear.
"""

from __future__ import annotations

from pathlib import Path

APP = "second-brain"
LEGACY = Path("brain-data")  # the old default, relative to the working directory
MOVED_NOTICE = ".where-data-lives-was-said"  # in a legacy folder: the notice was given


def user_data() -> Path:
    from platformdirs import user_data_path

    return user_data_path(APP, appauthor=False)


def models_cache() -> Path:
    from platformdirs import user_cache_path

    return user_cache_path(APP, appauthor=False) / "models"


def legacy_here() -> Path | None:
    """`./brain-data` when the working directory has one, else None."""
    return LEGACY if LEGACY.is_dir() else None


def default_data_dir() -> tuple[Path, bool]:
    """(the data directory when BRAIN_DATA_DIR is not set, whether it is the legacy one)."""
    legacy = legacy_here()
    return (legacy, True) if legacy is not None else (user_data(), False)


def moving_hint(legacy: Path) -> str:
    """How to move a legacy data folder to where data lives now."""
    target = user_data()
    return (f"{legacy.resolve()} (./brain-data in this folder, the old default place) is "
            f"used; data now lives in {target} whatever folder you run brain from. To move "
            f"it there: stop any running brain, then `mv {legacy.resolve()} {target}` (while "
            f"{target} does not exist yet); or keep it here with "
            f"BRAIN_DATA_DIR={legacy.resolve()}")
