"""Site labels of stripped programs (hmtune-finalize's .pcf, sites.csv's label): never
`??` alone; the dynamic symbol table's names (demangled) where a stripped library
still exports them, module+offset otherwise; a separate debug file found by build-id
under HMTUNE_DEBUG_ROOT gives file:line back; distinct chains get distinct labels,
also when they share their inner frames (tests/programs/cxx_sites: a template and a
wrapper, like LAMMPS's Memory::create / Memory::smalloc)."""

from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from clistage import HMTUNE, ROOT

from hmtune.analyze.prv_tables import parse_pcf

PROGS = ROOT / "build" / "tests" / "programs"
SRC = ROOT / "tests" / "programs"
FINALIZE = ROOT / "build" / "bin" / "hmtune-finalize"
SITE_TABLE, RAW_TABLE, FUNC_TABLE = 32000009, 41000010, 41000011
# cxx_sites's sites: requested size -> the CALLER marker of the line that asks for it
CXX_SITES = {160000: "atoms_x", 240000: "atoms_v", 280000: "atoms_type",
             200000: "neigh_list", 320000: "fix_f"}


def run(cmd: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                       env={**os.environ, **(env or {})})
    assert r.returncode == 0, f"{cmd}: {r.stderr}"
    return r


def trace(d: Path, *app: str, debug_root: Path | None = None) -> Path:
    """hmtune trace + analyze of app into d (debug files only from debug_root)."""
    env = {"HMTUNE_DEBUG_ROOT": str(debug_root or d / "no-debug-files")}
    run([str(HMTUNE), "trace", "-q", "-o", str(d), "--", *app], env)
    run([str(HMTUNE), "analyze", str(d)], env)
    return d


def build_id(path: Path) -> str:
    out = run(["readelf", "-n", str(path)]).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    assert m, f"{path} has no build-id"
    return m[1]


def strip(binary: Path, debug_root: Path) -> None:
    """binary stripped in place; its debug info in debug_root/.build-id/xx/yyyy.debug."""
    bid = build_id(binary)
    dbg = debug_root / ".build-id" / bid[:2] / f"{bid[2:]}.debug"
    dbg.parent.mkdir(parents=True, exist_ok=True)
    run(["objcopy", "--only-keep-debug", str(binary), str(dbg)])
    run(["strip", str(binary)])


def sites(d: Path) -> list[dict[str, str]]:
    with (d / "sites.csv").open(newline="") as f:
        return list(csv.DictReader(x for x in f if not x.startswith("#")))


def sizes(d: Path) -> dict[int, int]:
    """site id -> its largest request (allocs.csv)."""
    out: dict[int, int] = {}
    with (d / "allocs.csv").open(newline="") as f:
        for r in csv.DictReader(x for x in f if not x.startswith("#")):
            out[int(r["site_id"])] = max(out.get(int(r["site_id"]), 0), int(r["size"]))
    return out


def by_marker(d: Path) -> dict[str, dict[str, str]]:
    """cxx_sites's rows of sites.csv by CALLER marker."""
    size = sizes(d)
    out = {}
    for r in sites(d):
        name = CXX_SITES.get(size.get(int(r["site_id"]), 0))
        if name:
            out[name] = r
    assert sorted(out) == sorted(CXX_SITES.values()), out
    return out


def marker_line(name: str, src: str = "cxx_sites_lib.cpp") -> int:
    for i, line in enumerate((SRC / src).read_text().splitlines(), 1):
        if f"CALLER:{name} " in line or line.rstrip().endswith(f"CALLER:{name} */"):
            return i
    raise AssertionError(name)


def pcf_tables(d: Path) -> tuple[dict[int, str], dict[int, str], dict[int, str]]:
    pcf = parse_pcf(d / "trace.pcf")
    return (pcf.values[SITE_TABLE], pcf.values[RAW_TABLE], pcf.values[FUNC_TABLE])


def assert_no_unknown(d: Path, ids: set[int]) -> None:
    """No `??` frame in the .pcf's readable tables, nor in sites.csv, for these ids."""
    site, _, func = pcf_tables(d)
    for i in ids:
        assert "??" not in site[i].split(" > "), site[i]
        assert "??" not in func[i].split(" > "), func[i]
    for r in sites(d):
        if int(r["site_id"]) in ids:
            assert "??" not in r["callstack"].split(" > ") and "??" not in r["label"]


