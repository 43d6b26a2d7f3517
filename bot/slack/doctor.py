"""`brain doctor`'s Slack checks: are the tokens there, and does Slack accept them?"""

from __future__ import annotations

from dataclasses import dataclass

from slack_sdk.errors import SlackApiError, SlackClientError

from bot.config import Settings
from bot.slack.web import make_client

APP_SETTINGS = "https://api.slack.com/apps"


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str | None = None  # what to do about it, when not ok
    warn: bool = False  # ok, but worth a look (printed WARN; does not fail the run)
    skipped: str | None = None  # not checked (--offline): what, for the closing line


def token_checks(settings: Settings) -> list[Check]:
    """Presence and shape of the tokens, without a network call."""
    checks: list[Check] = []
    bot = settings.slack_bot_token
    if settings.oauth:
        checks.append(Check("Slack workspaces", True,
                            "many workspaces (SLACK_CLIENT_ID, SLACK_CLIENT_SECRET, "
                            "SLACK_STATE_SECRET): each installs from /slack/install of "
                            "`brain serve --http`" + ("; SLACK_BOT_TOKEN's is the home one"
                                                      if bot else "")))
    if not bot and not settings.oauth:
        checks.append(Check("Slack bot token", False, "SLACK_BOT_TOKEN is not set",
                            f"install the app to your workspace ({APP_SETTINGS} > OAuth & "
                            "Permissions) and set SLACK_BOT_TOKEN=xoxb-..."))
    elif bot and not bot.startswith("xoxb-"):
        checks.append(Check("Slack bot token", False, "SLACK_BOT_TOKEN does not start with xoxb-",
                            "use the Bot User OAuth Token, not a user (xoxp-) or app token"))
    app_token = settings.slack_app_token
    if app_token and not app_token.startswith("xapp-"):
        checks.append(Check("Slack app token", False, "SLACK_APP_TOKEN does not start with xapp-",
                            f"create an app-level token with connections:write ({APP_SETTINGS} > "
                            "Basic Information > App-Level Tokens)"))
    elif app_token:
        checks.append(Check("Slack mode", True, "Socket Mode (SLACK_APP_TOKEN is set)"))
    elif not settings.slack_signing_secret:
        checks.append(Check("Slack signing secret", False,
                            "neither SLACK_APP_TOKEN (Socket Mode) nor SLACK_SIGNING_SECRET "
                            "(HTTP mode) is set",
                            "set SLACK_APP_TOKEN=xapp-... for Socket Mode, or "
                            f"SLACK_SIGNING_SECRET ({APP_SETTINGS} > Basic Information) for "
                            "`brain serve --http`"))
    else:
        checks.append(Check("Slack mode", True, "HTTP mode (SLACK_SIGNING_SECRET is set)"))
    return checks


async def auth_check(settings: Settings) -> Check:
    """auth.test with the bot token (at SLACK_API_URL when set)."""
    client = make_client(settings)
    try:
        resp = await client.auth_test()
    except SlackApiError as exc:
        error = exc.response.get("error") or str(exc)
        return Check("Slack auth.test", False, f"Slack refused the bot token: {error}",
                     "copy a fresh Bot User OAuth Token (reinstall the app if it was revoked)")
    except (SlackClientError, OSError) as exc:
        return Check("Slack auth.test", False, f"could not reach Slack: {exc}",
                     "check the network, or SLACK_API_URL if you set it")
    return Check("Slack auth.test", True,
                 f"team {resp.get('team') or resp.get('team_id')}, bot user "
                 f"{resp.get('user_id')} (bot {resp.get('bot_id')})")
