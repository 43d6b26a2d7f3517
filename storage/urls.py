"""Database URLs: the default one and the async driver's form. No SQLAlchemy here: the CLI
names a running server's data by its URL (bot/commands/via_server.py) before anything heavy loads.
"""

from __future__ import annotations

from pathlib import Path


def default_url(data_dir: Path) -> str:
    return f"sqlite+aiosqlite:///{Path(data_dir).resolve() / 'brain.db'}"


# A URL without a driver gets the async one (DATABASE_URL is often written the short way).
ASYNC_DRIVERS = {"sqlite": "sqlite+aiosqlite", "postgresql": "postgresql+asyncpg",
                 "postgres": "postgresql+asyncpg"}


def async_url(url: str) -> str:
    """`url` with an async driver: sqlite:// -> sqlite+aiosqlite://, postgresql:// ->
    postgresql+asyncpg://; URLs that name a driver stay as they are."""
    scheme, sep, rest = url.partition("://")
    if sep and scheme in ASYNC_DRIVERS:
        return f"{ASYNC_DRIVERS[scheme]}://{rest}"
    return url
