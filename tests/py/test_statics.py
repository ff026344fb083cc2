"""Static variables end to end (issue 15, "Attribution"): a trace of an integer-sort
kernel whose hot arrays are in .bss (tests/programs/static_arrays.c) and of a Fortran
code's module array and COMMON block (fortran_static.f90) gives sites.csv rows of kind
static with their symbols' sizes and most of the sampled weight; the version line's
split by address class adds up to the trace summary's counts and weights; advise
places the statics; the re-run moves their pages (bind:0 in numa_maps, 2 MiB hugetlb
pages in smaps, read back by the program itself) with the program's output unchanged;
bad static lines leave the program as it was, each with its reason."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from tracemodel import HMTUNE, PROGRAMS

from hmtune.analyze.sites_io import CLASSES, read_sites, split_from_meta
from hmtune.core.placement import StaticLine, format_placement, read_placement
from hmtune.core.units import MIB

APP = PROGRAMS / "static_arrays"
FORTRAN = PROGRAMS / "fortran_static"
ROUNDS = "12"                                    # ~0.5 s bare, ~130 samples
NR = Path("/proc/sys/vm/nr_hugepages")

pytestmark = pytest.mark.skipif(not (APP.exists() and FORTRAN.exists()),
                                reason="test programs not built (make)")


def nm_sizes(binary: Path) -> dict[str, tuple[int, int]]:
    """symbol -> (value, ELF size) of the binary's sized symbols (nm -S)."""
    out = subprocess.run(["nm", "-S", str(binary)], capture_output=True, text=True,
                         check=True).stdout
    return {f[3]: (int(f[0], 16), int(f[1], 16)) for f in map(str.split, out.splitlines())
            if len(f) == 4}


def rows(d: Path) -> list[dict[str, str]]:
    with (d / "sites.csv").open(newline="") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def hmtune(*args: str, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(HMTUNE), *args], capture_output=True, text=True,
                          timeout=600, **kw)


def machine(path: Path, backend: str) -> Path:
    path.write_text('name = "statics"\n[[tier]]\nname = "fast"\ncapacity = "256M"\n'
                    f'backend = "{backend}"\nload_cost = 1.0\nstore_cost = 1.0\n'
                    '[[tier]]\nname = "slow"\ncapacity = "unlimited"\nbackend = "default"\n'
                    'load_cost = 2.0\nstore_cost = 2.0\n')
    return path


