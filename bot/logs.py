"""Logging for the long-running commands, with message text kept out of the logs.

Our own log lines carry ids, timings, tool names and reasons, never what the user wrote or a
note says. The libraries underneath log request bodies and SQL parameters (openai, anthropic,
httpx, slack_sdk, Bolt, mcp at DEBUG; SQLAlchemy, aiosqlite and asyncpg at INFO/DEBUG), which
hold exactly that text. Unless the operator sets BRAIN_LOG_CONTENT=1, they stay quiet below
WARNING (Bolt below INFO) whatever level the rest runs at; tests/e2e/test_serve_lifecycle.py
serves a DM at DEBUG and checks its words are nowhere in the output. A database error shows
no statement parameters (storage/db.py), and the row PostgreSQL names in its `DETAIL:` line
("Failing row contains (...)", "Key (...)=(...)") is cut from every line and traceback
(tests/e2e/test_db_error_logs.py).
"""

from __future__ import annotations

import logging
import re
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


# PostgreSQL's DETAIL line of an error names the row or key it refused: what people wrote.
_DETAIL = re.compile(r"^(\s*DETAIL:).*$", re.MULTILINE)
HIDDEN = r"\1  (hidden: it can hold message text; BRAIN_LOG_CONTENT=1 shows it)"


class NoRowDetail(logging.Filter):
    """Cuts the database's DETAIL lines out of a record's message and traceback."""

    def __init__(self, formatter: logging.Formatter) -> None:
        super().__init__()
        self.formatter = formatter

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "DETAIL:" in message:
            record.msg, record.args = _DETAIL.sub(HIDDEN, message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatter.formatException(record.exc_info)
        if record.exc_text and "DETAIL:" in record.exc_text:
            record.exc_text = _DETAIL.sub(HIDDEN, record.exc_text)
        return True


@contextmanager
def logging_to_stderr(level: str = "INFO", *, log_content: bool = False) -> Iterator[None]:
    """Log to stderr at `level` for the run, then put every logger back as it was (so `main`
    can run again in the same process: the tests call it in-process)."""
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        numeric = logging.INFO
    root = logging.getLogger()
    handler = logging.StreamHandler()
    formatter = logging.Formatter(FORMAT)
    handler.setFormatter(formatter)
    if not log_content:
        handler.addFilter(NoRowDetail(formatter))
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
