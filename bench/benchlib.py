"""What the bench/ scripts share: where the built binaries are, the check that they
exist, and reading `key=value` figures from a program's output."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build"
HMTUNE = ROOT / "bin" / "hmtune"
LIB = BUILD / "lib" / "libhmtrace.so"
HMALLOC = BUILD / "lib" / "libhmalloc.so"
FIN = BUILD / "bin" / "hmtune-finalize"
RSSWRAP = BUILD / "bench" / "rsswrap"
LATENCY = BUILD / "examples" / "latency"


def require(name: str, *files: Path) -> None:
    """Exit with a one-line message naming the first missing file."""
    for f in files:
        if not f.exists():
            sys.exit(f"{name}: {f} missing: run make")


def number(name: str, text: str, key: str) -> float:
    """The value of `key=NUMBER` in text; exit with a message when it is not there."""
    m = re.search(rf"\b{key}=([0-9.]+)", text)
    if not m:
        sys.exit(f"{name}: no {key}= in output: {text!r}")
    return float(m.group(1))
