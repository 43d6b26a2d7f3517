"""Real media files made in the tests: screenshots with text (Pillow) and spoken clips
(espeak-ng speaks, PyAV encodes M4A). Nothing is read from a fixture the test did not make."""

from __future__ import annotations

import io
import shutil
import subprocess
import wave
from pathlib import Path

import pytest


def screenshot(lines: list[str], *, size: tuple[int, int] = (1280, 800),
               fmt: str = "PNG") -> bytes:
    from PIL import Image, ImageDraw, ImageFont

    img = Image.new("RGB", size, (246, 247, 249))
    draw = ImageDraw.Draw(img)
    font = ImageFont.load_default(size=28)
    draw.rectangle((0, 0, size[0], 56), fill=(40, 44, 52))  # a title bar, as a dashboard has
    for i, line in enumerate(lines):
        draw.text((60, 100 + i * 80), line, fill=(20, 20, 20), font=font)
    out = io.BytesIO()
    img.save(out, format=fmt)
    return out.getvalue()


def spoken_wav(text: str, tmp: Path) -> bytes:
    """`text` spoken by espeak-ng (installed by .ci/run; skipped where it is missing)."""
    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed (apt-get install espeak-ng)")
    out = tmp / "spoken.wav"
    subprocess.run(["espeak-ng", "-s", "150", "-w", str(out), text], check=True,
                   capture_output=True, timeout=60)
    return out.read_bytes()


def to_m4a(wav: bytes) -> bytes:
    """AAC in an MP4 container, as a phone's voice memo or a Slack clip."""
    import av

    out = io.BytesIO()
    with av.open(io.BytesIO(wav)) as src, av.open(out, "w", format="mp4") as dst:
        stream = dst.add_stream("aac", rate=22050)
        for frame in src.decode(audio=0):
            frame.pts = None
            for packet in stream.encode(frame):
                dst.mux(packet)
        for packet in stream.encode(None):
            dst.mux(packet)
    return out.getvalue()


def silence_wav(seconds: float, rate: int = 16000) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(b"\x00\x00" * int(seconds * rate))
    return out.getvalue()