@pytest.fixture(scope="module")
def stage(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("static_arrays")
    # without the software sampler's look ahead: analyze counts look-ahead samples as
    # without an address unless --lookahead, while the trace's classes count them where
    # their address is, so the split is checked against the trace's classes on a trace
    # that has none
    os.environ["HMTUNE_SAMPLE_AHEAD"] = "0"
    try:
        r = hmtune("trace", "-q", "-o", str(d), "--sampler", "soft", "--", str(APP), ROUNDS)
    finally:
        del os.environ["HMTUNE_SAMPLE_AHEAD"]
    assert r.returncode == 0, r.stderr
    assert hmtune("analyze", str(d)).returncode == 0
    return d


@pytest.fixture(scope="module")
def bare() -> str:
    return subprocess.run([str(APP), ROUNDS], capture_output=True, text=True,
                          check=True).stdout


def statics_of(d: Path) -> dict[str, dict[str, str]]:
    """The static rows by symbol."""
    return {r["callstack"].split(" [static")[0]: r for r in rows(d) if r["kind"] == "static"}


def test_static_rows(stage: Path) -> None:
    sym = nm_sizes(APP)
    got = statics_of(stage)
    assert "key_count" in got              # keys, read in order, may get no sample at all
    for name in {"key_count", "keys"} & set(got):
        r = got[name]
        value, size = sym[name]
        assert size == 16 * MIB
        assert r["callstack_raw"] == f"{APP}+0x{value:x} [static {size}]"
        assert int(r["max_size"]) == int(r["peak_live_bytes"]) == int(r["total_bytes"]) == size
        assert r["n_allocs"] == "1" and r["first_alloc_ns"] == "0"
        assert int(r["live_ns"]) == int(r["last_free_ns"]) > 0
    heap = [r for r in rows(stage) if r["kind"] == "heap"]
    static_w = sum(float(r["weight"]) for r in got.values())
    heap_w = sum(float(r["weight"]) for r in heap)
    # the counting loop over key_count is the kernel's hottest part
    assert static_w > heap_w and sum(float(r["share"]) for r in got.values()) > 0.4
    assert max(got.values(), key=lambda r: float(r["weight"])) is got["key_count"]


def test_split_adds_up(stage: Path) -> None:
    """The version line's split: its classes are the trace summary's, sample for sample
    and weight for weight, and its total is the denominator of `share`."""
    split = split_from_meta(read_sites(stage / "sites.csv").attrs["meta"])
    assert split is not None
    summary = json.loads((stage / "trace.summary.json").read_text())
    assert split.samples == {c: summary["samples"][c] for c in CLASSES}
    assert {c: split.weight[c] for c in CLASSES} == \
        {c: float(summary["weight"][c]) for c in CLASSES}
    r = max(rows(stage), key=lambda r: float(r["weight"]))
    assert float(r["weight"]) / float(r["share"]) == pytest.approx(split.total, rel=1e-12)
    static_w = sum(float(x["weight"]) for x in rows(stage) if x["kind"] == "static")
    assert static_w == split.weight["static"]


def test_per_rank(stage: Path, tmp_path: Path) -> None:
    assert hmtune("analyze", str(stage / "trace.prv"), "--per-rank", "-o",
                  str(tmp_path)).returncode == 0
    per = statics_of(tmp_path)
    assert per["key_count"]["rank"] == "0"
    assert per["key_count"]["callstack_raw"] == statics_of(stage)["key_count"]["callstack_raw"]
    assert per["key_count"]["weight"] == statics_of(stage)["key_count"]["weight"]


def advise(stage: Path, out: Path, backend: str) -> list[StaticLine]:
    out.mkdir(parents=True, exist_ok=True)
    r = hmtune("advise", str(stage), "--machine", str(machine(out / "m.toml", backend)),
               "-o", str(out / "placement.txt"))
    assert r.returncode == 0, r.stderr
    return read_placement(out / "placement.txt").statics


def run(out: Path, *extra: str, maps: Path,
        env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess[str], dict]:
    stats = out / "stats.json"
    r = hmtune("run", "-q", "-o", str(out), "--placement", str(out / "placement.txt"),
               "--stats", str(stats), *extra, "--", str(APP), ROUNDS, str(maps), env=env)
    assert r.returncode == 0, r.stderr
    return r, json.loads(stats.read_text())


def kernel_view(maps: Path) -> tuple[dict[str, tuple[int, int]], list[str], list[str]]:
    """What static_arrays wrote: its objects, smaps blocks, numa_maps lines."""
    text = maps.read_text()
    objs = {f[1]: (int(f[2], 16), int(f[3])) for f in map(str.split, text.splitlines())
            if f and f[0] == "object"}
    smaps = text.split("\nsmaps\n", 1)[1].split("\nnuma_maps\n", 1)[0]
    blocks = re.split(r"\n(?=[0-9a-f]+-[0-9a-f]+ )", smaps)
    return objs, blocks, text.split("\nnuma_maps\n", 1)[1].splitlines()


def check_output(r: subprocess.CompletedProcess[str], bare: str) -> None:
    assert r.stdout == bare                      # the same computation, the same answer


def test_numa_rerun(stage: Path, bare: str, tmp_path: Path) -> None:
    statics = advise(stage, tmp_path, "numa:0")
    sym = nm_sizes(APP)
    placed = {s.frame: s.size for s in statics}
    assert placed.get(f"{APP}+0x{sym['key_count'][0]:x}") == 16 * MIB
    r, st = run(tmp_path, maps=tmp_path / "maps.txt")
    check_output(r, bare)
    objs, _, numa = kernel_view(tmp_path / "maps.txt")
    addr, size = objs["key_count"]
    start = (addr + 4095) & ~4095
    line = next(x for x in numa if x.startswith(f"{start:x} "))
    assert " bind:0 " in line                   # the kernel's policy for its pages
    got = {s["object"]: s for s in st["statics"]}
    k = got[f"{APP}+0x{sym['key_count'][0]:x}"]
    assert k["placed"] and k["placed_bytes"] == ((addr + size) & ~4095) - start
    assert k["residency"]["bytes_intended"] == k["placed_bytes"]
    assert st["tiers"][0]["static_placed"] == len(statics)


def test_all_baseline_places_statics(stage: Path, bare: str, tmp_path: Path) -> None:
    """compare's every-site-fast bound (HMTUNE_BASELINE=all) places the placement's
    statics as well as every heap request; first-come and size-window place neither."""
    statics = advise(stage, tmp_path, "numa:0")
    assert statics
    for baseline, placed in (("all", len(statics)), ("first-come", 0)):
        env = dict(os.environ, HMTUNE_BASELINE=baseline)
        r, st = run(tmp_path, maps=tmp_path / "maps.txt", env=env)
        check_output(r, bare)
        assert st["baseline"] == baseline
        assert st["tiers"][0]["static_placed"] == placed
        assert st["tiers"][0]["placed_blocks"] > 0


@pytest.mark.skipif(os.geteuid() != 0 or not NR.exists(),
                    reason="needs root and a hugepage pool (--reserve-hugepages)")
def test_hugetlb_rerun(stage: Path, bare: str, tmp_path: Path) -> None:
    statics = advise(stage, tmp_path, "hugetlb")
    assert statics and all(s.tier == "fast" for s in statics)
    r, st = run(tmp_path, "--reserve-hugepages", maps=tmp_path / "maps.txt")
    check_output(r, bare)
    objs, blocks, _ = kernel_view(tmp_path / "maps.txt")
    addr, size = objs["key_count"]
    a, b = (addr + 2 * MIB - 1) & ~(2 * MIB - 1), (addr + size) & ~(2 * MIB - 1)
    block = next(x for x in blocks if x.startswith(f"{a:x}-{b:x} "))
    assert re.search(r"^KernelPageSize:\s+2048 kB", block, re.M)
    assert int(re.search(r"^Private_Hugetlb:\s+(\d+) kB", block, re.M)[1]) * 1024 == b - a
    key = f"{APP}+0x{nm_sizes(APP)['key_count'][0]:x}"
    k = next(s for s in st["statics"] if s["object"] == key)
    assert k["placed"] and k["placed_bytes"] == b - a


def test_thp_rerun(stage: Path, bare: str, tmp_path: Path) -> None:
    advise(stage, tmp_path, "thp")
    r, st = run(tmp_path, maps=tmp_path / "maps.txt")
    check_output(r, bare)
    objs, blocks, _ = kernel_view(tmp_path / "maps.txt")
    addr, size = objs["key_count"]
    a, b = (addr + 2 * MIB - 1) & ~(2 * MIB - 1), (addr + size) & ~(2 * MIB - 1)
    block = next(x for x in blocks if x.startswith(f"{a:x}-{b:x} "))
    assert " hg" in block.split("VmFlags:")[1]       # madvise(MADV_HUGEPAGE) on it


def test_bad_static_lines(stage: Path, bare: str, tmp_path: Path) -> None:
    """A module not loaded, a size that is not the symbol's, an absurd size: each left
    where it is with its reason, one warning line each; the good line still placed and
    the program's output unchanged."""
    statics = advise(stage, tmp_path, "numa:0")
    pf = read_placement(tmp_path / "placement.txt")
    sym = nm_sizes(APP)
    key = f"{APP}+0x{sym['key_count'][0]:x}"
    keys = f"{APP}+0x{sym['keys'][0]:x}"
    pf.statics = [StaticLine("fast", "/nonexistent/libgone.so+0x1000", 4096),
                  StaticLine("fast", key, 16 * MIB - 4096),
                  StaticLine("fast", keys, 1 << 40),
                  *[s for s in statics if s.frame not in (key, keys)]]
    (tmp_path / "placement.txt").write_text(format_placement(pf))
    stats = tmp_path / "stats.json"
    r = hmtune("run", "-o", str(tmp_path), "--placement", str(tmp_path / "placement.txt"),
               "--stats", str(stats), "--", str(APP), ROUNDS)
    assert r.returncode == 0 and r.stdout == bare, r.stderr
    got = json.loads(stats.read_text())["statics"]
    why = {s["object"]: (s["placed"], s["why"]) for s in got}
    assert why["/nonexistent/libgone.so+0x1000"][0] is False
    assert "not loaded" in why["/nonexistent/libgone.so+0x1000"][1]
    assert why[key][0] is False and "does not match the symbol" in why[key][1]
    assert why[keys][0] is False and "not inside one loaded segment" in why[keys][1]
    refused = [s for s in got if not s["placed"]]
    assert len(refused) == 3
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("hmalloc: placement line")]
    assert sorted(int(ln.split()[3].rstrip(":")) for ln in lines) == \
        sorted(s["line"] for s in refused)