@pytest.fixture(scope="module")
def stripped_stage(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """cxx_sites + libcxxsites.so stripped, traced without their debug files; returns
    the stage and the debug root that holds them (by build-id)."""
    tmp = tmp_path_factory.mktemp("strip")
    bin_dir, root = tmp / "bin", tmp / "debug"
    bin_dir.mkdir()
    for name in ("cxx_sites", "libcxxsites.so"):
        shutil.copy2(PROGS / name, bin_dir / name)
        strip(bin_dir / name, root)
    return trace(tmp / "stage", str(bin_dir / "cxx_sites")), root


def test_stripped_library_labels_from_dynsym(stripped_stage: tuple[Path, Path]) -> None:
    d, _ = stripped_stage
    rows = by_marker(d)
    ids = {int(r["site_id"]) for r in rows.values()}
    assert_no_unknown(d, ids)
    site, raw, func = pcf_tables(d)
    for i in ids:
        frames = site[i].split(" > ")
        # the library's exported functions, demangled, with the offset in them
        assert frames[0].startswith("hmt::Memory::smalloc(unsigned long)+0x"), frames
        assert re.match(r"(double|int)\* hmt::Memory::create<(double|int)>\(", frames[1])
        assert "_Z" not in site[i] and "_Z" not in func[i]
        # the stripped executable exports nothing: module+offset, its file name
        assert re.fullmatch(r"cxx_sites\+0x[0-9a-f]+", frames[3]), frames
        assert len(func[i].split(" > ")) == len(frames) >= len(raw[i].split(" > "))
    labels = {k: r["label"] for k, r in rows.items()}
    assert len(set(labels.values())) == len(labels), labels
    assert labels["neigh_list"] == "Memory::smalloc > Memory::create<int> > Neighbor::build"
    assert labels["fix_f"] == "Memory::smalloc > Memory::create<double> > Fix::init"
    for k in ("atoms_x", "atoms_v"):          # one caller function: its offsets tell them apart
        assert re.fullmatch(r"Memory::smalloc > Memory::create<double> > "
                            r"Atoms::grow\+0x[0-9a-f]+", labels[k]), labels[k]


def test_build_id_debug_file_is_used(stripped_stage: tuple[Path, Path],
                                     tmp_path: Path) -> None:
    """The same raw trace finalized with the debug files under HMTUNE_DEBUG_ROOT:
    file:line and the caller's line come back."""
    d, root = stripped_stage
    out = tmp_path / "stage"
    out.mkdir()
    run([str(FINALIZE), str(d / "raw"), "-o", str(out / "trace"), "--quiet"],
        {"HMTUNE_DEBUG_ROOT": f"/nonexistent:{root}"})
    run([str(HMTUNE), "analyze", str(out)])
    rows = by_marker(out)
    site, _, _ = pcf_tables(out)
    for name, r in rows.items():
        frames = site[int(r["site_id"])].split(" > ")
        assert frames[0].endswith("cxx_sites_lib.cpp:" + str(smalloc_line()))
        assert frames[2].endswith(f"cxx_sites_lib.cpp:{marker_line(name)}"), frames
        assert f"cxx_sites_lib.cpp:{marker_line(name)}" in r["label"]
        assert "cxx_sites.cpp:" in frames[3]              # main's debug file too
    assert len({r["label"] for r in rows.values()}) == len(rows)


def smalloc_line() -> int:
    for i, line in enumerate((SRC / "cxx_sites_lib.cpp").read_text().splitlines(), 1):
        if "SITE:smalloc" in line:
            return i
    raise AssertionError("SITE:smalloc")


def test_unstripped_template_sites_read_apart(tmp_path: Path) -> None:
    """With debug info: every label starts at the allocation line (with its function)
    and names its caller's line and function."""
    d = trace(tmp_path / "full", str(PROGS / "cxx_sites"))
    rows = by_marker(d)
    callers = {"atoms_x": "Atoms::grow", "atoms_v": "Atoms::grow", "atoms_type": "Atoms::grow",
               "neigh_list": "Neighbor::build", "fix_f": "Fix::init"}
    for name, r in rows.items():
        label = r["label"]
        assert label.startswith(f"cxx_sites_lib.cpp:{smalloc_line()} Memory::smalloc"), label
        assert label.endswith(f"cxx_sites_lib.cpp:{marker_line(name)} {callers[name]}"), label
    assert len({r["label"] for r in rows.values()}) == len(rows)
    r = run([str(HMTUNE), "analyze", str(d), "--top", "20"])
    assert "Neighbor::build" in r.stdout and "??" not in r.stdout


@pytest.mark.parametrize("program", ["cxx_new", "realloc_chain", "fortran_alloc"])
def test_stripped_programs_have_no_unknown_frames(tmp_path: Path, program: str) -> None:
    exe = tmp_path / program
    shutil.copy2(PROGS / program, exe)
    run(["strip", str(exe)])
    d = trace(tmp_path / "stage", str(exe))
    rows = sites(d)
    assert rows
    ids = {int(r["site_id"]) for r in rows}
    assert_no_unknown(d, ids)
    labels = [r["label"] for r in rows]
    assert len(set(labels)) == len(labels), labels
    assert all(label and "??" not in label for label in labels)
    # the application's frame, not the allocator's: operator new is libstdc++'s
    own = [lb for lb in labels if lb.startswith(f"{program}+0x")]
    assert own, labels


LAMMPS_INPUT = """units lj
atom_style atomic
lattice fcc 0.8442
region box block 0 6 0 6 0 6
create_box 1 box
create_atoms 1 box
mass 1 1.0
velocity all create 3.0 87287 loop geom
pair_style lj/cut 2.5
pair_coeff 1 1 1.0 1.0 2.5
neighbor 0.3 bin
neigh_modify every 20 delay 0 check no
fix 1 all nve
thermo 50
run 50
"""


@pytest.mark.skipif(shutil.which("lmp") is None, reason="LAMMPS (Debian's lammps) not installed")
def test_lammps_labels(tmp_path: Path) -> None:
    """Debian's stripped liblammps.so: its sites read by exported C++ names."""
    (tmp_path / "in.melt").write_text(LAMMPS_INPUT)
    d = trace(tmp_path / "stage", "lmp", "-in", str(tmp_path / "in.melt"), "-log", "none",
              "-screen", "none", debug_root=Path("/usr/lib/debug"))
    rows = [r for r in sites(d) if "liblammps" in r["callstack_raw"].split(" > ")[0]]
    assert len(rows) >= 10
    assert_no_unknown(d, {int(r["site_id"]) for r in rows})
    labels = [r["label"] for r in rows]
    assert len(set(labels)) == len(labels)
    assert sum("Memory::s" in lb for lb in labels) >= 5, labels
