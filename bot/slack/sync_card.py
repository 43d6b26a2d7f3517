"""What App Home's "Sync with Obsidian" sends the person who pressed it, and only them (an
ephemeral message in their DM with the bot: Slack keeps no copy of it): their vault's git
address, a new token, and the three steps in Obsidian's Git plugin (obsidian-git)."""

from __future__ import annotations

from bot.slack import cards

STEPS = (
    "1. In Obsidian: *Settings → Community plugins → Browse*, install *Git* and enable it.",
    "2. Clone: on a computer run `git clone {url} my-brain` and open the folder with *Open "
    "folder as vault*; on a phone, run *Git: Clone an existing remote repo* from the "
    "command palette and paste the address. When asked: any user name, and the token as "
    "the password (on a phone: the Git plugin's *Authentication/commit author* settings, "
    "*Password/Personal access token*).",
    "3. In the Git plugin's settings set *Auto commit-and-sync interval (minutes)* to 5 and "
    "turn on *Pull on startup*: your edits reach me and mine reach you, every change in the "
    "history (`brain undo` puts one back).",
)


def sync_message(url: str, token: str, days: int) -> cards.SlackMessage:
    address, secret = cards.escape(url), cards.escape(token)
    intro = (f"*Sync with Obsidian*\nYour vault: `{address}`\nYour token (the password; "
             f"shown to you only, this once): `{secret}`")
    steps = "\n".join(step.format(url=address) for step in STEPS)
    after = ("Lost it, or a device is gone? Press the button again for a new token; an old "
             f"one stops working after {days} days unused, or when revoked (`brain sync url "
             "--revoke`).")
    text = f"Sync with Obsidian: {url} (token {token})"
    return cards.message([cards.section(intro), cards.section(steps), cards.context(after)],
                         text)