def test_fortran_module_and_common(tmp_path: Path) -> None:
    d = tmp_path / "stage"
    r = hmtune("trace", "-q", "-o", str(d), "--sampler", "soft", "--", str(FORTRAN), "6")
    assert r.returncode == 0, r.stderr
    assert hmtune("analyze", str(d)).returncode == 0
    sym = nm_sizes(FORTRAN)
    got = statics_of(d)
    for name, size in (("__grid_mod_MOD_field", 16 * MIB), ("work_", 8 * MIB)):
        assert name in got, sorted(got)
        assert sym[name][1] == size and int(got[name]["peak_live_bytes"]) == size
        assert got[name]["callstack_raw"] == f"{FORTRAN}+0x{sym[name][0]:x} [static {size}]"
    assert sum(float(r["share"]) for r in got.values()) > 0.5     # no heap work at all
    statics = advise(d, tmp_path / "numa", "numa:0")
    assert {s.frame for s in statics} >= {f"{FORTRAN}+0x{sym[n][0]:x}"
                                          for n in ("__grid_mod_MOD_field", "work_")}
    stats = tmp_path / "stats.json"
    r = hmtune("run", "-q", "-o", str(tmp_path), "--placement",
               str(tmp_path / "numa" / "placement.txt"), "--stats", str(stats), "--",
               str(FORTRAN), "6")
    want = subprocess.run([str(FORTRAN), "6"], capture_output=True, text=True).stdout
    assert r.returncode == 0 and r.stdout == want, r.stderr
    st = json.loads(stats.read_text())
    assert all(s["placed"] for s in st["statics"]) and st["statics"]


