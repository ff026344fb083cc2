"""`hmtune run` (hmtune/workflows/run.py) with libhmalloc.so on real programs.

Fixtures trace the programs of tests/programs (hmtune trace → analyze) once per module;
each test then writes a placement.txt from sites.csv's callstack_raw for the sites it
chooses (so it controls what goes where), or takes the advisor's, runs `hmtune run`
and checks the application's behaviour and the library's statistics JSON against the
sizes each program is known to allocate (tests/programs/README.md)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from tracemodel import HMTUNE, PROGRAMS, ROOT, trace

from hmtune.advisor.granularity import class_size
from hmtune.analyze.sites_io import read_allocs, read_sites
from hmtune.core.placement import (
    PlacementFile,
    SiteLine,
    TierLine,
    frames,
    read_placement,
    write_placement,
)
from hmtune.machine.host import memory_only_nodes, parse_list
from hmtune.machine.hostcheck import umf_problem
from hmtune.workflows import hugepages, runstats
from hmtune.workflows import run as hrun

LIB = ROOT / "build" / "lib" / "libhmalloc.so"
MPIRUN = "mpirun --allow-run-as-root --oversubscribe -np 2"

pytestmark = pytest.mark.skipif(not LIB.exists(), reason="libhmalloc.so is not built (make)")


@dataclass
class Traced:
    """A program traced and analyzed: its allocation sites by requested size."""

    prog: str
    args: tuple[str, ...]
    dir: Path
    chains: dict[int, set[str]]     # requested size -> callstack_raw of the sites

    def site(self, size: int, depth: int | None = None) -> str:
        """The one site that requested `size` bytes (cut to `depth` frames)."""
        found = self.chains.get(size, set())
        assert len(found) == 1, f"{self.prog}: {len(found)} sites requested {size} bytes"
        c = next(iter(found))
        return c if depth is None else " > ".join(frames(c)[:depth])


class Programs:
    """hmtune trace + analyze per program, once per module."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.done: dict[tuple[str, ...], Traced] = {}

    def __call__(self, prog: str, *args: str, mpirun: str = "") -> Traced:
        key = (prog, *args, mpirun)
        if key not in self.done:
            d = self.base / "-".join(k.replace("/", "_").replace(" ", "_") for k in key)
            extra = ("--mpirun", mpirun) if mpirun else ()
            r = trace(d, str(PROGRAMS / prog), *args, extra=extra)
            assert r.returncode in (0, 3, 7), r.stderr.decode()
            a = subprocess.run([str(HMTUNE), "analyze", str(d / "trace.prv")],
                               capture_output=True, text=True)
            assert a.returncode == 0, a.stderr
            sites = read_sites(d / "sites.csv")
            raw = dict(zip(sites["site_id"], sites["callstack_raw"], strict=True))
            allocs = read_allocs(d / "allocs.csv")
            chains: dict[int, set[str]] = {}
            for sid, size in zip(allocs["site_id"], allocs["size"], strict=True):
                chains.setdefault(int(size), set()).add(raw[sid])
            self.done[key] = Traced(prog, args, d, chains)
        return self.done[key]


@pytest.fixture(scope="module")
def programs(tmp_path_factory: pytest.TempPathFactory) -> Programs:
    return Programs(tmp_path_factory.mktemp("traced"))


def placement(path: Path, sites: list[tuple[str, int]], t: Traced, *, backend: str = "thp",
              capacity: int = 1 << 30, depth: int | None = None,
              window: tuple[int, int] | None = None) -> Path:
    """placement.txt with tier `fast` (backend, capacity) holding the sites of the given
    requested sizes (tier name, size), and the fallback `slow`; the size window (unless
    given: a site that allocates several sizes) and depth as the advisor computes them."""
    chains = [(tier, t.site(size, depth)) for tier, size in sites]
    sizes = [size for _, size in sites]
    pf = PlacementFile(
        tiers=[TierLine("fast", backend, capacity), TierLine("slow", "default", None)],
        depth=max(len(frames(c)) for _, c in chains),
        size_window=window or (min(sizes), max(sizes)),
        sites=[SiteLine(tier, c, f"size {size}") for (tier, c), size in zip(chains, sizes,
                                                                             strict=True)])
    write_placement(path, pf)
    return path


def hmtune_run(out: Path, app: list[str], *opts: str, env: dict[str, str] | None = None,
               timeout: float = 120) -> subprocess.CompletedProcess:
    cmd = [str(HMTUNE), "run", "-o", str(out), *opts, "--", *app]
    return subprocess.run(cmd, capture_output=True, timeout=timeout,
                          env=dict(os.environ, **(env or {})))


def stats(out: Path, name: str = "run-stats.json") -> dict:
    return json.loads((out / name).read_text())


def tier(s: dict, name: str = "fast") -> dict:
    return next(t for t in s["tiers"] if t["name"] == name)


def by_chain(s: dict) -> dict[str, dict]:
    return {site["chain"]: site for site in s["sites"]}


def app(prog: str, *args: str) -> list[str]:
    return [str(PROGRAMS / prog), *args]


# ---- the real pipeline: trace → analyze → advise → run ----

