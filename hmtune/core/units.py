"""Sizes as users write them: 4K, 64KiB, 1M, 2G, 1T, plain bytes (powers of 1024), and the
units every module counts in (KIB, MIB, GIB)."""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Iterable

KIB = 1 << 10
MIB = 1 << 20
GIB = 1 << 30

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


_NUMBER = re.compile(r"^\s*([-+]?\d*\.\d*|[-+]\d+)\s*([kmgt]?)(i?b)?\s*$", re.IGNORECASE)


def parse_capacity(text: str) -> int:
    """A fast tier's size (--mem): parse_size's, refusing what is surely a slip with
    a message that says what it would have taken: a number without a unit below
    1 MiB ("64": 64 bytes; "64B" says bytes on purpose), a fraction of a unit
    ("0.5G") and a negative size. ValueError."""
    m = _NUMBER.match(text)
    if m:
        num, unit = m.group(1), m.group(2).upper()
        if num.startswith("-"):
            raise ValueError(f"'{text}' is negative: a fast tier holds at least one page "
                             "(e.g. 256M)")
        whole = round(float(num) * (1 << _SHIFT[unit.lower()])) if num.strip(".+") else 0
        raise ValueError(f"'{text}' is not a whole number of a unit: give "
                         f"{human_exact(whole)} instead")
    value = parse_size(text)
    if value == 0:
        raise ValueError(f"'{text}' is 0 B: the fast tier needs a size > 0")
    plain = _SIZE.match(text)
    if plain and not plain.group(2) and not plain.group(3) and value < 1 << 20:
        raise ValueError(f"'{text}' is {value} B: did you mean {text.strip()}M? (a size "
                         f"without a unit is bytes: give {text.strip()}B to mean bytes)")
    return value


def human_exact(n: int) -> str:
    """n bytes in the largest unit that holds it whole (parse_size reads it back):
    536870912 -> '512M'."""
    for unit, shift in (("T", 40), ("G", 30), ("M", 20), ("K", 10)):
        if n and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return f"{n}B"


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
