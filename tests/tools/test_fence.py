"""The fence around captured text (tools/capture/fence.py): whatever a file, a page or a message holds,
and whatever its name, the model sees one begin and one end marker with the turn's code, the
text between them, and nothing inside that passes for a marker."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from tools.capture.fence import Fence, shortened, unfenced

MARKER = re.compile(r"<<<captured-data ([0-9a-f]{12}) (begin: [^\n]*|end)>>>")
# Text built to attack the fence: markers with and without the real code, brackets of every
# width, line breaks, and anything else.
pieces = st.sampled_from(["<<<captured-data ", " end>>>", ">>>", "<<<", "\n", "\uff1c\uff1c\uff1c",
                          "\uff1e\uff1e\uff1e", "begin: ", "CODE", "0123456789ab", " "])
hostile = st.lists(st.one_of(pieces, st.text(max_size=20)), max_size=30).map("".join)


@settings(max_examples=300, deadline=None)
@given(label=hostile, text=hostile)
def test_the_content_cannot_open_or_close_the_fence(label: str, text: str) -> None:
    fence = Fence()
    text = text.replace("CODE", fence.code)  # even the real code, were it known
    label = label.replace("CODE", fence.code)
    wrapped = fence.wrap(label, text)
    lines = wrapped.split("\n")
    found = [(m.start(), m.group(1), m.group(2)) for m in MARKER.finditer(wrapped)]
    assert [(code, kind.split(":")[0]) for _, code, kind in found] == [
        (fence.code, "begin"), (fence.code, "end")]
    assert lines[-1] == fence.end and MARKER.fullmatch(lines[0])
    inside = "\n".join(lines[1:-1])
    assert "<<<" not in inside and ">>>" not in inside and fence.code not in inside
    assert "\uff1c\uff1c\uff1c" not in inside and "\uff1e\uff1e\uff1e" not in inside
    assert MARKER.search(unfenced(wrapped)) is None


@given(text=hostile, limit=st.integers(0, 50))
def test_shortened_data_stays_fenced(text: str, limit: int) -> None:
    fence = Fence()
    message = "my own words\n\n" + fence.wrap("Shared file a.pdf", text * 5)
    short = shortened(message, limit)
    assert short.startswith("my own words\n\n" + fence.begin("Shared file a.pdf") + "\n")
    assert short.endswith("\n" + fence.end)
    inside = short.split("\n", 3)[3].rsplit("\n", 1)[0]
    assert len(inside) <= max(limit, 0) + 80 or inside in message


def test_each_fence_has_its_own_code() -> None:
    assert len({Fence().code for _ in range(100)}) == 100
