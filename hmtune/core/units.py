"""Sizes as users write them: 4K, 64KiB, 1M, 2G, 1T, plain bytes (powers of 1024)."""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Iterable

_SIZE = re.compile(r"^\s*(\d+)\s*([kmgt]?)(i?b)?\s*$", re.IGNORECASE)
_SHIFT = {"": 0, "k": 10, "m": 20, "g": 30, "t": 40}


def parse_size(text: str) -> int:
    """Bytes in `text`; ValueError with a message that says what is accepted."""
    m = _SIZE.match(text)
    if not m or (m.group(3) and m.group(3).lower() == "ib" and not m.group(2)):
        raise ValueError(f"'{text}' is not a size (use bytes or K/M/G/T, e.g. 4K, 256M, 1GiB)")
    value = int(m.group(1)) << _SHIFT[m.group(2).lower()]
    if value >= 1 << 63:
        raise ValueError(f"'{text}' is too large")
    return value


def human(n: float) -> str:
    """1536 -> '1.5 KiB'."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def human_ranges(ranges: Iterable[tuple[int, int]]) -> str:
    """A split site's byte ranges: [(0, 2097152), (6291456, 10485760)] ->
    '0 B-2.0 MiB, 6.0 MiB-10.0 MiB'."""
    return ", ".join(f"{human(a)}-{human(b)}" for a, b in ranges)


def fraction(text: str) -> float:
    """argparse type of --fraction: a number in (0, 1]."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value <= 1:          # also NaN
        raise argparse.ArgumentTypeError(f"'{text}' is not a fraction: give a number above 0 "
                                         "and at most 1 (e.g. 0.4 for 40 % of the footprint)")
    return value
