"""Counts that agree (issue 44 item 1): the advisor's report and terminal lines count a
split site once, however many ranges of it a tier holds, and say the ranges apart; the
stages count the same sites."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pandas as pd
from clistage import LATENCY, THP, hmtune

from hmtune.advisor.report import count_text
from hmtune.core.placement import read_placement
from hmtune.core.units import MIB


def test_a_split_site_is_one_site_and_its_ranges_are_ranges() -> None:
    rows = pd.DataFrame({"site_id": [3, 4, 10, 11, 12], "parent": [3, 4, 5, 5, 5],
                         "pieces": [1, 1, 4, 4, 4],
                         "range_start": [-1, -1, 0, 2 << 20, 8 << 20],
                         "range_end": [-1, -1, 2 << 20, 4 << 20, 10 << 20]})
    # pieces 0-2 and 2-4 MiB touch: one range, as placement.txt's split line has it
    assert count_text(rows) == "3 site(s) (1 of them by ranges of their objects, 2 range(s))"
    whole = pd.DataFrame({"site_id": [3, 4], "parent": [3, 4], "pieces": [1, 1],
                          "range_start": [-1, -1], "range_end": [-1, -1]})
    # every piece of a split site in this tier: the whole object, no ranges to count
    every = pd.DataFrame({"site_id": [10, 11], "parent": [5, 5], "pieces": [2, 2],
                          "range_start": [0, 2 << 20], "range_end": [2 << 20, 4 << 20]})
    assert count_text(every) == "1 site(s)"
    assert count_text(whole) == "2 site(s)"
    assert count_text(whole.iloc[0:0]) == "0 site(s)"
    # the fallback tier holds the rest of the split site: counted apart, so that the
    # tiers' counts add up to the sites
    assert count_text(rows, rest=True) == "2 site(s), and the rest of 1 split site(s)"
    assert count_text(whole, rest=True) == "2 site(s)"


def test_the_stages_count_the_same_sites(tmp_path: Path) -> None:
    """latency (7 allocation sites) traced, analyzed, advised for a tier smaller than its
    hot object and re-run: analyze's rows, the advisor's tiers (fast tier plus what the
    fallback holds whole), placement.txt's lines and the interposer's sites agree, and
    the interposer counts a split object's bytes as those its tier holds."""
    d = tmp_path / "stage"
    app = [str(LATENCY), "-s", "64", "-n", "8"]
    assert hmtune("trace", "-q", "-o", str(d), "--", *app).returncode == 0
    assert hmtune("analyze", str(d)).returncode == 0
    with (d / "sites.csv").open() as f:
        f.readline()
        rows = [r for r in csv.DictReader(f) if r["kind"] == "heap"]
    assert len(rows) == 7
    a = hmtune("advise", str(d), "--mem", "16M", "--machine", str(THP))
    assert a.returncode == 0, a.stderr
    report = (d / "report.txt").read_text()
    tiers = re.findall(r"^  (\d+) site\(s\)(?:, and the rest of (\d+) split site\(s\))?",
                       report, re.M)
    assert len(tiers) == 2, report                      # tier thp, then the fallback
    fast, (whole, rest) = int(tiers[0][0]), (int(tiers[1][0]), int(tiers[1][1] or 0))
    pf = read_placement(d / "placement.txt")
    assert len(pf.sites) == fast >= 1
    assert rest == sum(1 for s in pf.sites if s.ranges)
    assert fast + whole == len(rows), report
    assert f"in {len(rows)} placeable site(s)" in report
    r = hmtune("run", "-o", str(d), "--", *app)
    assert r.returncode == 0, r.stderr
    stats = json.loads((d / "run-stats.json").read_text())
    assert len(stats["sites"]) == fast
    assert all(s["matches"] == 1 and s["placed"] == 1 for s in stats["sites"])
    tier = stats["tiers"][0]
    assert tier["placed_bytes"] == sum(s["placed_bytes"] for s in stats["sites"])
    assert tier["placed_bytes"] <= 16 * MIB
    for s in stats["sites"]:
        if "ranges" in s:
            assert s["placed_bytes"] == sum(x["placed_bytes"] for x in s["ranges"])