def test_stripped_program_unnamed_static_data(tmp_path: Path) -> None:
    """A stripped copy of static_arrays has no symbol for its arrays: its .bss is one
    static (unnamed data from the section's start to its end), placed and checked by
    libhmalloc against the section headers."""
    app = tmp_path / "static_arrays_stripped"
    app.write_bytes(APP.read_bytes())
    app.chmod(0o755)
    subprocess.run(["strip", str(app)], check=True)
    sections = subprocess.run(["readelf", "-SW", str(app)], capture_output=True, text=True,
                              check=True).stdout
    bss = next(f for f in map(str.split, sections.splitlines()) if ".bss" in f)
    addr, size = int(bss[bss.index(".bss") + 2], 16), int(bss[bss.index(".bss") + 4], 16)
    d = tmp_path / "stage"
    r = hmtune("trace", "-q", "-o", str(d), "--sampler", "soft", "--", str(app), "6")
    assert r.returncode == 0, r.stderr
    assert hmtune("analyze", str(d)).returncode == 0
    got = statics_of(d)
    # the arrays' .bss is the static with the weight (a stray sample may land in other
    # unnamed data, e.g. .data)
    assert max(got, key=lambda k: float(got[k]["weight"])) == ".bss"
    assert got[".bss"]["callstack_raw"] == f"{app}+0x{addr:x} [static {size}]"
    statics = advise(d, tmp_path / "numa", "numa:0")
    assert (f"{app}+0x{addr:x}", size) in [(s.frame, s.size) for s in statics]
    stats = tmp_path / "stats.json"
    r = hmtune("run", "-q", "-o", str(tmp_path), "--placement",
               str(tmp_path / "numa" / "placement.txt"), "--stats", str(stats), "--",
               str(app), "6")
    want = subprocess.run([str(APP), "6"], capture_output=True, text=True).stdout
    assert r.returncode == 0 and r.stdout == want, r.stderr
    placed = [s for s in json.loads(stats.read_text())["statics"]
              if s["object"] == f"{app}+0x{addr:x}"]
    assert len(placed) == 1
    assert placed[0]["placed"] and placed[0]["placed_bytes"] >= size - 8192
