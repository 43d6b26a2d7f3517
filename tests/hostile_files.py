"""Hostile files, made here (issue 31): small files that cost minutes of CPU or gigabytes of
memory when read naively, as an outside probe sent them. Each is built quickly, without ever
holding what it unpacks to."""

from __future__ import annotations

import io
import struct
import zlib


def pdf_bomb(pages: int = 8, mb: float = 6) -> bytes:
    """Pages whose content inflates to `mb` MB of text operators each (under pypdf's own
    token budget, so it reads them to the end: about 3 s a MB)."""
    from pypdf import PdfWriter
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

    op = b"BT /F1 9 Tf [" + b"(a) -1 " * 500 + b"] TJ ET\n"
    content = DecodedStreamObject()
    content.set_data(op * int(mb * 2**20 / len(op)))
    packed = content.flate_encode(level=9)
    font = DictionaryObject({NameObject("/Type"): NameObject("/Font"),
                             NameObject("/Subtype"): NameObject("/Type1"),
                             NameObject("/BaseFont"): NameObject("/Helvetica")})
    writer = PdfWriter()
    for _ in range(pages):
        page = writer.add_blank_page(612, 792)
        page[NameObject("/Resources")] = DictionaryObject({
            NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})})
        page.replace_contents(packed)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def _times(matrix: list[int], vector: int) -> int:
    out, i = 0, 0
    while vector:
        if vector & 1:
            out ^= matrix[i]
        vector >>= 1
        i += 1
    return out


def _zeros(nbytes: int) -> list[int]:
    """The GF(2) operator that appends `nbytes` zero bytes to a CRC-32 (as zlib's
    crc32_combine builds it): a CRC of a chunk repeated is then 32 steps a repeat, not a pass
    over gigabytes."""
    op = [0xEDB88320] + [1 << n for n in range(31)]  # one zero bit
    for _ in range(3):
        op = [_times(op, col) for col in op]  # ... two, four, eight: a byte
    result: list[int] | None = None
    while nbytes:
        if nbytes & 1:
            result = op if result is None else [_times(op, col) for col in result]
        nbytes >>= 1
        if nbytes:
            op = [_times(op, col) for col in op]
    return result or [1 << n for n in range(32)]


def _deflated(head: bytes, chunk: bytes, times: int, tail: bytes) -> tuple[bytes, int, int]:
    """A raw deflate stream of head + chunk × times + tail, made by compressing the chunk once
    (a full flush ends each piece on a byte and forgets the past, so pieces may repeat); its
    CRC-32 and size."""
    def piece(data: bytes) -> bytes:
        z = zlib.compressobj(9, zlib.DEFLATED, -15)
        return z.compress(data) + z.flush(zlib.Z_FULL_FLUSH)

    shift, alone = _zeros(len(chunk)), zlib.crc32(chunk)
    crc = zlib.crc32(head)
    for _ in range(times):  # crc(a + chunk) = shift(crc(a)) ^ crc(chunk), as zlib combines
        crc = _times(shift, crc) ^ alone
    crc = zlib.crc32(tail, crc)
    stream = piece(head) + piece(chunk) * times + piece(tail) + b"\x03\x00"  # a last block
    return stream, crc, len(head) + len(chunk) * times + len(tail)


def _zip(members: list[tuple[str, bytes, int, int]]) -> bytes:
    """A zip of already deflated members (name, stream, crc, size), by hand: Python's zipfile
    would deflate them itself."""
    out, central = io.BytesIO(), io.BytesIO()
    for name, stream, crc, size in members:
        offset = out.tell()
        raw = name.encode()
        out.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0x21, crc, len(stream),
                              size, len(raw), 0) + raw + stream)
        central.write(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 8, 0, 0x21,
                                  crc, len(stream), size, len(raw), 0, 0, 0, 0, 0, offset)
                      + raw)
    directory = central.getvalue()
    start = out.tell()
    out.write(directory + struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members),
                                      len(members), len(directory), start, 0))
    return out.getvalue()


def docx_bomb(gigabytes: float = 2.5) -> bytes:
    """A real DOCX whose word/document.xml unpacks to `gigabytes` GB (about 2.5 MB on the
    wire, as the probe's)."""
    import zipfile

    from tests.tools.test_readers import make_docx

    real = zipfile.ZipFile(io.BytesIO(make_docx(["x"])))
    members = []
    for info in real.infolist():
        data = real.read(info)
        if info.filename == "word/document.xml":
            head, _, _ = data.partition(b"<w:body>")
            chunk = b" " * 2**24  # white space between the body's elements
            members.append((info.filename, *_deflated(
                head + b"<w:body>", chunk, int(gigabytes * 2**30 / len(chunk)),
                b"</w:body></w:document>")))
        else:
            members.append((info.filename, *_deflated(data, b"", 0, b"")))
    return _zip(members)


def png_bomb(side: int = 10_000) -> bytes:
    """A `side`×`side` PNG (100 megapixels) of one colour: about 100 KB."""
    from PIL import Image

    out = io.BytesIO()
    Image.new("1", (side, side)).save(out, format="PNG", optimize=True)
    return out.getvalue()


def _table(poly: int, bits: int) -> list[int]:
    top, mask = 1 << (bits - 1), (1 << bits) - 1
    out = []
    for n in range(256):
        crc = n << (bits - 8)
        for _ in range(8):
            crc = ((crc << 1) ^ poly) & mask if crc & top else (crc << 1) & mask
        out.append(crc)
    return out


CRC8, CRC16 = _table(0x07, 8), _table(0x8005, 16)


def _crc8(data: bytes) -> int:
    crc = 0
    for byte in data:
        crc = CRC8[crc ^ byte]
    return crc


def _crc16(data: bytes) -> int:
    crc = 0
    for byte in data:
        crc = ((crc << 8) & 0xFFFF) ^ CRC16[(crc >> 8) ^ byte]
    return crc


def _utf8_number(n: int) -> bytes:
    """A FLAC frame number, coded as UTF-8 codes a character (up to 2^31)."""
    return chr(n).encode("utf-8", "surrogatepass") if n < 0x110000 else bytes(
        [0xF8 | (n >> 24), 0x80 | (n >> 18) & 0x3F, 0x80 | (n >> 12) & 0x3F,
         0x80 | (n >> 6) & 0x3F, 0x80 | n & 0x3F])


def flac_bomb(hours: float = 9, *, header_says: bool = True) -> bytes:
    """`hours` of silence at 44.1 kHz as FLAC (frames of one constant sample: about 600 KB
    for nine hours); its header says how long it is, as a real encoder writes, unless
    `header_says` is False (a length of 0: "unknown", as a stream's encoder may write)."""
    block, rate = 32768, 44100
    frames = int(hours * 3600 * rate / block)
    samples = frames * block if header_says else 0
    info = struct.pack(">HH", block, block) + (0).to_bytes(3, "big") * 2 + (
        (rate << 44) | (0 << 41) | (15 << 36) | samples).to_bytes(8, "big") + bytes(16)
    out = io.BytesIO()
    out.write(b"fLaC" + bytes([0x80]) + len(info).to_bytes(3, "big") + info)
    for n in range(frames):
        # sync, fixed blocks; 32768 a block, 44.1 kHz; mono, 16 bits; the frame's number
        header = b"\xff\xf8\xf9\x08" + _utf8_number(n)
        header += bytes([_crc8(header)])
        frame = header + b"\x00\x00\x00"  # a CONSTANT subframe of the sample 0
        out.write(frame + _crc16(frame).to_bytes(2, "big"))
    return out.getvalue()