def test_advised_placement_is_applied(tmp_path: Path) -> None:
    """The advisor's placement for the latency example (a thp tier of 8 MiB): the sites it
    lists are placed with exactly their sizes from sites.csv, results unchanged."""
    # -n 12: ~0.1 s of kernel, ~25 samples at 250 Hz (3 iterations gave none some runs)
    latency = [str(ROOT / "build" / "examples" / "latency"), "-s", "32", "-n", "12"]
    out = tmp_path / "latency"
    assert trace(out, *latency).returncode == 0
    assert subprocess.run([str(HMTUNE), "analyze", str(out / "trace.prv")],
                          capture_output=True).returncode == 0
    machine = tmp_path / "thp.toml"
    machine.write_text('name = "test"\n[[tier]]\nname = "fast"\ncapacity = "8M"\n'
                       'backend = "thp"\nload_cost = 1.0\nstore_cost = 1.0\n'
                       '[[tier]]\nname = "slow"\ncapacity = "unlimited"\nbackend = "default"\n'
                       'load_cost = 2.0\nstore_cost = 2.0\n')
    a = subprocess.run([str(HMTUNE), "advise", str(out), "--machine", str(machine)],
                       capture_output=True, text=True)
    assert a.returncode == 0, a.stderr
    pf = read_placement(out / "placement.txt")
    assert pf.sites, "the advisor placed nothing: no sampled weight in any site?"
    assert pf.program == os.path.realpath(latency[0])      # from the trace's summary
    sites = read_sites(out / "sites.csv")
    size_of = dict(zip(sites["callstack_raw"], sites["max_size"], strict=True))
    plain = subprocess.run(latency, capture_output=True, text=True)
    r = hmtune_run(out, latency)             # default placement and statistics in out/
    assert r.returncode == 0, r.stderr
    checksum = [w for w in plain.stdout.split() if w.startswith("checksum=")]
    assert checksum and checksum == [w for w in r.stdout.decode().split()
                                     if w.startswith("checksum=")]
    s = stats(out)
    assert s["placement"] == str((out / "placement.txt").resolve())
    assert s["program"] == latency[0] and s["rank"] is None
    per_site = by_chain(s)

    def in_tier(site: SiteLine) -> int:
        """the bytes the tier holds of the site's object: all, or its ranges'"""
        size = int(size_of[site.chain])
        return sum(max(0, min(b, size) - a) for a, b in site.ranges) if site.ranges else size

    for site in pf.sites:
        st = per_site[site.chain]
        assert (st["matches"], st["placed"], st["fell_back"]) == (1, 1, 0)
        assert st["placed_bytes"] == in_tier(site)
    fast = tier(s)
    assert fast["available"] and fast["placed_blocks"] == len(pf.sites)
    assert fast["placed_bytes"] == sum(in_tier(x) for x in pf.sites) <= 8 << 20
    assert fast["high_water_bytes"] <= 8 << 20 and fast["not_fitting"] == 0
    assert fast["freed_blocks"] == len(pf.sites) and fast["used_bytes_at_exit"] == 0


# ---- the application's behaviour is its own ----

def test_output_and_exit_status_unchanged(programs: Programs, tmp_path: Path) -> None:
    t = programs("echo_io")
    plain = subprocess.run(app("echo_io"), capture_output=True)
    assert plain.returncode == 7
    pl = placement(tmp_path / "p.txt", [("fast", 111000), ("fast", 222000), ("fast", 333000)], t)
    quiet = hmtune_run(tmp_path, app("echo_io"), "-q", "--placement", str(pl))
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (7, plain.stdout, plain.stderr)
    loud = hmtune_run(tmp_path, app("echo_io"), "--placement", str(pl))
    assert (loud.returncode, loud.stdout) == (7, plain.stdout)
    assert loud.stderr.startswith(plain.stderr)            # the summary comes after
    fast = tier(stats(tmp_path))
    assert fast["placed_blocks"] == 3 and fast["placed_bytes"] == 666000
    assert fast["freed_blocks"] == 3 and fast["not_fitting"] == 0


def test_exit_status_and_crash(programs: Programs, tmp_path: Path) -> None:
    t = programs("crash", "exit3")
    pl = placement(tmp_path / "p.txt", [("fast", 100000), ("fast", 200000)], t)
    r = hmtune_run(tmp_path, app("crash", "exit3"), "-q", "--placement", str(pl))
    assert (r.returncode, r.stdout, r.stderr) == (3, b"out\n", b"err\n")
    fast = tier(stats(tmp_path))
    assert fast["placed_blocks"] == 2 and fast["placed_bytes"] == 300000
    assert fast["freed_blocks"] == 0 and fast["used_bytes_at_exit"] >= 300000
    # a crash: the same signal, and no new statistics: the previous run's file is kept
    # as it was until a run completes one, and the run says so
    before = (tmp_path / "run-stats.json").read_bytes()
    r = hmtune_run(tmp_path, app("crash", "segv"), "-q", "--placement", str(pl))
    assert r.returncode == -signal.SIGSEGV
    assert (tmp_path / "run-stats.json").read_bytes() == before
    assert b"previous run" in r.stderr


# ---- --stats: only the files this run writes, never the user's ----

def test_stats_leaves_other_files_of_that_name_alone(programs: Programs,
                                                     tmp_path: Path) -> None:
    """Without MPI the run writes FILE only: FILE.1, FILE.2, FILE.20250101 are the
    user's and stay as they were; an earlier run's FILE (hmtune's) is replaced."""
    pl = placement(tmp_path / "p.txt", [("fast", 111000)], programs("echo_io"))
    f = tmp_path / "mine.json"
    users = {f.with_name(f"mine.json.{x}"): f"user data {x}\n" for x in (1, 2, 20250101)}
    for u, text in users.items():
        u.write_text(text)
    for _ in range(2):                              # the second run replaces the first's
        r = hmtune_run(tmp_path, app("echo_io"), "-q", "--placement", str(pl), "--stats", str(f))
        assert r.returncode == 7, r.stderr
        assert tier(json.loads(f.read_text()))["placed_blocks"] == 1
    assert {u: u.read_text() for u in users} == users


