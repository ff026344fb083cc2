"""The Done-when check of issue 43 on a real trace: tests/programs/kinds has a streamed,
a chased and a lock array of similar sampled time; traced with the software sampler
and analyzed, the kinds sites.csv gives them make the Xeon Max file value the streamed
array most and the lock array (almost) nothing, and the hugepage file the chased array
most."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from tracemodel import HMTUNE, PROGRAMS, ROOT

from hmtune.advisor.inputs import build_problem, load_sites
from hmtune.core.units import GIB
from hmtune.machine.machinefile import load_machine, with_fast_capacity

APP = PROGRAMS / "kinds"
SRC = ROOT / "tests" / "programs" / "kinds.c"
MACHINES = ROOT / "configs" / "machines"


def soft_sampler_runs() -> bool:
    return subprocess.run([str(ROOT / "build" / "bin" / "hmtune-probe"), "soft"],
                          capture_output=True).returncode == 0


def marker(name: str) -> str:
    for n, line in enumerate(SRC.read_text().splitlines(), 1):
        if f"SITE:{name} " in line:
            return f"kinds.c:{n}"
    raise AssertionError(f"no SITE:{name} in {SRC}")


@pytest.fixture(scope="module")
def stage(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not soft_sampler_runs():
        pytest.skip("the software sampler cannot run here")
    d = tmp_path_factory.mktemp("kinds") / "out"
    r = subprocess.run([str(HMTUNE), "trace", "-q", "--sampler", "soft", "-o", str(d), "--",
                        str(APP)], capture_output=True, timeout=600)
    assert r.returncode == 0, r.stderr
    a = subprocess.run([str(HMTUNE), "analyze", str(d)], capture_output=True, timeout=600)
    assert a.returncode == 0, a.stderr
    return d


def values(stage: Path, machine: str) -> dict[str, float]:
    """Each array's access value in the machine's fast tier (room for all three)."""
    sites = load_sites(stage / "sites.csv")
    tiers = with_fast_capacity(load_machine(MACHINES / machine), GIB).tiers
    p = build_problem(sites, tiers)
    v = p.access_values()[:, 0]
    labels = sites.table["callstack"].str.split(" > ").str[0]
    out = {}
    for name in ("streamed", "chased", "locks"):
        (i,) = (k for k, lab in enumerate(labels) if lab.endswith(marker(name)))
        out[name] = float(v[i])
    return out


def test_hbm_values_the_streamed_array_most_and_the_locks_nothing(stage: Path) -> None:
    v = values(stage, "xeon-max-9468-flat-quadrant.toml")
    assert v["streamed"] > 2 * max(v["chased"], v["locks"])
    assert v["locks"] < 0.2 * v["streamed"]


def test_hugepages_value_the_chased_array_most(stage: Path) -> None:
    v = values(stage, "vm-hugetlb.toml")
    assert v["chased"] > 2 * max(v["streamed"], v["locks"])
