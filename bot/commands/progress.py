"""A progress line for long verbs (`brain reindex`): on a terminal, one line rewritten in
place with the count, the rate and the time left; elsewhere nothing until the verb's own
summary."""

from __future__ import annotations

import time
from typing import TextIO

REDRAW_SECONDS = 0.25


class ProgressLine:
    def __init__(self, stream: TextIO, *, label: str = "embedding", unit: str = "passages",
                 quiet: bool = False) -> None:
        self.stream = stream
        self.label = label
        self.unit = unit
        self.live = not quiet and stream.isatty()
        self._drawn = 0.0
        self._shown = False

    def update(self, done: int, total: int, seconds: float) -> None:
        if not self.live or total <= 0:
            return
        now = time.monotonic()
        if done < total and now - self._drawn < REDRAW_SECONDS:
            return
        self._drawn = now
        rate = done / seconds if seconds > 0 else 0.0
        left = (total - done) / rate if rate > 0 else None
        width = 24
        filled = int(width * done / total)
        bar = "#" * filled + "-" * (width - filled)
        eta = f", {_duration(left)} left" if left is not None and done < total else ""
        self.stream.write(f"\r{self.label} [{bar}] {done:,}/{total:,} {self.unit}, "
                          f"{rate:.1f}/s{eta}   ")
        self.stream.flush()
        self._shown = True

    def done(self) -> None:
        if self._shown:
            self.stream.write("\n")
            self.stream.flush()


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"
