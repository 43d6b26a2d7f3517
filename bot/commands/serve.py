"""`brain serve` (run the Slack bot) and `brain doctor` (say what is missing and how to fix it)."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.commands.common import port_number

if TYPE_CHECKING:
    from bot.config import Settings


def register(sub: Any) -> None:  # argparse subparsers
    serve = sub.add_parser(
        "serve", help="run the Slack bot",
        description="Run the Slack bot: Socket Mode when SLACK_APP_TOKEN is set, else HTTP "
                    "(POST /slack/events, GET /health).")
    serve.add_argument("--http", action="store_true",
                       help="serve Slack over HTTP even when SLACK_APP_TOKEN is set")
    serve.add_argument("--host", default=os.environ.get("BRAIN_HOST", "0.0.0.0"),
                       help="address to listen on (default 0.0.0.0)")
    serve.add_argument("--port", type=port_number, default=os.environ.get("PORT", "3000"),
                       help="HTTP port; in Socket Mode only /health is served there "
                            "(default 3000)")
    serve.add_argument("--log-level", type=_log_level,
                       default=os.environ.get("BRAIN_LOG_LEVEL", "INFO"),
                       help="DEBUG, INFO, WARNING or ERROR (default INFO, or BRAIN_LOG_LEVEL)")
    serve.add_argument("--workers", type=_processes, default=None, metavar="N",
                       help="processes that run the work, this one included; they share "
                            "the journal and the port (default: BRAIN_PROCESSES, else the "
                            "number of cores)")
    # A helper process of `--workers N` (started by brain serve itself, never by hand).
    serve.add_argument("--work-only", action="store_true", help=argparse.SUPPRESS)
    serve.add_argument("--listen-fd", type=int, default=None, help=argparse.SUPPRESS)
    serve.set_defaults(handler=run_serve)

    doctor = sub.add_parser("doctor", help="check tokens, LLM, data directory and search model",
                            description="Check the Slack tokens (auth.test), the LLM config "
                                        "and what its server accepts (one tool call and one "
                                        "structured answer asked), the search model, the data "
                                        "directory and the notes; exit 1 when something is "
                                        "wrong. Without any SLACK_* setting (a CLI/MCP-only "
                                        "set-up) Slack is not checked.")
    doctor.add_argument("--offline", action="store_true",
                        help="skip the network calls (Slack's auth.test, the LLM probe); "
                             "the closing line names what was not checked")
    doctor.add_argument("--local", action="store_true",
                        help="a CLI/MCP-only set-up: do not check Slack at all")
    doctor.set_defaults(handler=run_doctor)


def _log_level(text: str) -> str:
    from bot.logs import LEVELS

    if text.upper() not in LEVELS:
        raise argparse.ArgumentTypeError(f"unknown log level {text!r} (one of "
                                         f"{', '.join(LEVELS)})")
    return text.upper()


def _processes(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 64:
        raise argparse.ArgumentTypeError(f"expected a whole number from 1 to 64, got {text!r}")
    return value


def run_serve(args: argparse.Namespace) -> int:
    import asyncio

    from bot.config import Settings
    from bot.logs import logging_to_stderr
    from bot.slack.serve import ServeError, serve

    try:
        settings = Settings()
        with logging_to_stderr(args.log_level, log_content=settings.log_content):
            asyncio.run(serve(settings, http=args.http, host=args.host, port=args.port,
                              workers=args.workers, work_only=args.work_only,
                              listen_fd=args.listen_fd,
                              log_level=args.log_level))
    except ServeError as exc:
        print(f"brain: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # port in use, data dir not writable...
        print(f"brain: cannot start: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


# -- doctor ------------------------------------------------------------------------------------


def run_doctor(args: argparse.Namespace) -> int:
    import asyncio

    from bot.config import Settings
    from bot.slack.doctor import Check

    checks: list[Check] = asyncio.run(_doctor(Settings(), offline=args.offline,
                                              local=args.local))
    width = max(len(c.name) for c in checks)
    for c in checks:
        mark = "FAIL" if not c.ok else "SKIP" if c.skipped else "WARN" if c.warn else "ok  "
        print(f"{mark}  {c.name.ljust(width)}  {c.detail}")
        if (not c.ok or c.warn) and c.fix:
            print(f"      {' ' * width}  fix: {c.fix}")
    print("\n" + verdict(checks))
    return 1 if any(not c.ok for c in checks) else 0


def verdict(checks: list[Any]) -> str:
    """The closing line: "All good." only when every check ran and none warned."""
    bad = [c for c in checks if not c.ok]
    warned = [c for c in checks if c.ok and c.warn]
    skipped = [c.skipped for c in checks if c.ok and c.skipped]
    lines = [f"{len(bad)} problem(s) found." if bad else
             f"No problem found, {len(warned)} warning(s) above (WARN)." if warned else
             "No problem found in what was checked." if skipped else "All good."]
    if skipped:
        lines.append(f"Not checked (--offline): {', '.join(skipped)}; run `brain doctor` "
                     "without --offline to check them.")
    return "\n".join(lines)


def _slack_configured(settings: Settings) -> bool:
    return any((settings.slack_bot_token, settings.slack_app_token,
                settings.slack_signing_secret, settings.oauth))


async def _doctor(settings: Settings, *, offline: bool, local: bool = False) -> list[Any]:
    from bot.slack.doctor import Check, auth_check, token_checks

    if local or not _slack_configured(settings):
        why = "--local" if local else "no SLACK_* setting"
        checks = [Check("Slack", True, f"not checked ({why}): the CLI and `brain mcp` need no "
                        "Slack app; `brain serve` does (SLACK_BOT_TOKEN and SLACK_APP_TOKEN or "
                        "SLACK_SIGNING_SECRET)")]
    else:
        checks = token_checks(settings)
        if settings.slack_bot_token and offline:
            checks.append(Check("Slack auth.test", True, "not checked (--offline): whether "
                                "Slack accepts the bot token",
                                skipped="the Slack token (auth.test)"))
        elif settings.slack_bot_token:
            checks.append(await auth_check(settings))
    checks.append(_llm_check(settings))
    if checks[-1].ok and offline:
        skipped = _llm_not_probed(settings)
        if skipped is not None:
            checks.append(skipped)
    elif checks[-1].ok:
        checks.append(await _llm_probe(settings))
    checks.append(_meaning_check(settings))
    checks.append(_readers_check(settings))
    checks.extend(await _data_checks(settings))
    checks.append(_history_check(settings))
    return checks


def _meaning_check(settings: Settings) -> Any:
    """Can search by meaning run here? Without the model search still works, by words and
    names only, so this says what is missing and how to add it."""
    from bot.slack.doctor import Check
    from bot.stores import model_check

    ok, detail, fix = model_check(settings)
    return Check("Search by meaning", ok, detail, fix)


def _readers_check(settings: Settings) -> Any:
    """What shared files can be read here (the media extra is optional: WARN, not FAIL)."""
    from bot.slack.doctor import Check
    from tools.readers.read import media_readers

    found = media_readers()
    kinds = "PDF, Word, HTML, text, links" + "".join(
        f"; {kind}: {'yes' if ok else 'no'}" for kind, ok in found.items())
    if settings.speech_model is not None and not settings.speech_model.is_dir():
        return Check("Readers", False, f"{kinds}; BRAIN_SPEECH_MODEL {settings.speech_model} "
                     "is not a folder", "point BRAIN_SPEECH_MODEL at a CTranslate2 Whisper "
                     "folder, or unset it for the shipped model")
    if all(found.values()):
        return Check("Readers", True, kinds)
    return Check("Readers", True, kinds + " (a capture keeps such a file and says it could "
                 "not read it)", "pip install -e '.[media]'", warn=True)


def _llm_check(settings: Settings) -> Any:
    from bot.llm.configs import select_config
    from bot.slack.doctor import Check

    try:
        config = select_config(settings)
    except ValueError as exc:
        return Check("LLM", False, str(exc), "set BRAIN_LLM to auto, offline or a known config id")
    where = f"config {config.id!r} ({config.provider}, model {config.model})"
    if config.provider == "offline":
        return Check("LLM", True, f"{where}: rule-based, no key needed (set ANTHROPIC_API_KEY "
                     "or OPENAI_API_KEY for a real model)")
    env = config.api_key_env
    if env is None and config.base_url:
        return Check("LLM", True, f"{where} at {config.base_url}: no key needed")
    key_field = {"OPENAI_API_KEY": settings.openai_api_key,
                 "ANTHROPIC_API_KEY": settings.anthropic_api_key}
    present = bool(env and (key_field.get(env) or os.environ.get(env)))
    if not present:
        return Check("LLM", False, f"{where}: {env or 'its API key'} is not set",
                     f"set {env} (or BRAIN_LLM=offline to run without a model)")
    return Check("LLM", True, f"{where}, {env} is set")


def _llm_not_probed(settings: Settings) -> Any:
    """--offline with a model configured: its key and server are not known to work."""
    from bot.llm.configs import select_config
    from bot.slack.doctor import Check

    config = select_config(settings)
    if config.provider == "offline":
        return None
    what = f"the LLM key ({config.api_key_env})" if config.api_key_env else "the LLM server"
    return Check("LLM probe", True, "not checked (--offline): whether the server accepts "
                 "the key and the model", skipped=what)


async def _llm_probe(settings: Settings) -> Any:
    """One tool call and one structured answer asked of the configured server: what works."""
    from bot.llm.configs import make_provider, select_config
    from bot.llm.probe import probe
    from bot.slack.doctor import Check

    config = select_config(settings)
    if config.provider == "offline":
        return Check("LLM probe", True, "skipped: the offline rules need no server")
    provider = make_provider(config, settings)
    try:
        found = await probe(provider)
    finally:
        close = getattr(provider, "aclose", None)
        if close is not None:
            await close()
    fix = None if found.ok else ("check that the server is running and its base_url, key "
                                 "and model are right (or run with --offline)")
    return Check("LLM probe", found.ok, found.describe(), fix)


async def _data_checks(settings: Settings) -> list[Any]:
    from bot.brain import Brain
    from bot.slack.doctor import Check

    checks = []
    data_dir = settings.data_dir.resolve()
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=data_dir, prefix=".doctor-"):
            pass
        checks.append(_data_dir_check(settings, data_dir))
    except OSError as exc:
        checks.append(Check("Data directory", False, f"{data_dir}: {exc.strerror or exc}",
                            "set BRAIN_DATA_DIR to a writable folder (in Docker: mount /data)"))
        return checks
    checks.append(_temp_check(settings))
    checks.append(_notes_check(settings))
    try:
        brain = await Brain.start(settings, with_llm=False)  # opens and migrates the database
    except Exception as exc:  # any driver or migration error is a finding, not a crash
        checks.append(Check("Database", False, f"{_safe_url(settings.db_url())}: {exc}",
                            "check DATABASE_URL, or remove it to use SQLite in BRAIN_DATA_DIR"))
        return checks
    try:
        checks.append(Check("Database", True, f"{_safe_url(settings.db_url())} opens"))
        checks.extend(await _writes_checks(brain))
    finally:
        await brain.close()
    return checks


async def _writes_checks(brain: Any) -> list[Any]:
    """Can the vault and the database be written now (what `/health` also reports)?"""
    from bot.slack.doctor import Check

    found = await brain.storage_health.problems(fresh=True)
    root = brain.storage_health.vault_root
    return [Check("Vault writes", "vault" not in found, found.get("vault", f"{root} takes new "
                  "files"), "make the vault folder writable by the user the bot runs as, or "
                  "free disk space; messages wait meanwhile (nothing is lost)"),
            Check("Database writes", "database" not in found,
                  found.get("database", "takes writes"), "make the database writable (file "
                  "permissions, disk space; PostgreSQL: a primary, not a standby)")]


def _data_dir_check(settings: Settings, data_dir: Path) -> Any:
    """Where data lives, and whether it is the old ./brain-data of this folder."""
    from bot.config import legacy_notice
    from bot.slack.doctor import Check

    legacy = legacy_notice(settings)
    if legacy is not None:
        return Check("Data directory", True, f"{data_dir} is writable; {legacy}",
                     "move it as said, or set BRAIN_DATA_DIR", warn=True)
    chosen = "BRAIN_DATA_DIR" if "data_dir" in settings.model_fields_set else "the default"
    return Check("Data directory", True, f"{data_dir} is writable ({chosen})")


def _temp_check(settings: Settings) -> Any:
    """Temp files a killed writer left in the vaults: removed (they are ours, never notes)."""
    from bot.brain import clean_vault_temp
    from bot.slack.doctor import Check

    root = settings.vault_root
    if not root.is_dir():
        return Check("Vault temp files", True, f"{root} does not exist yet")
    removed = clean_vault_temp(root)
    detail = (f"removed {len(removed)} left by an interrupted write" if removed
              else "none left by interrupted writes")
    return Check("Vault temp files", True, detail)


def _notes_check(settings: Settings) -> Any:
    """Notes whose frontmatter is not read (broken YAML, YAML aliases, too big or deep, not
    UTF-8): they are indexed as text; named here so they can be fixed by hand."""
    from bot.brain import broken_notes
    from bot.slack.doctor import Check

    root = settings.vault_root
    if not root.is_dir():
        return Check("Notes", True, f"{root} does not exist yet")
    broken = broken_notes(root)
    if not broken:
        return Check("Notes", True, "every note's frontmatter reads")
    shown = "; ".join(f"{rel}: {why}" for rel, why in broken[:5])
    more = f" (and {len(broken) - 5} more)" if len(broken) > 5 else ""
    return Check("Notes", True, f"{len(broken)} note(s) with frontmatter that is not read "
                 f"(indexed as text): {shown}{more}", "fix the YAML between the --- lines by "
                 "hand (no *aliases, plain key: value lines; a long text belongs in the body, "
                 "below the second ---)", warn=True)


def _history_check(settings: Settings) -> Any:
    """The vaults' histories (storage/history): can each be written, is each whole? A change
    it cannot record stands and is recorded late; an undo that needs it is refused."""
    from bot.brain import history_states
    from bot.slack.doctor import Check

    states = history_states(settings.data_dir.resolve())
    bad = [s for s in states if s.problem]
    if bad:
        shown = "; ".join(f"{s.name}: {s.problem}" for s in bad[:3])
        more = f" (and {len(bad) - 3} more)" if len(bad) > 3 else ""
        return Check("History", False, f"{len(bad)} of {len(states)} vault histories cannot "
                     f"be written or are damaged: {shown}{more}", bad[0].fix)
    noted = [s for s in states if s.note]
    if noted:
        return Check("History", True, "; ".join(f"{s.name}: {s.note}" for s in noted[:3]),
                     noted[0].fix, warn=True)
    if not states:
        return Check("History", True, "no vault history yet")
    checked, commits = sum(s.checked for s in states), sum(s.commits for s in states)
    part = (f" (the newest {checked:,} of {commits:,} changes checked in the time given)"
            if checked < commits else "")
    return Check("History", True, f"{len(states)} vault histories can be written, none "
                 f"damaged{part}")


def _safe_url(url: str) -> str:
    """The database URL without a password."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        return f"{scheme}://***@{rest.rsplit('@', 1)[1]}"
    return url
