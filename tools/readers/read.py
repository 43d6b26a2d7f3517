"""Which reader a file gets (by its name and its first bytes), and the limits every reader
keeps: a file that cannot be read is a `Reading` with a `problem`, never an exception."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from storage.places import models_cache
from tools.readers import documents, images, speech

MAX_TEXT = 20_000  # characters of extracted text kept in a note; the rest stays in the file

@dataclass(frozen=True)
class Reading:
    name: str  # the file's name as shared
    kind: str  # pdf, docx, text, html, image, audio, unknown
    text: str  # what was read ("" when nothing)
    problem: str | None = None  # why nothing (or not all) was read, in words for the user
    detail: str = ""  # "3 pages", "cut at 20,000 characters", ...

    @property
    def ok(self) -> bool:
        return self.problem is None and bool(self.text.strip())


@dataclass(frozen=True)
class Limits:
    """What a reader may spend on one file, and where the speech model lives."""

    max_pages: int = documents.MAX_PAGES
    max_seconds: float = speech.MAX_SECONDS  # of a clip
    speech_model: Path | None = None  # a CTranslate2 Whisper directory; None: the shipped one
    cache: Path = field(default_factory=models_cache)  # where the shipped model is joined
    # Out of process (tools/readers/pool.py): whose file it is (each person reads one file at
    # a time) and, when set, what reading one file may spend instead of its kind's budget.
    person: str = ""
    cpu_seconds: float | None = None
    memory_mb: int | None = None
    wall_seconds: float | None = None


def too_large(kind: str, why: str) -> str:
    """The problem of a file refused for what reading it would cost."""
    return str(documents.TooLarge(noun(kind), why))


def noun(kind: str) -> str:
    """What a file of `kind` is called in a reply ("the PDF")."""
    found = BY_NAME.get(kind)
    return found.noun if found is not None else "the file"


def media_readers() -> dict[str, bool]:
    """Which of the media extra's readers are installed (found, not loaded: cheap)."""
    from importlib.util import find_spec

    def has(*names: str) -> bool:
        return all(find_spec(n) is not None for n in names)

    return {"images": has("rapidocr", "PIL"),
            "clips": has("faster_whisper", *speech.PARTS)}


@dataclass(frozen=True)
class Budget:
    """What reading one file of a kind may spend in its reader process (tools/readers/
    pool.py): seconds of CPU (every thread counted), data memory it may add to what the
    reader holds, and seconds of wall clock (only to end a reader that is stuck: generous)."""

    cpu: float
    memory_mb: int
    wall: float


Read = Callable[[bytes, "Limits"], "tuple[str, str]"]  # the text, and a detail ("3 pages")


@dataclass(frozen=True)
class Kind:
    """One kind of file: how it is known (its name's suffixes, its first bytes), how it is
    read, what it is called in a reply, and what reading it may spend (measured in
    docs/performance.md). A new kind is its reader and one row of KINDS."""

    name: str
    suffixes: frozenset[str]
    read: Read | None  # None: not read from a file (a web page: tools/web/links.py)
    magic: tuple[bytes, ...] = ()
    noun: str = "the file"
    empty: str = "no text in it (a scan or an empty file?)"  # when nothing was read
    family: str = "documents"  # its reader processes: documents, media, or in_process
    budget: Budget = Budget(cpu=20, memory_mb=768, wall=120)


def _pdf(data: bytes, limits: Limits) -> tuple[str, str]:
    return documents.pdf_text(data, limits.max_pages, MAX_TEXT)


def _clip(data: bytes, limits: Limits) -> tuple[str, str]:
    return speech.transcript(data, model_dir=limits.speech_model, cache=limits.cache,
                             max_seconds=limits.max_seconds)


_CLIP_WALL = speech.TIME_BUDGET + 120

# In the order a file is tried: the first kind whose suffix or first bytes match is it.
KINDS: tuple[Kind, ...] = (
    Kind("pdf", frozenset({".pdf"}), _pdf, magic=(b"%PDF-",), noun="the PDF"),
    Kind("docx", frozenset({".docx"}), lambda d, _: (documents.docx_text(d, MAX_TEXT), ""),
         noun="the DOCX"),
    Kind("html", frozenset({".html", ".htm", ".xhtml"}),
         lambda d, _: (documents.html_text(d), "")),
    # An image's OCR needs about 1.2 GB for its first, largest read (its models,
    # onnxruntime's buffers).
    Kind("image", frozenset({".png", ".jpg", ".jpeg", ".webp", ".gif"}),
         lambda d, _: images.image_text(d), magic=(b"\x89PNG", b"\xff\xd8\xff", b"GIF8"),
         noun="the image", empty="no text found in the image", family="media",
         budget=Budget(cpu=60, memory_mb=2048, wall=180)),
    # A clip's Whisper reserves about 1.4 GB and may transcribe for TIME_BUDGET seconds.
    Kind("audio", frozenset({".m4a", ".mp3", ".wav", ".ogg", ".webm", ".mp4", ".aac", ".flac"}),
         _clip, noun="the clip", empty="no speech heard in the clip", family="media",
         budget=Budget(cpu=_CLIP_WALL * images.reader_threads(), memory_mb=2048,
                       wall=_CLIP_WALL)),
    # Text decoded in the serving process: bounded already.
    Kind("text", frozenset({".txt", ".md", ".markdown", ".csv", ".tsv", ".json", ".log"}),
         lambda d, _: (documents.plain_text(d, MAX_TEXT), ""), family="in_process"),
    Kind("page", frozenset(), None, noun="the page"),
)
UNKNOWN = Kind("unknown", frozenset(), None, family="in_process")  # a name refused at once
BY_NAME = {k.name: k for k in (*KINDS, UNKNOWN)}


def kind_of(name: str, data: bytes) -> str:
    suffix = PurePosixPath(name.lower()).suffix
    for kind in KINDS:
        if suffix in kind.suffixes or (kind.magic and data.startswith(kind.magic)):
            return kind.name
    return UNKNOWN.name


def read(name: str, data: bytes, limits: Limits = Limits()) -> Reading:
    """The text of one file, in this process. Never raises for the file's own faults; a file
    that would cost too much is refused from what its header says, but the hard limits
    (CPU, memory, time) are only kept out of process: `tools/readers/pool.py`."""
    kind = BY_NAME[kind_of(name, data)]
    if kind.read is None:
        return Reading(name, kind.name, "", f"{PurePosixPath(name).suffix or 'this'} files "
                                            "are not a kind I can read")
    try:
        text, detail = kind.read(data, limits)
    except documents.Unreadable as exc:
        return Reading(name, kind.name, "", str(exc))
    text = text.strip()
    if not text:
        return Reading(name, kind.name, "", kind.empty, detail)
    if len(text) > MAX_TEXT:
        text = text[:MAX_TEXT].rsplit(" ", 1)[0] + " …"
        detail = ", ".join(x for x in (detail, f"cut at {MAX_TEXT:,} characters") if x)
    return Reading(name, kind.name, text, None, detail)
