"""The words `brain chat` itself understands: `/help`, `/undo`, `/history`, `/new`, `/quit`,
and the same few words typed alone ("undo", "help"). A lone word that may mean a command
("clear", "delete") is asked about. None of them is ever filed as a note."""

from __future__ import annotations

import re
from dataclasses import dataclass

COMMANDS = {
    "help": "this help",
    "undo": "undo the app's last change to your notes (as `brain undo`)",
    "history": "the last changes to your notes (as `brain history`)",
    "new": "start a new conversation",
    "quit": "leave (so do Ctrl-D, `quit` and `exit`)",
}
ALIASES = {"?": "help", "h": "help", "exit": "quit", "q": "quit", "bye": "quit"}
BARE = {"help", "undo", "history", "quit", "exit", "?"}  # alone on a line: that command
UNSURE = {"clear", "delete", "remove", "reset", "cancel", "stop", "redo", "new", "back",
          "menu", "commands", "undelete", "restart", "erase"}
_SLASHED = re.compile(r"/([a-z?]+)")


@dataclass(frozen=True)
class Word:
    """A line that is one of the chat's own words: `name` is a command of COMMANDS,
    "unknown" (a `/word` that is none) or "unsure" (a lone word that may be one)."""

    name: str
    said: str


def read(text: str) -> Word | None:
    """The chat word `text` is, or None for a message (a thought or a question)."""
    words = text.split()
    if not words:
        return None
    first = words[0].lower()
    slashed = _SLASHED.fullmatch(first)
    if slashed:  # "/undo" (a path such as "/home/me/x" is a message)
        name = ALIASES.get(slashed.group(1), slashed.group(1))
        return Word(name if name in COMMANDS else "unknown", words[0])
    if len(words) > 1:
        return None
    bare = first.rstrip("!.")
    if bare in BARE:
        return Word(ALIASES.get(bare, bare), words[0])
    if bare in UNSURE:
        return Word("unsure", words[0])
    return None


def help_text(history: str | None) -> str:
    width = max(len(n) for n in COMMANDS) + 1
    lines = ["Type a thought to file it, or a question to ask your notes; `fix: projects` "
             "re-files the last note.", "Commands:"]
    lines += [f"  /{name.ljust(width)} {what}" for name, what in COMMANDS.items()]
    if history is not None:
        lines.append("Keys: arrows edit the line, Up and Down recall earlier lines (kept in "
                     f"{history}), Ctrl-C clears the line, Ctrl-D on an empty line leaves.")
    return "\n".join(lines)


def unsure_text(word: Word) -> str:
    return (f"'{word.said}' alone is not filed as a note. Did you mean a command? "
            f"{', '.join('/' + n for n in COMMANDS)} (/help says what each does). To keep "
            "it as a note, write a few more words.")


def unknown_text(word: Word) -> str:
    return f"{word.said}: no such command; /help lists them. Nothing was filed."
