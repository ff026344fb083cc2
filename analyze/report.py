"""The terminal view of a sites table: the top sites in at most 100 columns."""

from __future__ import annotations

import os

from analyze.sites import SiteTable
from workflows.units import human

WIDTH = 100
# Frames from these places are the C library, the toolchain or the system; the
# innermost frame that is not is where the user's code asked for memory.
_SYSTEM_PREFIXES = ("/lib/", "/lib64/", "/usr/", "./", "../", "/build/", "??", "<")


def is_user_frame(frame: str) -> bool:
    f = frame.strip()
    return bool(f) and not f.startswith(_SYSTEM_PREFIXES)


def _short_frame(frame: str) -> str:
    """`/a/b/app.c:12` -> `app.c:12`; `/a/app+0x1188` -> `app+0x1188`."""
    f = frame.strip()
    return os.path.basename(f) if "/" in f else f


def short_site(callstack: str, width: int) -> str:
    """The chain from its innermost user frame outwards, file names without directories,
    cut to `width` characters (ending in '…' when cut)."""
    frames = [f for f in callstack.split(" > ") if f.strip()]
    if not frames:
        return "??"[:width]
    first = next((i for i, f in enumerate(frames) if is_user_frame(f)), 0)
    text = " > ".join(_short_frame(f) for f in frames[first:])
    if len(text) > width:
        text = text[:max(0, width - 1)] + "…"
    return text


def si(value: float) -> str:
    """3 significant digits with k/M/G/T: 1234567 -> '1.23M'."""
    v = float(value)
    for unit in ("", "k", "M", "G", "T"):
        if abs(v) < 999.5 or unit == "T":
            return f"{v:.0f}{unit}" if unit == "" or abs(v) >= 99.95 else f"{v:.3g}{unit}"
        v /= 1000
    return f"{v:.3g}P"


def top_table(sites: SiteTable, top: int, width: int = WIDTH) -> str:
    """The first `top` rows of `sites` (already sorted) as a text table."""
    per_rank = "rank" in sites.columns
    head = f"{'site':>5}  {'weight':>7}  {'share':>6}  {'peak':>10}  {'allocs':>7}  "
    head += f"{'rank':>5}  " if per_rank else ""
    room = max(10, width - len(head) - len("call site"))
    lines = [head + "call site"]
    for row in sites.rows[:top]:
        line = (f"{row['site_id']:>5}  {si(row['weight']):>7}  {100 * row['share']:>5.1f}%  "
                f"{human(row['peak_live_bytes']):>10}  {row['n_allocs']:>7}  ")
        line += f"{row['rank']:>5}  " if per_rank else ""
        lines.append(line + short_site(row["callstack"], room + len("call site")))
    return "\n".join(lines)
