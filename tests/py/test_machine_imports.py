"""`hmtune machine` and `hmtune run` load neither pandas nor numpy: what they import is
hmtune.core, hmtune.machine and the light parts of the advisor and workflows
(docs/architecture.md). Each command runs as the user runs it (bin/hmtune, in a
subprocess) with Python's import timing on (PYTHONPROFILEIMPORTTIME, `-X importtime`),
which names every module the process imports on stderr."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from hmtune.core.placement import PlacementFile, SiteLine, TierLine, write_placement

ROOT = Path(__file__).resolve().parents[2]
HMTUNE = ROOT / "bin" / "hmtune"
TOPOLOGY = ROOT / "tests" / "topologies" / "xeon-max-9468-flat-quadrant"
HEAVY = ("pandas", "numpy")


def imported(cmd: list[str], cwd: Path) -> tuple[subprocess.CompletedProcess, set[str]]:
    """Run an hmtune command; its result and the top-level packages the hmtune process
    imported."""
    env = {k: v for k, v in os.environ.items() if k != "HMTUNE_HOST_ROOT"}
    r = subprocess.run([str(HMTUNE), *cmd], capture_output=True, text=True, timeout=300,
                       cwd=cwd, env=dict(env, PYTHONPROFILEIMPORTTIME="1"))
    names = set()
    for line in r.stderr.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            names.add(line.rpartition("|")[2].strip().partition(".")[0])
    assert "hmtune" in names, r.stderr[-2000:]       # the timing is there
    return r, names


@pytest.mark.parametrize("args", [[], ["--toml"], ["--root", str(TOPOLOGY)],
                                  ["--root", str(TOPOLOGY), "--toml"]],
                         ids=["page", "toml", "recorded", "recorded-toml"])
def test_machine_loads_no_pandas(tmp_path: Path, args: list[str]) -> None:
    r, names = imported(["machine", *args], tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert not names & set(HEAVY), sorted(names & set(HEAVY))


def test_run_help_loads_no_pandas(tmp_path: Path) -> None:
    r, names = imported(["run", "--help"], tmp_path)
    assert r.returncode == 0 and "--reserve-hugepages" in r.stdout
    assert not names & set(HEAVY), sorted(names & set(HEAVY))


def test_run_loads_no_pandas(tmp_path: Path) -> None:
    """A run that reads a placement, checks its tier against this host (detected) and
    starts the program."""
    pf = PlacementFile(tiers=[TierLine("fast", "thp", 1 << 30),
                              TierLine("slow", "default", None)],
                       depth=1, size_window=(4096, 4096),
                       sites=[SiteLine("fast", "/bin/true+0x1000", "size 4096")])
    write_placement(tmp_path / "placement.txt", pf)
    r, names = imported(["run", "-o", str(tmp_path), "--allow-unplaced", "--",
                         "/bin/true"], tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert {"hmtune"} <= names and not names & set(HEAVY), sorted(names & set(HEAVY))
