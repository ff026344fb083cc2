"""Parts of statics end to end (issue 43, item 3): tests/programs/static_half's 64 MiB
.bss array whose first half is hot. Traced and analyzed, profile.csv has the static's
rows, nearly all of their samples in the first half; advised with a fast tier of half
the array, placement.txt has a `static-split` line with ranges in that half (but for
the cold units samples fell in) and the
capacity curve rises before the whole array fits (no longer a step at 64 MiB); the
re-run binds (numa:0) or remaps (hugetlb) exactly the whole pages inside those ranges,
by the interposer's report and by the kernel's numa_maps/smaps, with the program's
checksum unchanged; a range past the object is refused with its line and the program
runs as it would without hmtune.

Sampling bounds: the cold half is written twice (the initial fill and one pass) against
PASSES + 1 passes over the hot half, so it holds under 1 % of the accesses: with n
samples in the static, at most 0.02 n + 3 sqrt(0.02 n) + 2 may fall there."""

from __future__ import annotations

import csv
import json
import math
import os
import re
import subprocess
from pathlib import Path

import pytest
from tracemodel import HMTUNE, PROGRAMS

from hmtune.core.placement import StaticLine, format_placement, read_placement
from hmtune.core.units import MIB

APP = PROGRAMS / "static_half"
LIB = PROGRAMS.parents[1] / "lib" / "libhmalloc.so"
PASSES = "300"
SIZE = 64 * MIB
HALF = SIZE // 2
NR = Path("/proc/sys/vm/nr_hugepages")

pytestmark = pytest.mark.skipif(not APP.exists(), reason="test programs not built (make)")


def hmtune(*args: str, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(HMTUNE), *args], capture_output=True, text=True,
                          timeout=600, **kw)


def machine(path: Path, backend: str, capacity: str) -> Path:
    path.write_text('name = "parts"\n[[tier]]\nname = "fast"\n'
                    f'capacity = "{capacity}"\nbackend = "{backend}"\n'
                    'load_cost = 1.0\nstore_cost = 1.0\n'
                    '[[tier]]\nname = "slow"\ncapacity = "unlimited"\nbackend = "default"\n'
                    'load_cost = 2.0\nstore_cost = 2.0\n')
    return path


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


