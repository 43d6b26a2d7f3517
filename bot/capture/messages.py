"""Capturing a message, anyone's, into the vault of the person who asked (the Save-to-brain
shortcut, the capture reaction).

The same capture path as a turn (`capture_thought`: the model's hints, else the keyword rules;
the inbox when unsure), with the message's permalink as `source` and its author recorded.
One message is saved once per person: the note's id is derived from (person, channel,
message), so a second save, by the shortcut or the reaction, finds the first and files
nothing; work that runs again after a crash finds the note its first run made.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from bot.core import Core
from bot.llm.offline import OfflineProvider
from bot.llm.types import LLMError, Message, RequestOptions
from bot.turn.tool_calls import ToolCalls
from tools.base import derived_id
from tools.capture.fence import RULE, Fence
from tools.capture.thought import capture_thought
from tools.classify_and_capture import DESCRIPTION, SCHEMA, repair
from tools.readers.sections import SharedFile, read_all
from tools.web.links import message_links

log = logging.getLogger(__name__)

PROMPT = """You file a Slack message that the user chose to keep in their second brain.
Call classify_and_capture once with the message text as it is, and hints: category (people,
projects, ideas, admin, or inbox when unsure), confidence 0-1, a short name, and the
category's fields (next_action, due_date YYYY-MM-DD, follow_ups, one_liner, context).
Someone else may have written it; the author is named for context. Today is {today}.
- {rule}"""
MAX_HINT_TEXT = 4000
MAX_CAPTURES = 50  # captures of one message by one person (each undone before the next)


@dataclass(frozen=True)
class CapturedMessage:
    data: dict[str, Any]  # what the capture card shows (as a capture's tool output)
    text: str  # one line: where it went
    already: bool  # this person saved this message before: nothing was filed now


def capture_key(user_id: str, channel: str, message_ts: str) -> str:
    # Notes' ids are derived from it: the words are stored, never to change.
    return f"save:{user_id}:{channel}:{message_ts}"


class MessageCaptures:
    def __init__(self, core: Core, tools: ToolCalls) -> None:
        self.core = core
        self.tools = tools

    async def capture(self, *, user_id: str, text: str, channel: str, message_ts: str,
                   source: str, author: str | None = None,
                   job_id: int | None = None, files: list[SharedFile] | None = None,
                   unfurls: list[dict[str, str]] | None = None) -> CapturedMessage:
        """File `text` for `user_id`, or find it filed before; `author` is who wrote it.
        The message's `files` (and the page of a message that is a link) go into the note."""
        store = self.core.store_for(user_id)
        key = capture_key(user_id, channel, message_ts)
        n = 1
        while n < MAX_CAPTURES:
            receipt = await self.core.receipts.for_entry(derived_id(key, n))
            if receipt is None or receipt.user_id != user_id:
                break
            if receipt.category != "trash":
                entry = await store.find_id(receipt.entry_id, at=receipt.path)
                if entry is not None:
                    return CapturedMessage(_card_data(entry, receipt.status), f"Already saved: "
                                 f"{entry.name} ({entry.category})", already=True)
                break  # deleted by hand: its id is free again
            n += 1  # undone since: capturing it again files a new note
        # The ids come from the message: a note a crashed run made is found, not made again.
        ctx = self.tools.context(user_id, source=source, channel=channel,
                                 thread_ts=message_ts, job_id=job_id, job_key=key,
                                 _ids_given=n - 1, ids_may_exist=True)
        limits = self.core.settings.reader_limits(user_id)
        ctx.shared = await read_all(files or [], limits) + await message_links(
            text, allow_hosts=self.core.settings.fetch_allow_hosts, limits=limits,
            unfurls=unfurls)
        hints = await self._hints(user_id, text, author)
        extra = {"author": author} if author else None
        footer = f"Saved from a Slack message by {author}." if author else None
        output = await capture_thought(ctx, text, hints, extra_fields=extra, footer=footer,
                                    repeat_ok=True)
        log.info("captured message %s/%s for %s as %s", channel, message_ts, user_id,
                 output.data.get("id"))
        return CapturedMessage(output.data, output.text, already=False)

    async def _hints(self, user_id: str, text: str, author: str | None) -> dict[str, Any]:
        """The model's classification (one forced tool call); {} (the keyword rules) offline
        or when the model fails: a capture never depends on the model."""
        provider, _notice = await self.core.provider_for(user_id)
        if isinstance(provider, OfflineProvider):
            return {}
        shown = text if len(text) <= MAX_HINT_TEXT else text[:MAX_HINT_TEXT]
        # Someone else's words: fenced as data (tools/capture/fence.py), so they can only be filed.
        label = f"Slack message by {author}" if author else "Slack message"
        options = RequestOptions(tool_schema=SCHEMA, tool_name="classify_and_capture",
                                 tool_description=DESCRIPTION)
        try:
            completion = await provider.complete(
                PROMPT.format(today=self.core.today().isoformat(), rule=RULE),
                [Message(role="user", content=Fence().wrap(label, shown))], [],
                options=options)
        except LLMError as exc:
            log.warning("classifying a saved message: the model is unreachable (%s); "
                        "using the rules", exc.kind)
            return {}
        except Exception:
            log.exception("classifying a saved message failed; using the rules")
            return {}
        for call in completion.tool_calls:
            fixed = repair(call.arguments) if call.arguments is not None else None
            if fixed is not None:
                hints: dict[str, Any] = fixed[0].get("hints") or {}
                return hints
        return {}


def _card_data(entry: Any, status: str) -> dict[str, Any]:
    """A note found again, in the shape of a capture's output (what the card renders)."""
    shown = {k: v for k, v in entry.fields.items()
             if k not in ("id", "name", "category", "created", "updated", "source",
                          "confidence", "original_text", "author")}
    data: dict[str, Any] = {"path": entry.path, "id": entry.id, "name": entry.name,
                            "category": entry.category, "status": status, "fields": shown}
    if isinstance(entry.fields.get("confidence"), int | float):
        data["confidence"] = entry.fields["confidence"]
    return data
