"""Which reader a file gets (by its name and its first bytes), and the limits every reader
keeps: a file that cannot be read is a `Reading` with a `problem`, never an exception."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from storage.places import models_cache
from tools.readers import documents, images, speech

MAX_TEXT = 20_000  # characters of extracted text kept in a note; the rest stays in the file

TEXT_SUFFIXES = {".txt", ".md", ".markdown", ".csv", ".tsv", ".json", ".log"}
HTML_SUFFIXES = {".html", ".htm", ".xhtml"}
IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".webp", ".gif"}
AUDIO_SUFFIXES = {".m4a", ".mp3", ".wav", ".ogg", ".webm", ".mp4", ".aac", ".flac"}


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


EMPTY = {"image": "no text found in the image",
         "audio": "no speech heard in the clip"}
NOUNS = {"pdf": "the PDF", "docx": "the DOCX", "image": "the image", "audio": "the clip",
         "page": "the page"}


def too_large(kind: str, why: str) -> str:
    """The problem of a file refused for what reading it would cost."""
    return str(documents.TooLarge(NOUNS.get(kind, "the file"), why))


def media_readers() -> dict[str, bool]:
    """Which of the media extra's readers are installed (found, not loaded: cheap)."""
    from importlib.util import find_spec

    def has(*names: str) -> bool:
        return all(find_spec(n) is not None for n in names)

    return {"images": has("rapidocr", "PIL"),
            "clips": has("faster_whisper", *speech.PARTS)}


def kind_of(name: str, data: bytes) -> str:
    suffix = PurePosixPath(name.lower()).suffix
    if data.startswith(b"%PDF-") or suffix == ".pdf":
        return "pdf"
    if suffix == ".docx":
        return "docx"
    if suffix in HTML_SUFFIXES:
        return "html"
    if suffix in IMAGE_SUFFIXES or data.startswith((b"\x89PNG", b"\xff\xd8\xff", b"GIF8")):
        return "image"
    if suffix in AUDIO_SUFFIXES:
        return "audio"
    if suffix in TEXT_SUFFIXES:
        return "text"
    return "unknown"


def read(name: str, data: bytes, limits: Limits = Limits()) -> Reading:
    """The text of one file, in this process. Never raises for the file's own faults; a file
    that would cost too much is refused from what its header says, but the hard limits
    (CPU, memory, time) are only kept out of process: `tools/readers/pool.py`."""
    kind = kind_of(name, data)
    try:
        if kind == "pdf":
            text, detail = documents.pdf_text(data, limits.max_pages, MAX_TEXT)
        elif kind == "docx":
            text, detail = documents.docx_text(data, MAX_TEXT), ""
        elif kind == "html":
            text, detail = documents.html_text(data), ""
        elif kind == "text":
            text, detail = documents.plain_text(data, MAX_TEXT), ""
        elif kind == "image":
            text, detail = images.image_text(data)
        elif kind == "audio":
            text, detail = speech.transcript(data, model_dir=limits.speech_model,
                                             cache=limits.cache, max_seconds=limits.max_seconds)
        else:
            return Reading(name, kind, "", f"{PurePosixPath(name).suffix or 'this'} files "
                                           "are not a kind I can read")
    except documents.Unreadable as exc:
        return Reading(name, kind, "", str(exc))
    text = text.strip()
    if not text:
        return Reading(name, kind, "", EMPTY.get(kind, "no text in it (a scan or an empty "
                                                       "file?)"), detail)
    if len(text) > MAX_TEXT:
        text = text[:MAX_TEXT].rsplit(" ", 1)[0] + " …"
        detail = ", ".join(x for x in (detail, f"cut at {MAX_TEXT:,} characters") if x)
    return Reading(name, kind, text, None, detail)
