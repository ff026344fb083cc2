"""`hmtune report`: report.md links only plots that exist, lists the top sites of
sites.csv and every compared variant, and says which command fills a missing part."""

from __future__ import annotations

import csv
import re
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
    r = hmtune("compare", "-o", str(stage), "--machine", str(THP), "--repeats", "1",
               "--strategies", "ilp", "--fom", FOM, "--",
               str(LATENCY), "-q")
    assert r.returncode == 0, r.stderr
    assert hmtune("report", str(stage)).returncode == 0
    md = (stage / "report" / "report.md").read_text()
    pics = images(md, stage / "report")
    assert len(pics) == 2 and all(p.is_file() and p.stat().st_size > 1000 for p in pics)
    variants = re.findall(r"^\| ([a-z-]+) \| \d+ \|", md, re.M)
    assert variants == ["all-slow", "first-come", "size-window", "ilp", "all-fast"]
    placed = re.findall(r"^- `([^`]+)`:", md, re.M)
    listed = [ln.split()[1] for ln in (stage / "placement.txt").read_text().splitlines()
              if ln.startswith("site ")]
    assert placed == listed


def test_refusals(tmp_path: Path) -> None:
    assert hmtune("report", str(tmp_path)).returncode == 2    # no sites.csv
    assert hmtune("report", "--help").returncode == 0
