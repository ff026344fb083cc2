"""Test helper: small Paraver traces written by hand, hmtune-prvscan run on them, its
outputs read back, and a direct computation of the per-(task, site) lifetime facts
(the sweep of DESIGN.md §4's definitions, written for clarity, not speed) to compare
the scanner's streaming answers with.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analyze.scan_io import Row, Scan, read_scan
from analyze.scanner import scanner_bin

# event types (docs/formats.md §3)
CALL, SIZE, PTR_IN, PTR_OUT, SITE = 40000040, 40000041, 40000042, 40000043, 32000009
LOAD, STORE, HIT, OBJECT, WEIGHT = 32000000, 32000001, 32000003, 32000007, 41000020
MALLOC, FREE, REALLOC = 1, 2, 3


@dataclass
class Trace:
    """Records of a trace; written sorted by time (file order kept at equal times).

    Tasks and threads are 1-based. A call is two event lines: its entry at t and its
    end at t + dur.
    """

    ntasks: int = 1
    nthreads: int = 1
    end: int | None = None               # header end time; default: last time + 1
    records: list[tuple[int, str]] = field(default_factory=list)

    def event(self, t: int, *pairs: int, task: int = 1, thread: int = 1) -> None:
        cpu = (task - 1) * self.nthreads + thread
        body = ":".join(str(v) for v in pairs)
        self.records.append((t, f"2:{cpu}:1:{task}:{thread}:{t}:{body}"))

    def malloc(self, t: int, size: int, site: int, ptr: int, task: int = 1, thread: int = 1,
               dur: int = 1) -> None:
        self.event(t, CALL, MALLOC, SIZE, size, SITE, site, task=task, thread=thread)
        self.event(t + dur, CALL, 0, PTR_OUT, ptr, task=task, thread=thread)

    def free(self, t: int, ptr: int, task: int = 1, thread: int = 1, dur: int = 1) -> None:
        self.event(t, CALL, FREE, PTR_IN, ptr, task=task, thread=thread)
        self.event(t + dur, CALL, 0, task=task, thread=thread)

    def realloc(self, t: int, ptr_in: int, size: int, site: int, ptr_out: int, task: int = 1,
                thread: int = 1, dur: int = 1) -> None:
        self.event(t, CALL, REALLOC, SIZE, size, SITE, site, PTR_IN, ptr_in, task=task,
                   thread=thread)
        self.event(t + dur, CALL, 0, PTR_OUT, ptr_out, task=task, thread=thread)

    def sample(self, t: int, addr: int, weight: int, store: bool = False, miss: bool = False,
               obj: int | None = None, task: int = 1, thread: int = 1) -> None:
        pairs = [STORE if store else LOAD, addr, HIT, 2 if miss else 1]
        pairs += [OBJECT, obj] if obj is not None else []
        self.event(t, *pairs, WEIGHT, weight, task=task, thread=thread)

    def text(self) -> str:
        last = max((t for t, _ in self.records), default=0)
        end = self.end if self.end is not None else last + 1
        tasks = ",".join(f"{self.nthreads}:1" for _ in range(self.ntasks))
        header = (f"#Paraver (01/01/2026 at 00:00):{end}_ns:1({self.ntasks * self.nthreads}):1:"
                  f"{self.ntasks}({tasks}),0")
        lines = [line for _, line in sorted(self.records, key=lambda r: r[0])]
        return "\n".join([header, *lines]) + "\n"

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.text())
        return path


def run_scan(trace: Trace | Path, tmp: Path, name: str = "trace.prv") -> Scan:
    """Run the scanner on `trace` (written to tmp/name when a Trace) into tmp/scan."""
    prv = trace.write(tmp / name) if isinstance(trace, Trace) else trace
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
