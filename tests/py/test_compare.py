"""`hmtune compare` on the latency example's quick configuration: every variant runs
the requested number of times, the results are kept as they come and not redone,
--force redoes them, and bad input stops it with a clear exit status."""

from __future__ import annotations

import contextlib
import csv
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from advisefix import STANDARD, write_sites
from clistage import (
    CRASH,
    FOM,
    HMTUNE,
    HUGETLB,
    LATENCY,
    THP,
    assert_places,
    hmtune,
    latency_stage,
    rows,
)

from hmtune.core.stage import footprint
from hmtune.workflows.measure import SECOND


@pytest.fixture(scope="module")
def stage(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return latency_stage(tmp_path_factory.mktemp("cmp") / "latency")


def compare(d: Path, *extra: str, app: tuple[str, ...] = (str(LATENCY), "-q")
            ) -> subprocess.CompletedProcess[str]:
    return hmtune("compare", "-o", str(d), "--machine", str(THP), "--repeats", "2",
                  "--strategies", "ilp,density", "--fom", FOM, *extra, "--", *app)


NAMES = ["all-slow", "first-come", "size-window", "ilp", "density", "all-fast"]
AGAIN = "all-slow" + SECOND           # the reference's second run of each round


def test_variants_runs_and_resume(stage: Path) -> None:
    r = compare(stage)
    assert r.returncode == 0, r.stderr
    runs = rows(stage / "compare" / "runs.csv")
    assert sorted((x["variant"], x["repeat"]) for x in runs) == sorted(
        (n, str(k)) for n in NAMES + [AGAIN] for k in range(2))
    assert all(float(x["fom"]) > 0 and x["rc"] == "0" for x in runs)
    # every run's resources: the application's own (hmtune-rusage), not Python's
    for x in runs:
        assert float(x["wall_s"]) > 0 and float(x["user_s"]) + float(x["sys_s"]) > 0, x
        assert int(x["minflt"]) > 0 and int(x["majflt"]) >= 0 and int(x["hugepages"]) >= 0
        assert 0 < int(x["maxrss_kib"]) < 60 << 10, x        # latency -q: about 18 MiB
    by = {x["variant"]: x for x in runs}
    assert by["all-slow"]["fast_bytes"] == "0" and by["all-slow"]["hugepages"] == "0"
    for n in NAMES[1:]:                         # every other variant used the fast tier
        assert int(by[n]["fast_bytes"]) > 0, n
    # all-fast: every site with a chain in the fast tier, room for all
    from hmtune.core.placement import read_placement

    pf = read_placement(stage / "compare" / "all-fast" / "placement.txt")
    chains = {x["callstack_raw"] for x in csv_rows(stage / "sites.csv") if x["callstack_raw"]}
    assert_places(pf, chains)
    assert pf.tiers[0].name == "thp"
    assert (pf.tiers[0].capacity or 0) >= footprint(stage / "sites.csv")
    # run without call-site matching: every request, whatever its site
    for st in (stage / "compare" / "all-fast").glob("stats.*.json"):
        assert json.loads(st.read_text())["baseline"] == "all"
    assert list((stage / "compare" / "all-fast").glob("stats.*.json"))
    summary = {x["variant"]: x for x in rows(stage / "compare" / "summary.csv")}
    assert list(summary) == NAMES
    assert float(summary["all-slow"]["speedup"]) == 1.0
    assert summary["all-slow"]["verdict"] == "reference"
    assert all(x["runs"] == "2" for x in summary.values())
    for n, x in summary.items():
        lo, s, hi = float(x["speedup_lo"]), float(x["speedup"]), float(x["speedup_hi"])
        assert lo <= s <= hi, n
        want = "faster" if lo > 1 else "slower" if hi < 1 else \
            "indistinguishable from all-slow"
        assert x["verdict"] == (want if n != "all-slow" else "reference"), n
        # dFOM/MiB: positive exactly when faster (a time here); the speedup is written
        # to 3 decimals, so within 0.0005 of 1 its sign is the unrounded one's
        if n != "all-slow" and abs(s - 1) >= 1e-3:
            assert (float(x["dfom_per_mib"]) > 0) == (s > 1), n
        assert float(x["minflt"]) > 0 and float(x["maxrss_mib"]) > 0
    up = summary["all-fast"]
    if up["share_of_gain"]:                     # all-fast measurably faster: shares
        assert float(up["share_of_gain"]) == 1.0
        s_all = float(up["speedup"])
        # speedups are written to 3 decimals: (s - 1) / (s_all - 1) from them is off by up
        # to about 0.001 / (s_all - 1), much more than 0.02 when all-fast gains little
        tol = 0.02 + 0.0011 / (s_all - 1)
        for n, x in summary.items():
            assert float(x["share_of_gain"]) == pytest.approx(
                (float(x["speedup"]) - 1) / (s_all - 1), abs=tol), n
    res = json.loads((stage / "compare" / "result.json").read_text())
    assert res["stopped_by"] == "repeats" and res["rounds"] == 2
    # the calibration: k and m fitted on all-fast's and the strategies' measured speedups,
    # and each strategy predicted from the others' alone
    from hmtune.advisor import predict
    from hmtune.workflows.calibrate import stage_problem, tier_of

    cal = predict.read_calibration(stage / "calibration.json")
    up = summary["all-fast"]
    assert cal.rounds == 2 and cal.backend == "thp"
    assert cal.measured == pytest.approx(float(up["speedup"]), rel=2e-3)
    assert [p.variant for p in cal.points] == ["all-fast", "ilp", "density"]
    problem, _, chains = stage_problem(stage / "sites.csv", THP)
    run = predict.as_run_all_fast(problem)
    g_all, c_all, _ = predict.parts(run, predict.all_fast(run))
    assert (cal.points[0].gain, cal.points[0].calls) == pytest.approx((g_all, c_all))
    for p in cal.points:
        assert p.measured == pytest.approx(float(summary[p.variant]["speedup"]), rel=2e-3)
    assert cal.k_lo <= cal.k <= cal.k_hi and cal.k >= 0
    assert cal.call_scale_lo <= cal.call_scale <= cal.call_scale_hi
    assert sorted(res["predicted"]) == ["density", "ilp"]
    for n in ("ilp", "density"):
        tier = tier_of(problem, chains, stage / "compare" / n / "placement.txt")
        others = predict.calibration([p for p in cal.points if p.variant != n], cal.trace_id,
                                     cal.sampler, cal.backend, cal.load_cost,
                                     cal.fallback_cost, cal.rounds, cal.source)
        p = predict.predict(problem, tier, others)
        assert res["predicted"][n] == pytest.approx([p.speedup, p.lo, p.hi], abs=1e-4)
        assert p.lo <= p.speedup <= p.hi
    assert res["upper_bound"] == "all-fast" and "bootstrap" in res["method"]
    assert res["split_over_whole"] == []         # no strategy's -whole twin was measured
    # the best strategy over the best baseline, paired round by round
    vs = res["advisor_over_baseline"]
    speed = {n: float(x["speedup"]) for n, x in summary.items()}
    # the fastest by the unrounded speedup: within summary.csv's 3 decimals it is one of
    # those that round to the greatest
    assert speed[vs["strategy"]] == max(speed[n] for n in ("ilp", "density"))
    assert speed[vs["baseline"]] == max(speed[n] for n in ("first-come", "size-window"))
    fom = {(x["variant"], x["repeat"]): float(x["fom"]) for x in runs}
    ratios = [fom[(vs["baseline"], i)] / fom[(vs["strategy"], i)] for i in ("0", "1")]
    assert vs["speedup"] == pytest.approx((ratios[0] * ratios[1]) ** 0.5, rel=1e-3)
    assert vs["lo"] <= vs["speedup"] <= vs["hi"]
    assert "speedup [95 % interval]" in r.stdout and "minor faults" in r.stdout
    assert "2 rounds (--repeats 2)" in r.stdout
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


def csv_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def copy_stage(stage: Path, d: Path) -> Path:
    d.mkdir(parents=True)
    for f in ("sites.csv", "allocs.csv"):
        shutil.copy(stage / f, d / f)
    return d


def test_one_round_warmup_and_pinning(stage: Path, tmp_path: Path) -> None:
    """--repeats 1: every speedup unsupported (no interval); --warmup runs all-slow once
    more, unrecorded; --pin runs the application on those CPUs only."""
    d = copy_stage(stage, tmp_path / "one")
    app = ("/bin/sh", "-c", "grep Cpus_allowed_list /proc/self/status")
    r = hmtune("compare", "-o", str(d), "--machine", str(THP), "--repeats", "1",
               "--strategies", "ilp", "--warmup", "--pin", "0", "--", *app)
    assert r.returncode == 0, r.stderr
    runs = rows(d / "compare" / "runs.csv")
    assert sorted(x["repeat"] for x in runs) == ["0"] * 6      # all-slow twice
    assert (d / "compare" / "all-slow" / "run.warmup.log").is_file()
    for x in runs:
        log = (d / "compare" / x["variant"] / "run.0.log").read_text()
        assert re.search(r"Cpus_allowed_list:\s+0$", log, re.M), log
    for x in rows(d / "compare" / "summary.csv"):
        assert x["speedup_lo"] == x["speedup_hi"] == "" or x["variant"] == "all-slow"
        assert x["verdict"] in ("reference", "unsupported (1 round: no interval)")
    assert "1 round (--repeats 1): no interval, every speedup is unsupported" in r.stdout
    assert json.loads((d / "compare" / "result.json").read_text())["rounds"] == 1


def test_auto_ends_at_the_budget_or_the_target(stage: Path, tmp_path: Path) -> None:
    """--repeats auto (the default) says what ended it: a budget too small for more than
    the two rounds an interval needs, or a target every interval meets."""
    d = copy_stage(stage, tmp_path / "auto")
    r = hmtune("compare", "-o", str(d), "--machine", str(THP), "--strategies", "ilp",
               "--fom", FOM, "--budget", "0.01s", "--", str(LATENCY), "-q")
    assert r.returncode == 0, r.stderr
    res = json.loads((d / "compare" / "result.json").read_text())
    assert res["stopped_by"] == "budget" and res["rounds"] == 2 and res["repeats"] == "auto"
    assert "budget ran out" in r.stdout and "fewer than the 5 the target needs" in r.stdout
    r = hmtune("compare", "-o", str(d), "--machine", str(THP), "--strategies", "ilp",
               "--fom", FOM, "--target", "99", "--min-rounds", "3", "--budget", "5m", "--",
               str(LATENCY), "-q")
    assert r.returncode == 0, r.stderr
    res = json.loads((d / "compare" / "result.json").read_text())
    assert res["stopped_by"] == "target" and res["rounds"] >= 3
    summary = rows(d / "compare" / "summary.csv")
    assert all(float(x["halfwidth"]) <= 0.99 for x in summary)
    assert all(x["runs"] == str(res["rounds"]) for x in summary)
    assert "every speedup's 95 % interval is within +-99 %" in r.stdout


def test_exit_status_is_compared_with_all_slow(stage: Path, tmp_path: Path) -> None:
    """An application that always exits 3 is compared (every run exits as all-slow's);
    one that exits otherwise under the interposer stops the comparison, unless --ok-rc
    accepts that status."""
    d = copy_stage(stage, tmp_path / "rc3")
    r = hmtune("compare", "-o", str(d), "--machine", str(THP), "--repeats", "1",
               "--strategies", "ilp", "--", str(CRASH), "exit3")
    assert r.returncode == 0, r.stderr
    assert {x["rc"] for x in rows(d / "compare" / "runs.csv")} == {"3"}
    d = copy_stage(stage, tmp_path / "rc4")
    app = ("/bin/sh", "-c", 'test -z "$LD_PRELOAD" || exit 4')
    r = hmtune("compare", "-o", str(d), "--machine", str(THP), "--repeats", "1",
               "--strategies", "ilp", "--", *app)
    assert r.returncode == 1
    assert "exit status 4 where all-slow exited 0 (--ok-rc 4 accepts it)" in r.stderr
    r = hmtune("compare", "-o", str(d), "--machine", str(THP), "--repeats", "1",
               "--strategies", "ilp", "--ok-rc", "4", "--", *app)
    assert r.returncode == 0, r.stderr
    assert {x["variant"]: x["rc"] for x in rows(d / "compare" / "runs.csv")}["ilp"] == "4"


def test_runs_of_an_earlier_hmtune_are_refused(stage: Path, tmp_path: Path) -> None:
    """runs.csv without the exit status and resource columns (and a config.json without
    runs_format) is refused with what to do; --force measures again."""
    d = copy_stage(stage, tmp_path / "old")
    (d / "compare").mkdir()
    (d / "compare" / "config.json").write_text('{"app": ["x"], "mem": 1}\n')
    (d / "compare" / "runs.csv").write_text(
        "variant,repeat,fom,wall_s,fast_bytes,fast_bytes_intended\nall-slow,0,1.5,1.6,0,0\n")
    r = compare(d)
    assert r.returncode == 2 and "earlier hmtune" in r.stderr and "--force" in r.stderr
    assert compare(d, "--force").returncode == 0
    assert "rc" in rows(d / "compare" / "runs.csv")[0]


def test_failing_application(stage: Path, tmp_path: Path) -> None:
    d = tmp_path / "crash"
    d.mkdir()
    shutil.copy(stage / "sites.csv", d / "sites.csv")
    r = compare(d, app=(str(CRASH), "segv"))
    assert r.returncode == 1 and "killed by SIGSEGV" in r.stderr
    assert not (d / "compare" / "runs.csv").exists()         # no run was recorded


def test_several_foms_give_their_geometric_mean(stage: Path, tmp_path: Path) -> None:
    def with_foms(name: str, second: str) -> tuple[Path, subprocess.CompletedProcess[str]]:
        d = tmp_path / name
        d.mkdir()
        shutil.copy(stage / "sites.csv", d / "sites.csv")
        return d, hmtune("compare", "-o", str(d), "--machine", str(THP), "--repeats", "1",
                         "--strategies", "ilp", "--fom", FOM, "--fom", second, "--",
                         str(LATENCY), "-q")

    d, r = with_foms("two", r"checksum=(\d+)")
    assert r.returncode == 0, r.stderr
    runs = rows(d / "compare" / "runs.csv")
    assert len(runs) == 6                  # all-slow twice
    for x in runs:
        log = (d / "compare" / x["variant"] / f"run.{x['repeat']}.log").read_text()
        kt = float(re.search(FOM, log)[1])
        cs = float(re.search(r"checksum=(\d+)", log)[1])
        assert float(x["fom"]) == pytest.approx((kt * cs) ** 0.5, rel=1e-6)
    # one pattern that matches nothing stops it at the first run, none recorded
    e, r = with_foms("none", r"gflops=(\d+)")
    assert r.returncode == 1 and not (e / "compare" / "runs.csv").exists()


def test_fom_anchors_match_at_each_line(stage: Path, tmp_path: Path) -> None:
    """^ and $ in --fom match at the start and end of every line of stdout, as grep's do."""
    shutil.copy(stage / "sites.csv", tmp_path / "sites.csv")
    r = hmtune("compare", "-o", str(tmp_path), "--machine", str(THP), "--repeats", "1",
               "--strategies", "ilp", "--fom", r"^checksum=(\d+)$", "--", "sh", "-c",
               f"{LATENCY} -q | tr ' ' '\\n'")
    assert r.returncode == 0, r.stderr
    for x in rows(tmp_path / "compare" / "runs.csv"):
        log = (tmp_path / "compare" / x["variant"] / f"run.{x['repeat']}.log").read_text()
        assert float(x["fom"]) == pytest.approx(float(re.search(r"checksum=(\d+)", log)[1]),
                                                rel=1e-6)


NR = Path("/proc/sys/vm/nr_hugepages")


def hugetlb_stage(stage: Path, d: Path) -> Path:
    """d holding the stage's sites.csv and allocs.csv (what sizes the pool), made."""
    d.mkdir()
    for f in ("sites.csv", "allocs.csv"):
        shutil.copy(stage / f, d / f)
    return d


@contextlib.contextmanager
def pool_of(pages: int) -> Iterator[None]:
    """The machine's hugepage pool set to `pages` while the block runs, then put back."""
    before = NR.read_text()
    NR.write_text(f"{pages}\n")
    try:
        yield
    finally:
        NR.write_text(before)


@pytest.mark.skipif(os.geteuid() != 0 or not NR.exists(), reason="needs root and hugepages")
def test_reserves_what_the_runs_need(stage: Path, tmp_path: Path) -> None:
    """--reserve-hugepages grows an empty pool by what the placements need (allocs.csv),
    not by the all-fast bound's loose capacity, and every all-fast block still lands in
    hugepages; the pool is put back."""
    from hmtune.core.placement import read_placement
    from hmtune.workflows.harness import all_margin, pool_need

    d = hugetlb_stage(stage, tmp_path / "huge")
    with pool_of(0):
        r = hmtune("compare", "-o", str(d), "--machine", str(HUGETLB), "--repeats", "1",
                   "--strategies", "ilp", "--fom", FOM, "--reserve-hugepages", "--",
                   str(LATENCY), "-q")
        assert r.returncode == 0, r.stderr
        assert NR.read_text() == "0\n"
    tier = json.loads((d / "compare" / "all-fast" / "stats.0.json").read_text())["tiers"][0]
    assert tier["placed_blocks"] > 1
    assert tier["map_failed"] == 0 and tier["not_fitting"] == 0, tier    # nothing refused
    assert json.loads((d / "compare" / "result.json").read_text())["short_of_tier"] == []
    assert {x["not_fitting"] for x in rows(d / "compare" / "runs.csv")
            if x["variant"] in ("ilp", "all-fast")} == {"0"}
    upper = d / "compare" / "all-fast" / "placement.txt"
    bound = read_placement(upper).tiers[0].capacity
    assert bound is not None
    need = pool_need([upper], d, 1, bound)
    assert 0 < need < bound
    # run as HMTUNE_BASELINE=all, it also places what the trace sampled or missed
    assert pool_need([upper], d, 1, bound, upper) == min(
        bound, all_margin(need // (2 << 20), 1) * (2 << 20))
    # without the trace's sizes next to the placement: the capacity
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(upper, alone / "placement.txt")
    assert pool_need([alone / "placement.txt"], alone, 1, bound) == bound


@pytest.mark.skipif(os.geteuid() != 0 or not NR.exists(), reason="needs root and hugepages")
def test_says_when_the_pool_ran_short(stage: Path, tmp_path: Path) -> None:
    """Without --reserve-hugepages and a pool of one free page, all-fast's mappings are
    refused by the kernel: runs.csv counts them and compare says the bound is short
    (result.json short_of_tier), instead of a speedup that silently understates it."""
    d = hugetlb_stage(stage, tmp_path / "short")
    with pool_of(1):
        if NR.read_text() != "1\n":
            pytest.skip("the kernel would not give one hugepage")
        r = hmtune("compare", "-o", str(d), "--machine", str(HUGETLB), "--repeats", "2",
                   "--strategies", "ilp", "--fom", FOM, "--", str(LATENCY), "-q")
    assert r.returncode == 0, r.stderr
    runs = [x for x in rows(d / "compare" / "runs.csv") if x["variant"] == "all-fast"]
    assert len(runs) == 2 and all(int(x["map_failed"]) > 0 for x in runs), runs
    assert all(int(x["not_fitting"]) >= int(x["map_failed"]) for x in runs)
    assert {x["map_failed"] for x in rows(d / "compare" / "runs.csv")
            if x["variant"].startswith("all-slow")} == {"0"}
    short = {x["name"]: x for x in
             json.loads((d / "compare" / "result.json").read_text())["short_of_tier"]}
    assert short["all-fast"]["runs"] == 2 and short["all-fast"]["map_failed"] > 0
    assert "all-slow" not in short


def test_fom_of() -> None:
    from hmtune.workflows.measure import fom_of
    out = "a=2.0 b=8 c=-1 d=x\n"
    assert fom_of([re.compile(r"a=([0-9.]+)")], out) == 2.0
    assert fom_of([re.compile(r"a=([0-9.]+)"), re.compile(r"b=(\d+)")], out) == \
        pytest.approx(4.0)
    assert fom_of([re.compile(r"\d+")], "x 8") == pytest.approx(8.0)  # no group: the match
    for bad in (r"c=(-?\d+)", r"d=(\w)", r"e=(\d)"):
        assert isinstance(fom_of([re.compile(r"a=([0-9.]+)"), re.compile(bad)], out), str)


def test_fom_reads_thousands_separators() -> None:
    """XSBench prints `Lookups/s:   2,082,568`: the figure is 2082568, and a comma that
    does not separate thousands is still not a number."""
    from hmtune.workflows.measure import fom_of
    rx = [re.compile(r"Lookups/s:\s*([0-9,._ ']+)")]
    assert fom_of(rx, "Lookups/s:   2,082,568\n") == 2082568.0
    assert fom_of(rx, "Lookups/s: 1_234_567.5\n") == 1234567.5
    assert fom_of(rx, "Lookups/s: 1'000\n") == 1000.0
    assert isinstance(fom_of(rx, "Lookups/s: 12,34\n"), str)
    assert isinstance(fom_of(rx, "Lookups/s: 1,2345\n"), str)


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="Open MPI not installed")
def test_under_mpirun(stage: Path, tmp_path: Path) -> None:
    """--mpirun: the interposer on each rank, each rank's statistics read."""
    d = copy_stage(stage, tmp_path / "mpi")
    r = compare(d, "--repeats", "1", "--mpirun",
                "mpirun --allow-run-as-root --oversubscribe -np 2")
    assert r.returncode == 0, r.stderr
    by = {x["variant"]: x for x in rows(d / "compare" / "runs.csv")}
    assert int(by["all-fast"]["fast_bytes"]) > 0
    assert len(list((d / "compare" / "all-fast").glob("stats.0.*.json"))) == 2


def test_bad_input(stage: Path, tmp_path: Path) -> None:
    assert hmtune("compare", "-o", str(stage)).returncode == 2             # no application
    assert compare(tmp_path).returncode == 2                               # no sites.csv
    assert compare(stage, app=(str(tmp_path / "nope"),)).returncode == 127
    assert compare(stage, "--fom", "(").returncode == 2
    assert compare(stage, "--strategies", "best").returncode == 2
    assert compare(stage, "--repeats", "0").returncode == 2
    assert compare(stage, "--repeats", "some").returncode == 2
    assert compare(stage, "--budget", "soon").returncode == 2
    assert compare(stage, "--target", "0").returncode == 2
    assert compare(stage, "--min-rounds", "1").returncode == 2
    assert compare(stage, "--ok-rc", "300").returncode == 2
    assert compare(stage, "--pin", "4096").returncode == 2
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    shutil.copy(stage / "sites.csv", blocked / "sites.csv")
    (blocked / "compare").write_text("a file where the results directory goes")
    assert compare(blocked).returncode == 2
    assert hmtune("compare", "--help").returncode == 0


@pytest.mark.parametrize("value", ["nan", "2", "0", "-0.5", "inf", "x", "0.5,2", "0.5,"])
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
    is the sum over the sites of each site's largest peak of any rank (what every site
    in the fast tier needs in the rank that needs most of it), not the sum over ranks;
    explore's fractions divide by the same number (one function)."""
    from hmtune.workflows import explore, harness, sitegroups

    assert explore.load_groups.__module__ == "hmtune.workflows.sitegroups"
    assert sitegroups.footprint_of.__module__ == "hmtune.core.stage"
    assert harness.fast_tier_bytes.__module__ == "hmtune.core.stage"
    p = tmp_path / "sites.csv"
    p.write_text("# hmtune sites v1\nsite_id,peak_live_bytes,rank\n"
                 "1,100,0\n2,50,0\n1,300,1\n2,20,1\n")
    assert footprint(p) == 350
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
    assert set(runs) == {"all-slow", AGAIN, "first-come", "size-window", "ilp", "all-fast"}
    assert all(float(x["fom"]) > 0 for x in runs.values())
    assert int(runs["first-come"]["fast_bytes"]) > 0


def test_host_machine_by_default(stage: Path, tmp_path: Path) -> None:
    """Without --machine: this host's fast tier as hmtune machine chooses it, written to
    DIR/compare/machine.toml (THP on a host without hugetlbfs) and the same as
    hmtune advise --fraction chooses; the runs' configuration names its tiers."""
    from test_advise_host import fake_host

    from hmtune.core.placement import read_placement
    from hmtune.machine.machinefile import load_machine

    host = fake_host(tmp_path / "nohuge", [("0-1", 24 * 2**30, None)], hugepagesize_kb=0)
    d = copy_stage(stage, tmp_path / "host")
    env = dict(os.environ, HMTUNE_HOST_ROOT=str(host))
    r = subprocess.run([str(HMTUNE), "compare", "-o", str(d), "--repeats", "1",
                        "--strategies", "ilp", "--fraction", "0.4", "--fom", FOM, "--",
                        str(LATENCY), "-q"], capture_output=True, text=True, env=env,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    m = load_machine(d / "compare" / "machine.toml")
    assert m.tiers[0].backend == "thp"
    cfg = json.loads((d / "compare" / "config.json").read_text())
    assert cfg["machine"] == str((d / "compare" / "machine.toml").resolve())
    assert [t[1] for t in cfg["tiers"]] == ["thp", "default"]
    a = subprocess.run([str(HMTUNE), "advise", str(d), "--fraction", "0.4"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert a.returncode == 0, a.stderr
    mine = read_placement(d / "placement.txt").tiers[0]
    theirs = read_placement(d / "compare" / "ilp" / "placement.txt").tiers[0]
    assert (mine.backend, mine.capacity) == (theirs.backend, theirs.capacity) == \
        ("thp", cfg["mem"])


def test_a_failing_strategy_is_left_out_with_its_reason(tmp_path: Path) -> None:
    """The harness runs hmtune advise in this process: a strategy that fails gives its
    one-line reason and its log, and no placement."""
    from hmtune.machine.machinefile import load_machine
    from hmtune.workflows import harness

    d = tmp_path / "s"
    write_sites(d / "sites.csv", STANDARD, 1500.0)          # no allocs.csv
    why = harness.advise(d, d / "x", load_machine(THP), 64 << 20, "ilp-lifetime")
    assert why and "allocs.csv" in why
    assert not (d / "x" / "placement.txt").exists() and (d / "x" / "advise.log").is_file()
    assert harness.advise(d, d / "y", load_machine(THP), 64 << 20, "density") is None
    assert (d / "y" / "placement.txt").is_file()


def test_several_capacities_share_all_slow_and_all_fast(stage: Path, tmp_path: Path) -> None:
    """--mem A,B: each capacity's baselines and strategies, named NAME@SIZE, in the same
    rounds as one all-slow and one all-fast; each placed within its own capacity, each
    capacity's strategy predicted and compared with its own baselines."""
    from hmtune.core.placement import read_placement

    d = copy_stage(stage, tmp_path / "two")
    r = compare(d, "--mem", "8M,4M", "--strategies", "ilp")
    assert r.returncode == 0, r.stderr
    names = ["all-slow", "first-come@4M", "size-window@4M", "ilp@4M",
             "first-come@8M", "size-window@8M", "ilp@8M", "all-fast"]
    runs = rows(d / "compare" / "runs.csv")
    assert sorted((x["variant"], x["repeat"]) for x in runs) == sorted(
        (n, str(k)) for n in names + [AGAIN] for k in range(2))
    assert [x["variant"] for x in rows(d / "compare" / "summary.csv")] == names
    for mib in (4, 8):
        pf = read_placement(d / "compare" / f"ilp@{mib}M" / "placement.txt")
        assert pf.tiers[0].capacity == mib << 20 and pf.sites
        base = read_placement(d / "compare" / f"baseline-placement@{mib}M.txt")
        assert base.tiers[0].capacity == mib << 20 and not base.sites
        for x in runs:
            if x["variant"].endswith(f"@{mib}M"):
                assert 0 < int(x["fast_bytes"]) <= mib << 20, x
    res = json.loads((d / "compare" / "result.json").read_text())
    assert res["capacities"] == [
        {"mem": m << 20, "tag": f"@{m}M",
         "variants": [f"first-come@{m}M", f"size-window@{m}M", f"ilp@{m}M"]} for m in (4, 8)]
    assert sorted(res["predicted"]) == ["ilp@4M", "ilp@8M"]
    vs = res["advisor_over_baseline"]
    assert [(v["mem"], v["strategy"]) for v in vs] == [(4 << 20, "ilp@4M"), (8 << 20, "ilp@8M")]
    assert vs[0]["baseline"] in ("first-come@4M", "size-window@4M")
    assert json.loads((d / "compare" / "config.json").read_text())["mem"] == [4 << 20, 8 << 20]
    # the same capacity twice, a bad size, and explore (one capacity) are usage errors
    for bad in ("4M,4M", "4M,3M", "4M,lots"):
        assert compare(d, "--mem", bad, "--force").returncode == 2, bad
    assert rows(d / "compare" / "runs.csv") == runs
    e = hmtune("explore", "-o", str(d), "--machine", str(THP), "--repeats", "1",
               "--mem", "4M,8M", "--", str(LATENCY), "-q")
    assert e.returncode == 2 and not (d / "explore" / "runs.csv").exists()


def test_split_objects_against_their_whole_twin(stage: Path, tmp_path: Path) -> None:
    """A strategy and its -whole twin at one capacity: result.json's split_over_whole
    holds the pair, paired over the rounds from runs.csv."""
    import math

    d = copy_stage(stage, tmp_path / "sow")
    r = compare(d, "--strategies", "ilp,ilp-whole")
    assert r.returncode == 0, r.stderr
    res = json.loads((d / "compare" / "result.json").read_text())
    (x,) = res["split_over_whole"]
    assert (x["split"], x["whole"]) == ("ilp", "ilp-whole")
    fom = {(y["variant"], y["repeat"]): float(y["fom"])
           for y in rows(d / "compare" / "runs.csv")}
    want = math.sqrt(math.prod(fom[("ilp-whole", i)] / fom[("ilp", i)] for i in ("0", "1")))
    assert x["speedup"] == pytest.approx(want, rel=1e-3)
    assert x["lo"] <= x["speedup"] <= x["hi"]


def test_a_script_places_in_the_program_its_trace_names(tmp_path: Path) -> None:
    """compare's HMTUNE_TARGET for a script: a placement without a program line (all-fast,
    the baselines') takes the program the stage's trace summary names; a placement's own
    program line wins; without a summary nothing is named (every process places)."""
    from hmtune.core.placement import PlacementFile, TierLine, write_placement
    from hmtune.workflows.measure import Variant, targets

    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\nexec /bin/true\n")
    script.chmod(0o755)
    tiers = [TierLine("fast", "thp", 1 << 20), TierLine("slow", "default", None)]
    bare, named = tmp_path / "bare.txt", tmp_path / "named.txt"
    write_placement(bare, PlacementFile(tiers=tiers, depth=1, size_window=(0, 0), sites=[]))
    write_placement(named, PlacementFile(tiers=tiers, depth=1, size_window=(0, 0), sites=[],
                                         program="/opt/app/bin/other"))
    variants = [Variant("all-slow", None), Variant("all-fast", bare), Variant("ilp", named)]
    stage = tmp_path / "stage"
    stage.mkdir()
    assert targets(variants, [str(script)], stage) == {"all-fast": None,
                                                      "ilp": "/opt/app/bin/other"}
    (stage / "trace.summary.json").write_text(json.dumps({"processes": [
        {"exe": "/usr/bin/dash", "allocs": 1, "samples": {"heap": 0}},
        {"exe": "/opt/app/bin/app", "allocs": 50, "samples": {"heap": 400}}]}))
    assert targets(variants, [str(script)], stage) == {"all-fast": "/opt/app/bin/app",
                                                      "ilp": "/opt/app/bin/other"}


def test_a_variant_beyond_the_bound_is_named() -> None:
    """When a placement's share of all-fast's gain is above 100 % at the low end of its
    interval (BWA-MEM: 202 % [119 %, 336 %]), compare says so with the CPU time of each
    run; within the bound, or without an interval, it says nothing."""
    from hmtune.workflows.stats import Estimate
    from hmtune.workflows.tables import Summary, beyond_bound

    def summ(name: str, s: float, share: tuple[float, float, float] | None,
             cpu: float) -> Summary:
        share3 = share or (None, None, None)
        return Summary(name, 9, 10.0, 9.0, 11.0,
                       Estimate(9, s, s - 0.05, s + 0.05, "faster", *share3), 0.0, 0.0,
                       {"user_s": cpu, "sys_s": 0.5})
    base = [summ("all-slow", 1.0, None, 26.0), summ("all-fast", 1.13, (1.0, 1.0, 1.0), 23.1)]
    inside = summ("ilp-lifetime@46M", 1.10, (0.8, 0.4, 1.3), 21.0)
    over = summ("ilp-lifetime@90M", 1.26, (2.02, 1.19, 3.36), 20.3)
    assert beyond_bound([*base, inside], "all-fast") is None
    line = beyond_bound([*base, inside, over], "all-fast")
    assert line is not None
    assert line.startswith("ilp-lifetime@90M gained measurably more than all-fast")
    assert "all-fast took 23.6 s of CPU a run, ilp-lifetime@90M 20.8 s" in line
    assert beyond_bound([base[0], over], "all-fast") is None        # no bound measured
