"""Real storage for tool tests: a Store over a tmp vault and a real SQLite database."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from storage.db import Database
from storage.history import Tally
from storage.vault.files import Vault
from storage.vault.store import Store
from tests.databases import fresh_url
from tools.base import ToolContext, ToolDeps

T = TypeVar("T")


def write_note(root: Path, rel: str, text: str) -> Path:
    """A note as a user would write it by hand (Obsidian, an editor)."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file of the vault and its bytes, to prove that nothing changed."""
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = await Database.open(fresh_url(tmp_path, "b"))
    yield database
    await database.close()


@pytest.fixture
def vault_root(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    root.mkdir()
    return root


@pytest.fixture
def store(vault_root: Path, db: Database) -> Store:
    return Store(Vault(vault_root), db)


@pytest.fixture
def ctx(store: Store, db: Database) -> ToolContext:
    """A context whose calls stand for messages of their own: no one message's cap on writes
    (tests/tools/test_registry.py tests the cap)."""
    return ToolContext(deps=ToolDeps(store=store, db=db, user_id="U1"), source="cli", tally=Tally())


class Sandbox:
    """Storage on a private event loop, for synchronous hypothesis tests: one database for all
    examples (migrations run once), each example runs on the same loop."""

    def __init__(self, tmp: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self.root = tmp / "vault"
        self.root.mkdir(parents=True, exist_ok=True)
        self.db = self.run(Database.open(fresh_url(tmp, "b")))
        self.store = Store(Vault(self.root), self.db)
        self.ctx = ToolContext(deps=ToolDeps(store=self.store, db=self.db, user_id="U1"), tally=Tally())

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coro)

    def close(self) -> None:
        self.run(self.db.close())
        self.loop.close()


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[Sandbox]:
    box = Sandbox(tmp_path / "sandbox")
    yield box
    box.close()
