"""`brain chat`: a REPL over the same loop Slack uses; `brain log`: what the turns did.

The brain (SQLAlchemy, the tools, the LLM layer) is imported when a verb runs, so that
`brain --help` and the storage verbs do not pay for it.
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from typing import TYPE_CHECKING, Any, TextIO

from bot.commands.common import add_common, check_vault, fail, print_json, run, user_id

if TYPE_CHECKING:
    from bot.brain import Brain
    from bot.turns import TurnResult


CHANGES_HELP = (
    "A message that names a note and a change to it (\"mark the passport as done\", \"push "
    "the offsite to Friday\", \"the launch is blocked\", \"rename the passport to ...\", "
    "\"move the offsite to projects\") changes that one note (`brain undo` puts it back); "
    "when two notes match, or the change cannot be read, it asks and changes nothing. The "
    "same thought sent again within 10 minutes is not filed twice.")


def register(sub: Any) -> None:
    p = sub.add_parser("chat", help="talk to your second brain in the terminal",
                       description="Talk to your second brain. Piped stdin works: one message "
                                   "per line, replies on stdout.",
                       epilog=CHANGES_HELP)
    add_common(p)
    group = p.add_mutually_exclusive_group()
    group.add_argument("--conversation", metavar="ID", help="resume this conversation (id or key)")
    group.add_argument("--new", action="store_true", help="start a new conversation")
    p.add_argument("--verbose", "-v", action="store_true",
                   help="print each tool call with its arguments, status and milliseconds")
    p.add_argument("--model", metavar="ID",
                   help="talk to this LLM connection (a config id: openai, anthropic, offline "
                        "or one of BRAIN_LLM_CONFIGS) instead of BRAIN_LLM's")
    p.set_defaults(handler=lambda args: run(lambda: _chat(args)))

    lg = sub.add_parser("log", help="recent turns with their tool runs and token usage")
    add_common(lg)
    lg.add_argument("--conversation", metavar="ID", help="only this conversation (id or key)")
    lg.add_argument("--limit", type=int, default=10, help="how many turns (default 10)")
    lg.set_defaults(handler=lambda args: run(lambda: _log(args)))


def _print_turn(result: TurnResult, verbose: bool, out: TextIO) -> None:
    if verbose:
        for e in result.executions:
            args = json.dumps(e.arguments, ensure_ascii=False) if e.arguments is not None else "?"
            if len(args) > 200:
                args = args[:200] + "…"
            detail = "" if e.status == "ok" else f" ({(e.error or {}).get('message', '')})"
            print(f"  → {e.tool} {args} {e.status}{detail} {e.duration_ms:.0f} ms", file=out)
        print(f"  [{result.llm_calls} LLM call(s), {result.usage.input_tokens} in / "
              f"{result.usage.output_tokens} out tokens]", file=out)
    print(result.text or "(the brain sent no reply; `brain log` shows what the turn did)",
          file=out)
    out.flush()


async def _pick_conversation(brain: Brain, user: str,
                             args: argparse.Namespace) -> tuple[str, str | None]:
    """(the conversation's key, a first message typed at the menu or None)."""
    if args.conversation:
        return await _conversation_key(brain, args.conversation), None
    new_key = f"cli:{user}:{uuid.uuid4().hex[:8]}"
    if args.new or not sys.stdin.isatty():
        return new_key, None  # piped input is all messages: no menu to answer
    recent = await brain.conversations.recent(user, limit=5)
    if not recent:
        return new_key, None
    print("Recent conversations:")
    for i, conv in enumerate(recent, 1):
        print(f"  {i}. {conv.title or '(untitled)'}  [{conv.key}]")
    choice = input("Resume which? (number, Enter for a new one, or just type) ").strip()
    if choice.isdigit() and 1 <= int(choice) <= len(recent):
        return recent[int(choice) - 1].key, None
    # Anything else is the first message of a new conversation, never dropped.
    return new_key, (choice or None)


async def _conversation_key(brain: Brain, ref: str) -> str:
    key = await brain.conversations.key_for(ref)
    if key is None:
        raise SystemExit(fail(f"no conversation {ref!r}; `brain log` lists them"))
    return key


async def _chat(args: argparse.Namespace) -> int:
    import asyncio

    from bot.brain import Brain
    from bot.config import Settings
    from bot.llm.types import LLMError

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
    brain = await Brain.start(settings, vault_override=args.vault)
    try:
        user = user_id(settings, args)
        if brain.offline:
            print("No LLM key configured: using the offline rule-based provider "
                  "(set ANTHROPIC_API_KEY or OPENAI_API_KEY for a real model).", file=sys.stderr)
        key, first = await _pick_conversation(brain, user, args)
        interactive = sys.stdin.isatty()
        if interactive:
            print(f"Conversation {key}. Type a thought or a question; Ctrl-D to quit.")
        while True:
            line = first if first is not None else await asyncio.to_thread(_read_line,
                                                                           interactive)
            first = None
            if line is None:
                return 0
            text = line.strip()
            if not text:
                continue
            try:
                with brain.acting_as(user, "cli chat"):
                    result = await brain.turns.handle(conversation_key=key, user_id=user,
                                                      text=text, source="cli")
            except LLMError as exc:  # handle() already saves thoughts; this is a last resort
                print(f"brain: the language model failed: {exc.message}", file=sys.stderr)
                continue
            if args.json:
                print_json({"text": result.text, "llm_calls": result.llm_calls,
                            "outage": result.outage, "rescued": result.rescued,
                            "tools": [_execution_dict(e) for e in result.executions]})
            else:
                _print_turn(result, args.verbose, sys.stdout)
            if result.filed:  # after the reply: vectors for what it filed
                await brain.keeper.embed_new(brain.store_for(user))
    finally:
        await brain.close()


def _read_line(interactive: bool) -> str | None:
    try:
        return input("> ") if interactive else (sys.stdin.readline() or None)
    except EOFError:
        return None


def _execution_dict(e: Any) -> dict[str, Any]:
    return {"tool": e.tool, "call_id": e.call_id, "arguments": e.arguments, "status": e.status,
            "result": e.output.data if e.output else None, "error": e.error,
            "ms": round(e.duration_ms, 1)}


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
            print(f"  you:   {t.user_text}")
            for r in t.tool_runs:
                args_text = json.dumps(r.arguments, ensure_ascii=False)[:120]
                print(f"  tool:  {r.tool} {args_text} {r.status} {r.duration_ms:.0f} ms"
                      + (f" ({r.error})" if r.error else ""))
            print(f"  brain: {(t.reply_text or '').splitlines()[0] if t.reply_text else ''}")
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
