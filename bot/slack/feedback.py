"""Feedback on an answer (Slack's agent messaging: a `context_actions` block with
`feedback_buttons`): the asker's thumbs up or down is recorded with the turn (`brain log`
shows it); a thumbs down offers the ways to put things right. Someone else's press on a
shared thread's answer records nothing."""

from __future__ import annotations

from slack_sdk.models.blocks import (
    ContextActionsBlock,
    FeedbackButtonObject,
    FeedbackButtonsElement,
)

FEEDBACK_ACTION = "turn_feedback"
VALUES = ("good", "bad")
SORRY = ("Thanks for saying so. To put it right, reply in this thread: `fix: projects` (or "
         "another category) re-files the note, a correction (\"actually it's due on the "
         "20th\") updates it, and the right answer, told as a thought, is kept as a note.")


def feedback_block(turn_id: int) -> ContextActionsBlock:
    return ContextActionsBlock(block_id=f"feedback-{turn_id}", elements=[FeedbackButtonsElement(
        action_id=FEEDBACK_ACTION,
        positive_button=FeedbackButtonObject(text="Good answer", value=f"good:{turn_id}",
                                             accessibility_label="This answer was good"),
        negative_button=FeedbackButtonObject(text="Bad answer", value=f"bad:{turn_id}",
                                             accessibility_label="This answer was wrong"))])


def parse(value: str) -> tuple[str, int] | None:
    """("good" | "bad", turn id) from a press's value; None for anything else."""
    verdict, _, turn = value.partition(":")
    if verdict not in VALUES or not turn.isdigit():
        return None
    return verdict, int(turn)