@pytest.fixture(scope="module")
def stage(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("static_half")
    r = hmtune("trace", "-q", "-o", str(d), "--sampler", "soft", "--", str(APP), PASSES)
    assert r.returncode == 0, r.stderr
    a = hmtune("analyze", str(d))
    assert a.returncode == 0, a.stderr
    return d


@pytest.fixture(scope="module")
def bare() -> str:
    return subprocess.run([str(APP), PASSES], capture_output=True, text=True,
                          check=True).stdout


def big_row(stage: Path) -> dict[str, str]:
    got = [r for r in rows(stage / "sites.csv") if r["kind"] == "static"
           and r["callstack"].startswith("big [static")]
    assert len(got) == 1
    return got[0]


def test_profile_rows_of_the_static(stage: Path) -> None:
    big = big_row(stage)
    assert int(big["max_size"]) == SIZE
    prof = [r for r in rows(stage / "profile.csv") if r["site_id"] == big["site_id"]]
    n = sum(int(r["samples"]) for r in prof)
    # every sample of the static is in a bucket, and the buckets add up to its row
    assert n == int(big["samples"]) and n >= 10
    assert sum(int(r["weight"]) for r in prof) == int(float(big["weight"]))
    assert all(0 <= int(r["offset"]) < SIZE and int(r["offset"]) % 4096 == 0 for r in prof)
    cold = sum(int(r["samples"]) for r in prof if int(r["offset"]) >= HALF)
    assert cold <= 0.02 * n + 3 * math.sqrt(0.02 * n) + 2, (cold, n)


def advise(stage: Path, out: Path, backend: str, capacity: str) -> StaticLine:
    out.mkdir(parents=True, exist_ok=True)
    r = hmtune("advise", str(stage), "--machine", str(machine(out / "m.toml", backend, capacity)),
               "-o", str(out / "placement.txt"))
    assert r.returncode == 0, r.stderr
    pf = read_placement(out / "placement.txt")
    assert len(pf.statics) == 1
    return pf.statics[0]


def test_half_the_static_is_placed_by_ranges(stage: Path, tmp_path: Path) -> None:
    line = advise(stage, tmp_path, "numa:0", "32M")
    assert line.ranges, "placed whole in a tier of half its size"
    assert line.size == SIZE and line.frame == big_row(stage)["callstack_raw"].split(" [")[0]
    covered = sum(b - a for a, b in line.ranges)
    assert 0.75 * HALF <= covered <= HALF, line.ranges
    # the hot half, but for the 2 MiB units of the cold half that samples fell in (an
    # access of its fill or its one pass: they may outweigh a hot unit without samples)
    prof = [r for r in rows(stage / "profile.csv") if r["site_id"] == big_row(stage)["site_id"]]
    cold_units = {int(r["offset"]) // (2 * MIB) for r in prof if int(r["offset"]) >= HALF}
    cold = sum(max(0, b - max(a, HALF)) for a, b in line.ranges)
    assert cold <= 2 * MIB * len(cold_units), (line.ranges, cold_units)
    curve = rows(tmp_path / "capacity_curve.csv")
    share = {int(r["capacity_bytes"]): float(r["share_of_capturable"]) for r in curve}
    assert share[0] == 0.0
    # parts of it are worth something before the whole array fits: no step at 64 MiB
    assert max(v for c, v in share.items() if c <= HALF) >= 0.9
    assert any(0.0 < v < 1.0 for c, v in share.items() if c < HALF)
    report = (tmp_path / "report.txt").read_text()
    assert "split sites" in report


def run(out: Path, maps: Path, *extra: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    stats = out / "stats.json"
    r = hmtune("run", "-q", "-o", str(out), "--placement", str(out / "placement.txt"),
               "--stats", str(stats), *extra, "--", str(APP), PASSES, str(maps))
    assert r.returncode == 0, r.stderr
    return r, json.loads(stats.read_text())


def kernel_view(maps: Path) -> tuple[int, list[str], list[str]]:
    """static_half's MAPS file: big's address, smaps blocks, numa_maps lines."""
    text = maps.read_text()
    addr = next(int(f[2], 16) for f in map(str.split, text.splitlines())
                if f and f[0] == "object")
    smaps = text.split("\nsmaps\n", 1)[1].split("\nnuma_maps\n", 1)[0]
    return (addr, re.split(r"\n(?=[0-9a-f]+-[0-9a-f]+ )", smaps),
            text.split("\nnuma_maps\n", 1)[1].splitlines())


def whole_pages(addr: int, line: StaticLine, page: int) -> list[tuple[int, int]]:
    out = []
    for a, b in line.ranges:
        lo = (addr + a + page - 1) // page * page
        hi = (addr + min(b, line.size)) // page * page
        out.append((lo, hi))
    return out


def check_ranges(st: dict, line: StaticLine, want: list[tuple[int, int]]) -> None:
    got = next(s for s in st["statics"] if s["object"] == line.frame)
    assert got["placed"] and got["why"] == ""
    assert [(x["start"], x["end"]) for x in got["ranges"]] == list(line.ranges)
    assert [(x["address"], x["address"] + x["placed_bytes"]) for x in got["ranges"]] == want
    assert got["placed_bytes"] == sum(b - a for a, b in want)
    assert got["residency"]["bytes_intended"] == got["placed_bytes"]
    assert st["tiers"][0]["static_bytes"] == got["placed_bytes"]


def test_rerun_binds_the_ranges(stage: Path, bare: str, tmp_path: Path) -> None:
    line = advise(stage, tmp_path, "numa:0", "32M")
    r, st = run(tmp_path, tmp_path / "maps.txt")
    assert r.stdout == bare                       # the same computation, the same answer
    addr, _, numa = kernel_view(tmp_path / "maps.txt")
    want = whole_pages(addr, line, 4096)
    check_ranges(st, line, want)
    for lo, _ in want:                            # the kernel's policy for their pages
        assert " bind:0 " in next(x for x in numa if x.startswith(f"{lo:x} "))
    end = want[-1][1]                             # what follows the last range is not bound
    after = [x for x in numa if int(x.split()[0], 16) == end]
    assert after and "bind:" not in after[0]


@pytest.mark.skipif(os.geteuid() != 0 or not NR.exists(),
                    reason="needs root and a hugepage pool (--reserve-hugepages)")
def test_rerun_remaps_the_ranges_to_hugepages(stage: Path, bare: str, tmp_path: Path) -> None:
    line = advise(stage, tmp_path, "hugetlb", "32M")
    assert line.ranges
    r, st = run(tmp_path, tmp_path / "maps.txt", "--reserve-hugepages")
    assert r.stdout == bare
    addr, blocks, _ = kernel_view(tmp_path / "maps.txt")
    want = [(a, b) for a, b in whole_pages(addr, line, 2 * MIB)]
    check_ranges(st, line, [w if w[1] > w[0] else (0, 0) for w in want])
    for lo, hi in want:
        if hi <= lo:
            continue
        block = next(x for x in blocks if x.startswith(f"{lo:x}-{hi:x} "))
        assert re.search(r"^KernelPageSize:\s+2048 kB", block, re.M)
        assert int(re.search(r"^Private_Hugetlb:\s+(\d+) kB", block, re.M)[1]) * 1024 == hi - lo


def test_a_range_past_the_static_is_refused_and_loses_nothing(stage: Path, bare: str,
                                                                tmp_path: Path) -> None:
    line = advise(stage, tmp_path, "numa:0", "32M")
    path = tmp_path / "placement.txt"
    pf = read_placement(path)
    text = format_placement(pf)
    bad = text.replace(f"static-split fast {SIZE} ",
                       f"static-split fast {SIZE} 0-4096,{SIZE}-{SIZE + 4096},", 1)
    assert bad != text
    path.write_text(bad)
    lineno = next(i for i, x in enumerate(bad.splitlines(), 1) if x.startswith("static-split"))
    r = hmtune("run", "-q", "-o", str(tmp_path), "--placement", str(path), "--", str(APP),
               PASSES)
    assert r.returncode == 2 and f"placement.txt:{lineno}:" in r.stderr
    assert r.stdout == ""                         # refused before starting the program
    # the library itself, given the file anyway: it places nothing, the program runs
    env = dict(os.environ, LD_PRELOAD=str(LIB), HMTUNE_PLACEMENT=str(path),
               HMTUNE_STATS=str(tmp_path / "stats.json"))
    r = subprocess.run([str(APP), PASSES], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0 and r.stdout == bare
    assert f"line {lineno}" in r.stderr
    assert not (tmp_path / "stats.json").exists() or \
        all(not s["placed"] for s in json.loads((tmp_path / "stats.json").read_text())
            .get("statics", []))
    assert line.ranges
