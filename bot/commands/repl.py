"""`brain chat`'s lines: in a terminal, read with the standard library's `readline` (arrow keys
edit the line, Up and Down recall earlier lines, kept across sessions in a private file of
the data directory; Ctrl-C clears the line, Ctrl-D on an empty line leaves); from a pipe, one
message per line, as bytes decoded as UTF-8 (an undecodable byte becomes U+FFFD, so binary
input is seen as such and refused, never a traceback).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

PROMPT = "> "
HISTORY_LINES = 1000  # lines kept in the history file


def history_file(data_dir: Path, user: str) -> Path:
    """Where a person's chat lines are kept between sessions."""
    return Path(data_dir) / "chat-history" / f"{user}.txt"


class Lines:
    """Where `brain chat`'s messages come from: the terminal (with a line editor) or a pipe."""

    def __init__(self, interactive: bool, history: Path | None = None) -> None:
        self.interactive = interactive
        self.history = history
        self._readline: Any = _line_editor(history) if interactive else None

    def read(self) -> str | None:
        """The next line; None at the end (Ctrl-D, the end of the pipe). In a terminal,
        Ctrl-C raises KeyboardInterrupt with the line already dropped."""
        if not self.interactive:
            return _piped_line()
        try:
            line = input(PROMPT)
        except EOFError:
            print()  # leave the terminal on a fresh line
            return None
        self._keep()
        return line

    def ask(self, prompt: str) -> str | None:
        """An answer to a question (the resume menu): a number or Enter is not kept in the
        history, anything else is (it is the first message)."""
        try:
            answer = input(prompt)
        except EOFError:
            print()
            return None
        rl = self._readline
        if rl is not None and (not answer.strip() or answer.strip().isdigit()):
            n = rl.get_current_history_length()
            if n and rl.get_history_item(n) == answer:
                rl.remove_history_item(n - 1)
        elif answer.strip():
            self._keep()
        return answer

    def _keep(self) -> None:
        """The line just read, appended to the history file (so a crash loses none)."""
        rl = self._readline
        append = getattr(rl, "append_history_file", None)  # (missing in some builds)
        if rl is None or append is None or self.history is None \
                or not rl.get_current_history_length():
            return
        with contextlib.suppress(OSError):
            append(1, str(self.history))


def _line_editor(history: Path | None) -> Any:
    """The readline module, set up with the history file read; None where it is missing
    (Windows): `input()` then reads plain lines."""
    try:
        import readline
    except ImportError:
        return None
    readline.set_history_length(HISTORY_LINES)
    if history is not None:
        try:
            history.parent.mkdir(parents=True, exist_ok=True)
            os.close(os.open(history, os.O_CREAT | os.O_WRONLY, 0o600))  # private: it is text
            readline.read_history_file(str(history))
            readline.write_history_file(str(history))  # at most HISTORY_LINES lines
        except OSError:
            pass  # an unreadable history file: the session goes on without it
    return readline


def _piped_line() -> str | None:
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is None:  # a text stream without bytes under it (tests, embedding)
        return sys.stdin.readline() or None
    raw = buffer.readline()
    return raw.decode("utf-8", "replace") if raw else None


@contextlib.contextmanager
def no_interrupts() -> Iterator[None]:
    """Ctrl-C ignored inside (closing the database): a second Ctrl-C after the first must not
    cut the clean-up short and print a traceback from half-closed connections."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)
