"""Text in images (a screenshot, a photo of a whiteboard) through OCR that runs offline:
RapidOCR's ONNX models ship inside its wheel and run on the onnxruntime search by meaning
already uses. PNG, JPEG, WebP and GIF (its first frame) are opened with Pillow."""

from __future__ import annotations

import io
import os
import threading
from typing import Any

from tools.readers.documents import TooLarge, Unreadable, failed

MEDIA_EXTRA = "the media readers (`pip install '.[media]'`)"
MAX_SIDE = 2560  # pixels: a bigger image is scaled down first (OCR time grows with its area)
MAX_PIXELS = 60_000_000  # a decompression bomb is refused from its header, before decoding

def reader_threads() -> int:
    """Threads one file's OCR or transcription may use: all cores but one (up to 4), so
    reading a file leaves a core to everyone else's turns."""
    return max(1, min(4, (os.cpu_count() or 1) - 1))


_engine: Any = None
_engine_lock = threading.Lock()


def _ocr() -> Any:
    """One engine per process: loading its three models costs about a second."""
    global _engine
    with _engine_lock:
        if _engine is None:
            import logging

            try:
                from rapidocr import RapidOCR
            except ImportError as exc:
                raise Unreadable(f"reading text in images needs {MEDIA_EXTRA}") from exc
            logging.getLogger("RapidOCR").setLevel(logging.ERROR)
            threads = reader_threads()
            _engine = RapidOCR(params={
                "Global.log_level": "error",
                "EngineConfig.onnxruntime.intra_op_num_threads": threads,
                "EngineConfig.onnxruntime.inter_op_num_threads": 1})
        return _engine


def image_text(data: bytes) -> tuple[str, str]:
    """The lines the OCR finds, top to bottom, and a detail ("1280×800")."""
    try:
        import warnings

        import numpy as np
        from PIL import Image

        Image.MAX_IMAGE_PIXELS = MAX_PIXELS  # (Pillow only warns below twice this)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            img = Image.open(io.BytesIO(data))  # reads the header only
        with img:
            size = f"{img.width}×{img.height}"
            if img.width * img.height > MAX_PIXELS:
                raise TooLarge("the image", f"{size}, {img.width * img.height / 1e6:.0f} "
                                            f"megapixels; up to {MAX_PIXELS // 10**6} are read")
            img.seek(0)  # a GIF's (or an animated WebP's) first frame
            frame = img.convert("RGB")
    except TooLarge:
        raise
    except Exception as exc:  # not an image, truncated, a bomb: Pillow raises many kinds
        if type(exc).__name__ == "DecompressionBombError":
            raise TooLarge("the image", f"over {2 * MAX_PIXELS // 10**6} megapixels") from exc
        raise failed("the image", exc, "the image cannot be opened") from exc
    if max(frame.size) > MAX_SIDE:
        frame.thumbnail((MAX_SIDE, MAX_SIDE))
    engine = _ocr()
    try:
        result = engine(np.asarray(frame)[:, :, ::-1])  # RapidOCR expects OpenCV's BGR
    except Exception as exc:
        raise failed("the image", exc, "the OCR failed on it") from exc
    lines = [str(t) for t in (getattr(result, "txts", None) or ()) if str(t).strip()]
    return "\n".join(lines), size
