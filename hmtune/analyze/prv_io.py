"""What every Paraver-file reader shares: the error type and how files are opened."""

from __future__ import annotations

import gzip
import os
from typing import IO

PathLike = str | os.PathLike[str]


class TraceFormatError(Exception):
    """A malformed trace file; `str()` is `FILE:LINE: message`.

    `kind` names the broken rule ("header", "fields", "integer", "record-type",
    "pcf-syntax", "row-syntax") so that the validator can report it under that id.
    """

    def __init__(self, path: PathLike, lineno: int, message: str,
                 kind: str = "format") -> None:
        self.path = os.fspath(path)
        self.lineno = lineno
        self.message = message
        self.kind = kind
        super().__init__(f"{self.path}:{lineno}: {message}")


def open_text(path: PathLike) -> IO[str]:
    """Open a trace file for reading as text; `*.gz` is decompressed on the fly.

    Undecodable bytes survive as surrogates (labels may hold any bytes a symbolizer
    printed); record parsing then rejects them as non-integers.
    """
    name = os.fspath(path)
    if name.endswith(".gz"):
        return gzip.open(name, "rt", encoding="utf-8", errors="surrogateescape")
    return open(name, encoding="utf-8", errors="surrogateescape")
