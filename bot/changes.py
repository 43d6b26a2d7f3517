"""What a button, `fix:` or `brain move` changes in a person's vault outside a turn: a move
(the note is re-filed and its receipt follows) and an Undo (the note goes to the vault's
restorable trash, never deleted). A change pressed in a thread joins its conversation.
"""

from __future__ import annotations

from bot.conversations import Conversations
from bot.core import Core
from storage.types import MoveResult
from tools.move_entry import move_note


class Changes:
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