@pytest.mark.parametrize("which", ["placement", "placement-other-name", "program", "user"])
def test_stats_over_an_input_or_a_users_file_is_refused(programs: Programs, tmp_path: Path,
                                                        which: str) -> None:
    """--stats naming the placement (also by another path), the program or a file
    hmtune did not write: exit 2 before the application runs, the file untouched."""
    pl = placement(tmp_path / "p.txt", [("fast", 111000)], programs("echo_io"))
    prog = tmp_path / "echo_io"
    shutil.copy(PROGRAMS / "echo_io", prog)
    user = tmp_path / "notes.json"
    user.write_text('{"version": 1, "mine": true}\n')
    target = {"placement": pl, "placement-other-name": tmp_path / "sub" / ".." / "p.txt",
              "program": prog, "user": user}[which]
    (tmp_path / "sub").mkdir()
    before = {f: f.read_bytes() for f in (pl, prog, user)}
    r = hmtune_run(tmp_path, [str(prog)], "--placement", str(pl), "--stats", str(target))
    assert (r.returncode, r.stdout) == (2, b"")      # the application did not run
    assert r.stderr.count(b"\n") == 1
    assert {f: f.read_bytes() for f in before} == before
    assert not (tmp_path / "run-stats.json").exists()


def test_stats_files_a_run_writes(tmp_path: Path) -> None:
    s = tmp_path / "s.json"
    assert hrun.planned_stats(s, [], {}) == [s]
    assert hrun.planned_stats(s, [], {"SLURM_PROCID": "3"}) == [tmp_path / "s.json.3"]
    assert hrun.planned_stats(tmp_path / "s.%r.json", ["mpirun", "-np", "2"], {}) == \
        [tmp_path / "s.0.json", tmp_path / "s.1.json"]
    assert hrun.planned_stats(s, ["srun"], {}) is None
    assert runstats.env_rank({"PMI_RANK": "x", "PMIX_RANK": "2"}) == 2


# ---- what the library places ----

ALLFAMILY = {"malloc": 110000, "calloc": 100000, "realloc_src": 120000, "realloc": 240000,
             "reallocarray_src": 149000, "reallocarray": 150000, "posix_memalign": 160000,
             "aligned_alloc": 172032, "memalign": 180000, "valloc": 190000, "pvalloc": 200000}


