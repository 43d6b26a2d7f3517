"""`brain chat`: a REPL over the same loop Slack uses; `brain log`: what the turns did.

In a terminal the lines are read with a line editor (bot/commands/repl.py); the chat's own
words (`/help`, `/undo`, `/history`, `/new`, `/quit`: bot/commands/chat_words.py) are carried
out and never filed. The brain (SQLAlchemy, the tools, the LLM layer) is imported when a verb
runs, so that `brain --help` and the storage verbs do not pay for it.
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from bot.commands import chat_words
from bot.commands.common import (
    add_common,
    check_held,
    check_vault,
    fail,
    guarded,
    print_json,
    run,
    user_id,
)
from bot.commands.repl import Lines, history_file, no_interrupts

if TYPE_CHECKING:
    import asyncio

    from bot.brain import Brain
    from bot.config import Settings
    from bot.turn.reply import Reply
    from bot.turn.result import TurnResult

HISTORY_SHOWN = 10  # changes /history lists
LOG_TEXT = 200  # characters of a message or a reply `brain log` prints (--json: all)
CHAT_HELP = (
    "Talk to your second brain. In a terminal: arrow keys edit the line, Up and Down recall "
    "earlier lines (kept across sessions in <data dir>/chat-history/), Ctrl-C clears the "
    "line, Ctrl-D leaves; /help, /undo, /history, /new and /quit are the chat's own commands "
    "(\"undo\" or \"help\" alone too), never filed as notes. Piped stdin works: one message "
    "per line, replies on stdout. A message over 40,000 characters, or one that is not text, "
    "is refused and nothing is filed.")


CHANGES_HELP = (
    "A message that names a note and a change to it (\"mark the passport as done\", \"push "
    "the offsite to Friday\", \"the launch is blocked\", \"rename the passport to ...\", "
    "\"move the offsite to projects\") changes that one note (`brain undo` puts it back); "
    "when two notes match, or the change cannot be read, it asks and changes nothing. The "
    "same thought sent again within 10 minutes is not filed twice.")


def register(sub: Any) -> None:
    p = sub.add_parser("chat", help="talk to your second brain in the terminal",
                       description=CHAT_HELP, epilog=CHANGES_HELP)
    add_common(p)
    group = p.add_mutually_exclusive_group()
    group.add_argument("--conversation", metavar="ID", help="resume this conversation (id or key)")
    group.add_argument("--new", action="store_true", help="start a new conversation")
    p.add_argument("--verbose", "-v", action="store_true",
                   help="print each tool call with its arguments, status and milliseconds")
    p.add_argument("--model", metavar="ID",
                   help="talk to this LLM connection (a config id: openai, anthropic, offline "
                        "or one of BRAIN_LLM_CONFIGS) instead of BRAIN_LLM's")
    p.set_defaults(handler=lambda args: guarded(lambda: _chat(args)))

    lg = sub.add_parser("log", help="recent turns with their tool runs and token usage",
                        description="Recent turns with their tool runs and token usage; a "
                                    f"long message or reply is cut at {LOG_TEXT} characters "
                                    "(--json prints all of it).")
    add_common(lg)
    lg.add_argument("--conversation", metavar="ID", help="only this conversation (id or key)")
    lg.add_argument("--limit", type=int, default=10, help="how many turns (default 10)")
    lg.set_defaults(handler=lambda args: run(lambda: _log(args)))


def _print_reply(reply: Reply, verbose: bool, out: TextIO) -> None:
    """The reply as the terminal shows it (Slack renders the same `Reply` as Block Kit): its
    words, which already say what the cards would; with --verbose, each tool run first."""
    if verbose:
        for run in reply.runs:
            args = json.dumps(run.arguments, ensure_ascii=False) \
                if run.arguments is not None else "?"
            if len(args) > 200:
                args = args[:200] + "…"
            detail = "" if run.ok else f" ({run.error})"
            print(f"  → {run.tool} {args} {'ok' if run.ok else 'error'}{detail} "
                  f"{run.ms:.0f} ms", file=out)
        result = reply.result
        print(f"  [{result.llm_calls} LLM call(s), {result.usage.input_tokens} in / "
              f"{result.usage.output_tokens} out tokens]", file=out)
    print(reply.text or "(the brain sent no reply; `brain log` shows what the turn did)",
          file=out)
    out.flush()


def _pick_conversation(runner: asyncio.Runner, brain: Brain, user: str,
                       args: argparse.Namespace, lines: Lines) -> tuple[str, str | None]:
    """(the conversation's key, a first message typed at the menu or None). Ctrl-C at the
    menu raises KeyboardInterrupt (the chat ends with 130), Ctrl-D EOFError (it ends)."""
    if args.conversation:
        return runner.run(_conversation_key(brain, args.conversation)), None
    new_key = _new_key(user)
    if args.new or not lines.interactive:
        return new_key, None  # piped input is all messages: no menu to answer
    recent = runner.run(brain.conversations.recent(user, limit=5))
    if not recent:
        return new_key, None
    print("Recent conversations:")
    for i, conv in enumerate(recent, 1):
        print(f"  {i}. {conv.title or '(untitled)'}  [{conv.key}]")
    answer = lines.ask("Resume which? (number, Enter for a new one, or just type) ")
    if answer is None:
        raise EOFError
    choice = answer.strip()
    if choice.isdigit() and 1 <= int(choice) <= len(recent):
        return recent[int(choice) - 1].key, None
    # Anything else is the first message of a new conversation, never dropped.
    return new_key, (choice or None)


def _new_key(user: str) -> str:
    return f"cli:{user}:{uuid.uuid4().hex[:8]}"


async def _conversation_key(brain: Brain, ref: str) -> str:
    key = await brain.conversations.key_for(ref)
    if key is None:
        raise SystemExit(fail(f"no conversation {ref!r}; `brain log` lists them"))
    return key


def _chat(args: argparse.Namespace) -> int:
    """The chat on one event loop that runs between the lines: lines are read in the main
    thread, where readline edits them and Ctrl-C reaches at once."""
    from bot.config import Settings

    settings = Settings()
    check_vault(settings, args)
    if args.model:
        from bot.llm.configs import available_configs, load_configs

        known = load_configs(settings.llm_configs)
        if args.model not in known:
            return fail(f"--model {args.model}: no such connection; known: "
                        f"{', '.join(sorted(known))}")
        if args.model not in available_configs(settings):
            return fail(f"--model {args.model}: its key ({known[args.model].api_key_env}) is "
                        "not set")
        settings = settings.model_copy(update={"llm": args.model})
    import asyncio

    from bot.brain import Brain

    runner = asyncio.Runner()
    brain: Brain | None = None
    try:
        brain = runner.run(Brain.start(settings, vault_override=args.vault))
        runner.run(check_held(brain, settings, args, user_id(settings, args)))
        return _session(runner, brain, settings, args)
    except EOFError:  # Ctrl-D at the menu: nothing chosen, nothing to do
        return 0
    except KeyboardInterrupt:  # Ctrl-C at the menu (or in a pipe): 130, on a fresh line
        if sys.stdin.isatty():
            print()
        raise
    finally:
        with no_interrupts():  # a second Ctrl-C must not cut the clean-up short
            if brain is not None:
                runner.run(brain.close())
            runner.close()


def _session(runner: asyncio.Runner, brain: Brain, settings: Settings,
             args: argparse.Namespace) -> int:
    user = user_id(settings, args)
    interactive = sys.stdin.isatty()
    history = history_file(settings.data_dir, user) if interactive else None
    lines = Lines(interactive, history)
    if brain.offline:
        print("No LLM key configured: using the offline rule-based provider "
              "(set ANTHROPIC_API_KEY or OPENAI_API_KEY for a real model).", file=sys.stderr)
    key, first = _pick_conversation(runner, brain, user, args, lines)
    if interactive:
        print(f"Conversation {key}. Type a thought or a question; /help lists the commands; "
              "Ctrl-D leaves.")
    chat = _Chat(runner, brain, args, user, key, history, interactive)
    while True:
        line: str | None = first
        if first is not None:
            first = None
        else:
            try:
                line = lines.read()
            except KeyboardInterrupt:
                if not interactive:
                    raise
                print()  # Ctrl-C: the line is dropped, the chat goes on
                continue
        if line is None or chat.said(line.strip()) == "quit":
            return 0


class _Chat:
    """One chat session: each line read is one of the chat's own words or a message."""

    def __init__(self, runner: asyncio.Runner, brain: Brain, args: argparse.Namespace,
                 user: str, key: str, history: Path | None, interactive: bool) -> None:
        self.runner, self.brain, self.args = runner, brain, args
        self.user, self.key, self.history, self.interactive = user, key, history, interactive

    def said(self, text: str) -> str | None:
        """Answer one line; "quit" when the chat ends."""
        if not text:
            return None
        word = chat_words.read(text)
        if word is None:
            self._message(text)
            return None
        if word.name == "quit":
            return "quit"
        if word.name == "new":
            self.key = _new_key(self.user)
        _say(self.args, word.name, self.runner.run(
            _word(self.brain, self.user, word, self.key, self.history)))
        return word.name

    def _message(self, text: str) -> None:
        from bot.llm.types import LLMError

        try:
            reply = self.runner.run(_turn(self.brain, self.key, self.user, text))
        except KeyboardInterrupt:
            if not self.interactive:
                raise
            print("(interrupted: what the turn did so far is kept; /history shows it, "
                  "/undo puts the last change back)")
            return
        except LLMError as exc:  # the turn already keeps thoughts; this is a last resort
            print(f"brain: the language model failed: {exc.message}", file=sys.stderr)
            return
        if self.args.json:
            result = reply.result
            print_json({"text": result.text, "llm_calls": result.llm_calls,
                        "outage": result.outage, "rescued": result.rescued,
                        "tools": [_execution_dict(e) for e in result.executions]})
        else:
            _print_reply(reply, self.args.verbose, sys.stdout)


async def _turn(brain: Brain, key: str, user: str, text: str) -> Reply:
    async def embed(result: TurnResult) -> None:
        if result.filed:  # after the turn: vectors for what it filed (no indexer runs here)
            await brain.stores.embed_new(brain.store_for(user))

    with brain.acting_as(user, "cli chat"):
        return await brain.replies.reply(conversation_key=key, user_id=user, text=text,
                                         source="cli", after=embed)


async def _word(brain: Brain, user: str, word: chat_words.Word, key: str,
                history: Path | None) -> str:
    """What one of the chat's own words does, as the text to print."""
    from bot.commands.history_cmds import change_line
    from storage.errors import StorageError

    if word.name == "help":
        return chat_words.help_text(str(history) if history else None)
    if word.name == "new":
        return f"New conversation {key}."
    if word.name == "unsure":
        return chat_words.unsure_text(word)
    if word.name not in ("undo", "history"):
        return chat_words.unknown_text(word)
    store = brain.store_for(user)
    try:
        with brain.acting_as(user, "cli chat"):
            if word.name == "history":
                changes = await store.changes(None, limit=HISTORY_SHOWN)
                return "\n".join(change_line(c) for c in changes) or "No changes recorded yet."
            change = await store.undo(None)
    except StorageError as exc:
        return f"Nothing undone: {exc.message}" if word.name == "undo" else exc.message
    return f"Undone: {change.summary} ({', '.join(change.paths)})."


def _say(args: argparse.Namespace, name: str, text: str) -> None:
    if args.json:
        print_json({"command": name, "text": text})
    else:
        print(text)
    sys.stdout.flush()


def _execution_dict(e: Any) -> dict[str, Any]:
    return {"tool": e.tool, "call_id": e.call_id, "arguments": e.arguments, "status": e.status,
            "result": e.output.data if e.output else None, "error": e.error,
            "ms": round(e.duration_ms, 1)}


def _short(text: str | None) -> str:
    """A message or reply on one line of `brain log`, cut at LOG_TEXT characters."""
    flat = " ".join((text or "").split())
    if len(flat) <= LOG_TEXT:
        return flat
    return f"{flat[:LOG_TEXT - 1]}\u2026 ({len(flat):,} characters)"


async def _log(args: argparse.Namespace) -> int:
    if args.limit < 1:
        return fail("--limit must be at least 1")
    from bot.brain import Brain
    from bot.config import Settings

    settings = Settings()
    brain = await Brain.start(settings, vault_override=args.vault)
    try:
        key = await _conversation_key(brain, args.conversation) if args.conversation else None
        turns = await brain.conversations.turn_log(key, limit=args.limit)
        if args.json:
            print_json([_turn_dict(t) for t in turns])
            return 0
        if not turns:
            print("No turns yet. Try `brain chat`.")
        for t in turns:
            print(f"#{t.id} conv {t.conversation_id} {t.created_at:%Y-%m-%d %H:%M} "
                  f"[{t.status}] {t.llm_calls} LLM call(s), "
                  f"{t.input_tokens} in / {t.output_tokens} out tokens")
            print(f"  you:   {_short(t.user_text)}")
            for r in t.tool_runs:
                args_text = json.dumps(r.arguments, ensure_ascii=False)[:120]
                print(f"  tool:  {r.tool} {args_text} {r.status} {r.duration_ms:.0f} ms"
                      + (f" ({_short(r.error)})" if r.error else ""))
            reply = (t.reply_text or "").splitlines()
            print(f"  brain: {_short(reply[0]) if reply else ''}")
            if t.feedback:
                print(f"  feedback: {'👍 good' if t.feedback == 'good' else '👎 bad'}")
        return 0
    finally:
        await brain.close()


def _turn_dict(t: Any) -> dict[str, Any]:
    return {"id": t.id, "conversation_id": t.conversation_id, "user_text": t.user_text,
            "reply_text": t.reply_text, "status": t.status, "llm_calls": t.llm_calls,
            "input_tokens": t.input_tokens, "output_tokens": t.output_tokens,
            "created_at": t.created_at.isoformat(),  # ISO 8601, with its UTC offset
            "feedback": t.feedback,  # good | bad | None: the answer's thumbs in Slack
            "tool_runs": [{"tool": r.tool, "arguments": r.arguments, "status": r.status,
                           "error": r.error, "ms": r.duration_ms} for r in t.tool_runs]}
