"""`hmtune compare` on the latency example's quick configuration: every variant runs
the requested number of times, the results are kept as they come and not redone,
--force redoes them, and bad input stops it with a clear exit status."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from advisefix import STANDARD, write_sites
from clistage import CRASH, FOM, LATENCY, THP, hmtune, latency_stage, rows


@pytest.fixture(scope="module")
def stage(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return latency_stage(tmp_path_factory.mktemp("cmp") / "latency")


def compare(d: Path, *extra: str, app: tuple[str, ...] = (str(LATENCY), "-q")
            ) -> subprocess.CompletedProcess[str]:
    return hmtune("compare", "-o", str(d), "--machine", str(THP), "--repeats", "2",
                  "--strategies", "ilp,density", "--fom", FOM, *extra, "--", *app)


def test_variants_runs_and_resume(stage: Path) -> None:
    r = compare(stage)
    assert r.returncode == 0, r.stderr
    runs = rows(stage / "compare" / "runs.csv")
    names = ["all-slow", "first-come", "size-window", "ilp", "density"]
    assert sorted((x["variant"], x["repeat"]) for x in runs) == sorted(
        (n, str(k)) for n in names for k in range(2))
    assert all(float(x["fom"]) > 0 for x in runs)
    by = {x["variant"]: x for x in runs}
    assert by["all-slow"]["fast_bytes"] == "0"
    for n in names[1:]:                         # every other variant used the fast tier
        assert int(by[n]["fast_bytes"]) > 0, n
    summary = {x["variant"]: x for x in rows(stage / "compare" / "summary.csv")}
    assert list(summary) == names
    assert float(summary["all-slow"]["speedup"]) == 1.0
    assert all(x["runs"] == "2" for x in summary.values())
    # again: nothing is run (the runs file is the same, byte for byte)
    before = (stage / "compare" / "runs.csv").read_bytes()
    assert compare(stage).returncode == 0
    assert (stage / "compare" / "runs.csv").read_bytes() == before
    # another configuration is not mixed in without --force
    other = compare(stage, "--mem", "4M")
    assert other.returncode == 2 and (stage / "compare" / "runs.csv").read_bytes() == before
    # --force redoes every run
    assert compare(stage, "--force").returncode == 0
    again = rows(stage / "compare" / "runs.csv")
    assert len(again) == len(runs) and [x["wall_s"] for x in again] != [x["wall_s"] for x in runs]


def test_failing_application(stage: Path, tmp_path: Path) -> None:
    d = tmp_path / "crash"
    d.mkdir()
    shutil.copy(stage / "sites.csv", d / "sites.csv")
    r = compare(d, app=(str(CRASH), "exit3"))
    assert r.returncode == 1
    assert not (d / "compare" / "runs.csv").exists()         # no run was recorded


def test_bad_input(stage: Path, tmp_path: Path) -> None:
    assert hmtune("compare", "-o", str(stage)).returncode == 2             # no application
    assert compare(tmp_path).returncode == 2                               # no sites.csv
    assert compare(stage, app=(str(tmp_path / "nope"),)).returncode == 127
    assert compare(stage, "--fom", "(").returncode == 2
    assert compare(stage, "--strategies", "best").returncode == 2
    assert compare(stage, "--repeats", "0").returncode == 2
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    shutil.copy(stage / "sites.csv", blocked / "sites.csv")
    (blocked / "compare").write_text("a file where the results directory goes")
    assert compare(blocked).returncode == 2
    assert hmtune("compare", "--help").returncode == 0


@pytest.mark.parametrize("value", ["nan", "2", "0", "-0.5", "inf", "x"])
def test_fraction_out_of_range(tmp_path: Path, value: str) -> None:
    """--fraction (compare's and explore's) is a number in (0, 1]: anything else is a
    usage error before anything runs or is written."""
    d = tmp_path / "stage"
    write_sites(d / "sites.csv", STANDARD)
    for what in ("compare", "explore"):
        r = hmtune(what, "-o", str(d), "--machine", str(THP), "--repeats", "1",
                   "--fraction", value, "--", str(CRASH), "exit3")
        assert r.returncode == 2, (what, r.stderr)
        assert sorted(p.name for p in d.iterdir()) == ["sites.csv"]


def test_footprint_is_one_process(tmp_path: Path) -> None:
    """--fraction sizes a per-process tier: with one row per (site, rank) the footprint
    is the largest rank's sum, not the sum over ranks."""
    from workflows.compare import footprint

    p = tmp_path / "sites.csv"
    p.write_text("# hmtune sites v1\nsite_id,peak_live_bytes,rank\n"
                 "1,100,0\n2,50,0\n1,300,1\n2,20,1\n")
    assert footprint(p) == 320
    p.write_text("# hmtune sites v1\nsite_id,peak_live_bytes\n1,100\n2,50\n")
    assert footprint(p) == 150


def test_memkind_tier_keeps_stdout(stage: Path, tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """first-come places stdio's buffer; on a memkind tier it used to be zeroed by
    libmemkind's finalizer before libc flushed it, so the FOM was never found."""
    monkeypatch.setenv("MEMKIND_HBW_NODES", "0")        # no HBM here: node 0 stands in
    machine = tmp_path / "hbw.toml"
    machine.write_text('name = "hbw-on-node0"\n'
                       '[[tier]]\nname = "hbw"\ncapacity = "64M"\n'
                       'backend = "memkind:MEMKIND_HBW"\nload_cost = 1.0\nstore_cost = 1.0\n'
                       '[[tier]]\nname = "ddr"\ncapacity = "unlimited"\nbackend = "default"\n'
                       'load_cost = 1.5\nstore_cost = 1.5\n')
    d = tmp_path / "mk"
    d.mkdir()
    shutil.copy(stage / "sites.csv", d / "sites.csv")
    shutil.copy(stage / "allocs.csv", d / "allocs.csv")
    r = hmtune("compare", "-o", str(d), "--machine", str(machine), "--repeats", "1",
               "--strategies", "ilp", "--fom", FOM, "--", str(LATENCY), "-q")
    assert r.returncode == 0, r.stderr
    runs = {x["variant"]: x for x in rows(d / "compare" / "runs.csv")}
    assert set(runs) == {"all-slow", "first-come", "size-window", "ilp"}
    assert all(float(x["fom"]) > 0 for x in runs.values())
    assert int(runs["first-come"]["fast_bytes"]) > 0
