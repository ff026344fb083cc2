"""Split objects end to end through the make targets users run: window_hot's 64 MiB
array is hot only in [24 MiB, 28 MiB); traced, analyzed (profile.csv), advised with a
12 MiB fast tier (the array never fits whole), the placement splits it with the window
in its ranges, and the re-run puts exactly those ranges in the tier by the interposer's
own residency report, with the program's output unchanged. The fast tier is node 0
through mbind (numa:0), whose residency this one-node machine can check exactly."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from clistage import HMTUNE, ROOT

from hmtune.core.placement import read_placement
from hmtune.core.units import MIB, human, human_ranges

PROGRAM = ROOT / "build" / "tests" / "programs" / "window_hot"
WINDOW = (24 * MIB, 28 * MIB)


def make(target: str, **kw: str) -> subprocess.CompletedProcess[str]:
    args = ["make", "--no-print-directory", "-C", str(ROOT), target,
            *(f"{k}={v}" for k, v in kw.items())]
    return subprocess.run(args, capture_output=True, text=True, timeout=600)


def machine(path: Path, capacity: str) -> Path:
    path.write_text('name = "split"\n[[tier]]\nname = "fast"\n'
                    f'capacity = "{capacity}"\nbackend = "numa:0"\n'
                    'load_cost = 1.0\nstore_cost = 1.0\n'
                    '[[tier]]\nname = "slow"\ncapacity = "unlimited"\nbackend = "default"\n'
                    'load_cost = 2.0\nstore_cost = 2.0\n')
    return path


def big_chain(d: Path) -> str:
    import csv

    with (d / "sites.csv").open(newline="") as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    big = [r for r in rows if int(r["max_size"]) == 64 * MIB]
    assert len(big) == 1, rows
    return big[0]["callstack_raw"]


@pytest.fixture(scope="module")
def stage(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("split") / "window_hot"
    app = f"{PROGRAM} 0.4"
    r = make("trace", APP=app, OUT=str(out))
    assert r.returncode == 0, r.stderr
    assert make("analyze", OUT=str(out)).returncode == 0
    assert (out / "profile.csv").is_file()
    return out


def test_the_window_is_placed_and_only_its_ranges_are_in_the_tier(stage: Path,
                                                                   tmp_path: Path) -> None:
    m = machine(tmp_path / "m.toml", "12M")
    a = make("advise", OUT=str(stage), MACHINE=str(m))
    assert a.returncode == 0, a.stderr
    pf = read_placement(stage / "placement.txt")
    chain = big_chain(stage)
    line = next(s for s in pf.sites if s.chain == chain)
    assert line.ranges, "the 64 MiB array is placed whole in a 12 MiB tier"
    covered = sum(b - a for a, b in line.ranges)
    assert covered <= 12 * MIB
    assert any(a <= WINDOW[0] and WINDOW[1] <= b for a, b in line.ranges), line.ranges
    report = (stage / "report.txt").read_text()
    assert "split sites" in report
    # the site's line: "N of 64.0 MiB (ranges A-B, ...)" with the placement's ranges
    shown = f"{human(covered)} of {human(64 * MIB)} (ranges {human_ranges(line.ranges)})"
    assert shown in report, report
    r = make("rerun", APP=f"{PROGRAM} 0.4", OUT=str(stage))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "ok"            # it ran to its end (its sum
    # depends on how many passes its CPU time allowed)
    s = json.loads((stage / "run-stats.json").read_text())
    site = next(x for x in s["sites"] if x["chain"] == chain)
    got = {(x["start"], x["end"]): x for x in site["ranges"]}
    assert set(got) == set(line.ranges)
    for (a, b), x in got.items():
        assert x["objects"] == 1
        assert x["placed_bytes"] == min(b, 64 * MIB) - a
    # the site and its tier count the bytes in the tier, not the whole object's
    assert site["placed_bytes"] == sum(x["placed_bytes"] for x in got.values())
    fast = s["tiers"][0]
    assert fast["split_placed"] >= 1 and fast["split_bytes"] >= covered
    assert fast["high_water_bytes"] <= 12 * MIB
    assert fast["placed_bytes"] <= 12 * MIB
    assert fast["residency"]["bytes_elsewhere"] == 0


def test_whole_objects_keeps_the_array_out(stage: Path) -> None:
    (stage / "whole").mkdir(exist_ok=True)
    r = subprocess.run([str(HMTUNE), "advise", str(stage), "--mem", "12M",
                        "--whole-objects", "-o", str(stage / "whole" / "placement.txt")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    pf = read_placement(stage / "whole" / "placement.txt")
    assert all(not s.ranges for s in pf.sites)
    assert big_chain(stage) not in {s.chain for s in pf.sites}


def test_a_bad_or_foreign_profile_is_refused_and_nothing_is_written(stage: Path,
                                                                     tmp_path: Path) -> None:
    d = tmp_path / "copy"
    d.mkdir()
    for name in ("sites.csv", "allocs.csv", "profile.csv", "trace.prv", "trace.pcf",
                 "trace.row"):
        (d / name).write_bytes((stage / name).read_bytes())
    text = (d / "profile.csv").read_text().splitlines()
    (d / "profile.csv").write_text("\n".join([text[0], text[1], "3,oops,1,1"]) + "\n")
    r = subprocess.run([str(HMTUNE), "advise", str(d), "--mem", "12M"],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "profile.csv:3" in r.stderr
    assert not (d / "placement.txt").exists()
    foreign = re.sub(r"trace-id=\S+", "trace-id=0123456789abcdef", text[0])
    (d / "profile.csv").write_text("\n".join([foreign, *text[1:]]) + "\n")
    r = subprocess.run([str(HMTUNE), "advise", str(d), "--mem", "12M"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "different traces" in r.stderr
    assert not (d / "placement.txt").exists()
