"""Logging set-up for the long-running commands, with message text kept out of the logs.

Our own log lines carry ids, timings, tool names and reasons, never what the user wrote or a
note says. The SDKs underneath log whole request and response bodies at DEBUG (openai,
anthropic, httpx, slack_sdk, slack_bolt, mcp); unless the operator sets BRAIN_LOG_CONTENT=1,
those loggers stay at INFO or above whatever level the rest runs at.
"""

from __future__ import annotations

import logging

CONTENT_LOGGERS = ("openai", "anthropic", "httpx", "httpcore", "slack_sdk", "slack_bolt",
                   "bot.slack.bolt", "mcp", "aiohttp.access", "asyncio")
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def setup_logging(level: str = "INFO", *, log_content: bool = False) -> None:
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        numeric = logging.INFO
    logging.basicConfig(level=numeric, format=FORMAT)
    logging.getLogger().setLevel(numeric)
    for name in CONTENT_LOGGERS:
        logging.getLogger(name).setLevel(numeric if log_content else max(numeric, logging.INFO))
