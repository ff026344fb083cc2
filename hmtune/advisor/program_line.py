"""placement.txt's `program PATH` line: which program a trace's allocations belong to
(the trace's summary), for `hmtune advise` to write (docs/formats.md §5)."""

from __future__ import annotations

import json
from pathlib import Path

from hmtune.core.placement import program_ok

HELPER_SHARE = 0.05     # heap samples a program beside the traced one may have


def traced_program(sites: Path, trace: str = "") -> str:
    """The program whose allocations a trace holds, for the `program` line: the one
    executable among the traced processes that allocated (the trace's summary,
    NAME.summary.json next to the trace, or trace.summary.json next to sites.csv), or
    when several did, the one whose processes hold all but HELPER_SHARE of their
    sampled heap accesses (a script's shell and checksum tools beside its application);
    "" when there is no summary (an Extrae trace), or several such programs (a
    script that runs two), or a path the line cannot carry."""
    names = ["trace.summary.json"]
    if trace:
        stem = Path(trace).name.removesuffix(".gz").removesuffix(".prv")
        names.insert(0, f"{stem}.summary.json")
    dirs = [sites.parent]
    if trace and Path(trace).is_file():          # as analyze was given it
        dirs.insert(0, Path(trace).parent)
    for d in dirs:
        for name in names:
            try:
                summary = json.loads((d / name).read_text())
            except (OSError, ValueError):
                continue
            procs = summary.get("processes") if isinstance(summary, dict) else None
            alloc = [p for p in procs or [] if isinstance(p, dict)
                     and isinstance(p.get("allocs"), int) and p["allocs"] > 0]
            exes = {p.get("exe") for p in alloc}
            exe = exes.pop() if len(exes) == 1 else _dominant(alloc)
            return exe if isinstance(exe, str) and program_ok(exe) else ""
    return ""


def _dominant(procs: list[dict]) -> object:
    """The exe whose processes hold all but HELPER_SHARE of the heap samples, or None."""
    heap: dict[object, int] = {}
    for p in procs:
        samples = p.get("samples")
        n = samples.get("heap") if isinstance(samples, dict) else 0
        heap[p.get("exe")] = heap.get(p.get("exe"), 0) + (n if isinstance(n, int) else 0)
    total = sum(heap.values())
    top = max(heap, key=lambda e: heap[e]) if heap else None
    return top if total > 0 and heap[top] >= (1 - HELPER_SHARE) * total else None
