"""What a program may do to a placed block, on every backend (tests/programs/hostile.c):
a bad free or realloc (a pointer into a placed block that is not its start) stops the
process as glibc does, never hands the memory out twice; a forked child that writes a
hugetlb-placed block lives; madvise(MADV_DONTNEED) and mprotect of one 4 KiB page keep
the semantics anonymous memory has (docs/formats.md §6, "What a tier changes")."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from tracemodel import HMTUNE, PROGRAMS, ROOT, trace

from hmtune.analyze.sites_io import read_sites
from hmtune.core.placement import (
    PlacementFile,
    SiteLine,
    StaticLine,
    TierLine,
    write_placement,
)
from hmtune.core.units import MIB
from hmtune.machine.hostcheck import umf_problem

LIB = ROOT / "build" / "lib" / "libhmalloc.so"
SAN_LIB = ROOT / "build-san" / "lib" / "libhmalloc.so"      # make SAN=1 (make test)
NR = Path("/proc/sys/vm/nr_hugepages")
APP = str(PROGRAMS / "hostile")
ROOTED = os.geteuid() == 0

pytestmark = pytest.mark.skipif(not LIB.exists(), reason="libhmalloc.so is not built (make)")

# Every backend a block of its own can be placed on here; hugetlb ones need root (the
# run reserves the pool), umf ones UMF, memkind's HBW kind the node it is told of.
BACKENDS = ["numa:0", "thp", "hugetlb", "umf:numa:0", "umf:hugetlb", "memkind:MEMKIND_HBW",
            "memkind:MEMKIND_HUGETLB"]
HUGE = {"hugetlb", "umf:hugetlb", "memkind:MEMKIND_HUGETLB"}


def usable(backend: str) -> None:
    if backend in HUGE and not ROOTED:
        pytest.skip("reserving hugepages needs root")
    if backend.startswith("umf:") and umf_problem() is not None:
        pytest.skip("UMF is not installed")


def trace_sites(d: Path, *args: str, stdin: bytes = b"",
                extra: tuple[str, ...] = ()) -> dict[str, str]:
    """Trace `hostile ARGS` into d: the chain of each SITE marker it allocated from."""
    r = trace(d, APP, *args, input=stdin, extra=extra)
    assert r.returncode == 0, r.stderr
    a = subprocess.run([str(HMTUNE), "analyze", str(d)], capture_output=True, text=True)
    assert a.returncode == 0, a.stderr
    sites = read_sites(d / "sites.csv")
    src = (ROOT / "tests" / "programs" / "hostile.c").read_text().splitlines()
    lines = {text.split("SITE:")[1].split()[0]: n for n, text in enumerate(src, 1)
             if "SITE:" in text}
    found = {}
    for raw, sym in zip(sites["callstack_raw"], sites["callstack"], strict=True):
        for name, n in lines.items():
            if sym.split(" > ")[0].endswith(f"hostile.c:{n}"):
                found[name] = raw
    return found


@pytest.fixture(scope="module")
def block_site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The traced stage of `hostile free 0` and its block's chain."""
    d = tmp_path_factory.mktemp("hostile")
    return d, trace_sites(d, "free", "0")["block"]


def static_arr() -> StaticLine:
    """g_arr, hostile's 16 MiB static array, as a static line of tier fast."""
    out = subprocess.run(["nm", "-S", APP], capture_output=True, text=True, check=True).stdout
    (value, size), = ((int(f[0], 16), int(f[1], 16)) for f in map(str.split, out.splitlines())
                      if len(f) == 4 and f[3] == "g_arr")
    return StaticLine("fast", f"{APP}+0x{value:x}", size, "g_arr")


def run(tmp: Path, site: tuple[Path, str], backend: str, *args: str, size_mib: int = 8,
        ranges: tuple[tuple[int, int], ...] = (), statics: tuple[StaticLine, ...] = ()
        ) -> subprocess.CompletedProcess[bytes]:
    """`hostile ARGS` under `hmtune run` with the block placed on backend (only its
    ranges when given), and statics; the tier holds exactly what is placed."""
    usable(backend)
    pl = write_run_placement(tmp, site, backend, size_mib, ranges, statics)
    opts = ["--reserve-hugepages"] if backend in HUGE else []
    env = dict(os.environ, MEMKIND_HBW_NODES="0")
    return subprocess.run([str(HMTUNE), "run", "-q", "-o", str(tmp), "--placement", str(pl),
                           *opts, "--", APP, *args, str(size_mib)],
                          capture_output=True, timeout=120, env=env)