HAVE_MEMKIND = any(Path(d, "libmemkind.so.0").exists()
                   for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/local/lib"))


@pytest.mark.parametrize("prog,backend", [
    # the arena's size class of 149000 (151552) holds reallocarray's 150000: it grows
    # in place, and still counts as one block freed and one placed, with its request
    ("allfamily", "thp"), ("allfamily-nopie", "numa:0"),
    ("allfamily", "memkind:MEMKIND_DEFAULT"), ("allfamily", "umf:numa:0"),
])
def test_every_entry_point_is_placed(programs: Programs, tmp_path: Path, prog: str,
                                     backend: str) -> None:
    if backend.startswith("memkind") and not HAVE_MEMKIND:
        pytest.skip("libmemkind.so.0 not installed")
    if backend.startswith("umf") and umf_problem():
        pytest.skip(str(umf_problem()))
    t = programs(prog)
    pl = placement(tmp_path / "p.txt", [("fast", n) for n in ALLFAMILY.values()], t,
                   backend=backend)
    r = hmtune_run(tmp_path, app(prog), "-q", "--placement", str(pl))
    assert (r.returncode, r.stdout) == (0, b"ok\n"), r.stderr
    s = stats(tmp_path)
    per_site = by_chain(s)
    for name, size in ALLFAMILY.items():
        st = per_site[t.site(size)]
        assert (st["matches"], st["placed"], st["fell_back"]) == (1, 1, 0), name
        # pvalloc's block is the page-rounded request (200704)
        assert st["placed_bytes"] == (size if name != "pvalloc" else 200704), name
    fast = tier(s)
    assert fast["placed_blocks"] == len(ALLFAMILY) == fast["freed_blocks"]
    assert fast["used_bytes_at_exit"] == 0 and fast["not_fitting"] == 0
    if backend.startswith(("numa", "umf:numa")):    # mbind'ed pages really are on node 0
        res = fast["residency"]
        # checked when freed: reallocarray's source grew in place, it was not freed
        assert res["blocks_checked"] == len(ALLFAMILY) - 1
        assert res["bytes_elsewhere"] == 0 and res["bytes_intended"] > 0


def test_pvalloc_site_alone(programs: Programs, tmp_path: Path) -> None:
    """The size window as the advisor writes it for the pvalloc site alone: its request,
    200000 (docs/formats.md §5)."""
    t = programs("allfamily")
    pl = placement(tmp_path / "p.txt", [("fast", 200000)], t)
    r = hmtune_run(tmp_path, app("allfamily"), "-q", "--placement", str(pl))
    assert (r.returncode, r.stdout) == (0, b"ok\n"), r.stderr
    assert by_chain(stats(tmp_path))[t.site(200000)]["placed"] == 1


@pytest.mark.parametrize("listed,placed_sizes,freed", [
    (["chain_b"], [200000], 1),                  # in by chain_b's realloc, out by chain_c's
    (["chain_a", "chain_c"], [100000, 400000], 2),   # out by chain_b, back in by chain_c
])
def test_realloc_follows_the_realloc_site(programs: Programs, tmp_path: Path,
                                          listed: list[str], placed_sizes: list[int],
                                          freed: int) -> None:
    t = programs("realloc_chain")
    size = {"chain_a": 100000, "chain_b": 200000, "chain_c": 400000}
    pl = placement(tmp_path / "p.txt", [("fast", size[n]) for n in listed], t)
    r = hmtune_run(tmp_path, app("realloc_chain"), "-q", "--placement", str(pl))
    assert (r.returncode, r.stdout) == (0, b"ok\n"), r.stderr
    s = stats(tmp_path)
    fast = tier(s)
    assert fast["placed_blocks"] == len(placed_sizes)
    assert fast["placed_bytes"] == sum(placed_sizes)
    assert fast["freed_blocks"] == freed and fast["used_bytes_at_exit"] == 0
    assert sorted(x["placed_bytes"] for x in s["sites"]) == sorted(placed_sizes)


def test_split_sites_through_realloc(programs: Programs, tmp_path: Path) -> None:
    """A v2 placement whose three sites are split lines (the first 64 KiB of each
    object in the tier, the rest in ordinary memory): hmtune run accepts it, the block
    moves through the three sites by realloc with its contents, and the statistics
    count the split objects and their ranges."""
    t = programs("realloc_chain")
    sizes = [100000, 200000, 400000]
    chains = [t.site(n) for n in sizes]
    pf = PlacementFile(
        tiers=[TierLine("fast", "thp", 1 << 30), TierLine("slow", "default", None)],
        depth=max(len(frames(c)) for c in chains), size_window=(min(sizes), max(sizes)),
        sites=[SiteLine("fast", c, f"size {n}", ((0, 65536),))
               for c, n in zip(chains, sizes, strict=True)])
    write_placement(tmp_path / "p.txt", pf)
    assert (tmp_path / "p.txt").read_text().startswith("# hmtune placement v2\n")
    r = hmtune_run(tmp_path, app("realloc_chain"), "-q", "--placement", str(tmp_path / "p.txt"))
    assert (r.returncode, r.stdout) == (0, b"ok\n"), r.stderr
    s = stats(tmp_path)
    fast = tier(s)
    assert (fast["placed_blocks"], fast["split_placed"]) == (3, 3)
    assert fast["split_bytes"] == 3 * 65536 and fast["split_ranges_not_fitting"] == 0
    assert fast["freed_blocks"] == 3 and fast["used_bytes_at_exit"] == 0
    assert fast["high_water_bytes"] == 2 * 65536          # old and new during a realloc
    for c in chains:
        assert by_chain(s)[c]["ranges"] == [{"start": 0, "end": 65536, "objects": 1,
                                             "placed_bytes": 65536}]


def test_threads(programs: Programs, tmp_path: Path) -> None:
    t = programs("threads")
    assert t.site(100000) == t.site(400000)                     # one site, all 4 threads
    pl = placement(tmp_path / "p.txt", [("fast", 100000)], t, window=(100000, 400000))
    r = hmtune_run(tmp_path, app("threads"), "-q", "--placement", str(pl))
    assert (r.returncode, r.stdout) == (0, b"ok\n"), r.stderr
    fast = tier(stats(tmp_path))
    assert fast["placed_blocks"] == 12 == fast["freed_blocks"]
    assert fast["placed_bytes"] == 3 * (100000 + 200000 + 300000 + 400000)


def test_stress_many_threads(programs: Programs, tmp_path: Path) -> None:
    t = programs("stress", "2", "1000", "65536")
    pl = placement(tmp_path / "p.txt", [("fast", 65536)], t)
    r = hmtune_run(tmp_path, app("stress", "8", "10000", "65536"), "-q", "--placement", str(pl))
    assert (r.returncode, r.stdout) == (0, b"ok\n"), r.stderr
    s = stats(tmp_path)
    fast = tier(s)
    assert fast["placed_blocks"] == 80000 == fast["freed_blocks"]
    assert fast["placed_bytes"] == 80000 * 65536
    assert 65536 <= fast["high_water_bytes"] <= 8 * 65536      # at most one live per thread
    assert fast["used_bytes_at_exit"] == 0 and s["sites"][0]["fell_back"] == 0


def test_fork_child_runs_parent_reports(programs: Programs, tmp_path: Path) -> None:
    t = programs("forker")
    pl = placement(tmp_path / "p.txt", [("fast", 300000), ("fast", 400000), ("fast", 500000)], t)
    r = hmtune_run(tmp_path, app("forker"), "-q", "--placement", str(pl))
    assert (r.returncode, r.stdout) == (0, b"child ok\nparent ok\n"), r.stderr
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("run-stats")] == \
        ["run-stats.json"]                      # the parent's only, no temporary left over
    s = stats(tmp_path)
    per_site = by_chain(s)
    assert per_site[t.site(300000)]["placed"] == 1 and per_site[t.site(500000)]["placed"] == 1
    assert per_site[t.site(400000)]["matches"] == 0      # the child's, never reported
    fast = tier(s)
    assert fast["placed_blocks"] == 2 and fast["placed_bytes"] == 800000
    assert fast["freed_blocks"] == 2


def test_site_in_a_reloaded_library(programs: Programs, tmp_path: Path) -> None:
    """dl_alloc in libdlalloc.so, called once from each of two lines of dlopen_main; the
    library is unloaded in between and loaded again at another base: both are placed."""
    t = programs("dlopen_main")
    first, second = t.site(600000), t.site(700000)
    assert frames(first)[0] == frames(second)[0] and "libdlalloc.so+0x" in first
    pl = placement(tmp_path / "p.txt", [("fast", 600000), ("fast", 700000)], t)
    r = hmtune_run(tmp_path, app("dlopen_main"), "-q", "--placement", str(pl))
    assert (r.returncode, r.stdout) == (0, b"ok\n"), r.stderr
    s = stats(tmp_path)
    per_site = by_chain(s)
    assert (per_site[first]["placed"], per_site[first]["placed_bytes"]) == (1, 600000)
    assert (per_site[second]["placed"], per_site[second]["placed_bytes"]) == (1, 700000)
    assert tier(s)["freed_blocks"] == 2


