"""placement.txt's byte ranges (`split` and `static-split` lines, v2) and decimal fields,
as both readers take them (hmtune/core/placement.py, interpose/hmi_placement.c)."""

from __future__ import annotations

import re
from collections.abc import Iterable

NUMBER_MAX = (1 << 64) - 1     # capacities, depth, size-window
MAX_RANGES = 64                # HMI_MAX_RANGES: ranges of a split line
RANGE_ALIGN = 4096             # HMI_RANGE_ALIGN: range starts and ends are multiples of it
RANGE_END_MAX = 1 << 48        # HMI_RANGE_END_MAX: range ends at most this
_DIGITS = re.compile(r"[0-9]+")
BAD_SPLIT = ("expected 'split TIER START-END[,START-END...] CHAIN': byte offsets, multiples "
             "of 4096, START < END <= 2^48, increasing and not touching")
BAD_STATIC_SPLIT = ("expected 'static-split TIER SIZE START-END[,START-END...] module+0xHEX': "
                    "byte offsets in the object, multiples of 4096, START < END <= SIZE "
                    "rounded up to 4096, increasing and not touching")


def ranges_problem(ranges: Iterable[tuple[int, int]], end_max: int = RANGE_END_MAX,
                   bad: str = BAD_SPLIT) -> str | None:
    """Why a split (or static-split) line cannot carry ranges (the readers refuse them),
    or None: 1 to MAX_RANGES (start, end) pairs, multiples of RANGE_ALIGN, start < end
    <= end_max, each starting after the previous one's end."""
    rs = list(ranges)
    if not rs:
        return "a split line needs at least one range"
    if len(rs) > MAX_RANGES:
        return f"split line has {len(rs)} ranges, more than {MAX_RANGES}"
    prev = -1
    for r in rs:
        if (not isinstance(r, tuple) or len(r) != 2
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in r)):
            return bad
        a, b = r
        if not (0 <= a < b <= end_max) or a % RANGE_ALIGN or b % RANGE_ALIGN or a <= prev:
            return bad
        prev = b
    return None


def format_ranges(ranges: Iterable[tuple[int, int]]) -> str:
    """RANGES as a split line writes them: `START-END,START-END`."""
    return ",".join(f"{a}-{b}" for a, b in ranges)


def parse_ranges(text: str, end_max: int = RANGE_END_MAX) -> tuple[tuple[int, int], ...] | None:
    """A split line's RANGES field as the C reader takes it, or None."""
    items = text.split(",")
    if len(items) > MAX_RANGES:
        return None
    out = []
    for item in items:
        a, sep, b = item.partition("-")
        lo, hi = dec(a), dec(b)
        if not sep or lo is None or hi is None:
            return None
        out.append((lo, hi))
    return tuple(out) if ranges_problem(out, end_max) is None else None


def dec(field: str) -> int | None:
    """A decimal field the C reader takes (ASCII digits, at most 2^64 - 1), or None."""
    if not _DIGITS.fullmatch(field):
        return None
    digits = field.lstrip("0") or "0"
    return int(digits) if len(digits) <= 20 and int(digits) <= NUMBER_MAX else None
