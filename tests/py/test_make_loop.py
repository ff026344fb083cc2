"""The loop README shows, on this host with nothing set by hand: make trace APP=...,
make advise MEM=64M, make rerun APP=... RESERVE=1 places the advised sites in this
host's fast tier (2 MiB hugepages here), checked by the run's residency statistics, and
the hugepage pool is as it was afterwards."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NR = Path("/proc/sys/vm/nr_hugepages")
APP = "./build/examples/latency -s 256 -n 4"   # ~0.5 s of kernel: ~100 samples


def make(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["make", "-s", "-C", str(ROOT), *args], capture_output=True,
                          text=True, timeout=600)


@pytest.mark.skipif(os.geteuid() != 0 or not NR.exists(),
                    reason="needs root and a hugepage pool (make rerun RESERVE=1)")
def test_trace_advise_rerun(tmp_path: Path) -> None:
    out = tmp_path / "latency"
    before = NR.read_text()
    assert make("trace", f"APP={APP}", f"OUT={out}").returncode == 0
    a = make("advise", "MEM=64M", f"OUT={out}")
    assert a.returncode == 0, a.stderr
    placement = (out / "placement.txt").read_text()
    # whole sites, or ranges of them (split lines: the chase array is over 64 MiB)
    nsites = placement.count("\nsite ") + placement.count("\nsplit ")
    assert "hugetlb" in placement and nsites
    r = make("rerun", f"APP={APP}", f"OUT={out}", "RESERVE=1")
    assert r.returncode == 0, r.stderr
    stats = json.loads((out / "run-stats.json").read_text())
    fast = stats["tiers"][0]
    assert fast["backend"] == "hugetlb" and fast["available"]
    assert fast["placed_blocks"] >= nsites and fast["not_fitting"] == 0
    res = fast["residency"]
    assert res["bytes_checked"] > 0 and res["bytes_intended"] == res["bytes_checked"]
    assert NR.read_text() == before