def write_run_placement(tmp: Path, site: tuple[Path, str], backend: str, size_mib: int,
                        ranges: tuple[tuple[int, int], ...] = (),
                        statics: tuple[StaticLine, ...] = ()) -> Path:
    """placement.txt in tmp: the block on backend (only its ranges when given) and
    statics in tier fast, which holds exactly what is placed."""
    pl = tmp / "placement.txt"
    held = sum(e - s for s, e in ranges) if ranges else size_mib * MIB
    held += sum(s.size for s in statics)
    write_placement(pl, PlacementFile(
        tiers=[TierLine("fast", backend, held), TierLine("slow", "default", None)],
        depth=len(site[1].split(" > ")), size_window=(size_mib * MIB, size_mib * MIB),
        sites=[SiteLine("fast", site[1], "the block", ranges)], statics=list(statics)))
    return pl


def placed(tmp: Path) -> int:
    s = json.loads((tmp / "run-stats.json").read_text())
    return sum(site["placed"] for site in s["sites"])


def aborted(r: subprocess.CompletedProcess[bytes]) -> bool:
    """Stopped by SIGABRT, directly or as hmtune run reports a signal (128 + N)."""
    return r.returncode in (-signal.SIGABRT, 128 + signal.SIGABRT)


# ---- a pointer into a block that is not its start ----

@pytest.mark.parametrize("backend", BACKENDS)
def test_a_correct_free_is_placed_and_freed(tmp_path: Path, block_site, backend: str) -> None:
    r = run(tmp_path, block_site, backend, "free", "0")
    assert (r.returncode, r.stdout) == (0, b"apart\n"), r.stderr
    assert placed(tmp_path) == 1


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("off", ["16", "4096", str(2 * MIB + 64)])
def test_an_interior_free_stops_the_program(tmp_path: Path, block_site, backend: str,
                                            off: str) -> None:
    bare = subprocess.run([APP, "free", off], capture_output=True)
    assert aborted(bare)                        # what glibc does
    r = run(tmp_path, block_site, backend, "free", off)
    assert aborted(r), (r.returncode, r.stdout, r.stderr)
    assert b"overlap" not in r.stdout and b"apart" not in r.stdout


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_interior_realloc_stops_the_program(tmp_path: Path, block_site,
                                               backend: str) -> None:
    assert aborted(subprocess.run([APP, "realloc", "16"], capture_output=True))
    r = run(tmp_path, block_site, backend, "realloc", "16")
    assert aborted(r), (r.returncode, r.stdout, r.stderr)
    assert r.stdout == b""


# ---- fork: a child writes the blocks it inherits ----

@pytest.mark.parametrize("backend", BACKENDS)
def test_a_forked_child_writes_a_placed_block(tmp_path: Path, block_site, backend: str) -> None:
    bare = subprocess.run([APP, "fork", "32"], capture_output=True)
    assert (bare.returncode, bare.stdout) == (0, b"child exited 0\nparent ok\n")
    r = run(tmp_path, block_site, backend, "fork", size_mib=32)
    assert (r.returncode, r.stdout) == (0, bare.stdout), r.stderr
    assert placed(tmp_path) == 1
    fork = json.loads((tmp_path / "run-stats.json").read_text())["fork"]
    assert fork["forks"] == 1 and fork["children_unreported"] == 0
    if backend in HUGE:     # the child's copy of the block, in ordinary pages
        assert fork["children_copied"] == 1 and fork["hugetlb_bytes_left"] == 0
        assert fork["hugetlb_bytes_copied"] == 32 * MIB
    else:                   # copy-on-write takes ordinary pages: nothing to do
        assert fork["children_copied"] == fork["hugetlb_bytes_copied"] == 0


def fork_stats(tmp: Path) -> dict[str, int]:
    return json.loads((tmp / "run-stats.json").read_text())["fork"]


