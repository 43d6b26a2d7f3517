"""What Slack accepts in a message: the documented limits the SDK does not check, on top of
the SDK's own validators (`to_dict()` validates the whole tree). Every outgoing message and the
App Home view go through `validate_message`; nothing invalid is sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from slack_sdk.errors import SlackObjectFormationError
from slack_sdk.models.blocks import Block

MAX_BLOCKS = 50
MAX_SECTION_TEXT = 3000
MAX_FIELD_TEXT = 2000
MAX_CONTEXT_TEXT = 3000
MAX_MESSAGE_TEXT = 40_000
MAX_MARKDOWN = 12_000  # all markdown blocks of one message together
MAX_ROWS = 20
BODY_PREVIEW = 600


class MessageInvalid(ValueError):
    """A message that Slack would reject or truncate; nothing is sent."""


@dataclass(frozen=True)
class SlackMessage:
    text: str  # top-level fallback text (notifications, screen readers)
    blocks: list[dict[str, Any]]


def validate_message(blocks: Sequence[Block | dict[str, Any]], text: str, *,
                     max_blocks: int = MAX_BLOCKS) -> list[dict[str, Any]]:
    """Return the blocks as dicts if Slack would accept them, else raise MessageInvalid."""
    if not text or not text.strip():
        raise MessageInvalid("the fallback text is empty")
    if len(text) > MAX_MESSAGE_TEXT:
        raise MessageInvalid(f"the fallback text has {len(text)} characters (max {MAX_MESSAGE_TEXT})")
    if len(blocks) > max_blocks:
        raise MessageInvalid(f"{len(blocks)} blocks (max {max_blocks})")
    out: list[dict[str, Any]] = []
    block_ids: set[str] = set()
    for i, raw in enumerate(blocks):
        block = Block.parse(raw) if isinstance(raw, dict) else raw
        if block is None:
            raise MessageInvalid(f"block {i}: unknown block type")
        try:
            as_dict = block.to_dict()
        except SlackObjectFormationError as exc:
            raise MessageInvalid(f"block {i}: {exc}") from exc
        if isinstance(raw, dict) and as_dict != raw:
            raise MessageInvalid(f"block {i}: keys the SDK does not know were dropped")
        _check_block(i, as_dict, block_ids)
        out.append(as_dict)
    return out


def _check_block(i: int, block: dict[str, Any], block_ids: set[str]) -> None:
    _check_block_id(i, block, block_ids)
    kind = block.get("type")
    if kind == "section":
        _check_section(i, block)
    elif kind == "context":
        _check_context(i, block)
    elif kind == "actions":
        _check_actions(i, block)


def _check_block_id(i: int, block: dict[str, Any], block_ids: set[str]) -> None:
    """A block_id is unique in its message; `block_ids` holds those of the blocks before."""
    block_id = block.get("block_id")
    if block_id is not None:
        if block_id in block_ids:
            raise MessageInvalid(f"block {i}: block_id {block_id!r} is used twice")
        block_ids.add(block_id)


def _check_section(i: int, block: dict[str, Any]) -> None:
    text = block.get("text")
    if text is not None and not str(text.get("text", "")).strip():
        raise MessageInvalid(f"block {i}: section text is empty")
    for j, field in enumerate(block.get("fields") or []):
        if len(field.get("text", "")) > MAX_FIELD_TEXT:
            raise MessageInvalid(f"block {i}: field {j} exceeds {MAX_FIELD_TEXT} characters")
        if not str(field.get("text", "")).strip():
            raise MessageInvalid(f"block {i}: field {j} is empty")


def _check_context(i: int, block: dict[str, Any]) -> None:
    for j, element in enumerate(block.get("elements") or []):
        if len(str(element.get("text", ""))) > MAX_CONTEXT_TEXT:
            raise MessageInvalid(f"block {i}: context element {j} is too long")


def _check_actions(i: int, block: dict[str, Any]) -> None:
    action_ids = [e.get("action_id") for e in block.get("elements") or []]
    present = [a for a in action_ids if a]
    if len(present) != len(set(present)):
        raise MessageInvalid(f"block {i}: action_id used twice in one block")


def message(blocks: Sequence[Block | dict[str, Any]], text: str) -> SlackMessage:
    return SlackMessage(text=text, blocks=validate_message(blocks, text))
