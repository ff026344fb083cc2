"""The hash join example end to end through the make targets users run: its hash table
(a quarter of the footprint, allocated last, after the probe keys, the build relation
and the result buffer) is traced as the heaviest site, advised into a fast tier of a
quarter of the footprint, and placed there on the re-run by the interposer's own
residency report, with the program's checksum unchanged; the inputs and the result
buffer, which allocation order would place first, stay out. The fast tier is node 0
through mbind (numa:0), whose residency this one-node machine can check exactly."""

from __future__ import annotations

import csv
import json
import subprocess
from pathlib import Path

import pytest
from clistage import ROOT

from hmtune.core.placement import read_placement
from hmtune.core.units import MIB

PROGRAM = ROOT / "build" / "examples" / "hashjoin"
APP = f"{PROGRAM} -s 64 -n 10"          # table 16 MiB, about 0.5 s of kernel
TABLE = 16 * MIB


def make(target: str, **kw: str) -> subprocess.CompletedProcess[str]:
    args = ["make", "--no-print-directory", "-C", str(ROOT), target,
            *(f"{k}={v}" for k, v in kw.items())]
    return subprocess.run(args, capture_output=True, text=True, timeout=600)


def machine(path: Path, capacity: str) -> Path:
    path.write_text('name = "hashjoin"\n[[tier]]\nname = "fast"\n'
                    f'capacity = "{capacity}"\nbackend = "numa:0"\n'
                    'load_cost = 1.0\nstore_cost = 1.0\n'
                    '[[tier]]\nname = "slow"\ncapacity = "unlimited"\nbackend = "default"\n'
                    'load_cost = 2.0\nstore_cost = 2.0\n')
    return path


def marker_line(name: str) -> int:
    text = (ROOT / "examples" / "hashjoin.c").read_text().splitlines()
    found = [n for n, line in enumerate(text, 1) if f"hmtune-site: {name} " in line]
    assert len(found) == 1, name
    return found[0]


def chains(d: Path) -> dict[str, dict[str, str]]:
    """The sites.csv row of each marked allocation, by its marker name."""
    with (d / "sites.csv").open(newline="") as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    got = {}
    for name in ("probe", "build", "out", "table"):
        mine = [r for r in rows
                if r["callstack"].split(" > ")[0].endswith(f"hashjoin.c:{marker_line(name)}")]
        assert len(mine) == 1, (name, rows)
        got[name] = mine[0]
    return got


@pytest.fixture(scope="module")
def stage(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("hashjoin") / "hashjoin"
    r = make("trace", APP=APP, OUT=str(out))
    assert r.returncode == 0, r.stderr
    assert make("analyze", OUT=str(out)).returncode == 0
    return out


def test_the_table_is_the_heaviest_site_and_goes_to_the_fast_tier(stage: Path,
                                                                   tmp_path: Path) -> None:
    rows = chains(stage)
    assert {k: int(r["max_size"]) for k, r in rows.items()} == {
        "probe": 20 * MIB, "build": 8 * MIB, "out": 20 * MIB, "table": TABLE}
    weight = {k: float(r["weight"]) for k, r in rows.items()}
    assert weight["table"] > 2 * max(weight[k] for k in ("probe", "build", "out"))

    m = machine(tmp_path / "m.toml", "16M")                     # a quarter of 64 MiB
    a = make("advise", OUT=str(stage), MACHINE=str(m))
    assert a.returncode == 0, a.stderr
    pf = read_placement(stage / "placement.txt")
    placed = {s.chain: s for s in pf.sites}
    table = placed.get(rows["table"]["callstack_raw"])
    assert table is not None, pf.sites
    covered = sum(min(b, TABLE) - a for a, b in table.ranges) if table.ranges else TABLE
    assert covered >= 15 * MIB
    for name in ("probe", "out"):
        assert rows[name]["callstack_raw"] not in placed, name

    r = make("rerun", APP=APP, OUT=str(stage))
    assert r.returncode == 0, r.stderr
    bare = subprocess.run(APP.split(), capture_output=True, text=True, check=True)
    assert bare.stdout.split()[1] == r.stdout.split()[-1]           # same checksum
    s = json.loads((stage / "run-stats.json").read_text())
    site = next(x for x in s["sites"] if x["chain"] == rows["table"]["callstack_raw"])
    assert site["placed"] == 1 and site["placed_bytes"] >= covered
    fast = s["tiers"][0]
    assert covered <= fast["high_water_bytes"] <= 16 * MIB
    assert fast["residency"]["bytes_elsewhere"] == 0


@pytest.mark.parametrize("args", [["-s", "8"], ["-s", "x"], ["-n", "0"], ["extra"]])
def test_bad_arguments_are_refused_with_status_2(args: list[str]) -> None:
    r = subprocess.run([str(PROGRAM), *args], capture_output=True, text=True)
    assert r.returncode == 2 and r.stdout == "" and r.stderr.startswith(
        ("hashjoin:", "usage: hashjoin")), r.stderr
