"""What a button, `fix:` or `brain move` changes in a person's vault outside a turn: a move
(the note is re-filed and its receipt follows), an Undo (the note goes to the vault's
restorable trash, never deleted), and the Undo of a batch (a turn's changes, an MCP
session's) through the vault's history. A change pressed in a thread joins its conversation.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Sequence

from bot.core import Core
from bot.turn.conversations import Conversations
from storage.types import Change, MoveResult
from tools.move_entry import move_note


class NoteActions:
    def __init__(self, core: Core, conversations: Conversations) -> None:
        self.core = core
        self.conversations = conversations

    async def move(self, *, user_id: str, ref: str, category: str,
                   conversation_key: str | None = None) -> MoveResult:
        """Move the note, mark its receipt fixed, and tell the conversation."""
        result = await move_note(self.core.store_for(user_id), self.core.receipts, ref,
                                 category)
        if conversation_key:
            await self.conversations.record(
                conversation_key, user_id,
                f"(pressed the button: move '{result.entry.name}' to {category})",
                f"Moved {result.entry.name} to {category}: {result.new_path}")
        return result

    async def trash(self, *, user_id: str, ref: str, conversation_key: str | None = None) -> str:
        """Undo: the note goes to the vault's restorable trash; returns where it is now."""
        store = self.core.store_for(user_id)
        entry = await store.get(ref)
        new_path = await store.trash(ref)
        if entry.id:
            await self.core.receipts.fixed(entry.id, path=new_path, category="trash")
        if conversation_key:
            await self.conversations.record(
                conversation_key, user_id, f"(pressed Undo on '{entry.name}')",
                f"Moved {entry.name} to the trash: {new_path} (restorable)")
        return new_path

    async def undo_all(self, *, user_id: str, changes: Sequence[str],
                       done: Collection[str] = (),
                       undone: Callable[[str, Change], Awaitable[None]] | None = None,
                       ) -> list[Change]:
        """A batch's changes put back, newest first (those in `done` were already); each
        one undone is told to `undone` as it is. Raises the StorageError of the first that
        cannot be (a file changed since): those before it stay undone."""
        store = self.core.store_for(user_id)
        out = []
        for change in reversed(changes):
            if change in done:
                continue
            put_back = await store.undo(change)
            out.append(put_back)
            if undone is not None:
                await undone(change, put_back)
        return out
