"""Shared files into a note: each file read (tools/readers), kept in the vault's
`attachments/` and embedded (`![[…]]`, so it opens in Obsidian), its text under a heading of
its own, or a line saying why it could not be read. Nothing is lost: a file too big to keep is
linked where it lives."""

from __future__ import annotations

from dataclasses import dataclass, field

from storage.vault.store import Store
from tools.capture.fence import BEGINS, Fence
from tools.readers.pool import read_safely
from tools.readers.read import Limits, Reading


@dataclass(frozen=True)
class SharedFile:
    name: str
    data: bytes | None  # None: not fetched (too big, refused); `problem` says why
    link: str | None = None  # where it lives (a Slack permalink, the path given)
    problem: str | None = None
    reading: Reading | None = None  # already read (a page behind a link): not read again


@dataclass
class FileSections:
    text: str = ""  # the note's "## From …" sections
    readings: list[Reading] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # attachments written
    problems: list[str] = field(default_factory=list)  # "report.pdf: the PDF is encrypted"

    @property
    def title(self) -> str | None:
        """A name for a note of files alone: the first file's name."""
        return self.readings[0].name if self.readings else None


Read = list[tuple[SharedFile, Reading]]
MODEL_CHARS = 1500  # of each file's text shown to the model beside the message


async def read_all(files: list[SharedFile], limits: Limits | None = None) -> Read:
    """Each file read in a reader process (tools/readers/pool.py): parsing is CPU work and a
    hostile file may ask for minutes or gigabytes; other people's turns go on meanwhile."""
    limits = limits or Limits()
    out = []
    for shared in files:
        if shared.reading is not None:
            reading = shared.reading
        elif shared.data is None:
            reading = Reading(shared.name, "unknown", "", shared.problem or "not fetched")
        else:
            reading = await read_safely(shared.name, shared.data, limits)
        out.append((shared, reading))
    return out


def without_files(view: str) -> str:
    """The message part of a view `for_the_model` appended to (the rules judge only that)."""
    return view.split(BEGINS, 1)[0]


def for_the_model(done: Read, fence: Fence) -> str:
    """What the model sees of the files beside the message (to file or to answer with): each
    one's text fenced as data (tools/capture/fence.py), or why it could not be read."""
    parts = []
    for shared, reading in done:
        what = f"Shared link {shared.link}" if reading.kind == "page" or (
            shared.data is None and shared.link and shared.link.startswith("http")
            and shared.name == shared.link) else f"Shared file {shared.name}"
        label = what + (f", {reading.detail}" if reading.detail else "")
        if reading.problem:
            text = f"(could not be read: {reading.problem})"
        else:
            text = reading.text[:MODEL_CHARS] + (" …" if len(reading.text) > MODEL_CHARS else "")
        parts.append(fence.wrap(label, text))
    return "\n\n".join(parts)


async def file_sections(store: Store, done: Read) -> FileSections:
    """The files kept in the vault and their sections for the note that files them."""
    out = FileSections()
    for shared, reading in done:
        if shared.data is None:
            where = (f"<{shared.link}>" if shared.link == shared.name or reading.kind == "page"
                     else f"[{shared.name}]({shared.link})" if shared.link else shared.name)
        else:
            rel = await store.attach(shared.name, shared.data)
            out.kept.append(rel)
            where = f"![[{rel}]]"
        out.readings.append(reading)
        lines = [f"## From {shared.name}", where]
        if reading.problem is not None:
            lines.append(f"_Could not read it: {reading.problem}._")
            out.problems.append(f"{shared.name}: {reading.problem}")
        if reading.text:
            lines.append(reading.text)
        if reading.detail:
            lines.append(f"_({reading.detail})_")
        out.text += "\n" + "\n\n".join(lines) + "\n"
    return out
