"""Running `bin/hmtune` from tests, and a traced-and-analyzed stage directory of the
latency example's quick configuration (for the workflow commands built on one)."""

from __future__ import annotations

import csv
import subprocess
from pathlib import Path

from hmtune.core.placement import PlacementFile, static_line

ROOT = Path(__file__).resolve().parent.parent.parent
HMTUNE = ROOT / "bin" / "hmtune"
LATENCY = ROOT / "build" / "examples" / "latency"
THP = ROOT / "configs" / "machines" / "vm-thp.toml"
HUGETLB = ROOT / "configs" / "machines" / "vm-hugetlb.toml"
CRASH = ROOT / "build" / "tests" / "programs" / "crash"     # `crash exit3`: exits 3
FOM = "kernel_time_s=([0-9.]+)"                              # the examples' kernel time


def hmtune(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(HMTUNE), *args], capture_output=True, text=True, timeout=600)


def latency_stage(d: Path) -> Path:
    """d/ holding the trace, sites.csv and allocs.csv of `latency -q`."""
    assert hmtune("trace", "-q", "-o", str(d), "--", str(LATENCY), "-q").returncode == 0
    assert hmtune("analyze", str(d)).returncode == 0
    return d


def rows(path: Path) -> list[dict[str, str]]:
    """A CSV file's rows (runs.csv, summary.csv, placements.csv)."""
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def assert_places(pf: PlacementFile, chains: set[str]) -> None:
    """pf (a placement made from sites.csv rows with these callstack_raw) places every
    heap chain as a site line, and only those; a static variable among them may be a
    static line (when a whole page of the tier's backend lies inside it) or absent, as
    the latency example's libc statics are sampled in some runs and not in others."""
    heap = {c for c in chains if static_line("x", c) is None}
    assert {s.chain for s in pf.sites} == heap
    assert {s.raw for s in pf.statics} <= chains - heap