@pytest.mark.parametrize("backend", ["hugetlb", "thp"])
def test_a_forked_child_writes_placed_ranges_and_statics(tmp_path: Path, block_site,
                                                         backend: str) -> None:
    ranges = ((2 * MIB, 6 * MIB), (16 * MIB, 24 * MIB))
    r = run(tmp_path, block_site, backend, "fork", size_mib=32, ranges=ranges,
            statics=(static_arr(),))
    assert (r.returncode, r.stdout) == (0, b"child exited 0\nparent ok\n"), r.stderr
    s = json.loads((tmp_path / "run-stats.json").read_text())
    (st,) = s["statics"]
    assert st["placed"] and st["placed_bytes"] >= 14 * MIB
    fast = next(t for t in s["tiers"] if t["name"] == "fast")
    assert fast["split_placed"] == 1 and fast["split_bytes"] == 12 * MIB
    fork = fork_stats(tmp_path)
    want = 12 * MIB + st["placed_bytes"] if backend == "hugetlb" else 0
    assert (fork["hugetlb_bytes_copied"], fork["hugetlb_bytes_left"]) == (want, 0)


# ---- madvise and mprotect of one 4 KiB page ----

@pytest.mark.parametrize("backend", BACKENDS)
def test_madvise_and_mprotect_of_one_page_as_anonymous_memory(tmp_path: Path, block_site,
                                                              backend: str) -> None:
    bare = subprocess.run([APP, "dontneed"], capture_output=True)
    assert (bare.returncode, bare.stdout) == (0, b"madvise 0\npage reads 0\nmprotect 0\n")
    r = run(tmp_path, block_site, backend, "dontneed")
    assert (r.returncode, r.stdout) == (0, bare.stdout), r.stderr
    assert placed(tmp_path) == 1
    partial = json.loads((tmp_path / "run-stats.json").read_text())["hugetlb_partial"]
    if backend in HUGE:     # one page cleared, the hugepage under the other moved
        assert partial == {"madvise_zeroed_bytes": 4096, "mprotect_demoted_bytes": 2 * MIB}
    else:                   # the kernel did both
        assert partial == {"madvise_zeroed_bytes": 0, "mprotect_demoted_bytes": 0}


# ---- the same under ASan/UBSan (libhmalloc.so of make SAN=1) ----

@contextmanager
def pool(pages: int) -> Iterator[None]:
    """pages more 2 MiB hugepages in the pool for the block, put back after."""
    old = int(NR.read_text())
    NR.write_text(f"{old + pages}\n")
    try:
        yield
    finally:
        NR.write_text(f"{old}\n")


