"""Every change the app makes to a vault, kept as a commit in a history repository beside the
vault (never the user's own `.git`), so any change can be listed and undone (issue 20)."""

from storage.history.context import Origin, Tally, changing, collecting, counting, current_origin
from storage.history.history import History, history_path
from storage.types import Change

__all__ = ["Change", "History", "Origin", "Tally", "changing", "collecting", "counting",
           "current_origin", "history_path"]
