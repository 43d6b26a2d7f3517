"""Shared fixtures for storage tests: a fresh vault and a set of odd hand-written notes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from storage.db import Database
from storage.history import History
from storage.vault.files import Vault
from storage.vault.store import Store
from tests.databases import fresh_url
from tests.shared import REAL_VAULT

# Hand-written notes as people really write them; reads must never change their bytes.
ODD_NOTES: dict[str, str] = {
    "empty-block.md": "---\n---\nJust a body.\n",
    "comma-tags.md": "---\ntitle: Tagged\ntags: work, q3 , budget\n---\nBody\n",
    "wikilink-value.md": '---\nrelated: "[[Sara]]"\nproject: [[Q3]]\n---\nSee [[Sara]].\n',
    "dates.md": "---\ncreated: 2024-03-01\nseen: 2024-03-01T10:15:00+01:00\n---\nDated\n",
    "crlf.md": "---\r\nname: Windows note\r\ntags:\r\n  - a\r\n---\r\nLine one\r\nLine two\r\n",
    "bom.md": "\ufeff---\nname: With BOM\n---\nBody after BOM\n",
    "no-frontmatter.md": "# Plain note\n\nNo frontmatter here, links to [[Other]].\n",
    "broken-yaml.md": "---\ncreated: {{date}}\ntitle: Template\n---\nTemplate body\n",
    "list-yaml.md": "---\n- a\n- b\n---\nA list is not a mapping\n",
    "comments.md": ("---\n# my comment\nname: Commented  # trailing\nstatus: active\n\n"
                    "extra: 'q'\n---\nB\n"),
    "unclosed.md": "---\nname: never closed\nbody text\n",
}


def make_history_store(db: Database, root: Path) -> Store:
    """A Store over `root/vault` keeping its history in `root/history` (as the Brain's do)."""
    vault = Vault(root / "vault")
    return Store(vault, db, history=History(root / "history", vault))


@pytest.fixture
async def history_store(tmp_path: Path) -> AsyncIterator[Store]:
    db = await Database.open(fresh_url(tmp_path))
    yield make_history_store(db, tmp_path)
    await db.close()


@pytest.fixture
def vault(tmp_path: Path) -> Vault:
    return Vault(tmp_path / "vault")


@pytest.fixture
def odd_vault(vault: Vault) -> Vault:
    """A vault holding ODD_NOTES under `notes/` (outside the category folders)."""
    folder = vault.root / "notes"
    folder.mkdir()
    for name, text in ODD_NOTES.items():
        (folder / name).write_bytes(text.encode("utf-8"))
    return vault


def real_vault_files() -> list[Path]:
    if not REAL_VAULT.is_dir():
        return []
    return sorted(p for p in REAL_VAULT.rglob("*.md") if p.is_file())