@pytest.mark.skipif(not SAN_LIB.exists(), reason="no sanitizer build (make SAN=1 test-c)")
@pytest.mark.parametrize("backend,args,want", [
    ("numa:0", ("free", "16"), None), ("hugetlb", ("free", "4096"), None),
    ("umf:hugetlb", ("realloc", "16"), None),
    ("hugetlb", ("fork",), b"child exited 0\nparent ok\n"),
    ("umf:hugetlb", ("fork",), b"child exited 0\nparent ok\n"),
    ("hugetlb", ("dontneed",), b"madvise 0\npage reads 0\nmprotect 0\n"),
])
def test_under_the_sanitizers(tmp_path: Path, block_site, backend: str,
                              args: tuple[str, ...], want: bytes | None) -> None:
    """The sanitizer build preloaded by hand (as hmtune run would the other): a bad free
    still stops the program, fork and madvise/mprotect still keep their semantics, and
    neither sanitizer reports anything (its exit codes 98/99 would say)."""
    usable(backend)
    size = 8
    pl = write_run_placement(tmp_path, block_site, backend, size)
    env = dict(os.environ, LD_PRELOAD=str(SAN_LIB), HMTUNE_PLACEMENT=str(pl),
               HMTUNE_STATS=str(tmp_path / "run-stats.json"), HMTUNE_SUMMARY="0",
               MEMKIND_HBW_NODES="0",
               ASAN_OPTIONS="verify_asan_link_order=0:detect_leaks=0:exitcode=99",
               UBSAN_OPTIONS="exitcode=98:print_stacktrace=1")
    with pool(size // 2 if backend in HUGE else 0):     # exactly the block
        r = subprocess.run([APP, *args, str(size)], capture_output=True, timeout=120, env=env)
    assert r.returncode not in (98, 99), r.stderr.decode()
    if want is None:
        assert aborted(r) and r.stdout == b"", (r.returncode, r.stderr)
        return
    assert (r.returncode, r.stdout) == (0, want), r.stderr.decode()
    assert placed(tmp_path) == 1


# ---- another process takes the hugepages; realloc beside a placed static ----

def placement_of(tmp: Path, backend: str, capacity: int, chains: list[str],
                 statics: tuple[StaticLine, ...] = (), window: tuple[int, int] = (1, 64 * MIB)
                 ) -> Path:
    pl = tmp / "placement.txt"
    write_placement(pl, PlacementFile(
        tiers=[TierLine("fast", backend, capacity), TierLine("slow", "default", None)],
        depth=max(len(c.split(" > ")) for c in chains), size_window=window,
        sites=[SiteLine("fast", c, f"site {i}") for i, c in enumerate(chains)],
        statics=list(statics)))
    return pl


@pytest.mark.skipif(not ROOTED, reason="reserving hugepages needs root")
@pytest.mark.parametrize("backend", ["hugetlb", "umf:hugetlb"])
def test_another_process_takes_the_pool_mid_run(tmp_path: Path, backend: str) -> None:
    """The run reserves the pages of both blocks; after the first, another process
    takes every free hugepage: the second block falls back, nothing is killed, the
    statistics say the kernel refused it."""
    import mmap

    usable(backend)
    chains = trace_sites(tmp_path / "t", "twice", stdin=b"go\n")
    pl = placement_of(tmp_path, backend, 16 * MIB, [chains["block"], chains["second"]])
    p = subprocess.Popen([str(HMTUNE), "run", "-q", "-o", str(tmp_path), "--placement",
                          str(pl), "--reserve-hugepages", "--", APP, "twice", "8"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout is not None and p.stdin is not None
    assert p.stdout.readline() == b"ready\n"
    free = int(Path("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages").read_text())
    resv = int(Path("/sys/kernel/mm/hugepages/hugepages-2048kB/resv_hugepages").read_text())
    hog = None
    if free - resv > 0:
        hog = mmap.mmap(-1, (free - resv) * 2 * MIB,
                        flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x40000)  # MAP_HUGETLB
        for off in range(0, len(hog), 2 * MIB):
            hog[off] = 1
    try:
        out, err = p.communicate(b"go\n", timeout=120)
    finally:
        if hog is not None:
            hog.close()
    assert (p.returncode, out) == (0, b"ok\n"), err
    s = json.loads((tmp_path / "run-stats.json").read_text())
    fast = next(t for t in s["tiers"] if t["name"] == "fast")
    sites = {x["chain"]: x for x in s["sites"]}
    assert sites[chains["block"]]["placed"] == 1
    assert sites[chains["second"]]["fell_back"] == 1 and fast["map_failed"] >= 1


@pytest.mark.parametrize("backend", ["hugetlb", "numa:0", "thp"])
def test_realloc_beside_a_placed_static(tmp_path: Path, backend: str) -> None:
    """A block realloc'ed from 64 B to 8 MiB (through the arena, then blocks of its own)
    next to g_arr placed whole in the same tier: every byte kept, g_arr intact."""
    usable(backend)
    chains = trace_sites(tmp_path / "t", "grow", "8", extra=("--min-size", "16"))
    pl = placement_of(tmp_path, backend, 64 * MIB, [chains["grow"], chains["grow_realloc"]],
                      statics=(static_arr(),), window=(64, 8 * MIB))
    opts = ["--reserve-hugepages"] if backend in HUGE else []
    r = subprocess.run([str(HMTUNE), "run", "-q", "-o", str(tmp_path), "--placement", str(pl),
                        *opts, "--", APP, "grow", "8"], capture_output=True, timeout=120)
    assert (r.returncode, r.stdout) == (0, b"ok\n"), r.stderr
    s = json.loads((tmp_path / "run-stats.json").read_text())
    (st,) = s["statics"]
    assert st["placed"]
    sites = {x["chain"]: x for x in s["sites"]}
    assert sites[chains["grow_realloc"]]["placed"] == 128 and \
        sites[chains["grow_realloc"]]["fell_back"] == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_mremap_of_a_placed_block_is_refused_as_glibcs(tmp_path: Path, block_site,
                                                       backend: str) -> None:
    """mremap of a malloc'ed pointer fails with EINVAL on glibc's blocks (never page
    aligned); a placed block, which starts a mapping, must not move behind the library's
    back (its later free would go to glibc)."""
    bare = subprocess.run([APP, "mremap"], capture_output=True)
    assert (bare.returncode, bare.stdout) == (0, b"refused 22\nok\n")
    r = run(tmp_path, block_site, backend, "mremap")
    assert (r.returncode, r.stdout) == (0, bare.stdout), r.stderr
    assert placed(tmp_path) == 1