def test_site_only_in_a_dlopened_library(programs: Programs, tmp_path: Path) -> None:
    """The same site cut to its innermost frame (a trace at --depth 1): one chain in
    libdlalloc.so only, which is not loaded when the program starts."""
    t = programs("dlopen_main")
    chain = t.site(600000, depth=1)
    assert chain == t.site(700000, depth=1)
    pl = placement(tmp_path / "p.txt", [("fast", 600000)], t, depth=1, window=(600000, 700000))
    r = hmtune_run(tmp_path, app("dlopen_main"), "-q", "--placement", str(pl))
    assert (r.returncode, r.stdout) == (0, b"ok\n"), r.stderr
    st = by_chain(stats(tmp_path))[chain]
    assert (st["matches"], st["placed"], st["placed_bytes"]) == (2, 2, 1300000)


def test_cxx_new_and_vector(programs: Programs, tmp_path: Path) -> None:
    """operator new (libstdc++ calls malloc one frame below the marked line)."""
    t = programs("cxx_new")
    pl = placement(tmp_path / "p.txt", [("fast", 400000), ("fast", 640000)], t)
    r = hmtune_run(tmp_path, app("cxx_new"), "-q", "--placement", str(pl))
    assert (r.returncode, r.stdout) == (0, b"ok\n"), r.stderr
    per_site = by_chain(stats(tmp_path))
    assert [per_site[t.site(n)]["placed_bytes"] for n in (400000, 640000)] == [400000, 640000]


def test_allocation_in_a_library_constructor(programs: Programs, tmp_path: Path) -> None:
    """libstdc++'s constructor mallocs 72704 bytes (its emergency pool) before main and
    before libhmalloc's own constructor."""
    t = programs("cxx_new")
    pl = placement(tmp_path / "p.txt", [("fast", 72704)], t)
    r = hmtune_run(tmp_path, app("cxx_new"), "-q", "--placement", str(pl))
    assert (r.returncode, r.stdout) == (0, b"ok\n"), r.stderr
    st = by_chain(stats(tmp_path))[t.site(72704)]
    assert (st["matches"], st["placed"], st["placed_bytes"]) == (1, 1, 72704)


def test_capacity_is_respected(programs: Programs, tmp_path: Path) -> None:
    """thp charges the arena's size classes: 111000 → 112640, 222000 → 225280,
    333000 → 335872, all live together; 400000 bytes hold the first two only."""
    t = programs("echo_io")
    plain = subprocess.run(app("echo_io"), capture_output=True)
    pl = placement(tmp_path / "p.txt", [("fast", 111000), ("fast", 222000), ("fast", 333000)],
                   t, capacity=400000)
    r = hmtune_run(tmp_path, app("echo_io"), "-q", "--placement", str(pl))
    assert (r.returncode, r.stdout, r.stderr) == (7, plain.stdout, plain.stderr)
    s = stats(tmp_path)
    fast = tier(s)
    assert fast["capacity"] == 400000
    assert fast["placed_blocks"] == 2 and fast["placed_bytes"] == 333000
    assert fast["not_fitting"] == 1 and fast["high_water_bytes"] == 112640 + 225280
    assert [class_size(n) for n in (111000, 222000, 333000)] == [112640, 225280, 335872]
    st = by_chain(s)[t.site(333000)]
    assert (st["matches"], st["placed"], st["fell_back"]) == (1, 0, 1)


@pytest.mark.skipif(shutil.which("mpirun") is None or not (PROGRAMS / "mpi_alloc").exists(),
                    reason="Open MPI or mpi_alloc not available")
def test_mpi_ranks_each_write_their_statistics(programs: Programs, tmp_path: Path) -> None:
    """Rank r allocates (r+1) MiB at one site; with 1.5 MiB per process rank 0's block
    fits and rank 1's does not: each rank checks its own capacity."""
    t = programs("mpi_alloc", mpirun=MPIRUN)
    assert t.site(1048576) == t.site(2097152)
    pl = placement(tmp_path / "p.txt", [("fast", 1048576)], t, capacity=3 << 19,
                   window=(1048576, 2097152))
    (tmp_path / "run-stats.5.json").write_text("{}")       # not a file this run writes
    r = hmtune_run(tmp_path, app("mpi_alloc"), "--mpirun", MPIRUN, "--placement", str(pl))
    assert (r.returncode, r.stdout) == (0, b"ok 2\n"), r.stderr
    files = sorted(p.name for p in tmp_path.glob("run-stats*"))
    assert files == ["run-stats.0.json", "run-stats.1.json", "run-stats.5.json"]
    assert (tmp_path / "run-stats.5.json").read_text() == "{}"
    for rank in (0, 1):
        s = stats(tmp_path, f"run-stats.{rank}.json")
        fast = tier(s)
        assert s["rank"] == rank and fast["capacity"] == 3 << 19
        assert (fast["placed_blocks"], fast["not_fitting"]) == ((1, 0) if rank == 0 else (0, 1))
        assert fast["placed_bytes"] == (1048576 if rank == 0 else 0)
    # the ranks' summaries were replaced by one (every hmalloc line is the command's)
    assert b"hmalloc[rank" not in r.stderr


# ---- refusals ----

@pytest.mark.parametrize("text", [None, "", "tier fast thp 100\n",
                                  "# hmtune placement v3\n",
                                  "# hmtune placement v1\ntier fast thp 1000\n"])
