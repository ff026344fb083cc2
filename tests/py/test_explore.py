"""`hmtune explore` on the latency example's quick configuration: every placement of the
top K sites and the rest group is written and measured, the results are kept and not
redone, --force redoes them, the summary and conclusions follow from the runs, and bad
input stops it with a clear exit status."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from clistage import CRASH, FOM, LATENCY, THP, assert_places, hmtune, latency_stage, rows

from hmtune.core.placement import read_placement
from hmtune.workflows.explore import load_groups, name_of
from hmtune.workflows.measure import SECOND


@pytest.fixture(scope="module")
def stage(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return latency_stage(tmp_path_factory.mktemp("explore") / "latency")


def explore(d: Path, *extra: str, app: tuple[str, ...] = (str(LATENCY), "-q")
            ) -> subprocess.CompletedProcess[str]:
    return hmtune("explore", "-o", str(d), "-k", "2", "--machine", str(THP), "--repeats", "1",
                  "--fom", FOM, *extra, "--", *app)


def sites_by_weight(stage: Path) -> list[dict[str, str]]:
    with (stage / "sites.csv").open(newline="") as f:
        table = list(csv.DictReader(line for line in f if not line.startswith("#")))
    return sorted(table, key=lambda r: (-float(r["weight"]), int(r["site_id"])))


def test_every_placement_measured_and_resumed(stage: Path) -> None:
    r = explore(stage)
    assert r.returncode == 0, r.stderr
    work = stage / "explore"
    ranked = sites_by_weight(stage)
    assert len(ranked) > 3                      # so there is a rest group
    # 2^(2+1) placements: bit i is the i-th heaviest site, bit 2 every other site
    placements = rows(work / "placements.csv")
    assert [int(p["mask"]) for p in placements] == list(range(8))
    for p in placements:
        mask = int(p["mask"])
        want = {ranked[i]["callstack_raw"] for i in range(2) if mask >> i & 1}
        if mask & 4:
            want |= {x["callstack_raw"] for x in ranked[2:]}
        pf = read_placement(work / p["variant"] / "placement.txt")
        assert_places(pf, want)
        assert all(s.tier == pf.tiers[0].name for s in pf.sites)
        sizes = [int(x["peak_live_bytes"]) for x in ranked]
        planned = sum(sizes[i] for i in range(2) if mask >> i & 1) + (
            sum(sizes[2:]) if mask & 4 else 0)
        assert int(p["planned_bytes"]) == planned
        assert pf.tiers[0].capacity is not None and pf.tiers[0].capacity >= sum(sizes)
    runs = rows(work / "runs.csv")
    names = [p["variant"] for p in placements] + ["advisor"]
    # the reference (nothing placed) runs twice a round, both times with its placement
    again = names[0] + SECOND
    assert sorted(x["variant"] for x in runs) == sorted(names + [again])
    log = (work / again / "run.0.log").read_text().splitlines()[0]
    assert f"HMTUNE_PLACEMENT={(work / names[0] / 'placement.txt').resolve()}" in log
    by = {x["variant"]: x for x in runs}
    assert by[name_of(0, 3)]["fast_bytes"] == by[again]["fast_bytes"] == "0"
    assert int(by[name_of(7, 3)]["fast_bytes"]) > 0
    # the summary follows from the runs, each a ratio to the reference's two runs
    summary = {x["variant"]: x for x in rows(work / "summary.csv")}
    assert list(summary) == names
    base = (float(by[name_of(0, 3)]["fom"]) * float(by[again]["fom"])) ** 0.5
    for n, s in summary.items():
        want = 1.0 if n == names[0] else base / float(by[n]["fom"])
        assert float(s["speedup"]) == pytest.approx(want, rel=1e-3)
        fast = int(by[n]["fast_bytes"])
        if fast:        # FOM gained (a time: base - FOM) per MiB: positive when faster
            assert float(s["dfom_per_mib"]) == pytest.approx(
                (base - float(by[n]["fom"])) / (fast / 2**20), rel=1e-3, abs=1e-9)
        # one round: no interval
        assert s["speedup_lo"] == "" if n != name_of(0, 3) else s["verdict"] == "reference"
        assert s["verdict"] in ("reference", "unsupported (1 round: no interval)")
        assert int(s["minflt"]) > 0 and float(s["maxrss_mib"]) > 0
    res = json.loads((work / "result.json").read_text())
    assert res["all_fast"] == name_of(7, 3) and res["rounds"] == 1
    assert res["stopped_by"] == "repeats"
    # one round gives no interval, except the reference's own (exactly 1 by definition),
    # which is the best placement when every other one ran slower
    if res["best"] == name_of(0, 3):
        assert res["best_speedup_lo"] == pytest.approx(1.0)
    else:
        assert res["best_speedup_lo"] is None
    assert res["all_fast_speedup"] == pytest.approx(float(summary[name_of(7, 3)]["speedup"]))
    s_all = res["all_fast_speedup"]
    if s_all > 1:       # one round: the share of the gain, a point without an interval
        for s in summary.values():
            # speedups are written to 3 decimals: their rounding (5e-4 each) is
            # amplified by 1 / (s_all - 1) when the all-fast gain is small
            share = (float(s["speedup"]) - 1) / (s_all - 1)
            tol = max(0.01, 6e-4 * (1 + abs(share)) / (s_all - 1))
            assert float(s["share_of_gain"]) == pytest.approx(share, abs=tol)
    assert "no interval, every speedup is unsupported" in r.stdout
    pts = {n: float(s["speedup"]) for n, s in summary.items() if n != "advisor"}
    assert res["placements"] == 8 and res["top"] == 2 and res["rest_group"] is True
    assert res["best_speedup"] == pytest.approx(max(pts.values()), rel=1e-3)
    reach = [n for n, v in pts.items() if v >= 0.9 * res["best_speedup"]]
    assert res["fraction_for_90"] == pytest.approx(
        min(float(summary[n]["fraction"]) for n in reach), abs=1e-4)
    fits = [n for n in pts if int(summary[n]["planned_bytes"]) <= res["capacity_bytes"]]
    cap_best = max(pts[n] for n in fits)
    assert res["advisor_ratio"] == pytest.approx(
        float(summary["advisor"]["speedup"]) / cap_best, rel=1e-3)
    advised = read_placement(work / "advisor" / "placement.txt").sites
    chosen = {s.chain for s in advised}
    # ranges of a split site are none of the explored placements, whatever its chain
    same = [] if any(s.ranges for s in advised) else [
        p["variant"] for p in placements
        if {s.chain for s in read_placement(work / p["variant"] / "placement.txt").sites}
        == chosen]
    assert res["advisor_placement"] == (same[0] if same else None)
    assert (work / "summary.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the report page shows the plot and names the best placement and the ratio
    assert hmtune("report", str(stage)).returncode == 0
    page = (stage / "report" / "report.md").read_text()
    assert "../explore/summary.png" in page and f"`{res['best']}`" in page
    assert f"{res['advisor_ratio']:.2f}" in page
    # again: nothing is run
    before = (work / "runs.csv").read_bytes()
    assert explore(stage).returncode == 0
    assert (work / "runs.csv").read_bytes() == before
    # another configuration is not mixed in without --force
    assert explore(stage, "--mem", "4M").returncode == 2
    assert (work / "runs.csv").read_bytes() == before
    # --force redoes them
    assert explore(stage, "--force").returncode == 0
    again = rows(work / "runs.csv")
    # (wall_s has 1 ms steps: 9 runs of ~25 ms can all repeat it; the FOM has 6 digits)
    assert len(again) == len(runs)
    assert [(x["wall_s"], x["fom"]) for x in again] != [(x["wall_s"], x["fom"]) for x in runs]


def test_groups(tmp_path: Path) -> None:
    """Top K by weight, ties to the lower site id; per-rank rows folded (weights add up,
    the peak is the largest rank's); no rest group when K covers every site."""
    p = tmp_path / "sites.csv"
    head = "site_id,callstack_raw,weight,peak_live_bytes,max_size,rank\n"
    p.write_text("# hmtune sites v1\n" + head +
                 "1,a+0x1,5,100,100,0\n1,a+0x1,5,300,300,1\n"   # weight 10, peak 300
                 "2,a+0x2,10,50,50,0\n"                       # weight 10: after site 1
                 "3,a+0x3,30,10,10,0\n"
                 "4,a+0x4,1,7,7,0\n")
    groups, foot = load_groups(p, 2)
    assert [g.label for g in groups] == ["site 3", "site 1", "rest (2 sites)"]
    assert [g.nbytes for g in groups] == [10, 300, 57] and foot == 367
    assert groups[2].chains == ["a+0x2", "a+0x4"]
    groups, _ = load_groups(p, 4)
    assert [g.label for g in groups] == ["site 3", "site 1", "site 2", "site 4"]


def test_sites_sharing_a_chain_are_one_group(tmp_path: Path) -> None:
    """Two site ids with one callstack_raw are one site of the placements (a chain may
    be listed once): the lower id, weights and peaks added."""
    p = tmp_path / "sites.csv"
    p.write_text("# hmtune sites v1\nsite_id,callstack_raw,weight,peak_live_bytes,max_size\n"
                 "1,a+0x1,5,100,100\n2,a+0x2,4,20,20\n3,a+0x1,3,10,50\n")
    groups, foot = load_groups(p, 2)
    assert [(g.site_ids, g.chains, g.nbytes, g.max_size) for g in groups] == \
        [([1], ["a+0x1"], 110, 100), ([2], ["a+0x2"], 20, 20)] and foot == 130


def test_failing_application_keeps_runs(stage: Path, tmp_path: Path) -> None:
    d = tmp_path / "crash"
    d.mkdir()
    shutil.copy(stage / "sites.csv", d / "sites.csv")
    r = explore(d, app=(str(CRASH), "exit3"))
    assert r.returncode == 1
    assert not (d / "explore" / "runs.csv").exists()


def test_bad_input(stage: Path, tmp_path: Path) -> None:
    assert hmtune("explore", "-o", str(stage)).returncode == 2             # no application
    assert explore(tmp_path).returncode == 2                               # no sites.csv
    assert explore(stage, app=(str(tmp_path / "nope"),)).returncode == 127
    assert explore(stage, "-k", "0").returncode == 2
    assert explore(stage, "-k", "11").returncode == 2
    assert explore(stage, "--repeats", "0").returncode == 2
    assert explore(stage, "--budget", "-1m").returncode == 2
    assert explore(stage, "--machine", str(tmp_path / "none.toml")).returncode == 2
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    shutil.copy(stage / "sites.csv", blocked / "sites.csv")
    (blocked / "explore").write_text("a file where the results directory goes")
    assert explore(blocked).returncode == 2
    assert (blocked / "explore").read_text().startswith("a file")         # left alone
    assert hmtune("explore", "--help").returncode == 0


def test_sites_without_a_chain_are_left_out(tmp_path: Path) -> None:
    """A site with no callstack_raw cannot be named in a placement: not in any group,
    but in the footprint the fractions divide by."""
    p = tmp_path / "sites.csv"
    p.write_text("# hmtune sites v1\nsite_id,callstack_raw,weight,peak_live_bytes,max_size\n"
                 "1,a+0x1,5,100,100\n2,,50,1000,1000\n3,a+0x3,1,10,10\n")
    groups, foot = load_groups(p, 1)
    assert [g.site_ids for g in groups] == [[1], [3]]
    assert foot == 1110                 # the footprint is every site's (compare's)


def test_static_variables_are_placed_as_static_lines(tmp_path: Path) -> None:
    """Statics (sites.csv v2, kind static) are sites of the groups: explore's and
    compare's all-fast placements carry them as static lines, and their sizes are no
    requests for the size window."""
    from hmtune.core.placement import TierLine, format_placement, parse_placement
    from hmtune.workflows.sitegroups import placement_for

    p = tmp_path / "sites.csv"
    p.write_text("# hmtune sites v2\nsite_id,callstack_raw,weight,peak_live_bytes,max_size,kind\n"
                 "1,/a+0x10,5,4096,4096,heap\n"
                 "2,/a+0x5080 [static 16777216],9,16777216,16777216,static\n")
    groups, foot = load_groups(p, 2)
    assert [g.label for g in groups] == ["site 2", "site 1"] and foot == 16777216 + 4096
    assert groups[0].max_size == 0
    pf = placement_for(0b11, groups, TierLine("fast", "thp", 1 << 30),
                       TierLine("slow", "default", None), "explore m11")
    back = parse_placement(format_placement(pf).splitlines())
    assert [(s.frame, s.size) for s in back.statics] == [("/a+0x5080", 16777216)]
    assert [s.chain for s in back.sites] == ["/a+0x10"]
    assert back.size_window == (0, 4096) and back.depth == 1
    # statics with no whole page of the backend inside them are left out: 4 KiB pages
    # (numa) move a static of one page at a page boundary, 2 MiB pages (hugetlb) only
    # one larger than 2 MiB
    p.write_text("# hmtune sites v2\nsite_id,callstack_raw,weight,peak_live_bytes,max_size,kind\n"
                 "1,/a+0x10,5,4096,4096,heap\n"
                 "2,/a+0x5000 [static 4096],9,4096,4096,static\n"
                 "3,/a+0x6080 [static 4096],9,4096,4096,static\n"
                 "4,/a+0x800000 [static 3145728],9,3145728,3145728,static\n")
    groups, _ = load_groups(p, 4)
    for backend, want in (("numa:0", ["/a+0x5000", "/a+0x800000"]),
                          ("hugetlb", ["/a+0x800000"])):
        pf = placement_for(0b1111, groups, TierLine("fast", backend, 1 << 30),
                           TierLine("slow", "default", None), "compare (all-fast)")
        assert sorted(s.frame for s in pf.statics) == want, backend
        assert [s.chain for s in pf.sites] == ["/a+0x10"]
