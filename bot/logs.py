"""Logging for the long-running commands, with message text kept out of the logs.

Our own log lines carry ids, timings, tool names and reasons, never what the user wrote or a
note says. The libraries underneath log request bodies and SQL parameters (openai, anthropic,
httpx, slack_sdk, Bolt, mcp at DEBUG; SQLAlchemy, aiosqlite and asyncpg at INFO/DEBUG), which
hold exactly that text. Unless the operator sets BRAIN_LOG_CONTENT=1, they stay quiet below
WARNING (Bolt below INFO) whatever level the rest runs at; tests/e2e/test_serve_lifecycle.py
serves a DM at DEBUG and checks its words are nowhere in the output.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
# logger -> the lowest level it may log at while content logging is off
CONTENT_LOGGERS: dict[str, int] = {
    "sqlalchemy": logging.WARNING, "aiosqlite": logging.WARNING, "asyncpg": logging.WARNING,
    "openai": logging.WARNING, "anthropic": logging.WARNING, "httpx": logging.WARNING,
    "httpcore": logging.WARNING, "slack_sdk": logging.WARNING, "mcp": logging.WARNING,
    "slack_bolt": logging.INFO, "bot.slack.bolt": logging.INFO, "aiohttp": logging.INFO,
    "asyncio": logging.INFO, "uvicorn": logging.INFO,
}


@contextmanager
def logging_to_stderr(level: str = "INFO", *, log_content: bool = False) -> Iterator[None]:
    """Log to stderr at `level` for the run, then put every logger back as it was (so `main`
    can run again in the same process: the tests call it in-process)."""
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        numeric = logging.INFO
    root = logging.getLogger()
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter(FORMAT))
    saved = {name: logging.getLogger(name).level for name in CONTENT_LOGGERS}
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(numeric)
    for name, floor in CONTENT_LOGGERS.items():
        logging.getLogger(name).setLevel(numeric if log_content else max(numeric, floor))
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
        for name, previous in saved.items():
            logging.getLogger(name).setLevel(previous)