def test_missing_or_malformed_placement(tmp_path: Path, text: str | None) -> None:
    pl = tmp_path / "placement.txt"
    if text is not None:
        pl.write_text(text)
    r = hmtune_run(tmp_path, app("echo_io"))
    assert r.returncode == 2 and r.stdout == b""            # the application did not run
    assert r.stderr.count(b"\n") == 1
    assert not (tmp_path / "run-stats.json").exists()


def test_placement_of_another_program(programs: Programs, tmp_path: Path) -> None:
    t = programs("crash", "exit3")
    pl = placement(tmp_path / "p.txt", [("fast", 100000), ("fast", 200000)], t)
    plain = subprocess.run(app("echo_io"), capture_output=True)
    r = hmtune_run(tmp_path, app("echo_io"), "--placement", str(pl))
    assert (r.returncode, r.stdout) == (7, plain.stdout)
    f = tmp_path / "run-stats.json"
    assert not f.exists() or all(x["placed_blocks"] == 0 for x in stats(tmp_path)["tiers"])


def test_static_program_is_refused(tmp_path: Path) -> None:
    prog = PROGRAMS / "static_app"
    if not prog.exists():
        pytest.skip("no static libc to build the static test program")
    (tmp_path / "placement.txt").write_text("# hmtune placement v1\ntier slow default "
                                            "unlimited\ndepth 1\nsize-window 0 0\n")
    r = hmtune_run(tmp_path, [str(prog)])
    assert r.returncode == 2 and r.stdout == b""


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero", "directory"])
def test_placement_that_is_not_a_regular_file(tmp_path: Path, kind: str) -> None:
    """A FIFO (or a device, a directory) as the placement: `hmtune run` refuses it and
    does not start the program (exit 2); preloaded by hand, the library refuses it
    without blocking and the program runs as it does alone."""
    if kind == "fifo":
        path = tmp_path / "placement.fifo"
        os.mkfifo(path)
    else:
        path = Path(kind) if kind.startswith("/") else tmp_path
    r = hmtune_run(tmp_path / "out", app("echo_io"), "--placement", str(path), timeout=60)
    assert (r.returncode, r.stdout) == (2, b"")
    plain = subprocess.run(app("echo_io"), capture_output=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HMTUNE_")}
    env.update(LD_PRELOAD=str(LIB), HMTUNE_PLACEMENT=str(path),
               HMTUNE_STATS=str(tmp_path / "stats.json"))
    r = subprocess.run(app("echo_io"), env=env, capture_output=True, timeout=60)
    assert (r.returncode, r.stdout) == (7, plain.stdout)
    assert not (tmp_path / "stats.json").exists()


def libc_only(t: Traced, size: int) -> str:
    """The site's chain cut before its first frame outside libc: a placement of such
    chains names no program, only libc, which every helper process loads too."""
    fr = frames(t.site(size))
    n = next(i for i, f in enumerate(fr) if "/libc.so" not in f)
    assert n >= 1, fr
    return " > ".join(fr[:n])


HELPER_CASES = {
    "timeout": lambda prog, tmp: ["timeout", "60", prog],
    "env": lambda prog, tmp: ["env", "HMT_X=1", prog],
    "nested": lambda prog, tmp: ["env", "HMT_X=1", "timeout", "-s", "KILL", "60", prog],
    "script": lambda prog, tmp: [str(tmp / "wrapper.sh")],
}


# a script around a placement that names no program is left out: every process of it
# places (hmtune run says so), so its helpers would place too
HELPER_RUNS = [(how, line) for how in sorted(HELPER_CASES) for line in (True, False)
               if line or how != "script"]


@pytest.mark.parametrize(("how", "program_line"), HELPER_RUNS,
                         ids=[f"{h}-{'program-line' if p else 'no-program-line'}"
                              for h, p in HELPER_RUNS])
def test_helpers_do_not_place(programs: Programs, tmp_path: Path, how: str,
                              program_line: bool) -> None:
    """The placement names only libc (stdio's buffer, first frame only: any program
    writing to a pipe allocates it there). Run through timeout, env, both, or a shell
    script that also runs a helper that writes to stdout with statistics of its own:
    only echo_io places and writes statistics; the helpers place nothing, write
    nothing and do not overwrite echo_io's file. A script needs the `program` line
    (hmtune advise writes it) to say which of its programs is meant."""
    t = programs("echo_io")
    buf = " > ".join(frames(libc_only(t, 4096))[:1])
    prog = str(PROGRAMS / "echo_io")
    pf = PlacementFile(tiers=[TierLine("fast", "thp", 1 << 30), TierLine("slow", "default",
                                                                         None)],
                       depth=1, size_window=(4096, 4096), sites=[SiteLine("fast", buf)],
                       program=os.path.realpath(prog) if program_line else "")
    write_placement(tmp_path / "p.txt", pf)
    helper_stats = tmp_path / "helper-stats.json"
    wrapper = tmp_path / "wrapper.sh"
    wrapper.write_text(f'#!/bin/sh\nHMTUNE_STATS="{helper_stats}" /usr/bin/printf "helper\\n"\n'
                       f'"{prog}" "$@"\nexit $?\n')
    wrapper.chmod(0o755)
    plain = subprocess.run([prog], capture_output=True)
    r = hmtune_run(tmp_path / "out", HELPER_CASES[how](prog, tmp_path), "-q", "--placement",
                   str(tmp_path / "p.txt"))
    helper_out = b"helper\n" if how == "script" else b""
    assert (r.returncode, r.stdout) == (7, helper_out + plain.stdout), r.stderr
    s = stats(tmp_path / "out")
    assert s["program"] == os.path.realpath(prog)            # echo_io's file, not a helper's
    assert tier(s)["placed_blocks"] == 1 and by_chain(s)[buf]["placed"] == 1
    assert not helper_stats.exists()


def test_library_not_built(programs: Programs, tmp_path: Path) -> None:
    pl = placement(tmp_path / "p.txt", [("fast", 111000)], programs("echo_io"))
    r = hmtune_run(tmp_path, app("echo_io"), "--placement", str(pl),
                   env={"HMTUNE_BUILD": str(tmp_path / "nowhere")})
    assert r.returncode == 2 and r.stdout == b"" and b"make" in r.stderr


def test_help() -> None:
    r = subprocess.run([str(HMTUNE), "run", "--help"], capture_output=True, text=True)
    assert r.returncode == 0
    for opt in ("--placement", "--stats", "--mpirun", "--out", "--quiet", "APP"):
        assert opt in r.stdout


# ---- what reaches the application ----

ENV_PROBE = ['printf "%s|%s|%s|%s|%s\\n" "$LD_PRELOAD" "$HMTUNE_PLACEMENT" "$HMTUNE_TARGET" '
             '"$HMTUNE_STATS" "${HMTUNE_SUMMARY-unset}"']


@pytest.mark.parametrize("opts,stats_name,summary", [
    ((), "run-stats.json", "unset"),
    (("-q",), "run-stats.json", "0"),
    (("--mpirun", "env HMTUNE_LAUNCHER=1"), "run-stats.%r.json", "0"),   # a stand-in launcher
])
def test_environment_of_the_application(programs: Programs, tmp_path: Path,
                                        opts: tuple[str, ...], stats_name: str,
                                        summary: str) -> None:
    pl = placement(tmp_path / "p.txt", [("fast", 111000)], programs("echo_io"))
    other = "/lib/x86_64-linux-gnu/libm.so.6"
    r = hmtune_run(tmp_path / "out", ["/bin/sh", "-c", *ENV_PROBE], *opts, "--placement",
                   str(pl), env={"LD_PRELOAD": other})
    assert r.returncode == 0, r.stderr
    preload, placement_env, target, stats_env, summary_env = \
        r.stdout.decode().strip().split("|")
    assert preload == f"{LIB}:{other}"
    assert placement_env == str(pl.resolve())
    assert target == os.path.realpath("/bin/sh")
    assert stats_env == str((tmp_path / "out" / stats_name).absolute())
    assert summary_env == summary


def test_script_wrapper(programs: Programs, tmp_path: Path) -> None:
    """APP is a shell script that runs the program: the program the placement names is
    the target; the shell, which loads the library too, stays silent."""
    t = programs("echo_io")
    pl = placement(tmp_path / "p.txt", [("fast", 111000), ("fast", 222000), ("fast", 333000)], t)
    wrapper = tmp_path / "wrapper.sh"
    wrapper.write_text(f'#!/bin/sh\necho wrapped\n"{PROGRAMS / "echo_io"}" "$@"\nexit $?\n')
    wrapper.chmod(0o755)
    plain = subprocess.run(app("echo_io"), capture_output=True)
    r = hmtune_run(tmp_path, [str(wrapper)], "-q", "--placement", str(pl))
    assert (r.returncode, r.stdout, r.stderr) == (7, b"wrapped\n" + plain.stdout, plain.stderr)
    s = stats(tmp_path)
    assert s["program"] == str(PROGRAMS / "echo_io") and tier(s)["placed_blocks"] == 3


# ---- the pieces of hmtune/workflows/run.py and runstats.py (and the node lists) ----

def test_node_lists_and_hugepage_pool(tmp_path: Path) -> None:
    assert parse_list("0-3,8\n") == [0, 1, 2, 3, 8]
    assert parse_list("\n") == []
    nodes = tmp_path / "node"
    nodes.mkdir()
    (nodes / "has_memory").write_text("0-1,4-5\n")
    (nodes / "has_cpu").write_text("0-1\n")
    assert memory_only_nodes(nodes) == {4, 5}
    assert memory_only_nodes(tmp_path / "none") is None
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24000000 kB\nHugePages_Total:      10\n"
                       "HugePages_Free:        6\nHugepagesize:       2048 kB\n")
    assert hugepages.pool(meminfo) == hugepages.HugePages(10, 6, 2 << 20)
    meminfo.write_text("MemTotal:       24000000 kB\n")
    assert hugepages.pool(meminfo) is None


