"""Rows of the core tables: conversations, turns and messages, tool runs, receipts, digest
subscriptions. One module per table group; this facade re-exports them all, so
callers write `from storage import repositories` and `repositories.add_receipt(...)`.

Every function takes an explicit `AsyncSession`; the caller owns the transaction and commits.
Rows come back as frozen dataclasses, never ORM objects. Datetimes in and out are
timezone-aware (UTC out); naive datetimes are refused with `InvalidValue`. The SQL is portable
(SQLite and PostgreSQL); upserts use each dialect's `INSERT ... ON CONFLICT`.
"""

from storage.repositories.common import aware as _aware
from storage.repositories.common import dialect_insert as _dialect_insert
from storage.repositories.common import not_empty as _not_empty
from storage.repositories.common import one_of as _one_of
from storage.repositories.common import rowcount as _rowcount
from storage.repositories.conversations import (
    MESSAGE_ROLES,
    TITLE_CHARS,
    TOOL_RUN_STATUSES,
    ConversationRow,
    MessageRow,
    ToolRunRow,
    TurnRow,
    add_tool_run,
    finish_turn,
    get_conversation,
    get_conversation_by_id,
    get_or_create_conversation,
    recent_conversations,
    recent_turn_messages,
    save_messages,
    set_conversation_context,
    set_feedback,
    start_turn,
    thread_known,
    title_conversation,
    touch_conversation,
    turns_for_log,
)
from storage.repositories.receipts import (
    RECEIPT_STATUSES,
    ReceiptRow,
    add_receipt,
    drop_receipts,
    mark_receipt,
    receipt_for_entry,
    receipts_for_conversation,
    receipts_since,
    set_receipt_message,
)
from storage.repositories.subscriptions import (
    DIGEST_KINDS,
    SubscriptionRow,
    delete_subscriptions,
    due_subscriptions,
    list_subscriptions,
    mark_sent,
    upsert_subscription,
)

__all__ = [
    "RECEIPT_STATUSES", "DIGEST_KINDS", "MESSAGE_ROLES", "TITLE_CHARS", "TOOL_RUN_STATUSES",
    "ReceiptRow", "ConversationRow", "MessageRow", "SubscriptionRow", "ToolRunRow", "TurnRow",
    "_aware", "_dialect_insert", "_not_empty", "_one_of", "_rowcount",
    "add_receipt", "add_tool_run", "receipt_for_entry", "receipts_for_conversation",
    "receipts_since", "delete_subscriptions", "drop_receipts", "due_subscriptions", "finish_turn", "get_conversation",
    "get_conversation_by_id", "get_or_create_conversation", "list_subscriptions", "mark_receipt",
    "mark_sent", "recent_conversations", "recent_turn_messages",
    "save_messages", "set_receipt_message", "set_conversation_context", "set_feedback",
    "start_turn", "thread_known", "title_conversation", "touch_conversation",
    "turns_for_log", "upsert_subscription",
]
