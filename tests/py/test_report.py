"""`hmtune report`: report.md links only plots that exist, lists the top sites of
sites.csv and every compared variant, and says which command fills a missing part."""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

import pytest
from clistage import FOM, LATENCY, THP, hmtune, latency_stage


@pytest.fixture(scope="module")
def stage(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return latency_stage(tmp_path_factory.mktemp("rep") / "latency")


def images(md: str, where: Path) -> list[Path]:
    return [(where / m).resolve() for m in re.findall(r"!\[[^]]*\]\(([^)]+)\)", md)]


def site_ids(d: Path) -> list[int]:
    with (d / "sites.csv").open(newline="") as f:
        rows = list(csv.DictReader(x for x in f if not x.startswith("#")))
    rows.sort(key=lambda r: -float(r["weight"]))
    return [int(r["site_id"]) for r in rows]


def test_before_advise_and_compare(stage: Path) -> None:
    r = hmtune("report", str(stage))
    assert r.returncode == 0, r.stderr
    md = (stage / "report" / "report.md").read_text()
    assert images(md, stage / "report") == []                 # nothing to plot yet
    assert "hmtune advise" in md and "hmtune compare" in md    # what fills the gaps
    rows = re.findall(r"^\| (\d+) \|", md, re.M)
    assert [int(x) for x in rows] == site_ids(stage)[:10]      # heaviest first


def test_with_advise_and_compare(stage: Path) -> None:
    assert hmtune("advise", str(stage), "--machine", str(THP), "--mem", "8M").returncode == 0
    r = hmtune("compare", "-o", str(stage), "--machine", str(THP), "--repeats", "2",
               "--strategies", "ilp", "--fom", FOM, "--",
               str(LATENCY), "-q")
    assert r.returncode == 0, r.stderr
    import json

    pred = json.loads((stage / "compare" / "result.json").read_text())["predicted"]["ilp"]
    assert hmtune("report", str(stage)).returncode == 0
    md = (stage / "report" / "report.md").read_text()
    pics = images(md, stage / "report")
    assert len(pics) == 2 and all(p.is_file() and p.stat().st_size > 1000 for p in pics)
    variants = re.findall(r"^\| ([a-z-]+) \| \d+ \|", md, re.M)
    assert variants == ["all-slow", "first-come", "size-window", "ilp", "all-fast"]
    ilp = next(ln for ln in md.splitlines() if ln.startswith("| ilp |")).split(" | ")
    assert ilp[5] == f"{pred[0]:.2f}x [{pred[1]:.2f}-{pred[2]:.2f}]"    # predicted
    advised = md.split("### `placement.txt`", 1)[1].split("###", 1)[0]
    placed = re.findall(r"^- `([^`]+)`:", advised, re.M)
    listed = [ln.split()[1] for ln in (stage / "placement.txt").read_text().splitlines()
              if ln.startswith(("site ", "split "))]
    assert placed == listed
    assert "### `compare/ilp/placement.txt`" in md        # compare's advice is found too


def test_says_which_variants_were_short(stage: Path, tmp_path: Path) -> None:
    """A comparison whose result.json names variants short of their fast tier: the
    report lists each with its counts; a malformed entry is left out, not a crash."""
    d = tmp_path / "short"
    (d / "compare").mkdir(parents=True)
    shutil.copy(stage / "sites.csv", d / "sites.csv")
    (d / "compare" / "summary.csv").write_text(
        "variant,runs,median_fom,min_fom,max_fom,speedup,speedup_lo,speedup_hi\n"
        "all-slow,3,2.0,1.9,2.1,1.0,,\nall-fast,3,1.8,1.7,1.9,1.11,1.05,1.17\n")
    short = {"name": "all-fast", "runs": 3, "of": 3, "not_fitting": 2216, "map_failed": 2216}
    (d / "compare" / "result.json").write_text(json.dumps({"short_of_tier": [short]}))
    assert hmtune("report", str(d)).returncode == 0
    md = (d / "report" / "report.md").read_text()
    line = next(ln for ln in md.splitlines() if ln.startswith("- all-fast: in 3 of 3 runs"))
    assert "(median 2216)" in line and "2216 of them" in line
    (d / "compare" / "result.json").write_text(json.dumps({"short_of_tier": [{"x": 1}]}))
    assert hmtune("report", str(d)).returncode == 0
    assert "- all-fast: in" not in (d / "report" / "report.md").read_text()


def test_refusals(tmp_path: Path) -> None:
    assert hmtune("report", str(tmp_path)).returncode == 2    # no sites.csv
    assert hmtune("report", "--help").returncode == 0


def test_advice_of_compare_and_explore_is_found(stage: Path, tmp_path: Path) -> None:
    """No DIR/placement.txt, but compare and explore had hmtune advise write theirs:
    the report lists them instead of saying "Not advised yet"; an explore result whose
    advisor placement is none of the explored ones says so in words."""
    d = tmp_path / "st"
    d.mkdir()
    for name in ("sites.csv", "allocs.csv", "trace.prv", "trace.pcf"):
        shutil.copy2(stage / name, d / name)
    r = hmtune("advise", str(d), "--machine", str(THP), "--mem", "8M", "--strategy", "ilp",
               "-o", str(d / "compare" / "ilp" / "placement.txt"))
    assert r.returncode == 0, r.stderr
    (d / "explore" / "advisor").mkdir(parents=True)
    shutil.copy2(d / "compare" / "ilp" / "placement.txt",
                 d / "explore" / "advisor" / "placement.txt")
    (d / "explore" / "m01").mkdir()        # an explored mask: not advice
    (d / "explore" / "m01" / "placement.txt").write_text(
        "# hmtune placement v1\n# generated by: hmtune explore (m01)\n")
    (d / "explore" / "summary.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (d / "explore" / "result.json").write_text(json.dumps({
        "placements": 4, "best": "m11", "best_groups": "site 8+rest (6 sites)",
        "best_speedup": 1.2, "best_fraction": 1.0, "fraction_for_90": 0.5,
        "strategy": "ilp", "capacity_fraction": 0.5, "advisor_speedup": 1.1,
        "advisor_ratio": 0.95, "best_within_capacity": "m10",
        "best_within_capacity_speedup": 1.15, "advisor_placement": None}))
    (d / "explore" / "summary.csv").write_text(
        "variant,groups,fraction,runs,median_fom,min_fom,max_fom,speedup\n"
        "m10,site 8,0.5,1,1,1,1,1.15\n")
    assert hmtune("report", str(d)).returncode == 0
    md = (d / "report" / "report.md").read_text()
    assert "Not advised yet" not in md
    assert "### `compare/ilp/placement.txt`" in md
    assert "### `explore/advisor/placement.txt`" in md and "m01/placement" not in md
    assert "the same as `compare/ilp/placement.txt`" in md
    assert re.search(r"^- `thp`: latency\.c:\d+ main \(site \d+\)$", md, re.M)
    assert "no explored placement`" not in md and "no explored placement has" in md
    assert re.search(r"^- site 8: `latency\.c:\d+ main`$", md, re.M)


def test_report_labels_tell_sites_apart(tmp_path: Path) -> None:
    """A sites.csv of an older analyze (no label column) whose sites share their
    innermost line: the report names each by the frame where it differs."""
    from advisefix import site, write_sites

    d = tmp_path / "old"
    chain = "/src/memory.h:66 > /src/{} > /src/main.cpp:5"
    write_sites(d / "sites.csv", [
        site(3 + i, 1 << 20, 10.0 - i, f"/app+0x10 > /app+0x{0x100 + i:x} > /app+0x99",
             callstack=chain.format(f"c{i}.cpp:{10 + i}")) for i in range(5)])
    assert hmtune("report", str(d)).returncode == 0
    md = (d / "report" / "report.md").read_text()
    cells = re.findall(r"^\| \d+ \| `([^`]+)` \|", md, re.M)
    assert cells == [f"memory.h:66 > c{i}.cpp:{10 + i}" for i in range(5)]
