"""What every tool shares: the context it runs in, its output, its expected failures."""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from storage.history.context import Tally
from storage.types import CATEGORIES
from tools.capture.fence import unfenced

if TYPE_CHECKING:
    from storage.db import Database
    from storage.repositories.receipts import Receipts
    from storage.types import Entry
    from storage.vault.store import Store
    from tools.readers.read import Reading
    from tools.readers.sections import SharedFile

MAX_BODY = 2000  # chars of a note body the model sees
# Writes one message (one turn, one ToolContext) may make; more are refused with an error
# result that says so (a pasted text asking to file or change every note cannot).
MAX_CHANGES_PER_TURN = 10


class DigestMaker(Protocol):
    """Injected by the bot so generate_digest can use the full digest engine."""

    async def __call__(self, kind: str) -> dict[str, Any]: ...


@dataclass(frozen=True)
class ToolDeps:
    """What a person's tools work with, the same for every call: their Store (and the
    database under it), who they are, and the services a tool may ask (the classifier's
    nearest notes, the digest engine, the link reader). Built in one place
    (bot/turn/tool_calls.py); per-call state is the ToolContext's."""

    store: Store
    db: Database
    user_id: str
    confidence_threshold: float = 0.6
    # The user's IANA time zone: relative dates in a thought ("tomorrow") are read in it.
    # None: the machine's zone.
    tz: str | None = None
    # Nearest labelled examples of a text as (category, score 0..1), e.g. from sentence
    # vectors (sync or async): the keyword classifier asks it when its rules are unsure.
    # None: rules only.
    similar: Callable[[str], Sequence[tuple[str, float]]
                      | Awaitable[Sequence[tuple[str, float]]]] | None = None
    make_digest: DigestMaker | None = None
    # Reads links (tools/web/links.py, with the app's fetch guards and limits) into `shared`
    # form: a capture given a `url` keeps the page. None: links are not fetched.
    read_links: Callable[[list[str]], Awaitable[list[tuple[SharedFile, Reading]]]] | None = None

    @property
    def receipts(self) -> Receipts:
        """The capture receipts (storage/repositories/receipts.py: their one place)."""
        from storage.repositories.receipts import Receipts

        return Receipts(self.db)


@dataclass
class ToolContext:
    """One unit of work's tool calls (a turn, a saved message, an MCP call): where they come
    from and what they did so far; `deps` is what they work with."""

    deps: ToolDeps
    conversation_id: int | None = None
    turn_id: int | None = None
    source: str = "cli"  # "cli" or a Slack permalink
    channel: str | None = None
    thread_ts: str | None = None
    # The user's message as sent, and the (shortened) view of it the model saw: capturing
    # the view files the whole message, so a long paste is never cut to what fit the prompt.
    message: str | None = None
    message_view: str | None = None
    # The intake job this turn runs for: a job that runs again (its process died) gives its
    # notes the same ids, so a capture made by the first attempt is found, not made twice.
    job_id: int | None = None
    job_key: str | None = None
    job_attempt: int = 1
    # Ids derived from something that may have been filed before whatever the attempt (a
    # saved message: a crash between its note and its receipt): look before making a note.
    ids_may_exist: bool = False
    # The notes tools returned in this turn (by id and by path -> {"id", "path", "name"}):
    # only these may be cited by the model's answer.
    returned: dict[str, dict[str, str]] = field(default_factory=dict)
    _ids_given: int = field(default=0, repr=False)
    # Every write this context's tool calls made (a note filed or changed, a line added to a
    # person's note, a file kept): past `tally.limit` a tool that writes is refused with
    # `over_cap`, so text injected into a file, a page or a saved message cannot fill or
    # rewrite a vault in one go. A turn counts its own; an MCP session shares one (a window).
    tally: Tally = field(default_factory=lambda: Tally(limit=MAX_CHANGES_PER_TURN), repr=False)
    over_cap: str = (f"this message already made {MAX_CHANGES_PER_TURN} changes (notes filed "
                     "or changed, files kept), the most one message may make; this call "
                     "changed nothing. Tell the user which changes were made and ask them to "
                     "send the rest again.")
    # Files shared with the message, read (tools/readers): the note that files the message
    # keeps them and their text; a question with a file is answered from it, nothing kept.
    shared: list[tuple[SharedFile, Reading]] = field(default_factory=list)
    shared_filed: bool = field(default=False, repr=False)

    def saw(self, data: Any) -> None:
        """Remember the notes a tool's result names (any object with a path and a name)."""
        if isinstance(data, dict):
            path, name = data.get("path"), data.get("name")
            if isinstance(path, str) and isinstance(name, str):
                note = {"id": str(data.get("id") or path), "path": path, "name": name}
                self.returned.setdefault(note["id"], note)
                self.returned.setdefault(path, note)
            for value in data.values():
                self.saw(value)
        elif isinstance(data, list):
            for item in data:
                self.saw(item)

    def next_entry_id(self) -> str | None:
        """The id of this turn's next new note: derived from the job, or None (random)."""
        if not self.job_key:
            return None
        self._ids_given += 1
        return derived_id(self.job_key, self._ids_given)

    @property
    def retried(self) -> bool:
        """Might this context's next note exist already (made by an earlier run)?"""
        return self.job_attempt > 1 or self.ids_may_exist

    def full_text(self, text: str) -> str:
        """The text a capture keeps: the whole message when the model passed the view of it,
        and never our fence's marker lines (tools/capture/fence.py)."""
        if self.message and self.message_view and self.message_view != self.message \
                and text.strip() == self.message_view.strip():
            return self.message
        return unfenced(text)


