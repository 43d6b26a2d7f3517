"""The index over a real Obsidian vault (the Tasks plugin docs), read-only.

Skipped when ../shared/data/real-vault is absent. The database lives in tmp_path; the vault
files must come out byte-identical.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from storage.db import Database
from storage.vault.files import Vault
from storage.vault.store import Store
from tests.databases import fresh_url
from tests.shared import REAL_VAULT

REAL = REAL_VAULT
pytestmark = pytest.mark.skipif(not REAL.is_dir(), reason="real vault not present")

# (sub-vault, a note that others link to, a note that links to it outside code)
CASES = [
    ("docs", "Getting Started/Task Dependencies.md", "Advanced/Urgency.md"),
    ("contributing", "Building/Setting up build environment.md",
     "Building/Local development.md"),
    ("resources/sample_vaults/Tasks-Demo", "Test Data/yaml_all_property_types_populated.md",
     "How To/Find tasks in notes with particular tag.md"),
    (".", "docs/Getting Started/Task Dependencies.md", "docs/Advanced/Urgency.md"),
]


def md_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.md") if p.is_file()
                  and not any(part.startswith(".") for part in p.relative_to(root).parts))


def digests(root: Path) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def folded(text: str) -> str:
    return text.casefold()


@pytest.mark.parametrize(("sub", "target", "source"), CASES, ids=[c[0] for c in CASES])
async def test_real_vault_indexes_searches_and_links(tmp_path: Path, sub: str, target: str,
                                                    source: str) -> None:
    root = (REAL / sub).resolve()
    before = digests(root)
    db = await Database.open(fresh_url(tmp_path))
    try:
        store = Store(Vault(root), db)
        stats = await store.refresh()
        assert stats.added == len(md_files(root))
        assert (await store.list(limit=1)).total == stats.added

        for word in ("recurring", "query"):
            found = await store.search(word, limit=20)
            assert found.entries, word
            assert found.total >= len(found.entries)
            pattern = re.compile(word, re.IGNORECASE)
            for entry in found.entries:
                text = (root / entry.path).read_text(encoding="utf-8", errors="replace")
                # The word (or a longer word it starts, as the last word is a prefix) is in the
                # note; fuzzy name matches must still be names close to it.
                assert pattern.search(text) or word[:4] in folded(entry.name), entry.path

        links = await store.backlinks(target)
        assert links.target == target
        assert source in {b.path for b in links.backlinks}
        for link in links.backlinks:
            # The context is the linking line (shortened), or `key: [[...]]` for frontmatter.
            text = (root / link.path).read_text(encoding="utf-8")
            assert link.context[:40] in text or link.context.split(":", 1)[0] in text
        summary = await store.summary()
        assert summary.total == stats.added
    finally:
        await db.close()
    assert digests(root) == before
