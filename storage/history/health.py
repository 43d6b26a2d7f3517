"""Can the vaults' histories be written, and are they whole? `brain doctor` looks closely
(locks, folders it may not write, every object its commits need); `/health` only asks which
histories hold changes they could not record yet (a file's presence: cheap on every call).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from storage.history.history import history_path
from storage.history.pending import PENDING_NAME, Pending, why
from storage.history.repo import STALE_LOCK_SECONDS, HistoryRepo

REPO_NAME = "repo.git"


@dataclass(frozen=True)
class HistoryState:
    name: str  # the history's folder: the vault's folder name and a digest of its path
    problem: str | None = None  # it cannot be written, or it is damaged
    note: str | None = None  # worth a look: a lock a stopped writer left
    fix: str | None = None
    checked: int = 0  # commits whose objects were checked (the newest first)
    commits: int = 0  # commits in all


def _histories(base: Path) -> list[Path]:
    if not base.is_dir():
        return []
    return sorted(p for p in base.iterdir() if (p / REPO_NAME / "HEAD").is_file()
                  or (p / PENDING_NAME).is_file())


def inspect(folder: Path, *, budget: float = 5.0) -> HistoryState:
    """One history, looked at closely (nothing is changed)."""
    name = folder.name
    aside = (f"move {folder} aside while no `brain` process runs: the next change starts a "
             "new history from the vault as it is (the changes it held can then not be undone)")
    pending = Pending(folder)
    late = f"{pending.count()} change(s) not recorded yet" if pending.behind else None
    if not (folder / REPO_NAME / "HEAD").is_file():
        return HistoryState(name, problem=late and f"{late}: {pending.reason()}")
    try:
        repo = HistoryRepo(folder / REPO_NAME)
    except Exception as exc:  # noqa: BLE001 (whatever stops it opening is the finding)
        return HistoryState(name, problem=f"it does not open: {why(exc)}", fix=aside)
    try:
        locks = repo.lock_files()
        unwritable = repo.unwritable()
        missing, checked = repo.missing(budget)
        commits = max(checked, _count(folder))
    finally:
        repo.close()
    if missing:
        return HistoryState(name, problem=f"damaged: {len(missing)} object(s) its commits "
                            f"need are missing or unreadable ({', '.join(m[:12] for m in missing)})"
                            + (f"; {late}" if late else ""), fix=aside)
    stale = [(path, age) for path, age in locks if age >= STALE_LOCK_SECONDS]
    fresh = [path for path, age in locks if age < STALE_LOCK_SECONDS]
    if unwritable:
        fix = (f"a lock is cleared by itself once a minute old; if no `brain` process is "
               f"running, remove {fresh[0]}" if fresh else
               f"make {folder / REPO_NAME} writable for the user that runs `brain`")
        return HistoryState(name, problem=(f"{late}: " if late else "") + unwritable, fix=fix)
    if late:
        return HistoryState(name, problem=f"{late}: {pending.reason()}",
                            fix="they are recorded at the next change or rescan once it can "
                            "be written")
    if stale:
        path, age = stale[0]
        return HistoryState(name, note=f"a lock left by a writer that stopped {age / 60:.0f} "
                            f"min ago ({path.name}): cleared at the next change",
                            fix=f"nothing to do (or remove {path})")
    return HistoryState(name, checked=checked, commits=commits)


def _count(folder: Path) -> int:
    """How many changes the history lists (its cache's lines: cheap, and near enough)."""
    try:
        with (folder / "changes.jsonl").open("rb") as handle:
            return sum(1 for _line in handle)
    except OSError:
        return 0


def inspect_all(base: Path, *, budget: float = 10.0) -> list[HistoryState]:
    """Every history under `base`, sharing about `budget` seconds (at least 0.2 s each)."""
    folders = _histories(base)
    each = max(0.2, budget / max(1, len(folders)))
    return [inspect(folder, budget=each) for folder in folders]


def vaults_behind(base: Path) -> list[Path]:
    """The vaults whose histories under `base` hold changes to record (a starting `brain
    serve` or `brain mcp` watches them, so its rescan records them without waiting for a
    request): each as its pending file names it, if that is the vault the folder is for."""
    found = []
    for folder in _histories(base):
        vault = Pending(folder).vault_named()
        if vault is not None and vault.is_dir() and not vault.is_symlink() \
                and history_path(base, vault) == folder:
            found.append(vault)
    return found


def behind(base: Path) -> list[str]:
    """Why, for each history under `base` holding changes it could not record yet."""
    found = []
    for folder in _histories(base):
        pending = Pending(folder)
        if pending.behind:
            found.append(f"{pending.count()} change(s) not recorded yet: {pending.reason()}")
    return found
