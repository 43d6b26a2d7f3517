"""An answer streamed into its thread (chat.startStream / appendStream / stopStream): the tool
calls as steps while the turn runs, then the checked answer, its sources and feedback.

A turn's reply streams once the turn starts looking something up (a read-only tool); a turn
that only files or changes notes replies with its card as before (`post_once`). The answer's
text is appended once its citations are checked, sentence by sentence: a sentence the check
drops is never on screen, so the model's raw tokens are not streamed.

Exactly once: the stream's ts is remembered with the job the moment Slack starts it, and the
finished message carries the job's key in its metadata like any reply. A job that runs again
finishes the message it started with `chat.update` instead of starting another; one that can
not stream (an older workspace, a refused call) posts its reply the usual way.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any

from slack_sdk.errors import SlackClientError
from slack_sdk.models.messages.chunk import MarkdownTextChunk, TaskUpdateChunk
from slack_sdk.web.async_client import AsyncWebClient

from bot.jobs.queue import JobContext
from bot.llm.types import ToolCall
from bot.slack import web
from bot.slack.cards import SlackMessage, clip
from tools.registry import Execution, read_only_names

log = logging.getLogger(__name__)

MAX_APPEND = 12_000  # Slack's limit for one chunk of markdown text
SENTENCE = re.compile(r"(?<=[.!?…])\s+(?=\S)")
READING = read_only_names()  # a turn that calls one of these is answering: it streams


def step_title(call: ToolCall) -> str:
    """What a tool call is doing, in the user's words (a step of the streamed answer)."""
    args = call.arguments if isinstance(call.arguments, dict) else {}
    query = str(args.get("query") or args.get("question") or "").strip()
    about = f" for “{clip(query, 60)}”" if query else ""
    ref = str(args.get("path") or "").strip()
    titles = {
        "search_entries": f"Searching your notes{about}",
        "ask_notes": f"Looking through your notes{about}",
        "get_entry": f"Reading {clip(ref, 60) or 'a note'}",
        "list_entries": f"Listing your {args.get('category') or 'recent'} notes",
        "list_backlinks": f"Finding what links to {clip(ref, 60) or 'a note'}",
        "generate_digest": "Gathering your digest",
        "answer": "Checking each sentence against its note",
        "classify_and_capture": "Filing it",
        "update_entry": f"Updating {clip(ref, 60) or 'a note'}",
        "move_entry": f"Moving {clip(ref, 60) or 'a note'}",
    }
    return titles.get(call.name, call.name.replace("_", " ").capitalize())


def sentences(text: str) -> list[str]:
    """The answer in the pieces it is appended in (each within Slack's chunk limit)."""
    pieces: list[str] = []
    for part in SENTENCE.split(text):
        while len(part) > MAX_APPEND:
            pieces.append(part[:MAX_APPEND])
            part = part[MAX_APPEND:]
        if part:
            pieces.append(part)
    return [p + (" " if i < len(pieces) - 1 else "") for i, p in enumerate(pieces)]


def split_reply(msg: SlackMessage) -> tuple[str, list[dict[str, Any]]]:
    """The message's prose (its leading `markdown` block: what streams as text) and the blocks
    that end the stream (sources, buttons, feedback)."""
    blocks = [b for b in msg.blocks if isinstance(b, dict)]
    if blocks and blocks[0].get("type") == "markdown":
        return str(blocks[0].get("text") or ""), blocks[1:]
    return "", blocks


class ReplyStream:
    """One turn's streamed reply. `progress` is the turn's Progress hook; `finish` ends it."""

    def __init__(self, client: AsyncWebClient, job: JobContext, *, channel: str,
                 thread_ts: str, user: str, team: str | None) -> None:
        self.client = client
        self.job = job
        self.channel = channel
        self.thread_ts = thread_ts
        self.user = user
        self.team = team
        self.ts: str | None = job.result.get("stream_ts")
        self.resumed = self.ts is not None  # an earlier run started it (it may have expired)
        self.broken = False  # Slack refused to stream: the reply is posted instead
        self._lock = asyncio.Lock()  # calls of one round may report at once

    @property
    def started(self) -> bool:
        return self.ts is not None

    async def progress(self, call: ToolCall, done: Execution | None) -> None:
        """A step: shown once the turn reads something (then every later step too)."""
        if self.broken or (self.ts is None and call.name not in READING):
            return
        status = "in_progress" if done is None else \
            ("complete" if done.status == "ok" else "error")
        chunk = TaskUpdateChunk(id=call.id[:64] or call.name, title=step_title(call),
                                status=status)
        async with self._lock:
            await self._send([chunk])

    async def _send(self, chunks: list[Any]) -> None:
        try:
            if self.ts is None:
                if self.job.result.get("reply_ts"):
                    self.broken = True  # a run after the reply: no second message
                    return
                where: dict[str, Any] = {"recipient_user_id": self.user}
                if self.team:
                    where["recipient_team_id"] = self.team
                resp = await self.client.chat_startStream(
                    channel=self.channel, thread_ts=self.thread_ts, chunks=chunks,
                    task_display_mode="timeline", **where)
                self.ts = str(resp.get("ts") or "") or None
                if self.ts is None:
                    self.broken = True
                    return
                await self.job.remember(stream_ts=self.ts)
            else:
                await self.client.chat_appendStream(channel=self.channel, ts=self.ts,
                                                    chunks=chunks)
        except SlackClientError as exc:  # a step is a nicety: the answer still arrives
            log.warning("streaming a step in %s/%s failed: %s", self.channel, self.thread_ts,
                        web.error_code(exc))
            if self.ts is None:
                self.broken = True

    async def finish(self, msg: SlackMessage) -> str | None:
        """End the stream with the reply: its prose appended a sentence at a time, then the
        blocks, the job's key in the metadata. None when no stream was started (post it)."""
        if self.ts is None:
            return None
        marker = {"event_type": web.REPLY_EVENT,
                  "event_payload": {"job": f"{self.job.job.key}#reply"}}
        if "stream_done" in self.job.result or self.job.result.get("reply_ts"):
            return self.ts
        text, tail = split_reply(msg)
        if not self.resumed:
            try:
                pieces = sentences(text)
                for piece in pieces[:-1]:
                    await self.client.chat_appendStream(
                        channel=self.channel, ts=self.ts,
                        chunks=[MarkdownTextChunk(text=piece)])
                last = [MarkdownTextChunk(text=pieces[-1])] if pieces else None
                await self.client.chat_stopStream(channel=self.channel, ts=self.ts,
                                                  chunks=last, blocks=tail or None,
                                                  metadata=marker)
                self.job.note(reply_ts=self.ts, stream_done=True)
                return self.ts
            except SlackClientError as exc:
                log.warning("finishing the stream in %s/%s failed (%s): updating it instead",
                            self.channel, self.thread_ts, web.error_code(exc))
        try:  # an earlier run's stream, or one Slack would not finish: the whole reply
            await self.client.chat_update(channel=self.channel, ts=self.ts, text=msg.text,
                                          blocks=msg.blocks, metadata=marker)
        except SlackClientError as exc:
            if not web.permanent(exc):
                raise  # the job runs again and updates it then
            log.warning("the streamed reply in %s/%s is gone (%s): posting it",
                        self.channel, self.thread_ts, web.error_code(exc))
            return None
        self.job.note(reply_ts=self.ts, stream_done=True)
        return self.ts