def test_tier_warnings() -> None:
    def pf(backend: str, cap: int) -> PlacementFile:
        return PlacementFile([TierLine("fast", backend, cap), TierLine("slow", "default", None)],
                             1, (0, 0), [SiteLine("fast", "/a+0x1")])

    pool = hugepages.HugePages(total=10, free=6, page=2 << 20)
    assert hrun.tier_warnings(pf("hugetlb", 12 << 20), 1, pool, set(), {}) == []
    short = hrun.tier_warnings(pf("hugetlb", 12 << 20), 2, pool, set(), {})
    assert len(short) == 1 and "echo 16 > /proc/sys/vm/nr_hugepages" in short[0]
    assert len(hrun.tier_warnings(pf("memkind:MEMKIND_HUGETLB", 14 << 20), 1, pool, set(),
                                  {})) == 1
    assert len(hrun.tier_warnings(pf("hugetlb", 2 << 20), 1, None, set(), {})) == 1
    hbw = pf("memkind:MEMKIND_HBW", 1 << 30)
    assert len(hrun.tier_warnings(hbw, 1, pool, set(), {})) == 1
    assert hrun.tier_warnings(hbw, 1, pool, set(), {"MEMKIND_HBW_NODES": "0"}) == []
    assert hrun.tier_warnings(hbw, 1, pool, {2}, {}) == []           # a memory-only node
    assert hrun.tier_warnings(pf("thp", 1 << 30), 4, pool, set(), {}) == []
    empty = PlacementFile([TierLine("fast", "hugetlb", 1 << 40),
                           TierLine("slow", "default", None)], 1, (0, 0), [])
    assert hrun.tier_warnings(empty, 1, pool, set(), {}) == []       # nothing placed there