def derived_id(key: str, n: int = 1) -> str:
    """The id of the `n`-th note made under `key` (a job, a saved message): the same every
    time, so work that runs again finds the note its first run made."""
    return "e_" + hashlib.sha256(f"{key}:{n}".encode()).hexdigest()[:12]


@dataclass(frozen=True)
class ToolOutput:
    kind: str  # capture | entry | list | search | update | move | digest | backlinks
    data: dict[str, Any]  # JSON-safe; what the model sees (capped) and what cards render
    text: str  # one-line human summary


class ToolError(Exception):
    """An expected failure: becomes an error result the model can correct itself from."""

    def __init__(self, code: str, message: str, *, details: list[str] | None = None,
                 candidates: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details
        self.candidates = candidates


ToolFn = Callable[[ToolContext, dict[str, Any]], Awaitable[ToolOutput]]
# Arguments that failed the schema -> (arguments with the bad optional parts dropped, what was
# dropped), or None when they cannot be saved that way.
Repair = Callable[[Any], "tuple[dict[str, Any], list[str]] | None"]


@dataclass(frozen=True)
class Tool:
    name: str
    description: str  # >= 20 chars, says when to use it
    parameters: dict[str, Any]  # JSON schema, type object, additionalProperties false
    run: ToolFn
    terminal: bool = False  # its result renders itself: capture, move
    read_only: bool = True  # safe to run concurrently with others
    repair: Repair | None = None
    internal: bool = False  # the loop's own final step: not offered to MCP clients
    additive: bool = False  # only adds notes (a capture): never changes or removes one

    @property
    def destructive(self) -> bool:
        """Changes or moves a note that exists (MCP's destructive hint)."""
        return not self.read_only and not self.additive


# Schema fragments reused by several tools; short descriptions keep the prompt small.
CATEGORY_ENUM: list[str] = list(CATEGORIES)
REF_SCHEMA: dict[str, Any] = {
    "type": "string", "minLength": 1, "maxLength": 300,
    "description": "Note path, id or exact name",
}
LIMIT_SCHEMA: dict[str, Any] = {"type": "integer", "minimum": 1, "maximum": 50, "default": 10}


def limit_arg(args: dict[str, Any], default: int = 10) -> int:
    value = args.get("limit", default)
    return int(value) if value is not None else default


def entry_data(entry: Entry) -> dict[str, Any]:
    """An entry as the model sees it: every field, the body capped at MAX_BODY."""
    data = entry.to_dict()
    if len(entry.body) > MAX_BODY:
        data["body"] = entry.body[:MAX_BODY]
        data["truncated"] = True
    return data
