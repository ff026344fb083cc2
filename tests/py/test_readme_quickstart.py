"""README's quick start, run as written (issue 44): the five `make` lines of "Your own
application in five lines", read from README.md, each on a real program. The only
changes: the program (`./myapp args` becomes the latency example), OUT= so that the
stage goes to a temporary directory instead of the checkout's hmtune-out/, and
REPEATS=2 on compare (its default is to measure until the intervals are within 3 %,
which is for users, not a test). Each step must succeed and leave its files; the
hugepage pool is as it was afterwards."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NR = Path("/proc/sys/vm/nr_hugepages")
APP = "./build/examples/latency -s 256 -n 2"
FOM = "kernel_time_s=([0-9.]+)"


def quick_start() -> list[list[str]]:
    """The make command lines of README's quick-start block, as argv lists."""
    text = (ROOT / "README.md").read_text()
    head = text.index("## Your own application in five lines")
    block = text[head:].split("```", 2)[1]
    lines = [ln.split("#", 1)[0].strip() for ln in block.splitlines()]
    return [shlex.split(ln) for ln in lines if ln.startswith("make ")]


def test_the_block_is_five_make_lines() -> None:
    steps = quick_start()
    assert [s[1] for s in steps] == ["trace", "advise", "rerun", "compare", "report"]
    assert all(any(a.startswith("APP=") for a in s) for s in steps if s[1] in
               ("trace", "rerun", "compare"))


@pytest.mark.skipif(os.geteuid() != 0 or not NR.exists(),
                    reason="needs root and a hugepage pool (RESERVE=1, compare's reservation)")
def test_the_quick_start_runs_as_written(tmp_path: Path) -> None:
    out = tmp_path / "stage"
    before = NR.read_text()
    for step in quick_start():
        argv = [re.sub(r"^APP=.*", f"APP={APP}", a) for a in step]
        argv += [f"OUT={out}"] + (["REPEATS=2", f"FOM={FOM}"] if step[1] == "compare" else [])
        r = subprocess.run(["make", "-s", "-C", str(ROOT), *argv[1:]], capture_output=True,
                           text=True, timeout=1200)
        assert r.returncode == 0, (step, r.stderr[-2000:])
    for f in ("trace.prv", "sites.csv", "placement.txt", "run-stats.json",
              "compare/summary.csv", "report/report.md"):
        assert (out / f).is_file(), f
    assert NR.read_text() == before
