"""Test helper: small Paraver traces written by hand, hmtune-prvscan run on them, its
outputs read back, and a direct computation of the per-(task, site) lifetime facts
(the sweep of DESIGN.md §4's definitions, written for clarity, not speed) to compare
the scanner's streaming answers with.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prvtext import PrvText

from hmtune.analyze.scan_io import Row, Scan, read_scan
from hmtune.analyze.scanner import scanner_bin


@dataclass
class Trace(PrvText):
    """PrvText with short calls (entry at t, end at t + 1 unless told otherwise) and
    samples that always say hit or miss, as the lifetime tests expect."""

    dur: int = 1

    def malloc(self, t: int, size: int, site: int, ptr: int, task: int = 1, thread: int = 1,
               dur: int | None = None) -> None:
        self.alloc(t, size, site, ptr, task=task, thread=thread, dur=dur)

    def sample(self, t: int, addr: int, weight: int = 1, store: bool = False,
               obj: int | None = None, task: int = 1, thread: int = 1,
               hit: int | None = None, miss: bool = False) -> None:
        super().sample(t, addr, weight, store=store, obj=obj, task=task, thread=thread,
                       hit=hit if hit is not None else 2 if miss else 1)


def run_scan(trace: Trace | Path, tmp: Path, name: str = "trace.prv") -> Scan:
    """Run the scanner on `trace` (written to tmp/name when a Trace) into tmp/scan."""
    if isinstance(trace, Trace):
        prv = tmp / name
        prv.parent.mkdir(parents=True, exist_ok=True)
        prv.write_text(trace.text())
    else:
        prv = trace
    out = tmp / "scan"
    r = subprocess.run([str(scanner_bin()), str(prv), "-o", str(out)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return read_scan(out)


def site_row(scan: Scan, site: int, task: int = 1) -> Row:
    (row,) = (r for r in scan.sites if r["site_id"] == site and r["task"] == task)
    return row


def alloc_lines(scan: Scan) -> list[str]:
    """allocs.csv's rows (after the version line and the header)."""
    assert scan.allocs_csv is not None
    return scan.allocs_csv.read_text().splitlines()[2:]


@dataclass
class Block:
    task: int
    site: int
    size: int
    t_alloc: int
    t_free: int = -1                     # -1: never freed


def reference_lifetimes(blocks: list[Block], end: int) -> dict[tuple[int, int], dict[str, Any]]:
    """Per (task, site): the lifetime columns, from their definitions.

    A block is live on [t_alloc, t_end) with t_end its free, or `end` when never freed,
    clamped to t_alloc. peak_live_bytes: the most bytes live at any time; live_ns: the
    measure of the union of the intervals.
    """
    groups: dict[tuple[int, int], list[tuple[int, int, int]]] = {}
    for b in blocks:
        t_end = max(b.t_alloc, end if b.t_free < 0 else b.t_free)
        groups.setdefault((b.task, b.site), []).append((b.t_alloc, t_end, b.size))
    out: dict[tuple[int, int], dict[str, Any]] = {}
    for key, ivs in groups.items():
        times = sorted({t for a, e, _ in ivs for t in (a, e)})
        peak = live_ns = 0
        for i, t in enumerate(times):
            live = [size for a, e, size in ivs if a <= t < e]
            peak = max(peak, sum(live))
            if live and i + 1 < len(times):
                live_ns += times[i + 1] - t
        out[key] = {"n_allocs": len(ivs), "max_size": max(s for _, _, s in ivs),
                    "peak_live_bytes": peak, "total_bytes": sum(s for _, _, s in ivs),
                    "first_alloc_ns": min(a for a, _, _ in ivs),
                    "last_free_ns": max(e for _, e, _ in ivs), "live_ns": live_ns}
    return out