def test_launcher_is_another_spelling_of_mpirun() -> None:
    """--launcher 'srun -n 4' reads as --mpirun does, in every command that launches."""
    from hmtune.workflows.cli import build_parser

    parser = build_parser()
    for cmd in ("trace", "run", "compare", "explore"):
        a = parser.parse_args([cmd, "--launcher", "srun -n 4", "--", "./app"])
        b = parser.parse_args([cmd, "--mpirun", "srun -n 4", "--", "./app"])
        assert a.mpirun == b.mpirun == "srun -n 4", cmd


def test_launcher_process_count_and_stats_files(tmp_path: Path) -> None:
    assert hrun.launcher_processes(["mpirun", "-np", "4"]) == 4
    assert hrun.launcher_processes(["srun", "--ntasks=8", "-c", "2"]) == 8
    assert hrun.launcher_processes(["mpiexec", "-n", "3", "--bind-to", "core"]) == 3
    assert hrun.launcher_processes(["mpirun", "--oversubscribe"]) is None
    # srun: -n4 attached, and without a count the job's tasks (inside an allocation)
    assert hrun.launcher_processes(["srun", "-n4", "--mpi=pmix"], {}) == 4
    assert hrun.launcher_processes(["srun", "--mpi=pmix"], {"SLURM_NTASKS": "6"}) == 6
    assert hrun.launcher_processes(["srun"], {}) is None
    assert hrun.launcher_processes(["mpirun"], {"SLURM_NTASKS": "6"}) is None
    assert hrun.launcher_processes(["/usr/bin/srun", "-N", "2"], {"SLURM_NTASKS": "x"}) is None
    for name in ("s.0.json", "s.12.json", "s.x.json", "s.json", "t.1", "t", "t.1.tmp.5"):
        (tmp_path / name).write_text("{}")
    assert runstats.stats_files(tmp_path / "s.%r.json") == {0: tmp_path / "s.0.json",
                                                            12: tmp_path / "s.12.json"}
    assert runstats.stats_files(tmp_path / "t") == {None: tmp_path / "t", 1: tmp_path / "t.1"}


def test_summary_over_ranks(tmp_path: Path) -> None:
    def rank_stats(rank: int, placed: int, nbytes: int, high: int, nf: int) -> dict:
        fast = {"name": "fast", "backend": "thp", "capacity": 4 << 20, "available": True,
                "placed_blocks": placed, "placed_bytes": nbytes, "high_water_bytes": high,
                "not_fitting": nf}
        slow = dict(fast, name="slow", backend="default", capacity=None)
        return {"version": 1, "placement": "p.txt", "rank": rank, "unmatched_in_window": 1,
                "tiers": [fast, slow],
                "sites": [{"matches": placed + nf}, {"matches": 0}]}

    stats_ = {0: rank_stats(0, 2, 3 << 20, 3 << 20, 0), 1: rank_stats(1, 1, 1 << 20, 4 << 20, 2),
              2: rank_stats(2, 0, 0, 0, 1)}
    files = {r: tmp_path / f"s.{r}.json" for r in stats_}
    lines = runstats.mpi_summary(stats_, files, 4, tmp_path / "s.%r.json")
    fast = next(x for x in lines if x.startswith("tier fast"))
    assert "3 blocks placed (4.0 MiB) in 3 rank(s)" in fast
    assert "largest high-water 4.0 MiB (rank 1)" in fast
    assert "3 not fitting (rank(s) 1, 2)" in fast
    assert any("3 of 4 ranks" in x for x in lines)                 # one rank wrote nothing
    assert any(x.startswith("sites: 1 of 2 matched") and "3 calls" in x for x in lines)
    assert lines[-1].endswith(", ".join(str(f) for f in files.values()))
    assert runstats.mpi_summary({}, {}, 2, tmp_path / "s.%r.json")[0].startswith("no rank")
    # a pool short on one node: that node is named, with its ranks
    for r, host in ((0, "n1"), (1, "n2"), (2, "n2")):
        stats_[r]["host"] = host
    stats_[1]["tiers"][0]["map_failed"] = 2
    stats_[2]["tiers"][0]["map_failed"] = 1
    short = [x for x in runstats.mpi_summary(stats_, files, 3, tmp_path / "s.%r.json")
             if "refused" in x]
    assert len(short) == 1 and "node n2" in short[0] and "3 mapping(s)" in short[0]
    assert "rank(s) 1, 2" in short[0]
    stats_[0]["tiers"][0]["available"] = False          # no pool at all on n1
    down = [x for x in runstats.mpi_summary(stats_, files, 3, tmp_path / "s.%r.json")
            if "unavailable" in x]
    assert len(down) == 1 and "rank(s) 0 on node(s) n1" in down[0]


def test_cli_start_does_not_load_the_analysis_stack() -> None:
    """`hmtune run` starts once per measured run (compare, explore): importing the CLI
    must not pull in pandas or numpy, which only analyze and advise need."""
    code = ("import sys, hmtune.workflows.cli; "
            "print(sorted(m for m in ('pandas', 'numpy', 'pulp') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"
