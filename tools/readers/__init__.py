"""Readers: the text inside a file someone shares (issue 18), so a note can hold it and search
can find it. Pure: bytes and a name in, a `Reading` out; nothing here touches the vault or the
network."""

from tools.readers.read import MAX_TEXT, Reading, read

__all__ = ["MAX_TEXT", "Reading", "read"]
