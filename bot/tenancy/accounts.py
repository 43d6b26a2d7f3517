"""A person's data as a whole, and the workspace's standing: export, forget, retention, and
what uninstalling the app or revoking a token stops.

- `export`: the vault (every file, the trash included) and the person's conversations, capture
  receipts and digest settings, as one zip.
- `forget`: erases the vault and everything the database holds of the person.
- `prune`: the retention rule (BRAIN_RETENTION_DAYS), run by the hourly housekeeping.
- `uninstalled` / `revoked`: pending work is cancelled and scheduled messages stop; nothing is
  deleted. The app works again once its token passes auth.test at start (`installed`), and a
  paused person again once they write to the bot.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import zipfile
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bot.core import Core
from bot.tenancy.people import People
from storage.repositories import journal, slack_state, user_data

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Footprint:
    """What the brain holds of one person (what an export contains, what forget erases)."""

    user_id: str
    vault: Path | None  # None: they have no vault (BRAIN_OWNER: anyone but the owner)
    files: int
    rows: dict[str, int] = field(default_factory=dict)


def _vault_files(root: Path) -> list[Path]:
    """Every regular file under the vault (symlinks are not followed out of it)."""
    if not root.is_dir():
        return []
    found = []
    for folder, _dirs, names in os.walk(root):
        for name in names:
            path = Path(folder) / name
            if path.is_file() and not path.is_symlink():
                found.append(path)
    return sorted(found)


class Accounts:
    def __init__(self, core: Core, people: People | None = None) -> None:
        self.core = core
        self.people = people or People(core)

    def _vault(self, user_id: str) -> Path | None:
        """The person's vault folder; None when they have none (BRAIN_OWNER: anyone but the
        owner), and InvalidValue for a name that is part of the owner's vault."""
        self.core.check_person(user_id)
        if not self.core.has_vault(user_id):
            return None
        return Path(self.core.store_for(user_id).vault.root)

    async def holds(self, user_id: str) -> bool:
        """Is anything of this person here: their vault folder, or rows of theirs? (Asked
        before an export or forget, so a mistyped id is said to be unknown, and no empty
        vault is made for it.) InvalidValue for a name that is part of the owner's vault."""
        self.core.check_person(user_id)
        folder = self.core.settings.vault_for(user_id)
        if self.core.has_vault(user_id) and (folder.exists() or folder.is_symlink()):
            return True  # (a link is refused later, by name)
        async with self.core.db.session() as s:
            return await user_data.holds_any(s, user_id)

    async def footprint(self, user_id: str) -> Footprint:
        root = self._vault(user_id)
        async with self.core.db.session() as s:
            conversations = await user_data.conversations_of(s, user_id)
            receipts = await user_data.receipts_of(s, user_id)
        return Footprint(user_id, root, len(_vault_files(root)) if root else 0,
                         {"conversations": len(conversations),
                          "turns": sum(len(c["turns"]) for c in conversations),
                          "receipts": len(receipts)})

    async def export(self, user_id: str, out: Path) -> Footprint:
        """Write the person's vault and data to the zip `out` (replaced if it exists)."""
        root = self._vault(user_id)
        async with self.core.db.session() as s:
            conversations = await user_data.conversations_of(s, user_id)
            receipts = await user_data.receipts_of(s, user_id)
            digests = await user_data.subscriptions_of(s, user_id)
        store = self.core.store_for(user_id) if root else None
        if store is not None and store.mirror is not None:
            await store.refresh()  # the database store: the mirror as the database holds it
        files = _vault_files(root) if root else []
        history = store.history if store is not None else None
        out.parent.mkdir(parents=True, exist_ok=True)
        partial = out.with_name(out.name + ".partial")
        with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for path in files:
                zf.write(path, "vault/" + path.relative_to(root or path).as_posix())
            for path, name in history.files() if history is not None else []:
                zf.write(path, "history/" + name)  # a git repository: `git log` reads it
            for name, data in (("conversations.json", conversations),
                               ("captures.json", receipts),  # the file's name is the export's format
                               ("digest_subscriptions.json", digests),
                               ("export.json", {"user_id": user_id,
                                                "exported_at": datetime.now(UTC).isoformat(),
                                                "vault_files": len(files)})):
                zf.writestr(name, json.dumps(data, ensure_ascii=False, indent=2, default=str))
        partial.replace(out)  # a finished zip or none
        log.info("exported %s: %d files, %d conversations", user_id, len(files),
                 len(conversations))
        return Footprint(user_id, root, len(files),
                         {"conversations": len(conversations), "receipts": len(receipts)})

    async def forget(self, user_id: str) -> Footprint:
        """Erase the person's vault and every row of theirs. Not undoable."""
        root = self._vault(user_id)
        files, vectors = await self._erase_vault(user_id) if root is not None else ([], 0)
        async with self.core.db.session() as s:
            rows = await user_data.forget(s, user_id)
            await s.commit()
        rows["index_vectors"] = vectors
        await user_data.scrub(self.core.db.engine)  # the words leave FTS segments and the WAL
        if root is not None and root != Path(self.core.settings.vault_root).resolve():
            shutil.rmtree(root, ignore_errors=True)  # their own folder; never the shared root
        self.core.forget_store(user_id)
        log.info("forgot %s: %d files, %s", user_id, len(files), rows)
        return Footprint(user_id, root, len(files), rows)

    async def _erase_vault(self, user_id: str) -> tuple[list[Path], int]:
        """The vault's files, history and vectors gone, the index told: (the files, how many
        vectors)."""
        store = self.core.store_for(user_id)
        root = Path(store.vault.root)
        if self.core.vault_override is None:
            self.core.check_vault_folder(user_id)  # again, right before anything is deleted
        files = _vault_files(root)
        if store.mirror is not None:  # the database store: every machine's copy goes
            await store.mirror.erase()
        history, store.history = store.history, None  # the files' going is not a change
        if history is not None:
            history.erase()
        for child in list(root.iterdir()) if root.is_dir() else []:
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
        await store.rescan()  # the index forgets the files that went
        return files, await store.drop_vectors()

    async def prune(self, now: datetime | None = None) -> dict[str, int]:
        """Delete what is older than the retention period (nothing when it is 0), and OAuth
        states of installs that were never finished (many workspaces)."""
        if self.core.settings.oauth:
            async with self.core.db.session() as s:
                await slack_state.prune_oauth_states(s, now or datetime.now(UTC))
                await s.commit()
        days = self.core.settings.retention_days
        if days <= 0:
            return {}
        cutoff = (now or datetime.now(UTC)) - timedelta(days=days)
        async with self.core.db.session() as s:
            counts = await user_data.prune(s, cutoff)
            await s.commit()
        if any(counts.values()):
            log.info("retention (%d days): removed %s", days, counts)
        return counts

    # -- the workspace and its people ------------------------------------------------------

    async def uninstalled(self, team_id: str) -> int:
        """The app was uninstalled: pending work is cancelled, schedules stop; data stays.
        With many workspaces, only that workspace's people are stopped."""
        scope: dict[str, Any] = {}
        if self.people.many:
            home = await self.people.home()
            scope = {"plain": True} if team_id == home else {"prefix": f"{team_id}-"}
        async with self.core.db.session() as s:
            await slack_state.set_uninstalled(s, team_id, True)
            cancelled = await journal.cancel_pending(s, "the app was uninstalled", **scope)
            await s.commit()
        log.warning("the app was uninstalled from %s: %d pending job(s) cancelled, schedules "
                    "stopped; all data is kept", team_id, cancelled)
        return cancelled

    async def installed(self, team_id: str | None = None) -> None:
        """The bot token works (auth.test passed at start), or workspace `team_id` installed
        the app (OAuth): the app is installed again there."""
        async with self.core.db.session() as s:
            if team_id is None:
                cleared = await slack_state.clear_uninstalled(s)
            else:
                cleared = int(await slack_state.set_uninstalled(s, team_id, False))
            await s.commit()
        if cleared:
            log.info("the app is installed again; schedules resume")

    async def revoked(self, user_ids: list[str]) -> int:
        """These people's tokens were revoked: their pending work is cancelled and their
        digests and reminders pause until they write to the bot again; data stays."""
        if not user_ids:
            return 0
        async with self.core.db.session() as s:
            for user in user_ids:
                await slack_state.set_paused(s, user, True)
            cancelled = await journal.cancel_pending(s, "the user's token was revoked",
                                                     user_ids)
            await s.commit()
        log.warning("tokens revoked for %d user(s): %d pending job(s) cancelled, their "
                    "schedules paused; data is kept", len(user_ids), cancelled)
        return cancelled

    async def stopped_for(self, user_id: str) -> bool:
        """Should scheduled messages to this person wait (uninstalled, or paused)?"""
        team = await self.people.team(user_id) if self.people.many else None
        async with self.core.db.session() as s:
            gone = await slack_state.uninstalled_teams(s)
            if gone and (team is None or team in gone):  # one workspace: any uninstall
                return True
            return user_id in await slack_state.paused_users(s)
