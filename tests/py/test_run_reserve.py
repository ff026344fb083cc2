"""`hmtune run --reserve-hugepages` (hmtune/workflows/reserve.py: what a placement needs;
hmtune/workflows/hugepages.py: topping the pools up and putting them back).

The pieces are tested on hand-written placements and sizes and on a fake sysfs tree;
the command end to end on the latency example with a hugetlb tier, as root, with the
machine's pool emptied first and put back as it was after every test (also when one
fails)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import pytest
from clistage import HMTUNE, LATENCY, ROOT, hmtune

from hmtune.advisor.granularity import class_size
from hmtune.analyze.sites_io import ALLOCS_COLUMNS, SITES_COLUMNS, version_line
from hmtune.core.placement import (
    PlacementFile,
    SiteLine,
    StaticLine,
    TierLine,
    frames,
    write_placement,
)
from hmtune.core.units import GIB, MIB
from hmtune.workflows import hugepages, reserve
from hmtune.workflows.hugepages import Pool, Sysfs, Want
from hmtune.workflows.reserve import Block, SiteSizes

PAGE = 2 * MIB
LIB = ROOT / "build" / "lib" / "libhmalloc.so"


# ---- what a placement needs (hmtune/workflows/reserve.py) ----

def placement(*tiers: tuple[str, str, int | None], sites: list[tuple[str, str]]
              ) -> PlacementFile:
    """Tiers (name, backend, capacity) + the fallback `slow`; sites (tier, chain)."""
    return PlacementFile([TierLine(*t) for t in tiers] + [TierLine("slow", "default", None)],
                         4, (0, 0), [SiteLine(tier, chain) for tier, chain in sites])


def blocks(*spec: tuple[int, int, int], rank: int = 0, thread: int = 1) -> SiteSizes:
    """A site's blocks (size, t_alloc, t_free)."""
    b = [Block(rank, thread, size, t0, t1) for size, t0, t1 in spec]
    return SiteSizes(len(b), max(x.size for x in b), 0, b)


def one(pf: PlacementFile, sizes: dict[str, SiteSizes], processes: int = 1,
        default_page: int = PAGE) -> reserve.TierNeed:
    needs = reserve.tier_needs(pf, sizes, processes, default_page)
    assert len(needs) == 1
    return needs[0]


def test_arena_class_sizes() -> None:
    """hmi_arena.c's classes: 16..512 in steps of 16, then 32 per doubling."""
    assert [class_size(n) for n in (0, 1, 16, 17, 24, 512, 513, 528, 529, 1024, 1025)] == \
        [16, 16, 16, 32, 32, 512, 528, 528, 544, 1024, 1056]
    assert class_size(100 << 10) == 102400
    assert class_size(100000) == 100352
    assert class_size(1000000) == 1015808 and class_size(MIB) == MIB


def test_sizes_round_up_to_pages_as_the_library_maps_them() -> None:
    pf = placement(("fast", "hugetlb", GIB),
                   sites=[("fast", c) for c in ("/a+0x1", "/a+0x2", "/a+0x3", "/a+0x4", "/a+0x5")])
    sizes = {"/a+0x1": blocks((2 * MIB, 0, 9)),            # 1 page
             "/a+0x2": blocks((2 * MIB + 1, 0, 9)),        # 2
             "/a+0x3": blocks((512 << 10, 0, 9)),          # a chunk of its class: 1
             "/a+0x4": blocks((MIB, 0, 9)),                # a chunk of its class: 1
             "/a+0x5": blocks((5 * MIB + MIB // 2, 0, -1))}   # 3, never freed
    n = one(pf, sizes)
    assert (n.per_process, n.pages, n.page, n.sized_by, n.capped) == (8, 8, PAGE, "allocs.csv",
                                                                     False)


def test_a_site_needs_its_most_pages_live_at_once() -> None:
    pf = placement(("fast", "hugetlb", GIB), sites=[("fast", "/a+0x1")])
    together = blocks((3 * MIB, 0, 10), (3 * MIB, 5, 20))
    in_turn = blocks((3 * MIB, 0, 5), (3 * MIB, 5, 10), (3 * MIB, 10, 15))  # frees first
    assert one(pf, {"/a+0x1": together}).per_process == 4
    assert one(pf, {"/a+0x1": in_turn}).per_process == 2


def test_a_split_site_needs_only_its_ranges_pages() -> None:
    """Ranges widened to 2 MiB pages inside the object's mapping, cut to the object;
    even a small object of a split site is a mapping of its own."""
    assert reserve.range_pages(64 * MIB, ((24 * MIB, 28 * MIB),), PAGE) == 2
    assert reserve.range_pages(64 * MIB, ((MIB, 3 * MIB),), PAGE) == 2       # widened
    assert reserve.range_pages(5 * MIB, ((4 * MIB, 8 * MIB),), PAGE) == 1    # cut at 6 MiB
    assert reserve.range_pages(3 * MIB, ((4 * MIB, 8 * MIB),), PAGE) == 0    # past its end
    pf = placement(("fast", "hugetlb", GIB), sites=[("fast", "/a+0x1"), ("fast", "/a+0x2")])
    pf.sites[0] = SiteLine("fast", "/a+0x1", "", ((24 * MIB, 28 * MIB),))
    sizes = {"/a+0x1": blocks((64 * MIB, 0, 10), (64 * MIB, 5, 20)),
             "/a+0x2": blocks((4 * MIB, 0, 9))}
    assert one(pf, sizes).per_process == 2 * 2 + 2


def test_capacity_caps_the_pages() -> None:
    """Never more than the capacity holds, in whole pages."""
    sites = [("fast", "/a+0x1"), ("fast", "/a+0x2")]
    sizes = {"/a+0x1": blocks((6 * MIB, 0, 9)), "/a+0x2": blocks((6 * MIB, 0, 9))}
    n = one(placement(("fast", "hugetlb", 5 * MIB), sites=sites), sizes)
    assert (n.per_process, n.capped) == (3, True)
    n = one(placement(("fast", "hugetlb", 5 * MIB), sites=sites), sizes, default_page=GIB)
    assert (n.per_process, n.capped) == (1, True)       # two 1 GiB pages; 4 MiB charged
    assert reserve.capacity_pages(5 * MIB, "hugetlb", PAGE) == 3
    assert reserve.capacity_pages(3 * GIB + 3 * MIB, "hugetlb", GIB) == 4
    assert reserve.capacity_pages(5 * MIB, "memkind:MEMKIND_HUGETLB", PAGE) == 3


def test_several_ranks() -> None:
    """Each process placing on this node needs the largest traced rank's pages."""
    pf = placement(("fast", "hugetlb", GIB), sites=[("fast", "/a+0x1")])
    traced = SiteSizes(2, 7 * MIB, 0, [Block(0, 1, 3 * MIB, 0, 9), Block(1, 1, 7 * MIB, 0, 9)])
    n = one(pf, {"/a+0x1": traced}, processes=4)
    assert (n.per_process, n.processes, n.pages) == (4, 4, 16)
    assert reserve.node_processes(["mpirun", "-np", "8"], 8) == 8
    assert reserve.node_processes(["mpirun", "-np", "8", "--npernode", "2"], 8) == 2
    assert reserve.node_processes(["srun", "--ntasks-per-node=3"], None) == 3
    assert reserve.node_processes(["mpirun"], None) == 1
    # srun's -N counts nodes (Open MPI's: processes per node): the fullest node's share
    assert reserve.node_processes(["srun", "-N", "2", "-n", "5"], 5, {}) == 3
    assert reserve.node_processes(["srun", "--nodes=4", "-n", "8"], 8, {}) == 2
    assert reserve.node_processes(["srun", "-N", "1-3", "-n", "4"], 4, {}) == 4
    assert reserve.node_processes(["srun", "-n", "4"], 4, {"SLURM_JOB_NUM_NODES": "2"}) == 2
    assert reserve.node_processes(["srun", "-n", "4"], 4, {}) == 4
    assert reserve.node_processes(["mpirun", "-N", "2"], 8, {"SLURM_JOB_NUM_NODES": "4"}) == 2


def test_a_1gib_page_tier() -> None:
    """On a host whose default hugepage is 1 GiB, every mapping takes whole 1 GiB pages,
    and the pool is hugepages-1048576kB."""
    pf = placement(("fast", "hugetlb", 8 * GIB), sites=[("fast", "/a+0x1"), ("fast", "/a+0x2")])
    sizes = {"/a+0x1": blocks((10 * MIB, 0, 9), (10 * MIB, 1, 9)),
             "/a+0x2": blocks((GIB + GIB // 2, 0, 9))}
    n = one(pf, sizes, default_page=GIB)
    assert (n.page, n.per_process) == (GIB, 4)
    fs = Sysfs(sys=Path("/S"), nr_default=Path("/N"), meminfo=Path("/nonexistent"))
    assert fs.setting(Pool(GIB)) == Path("/S/kernel/mm/hugepages/hugepages-1048576kB/"
                                         "nr_hugepages")
    assert fs.setting(Pool(GIB, 1)) == Path("/S/devices/system/node/node1/hugepages/"
                                            "hugepages-1048576kB/nr_hugepages")


def test_no_hugetlb_tier_reserves_nothing() -> None:
    sizes = {"/a+0x1": blocks((8 * MIB, 0, 9))}
    for backend in ("thp", "numa:0", "memkind:MEMKIND_HBW", "memkind:MEMKIND_GBTLB", "default"):
        pf = placement(("fast", backend, GIB), sites=[("fast", "/a+0x1")])
        assert reserve.tier_needs(pf, sizes, 4, PAGE) == []
    empty = placement(("fast", "hugetlb", GIB), sites=[])
    assert reserve.tier_needs(empty, sizes, 1, PAGE) == []
    on_slow = placement(("fast", "hugetlb", GIB), sites=[("slow", "/a+0x1")])
    assert reserve.tier_needs(on_slow, sizes, 1, PAGE) == []
    hugetlb = placement(("fast", "hugetlb", GIB), sites=[("fast", "/a+0x1")])
    assert reserve.tier_needs(hugetlb, sizes, 1, None) == []     # a kernel without hugepages


def test_memkind_hugepage_kind_packs_small_objects_in_chunks() -> None:
    """MEMKIND_HUGETLB: objects up to 1 MiB share 2 MiB chunks cut into slabs (10
    objects of 100 KiB's class per 1 MiB slab; over 8 KiB one slab for all threads),
    larger ones are mappings of their own."""
    pf = placement(("fast", "memkind:MEMKIND_HUGETLB", GIB),
                   sites=[("fast", "/a+0x1"), ("fast", "/a+0x2")])
    small = blocks(*[(100 << 10, i, 1000) for i in range(100)])          # 5 chunks
    two_threads = SiteSizes(100, 100 << 10, 0,
                            [Block(0, 1 + i % 2, 100 << 10, i, 1000) for i in range(100)])
    big = blocks((3 * MIB, 0, 9))                                          # 2 pages
    assert one(pf, {"/a+0x1": small, "/a+0x2": big}).per_process == 7
    assert one(pf, {"/a+0x1": two_threads, "/a+0x2": big}).per_process == 7
    # one 2 MiB slab for two threads' 300000-byte objects (6 to a slab); up to 8 KiB the
    # threads share a class's slabs, with 3 batches less one held back per stripe but
    # one (a batch: 1 KiB of objects, at least one): 3 threads' 243 objects of 8 KiB and
    # 2 for each of two stripes take 31 slabs of 64 KiB, 1 chunk, as on one thread
    two = [Block(0, 1 + i % 2, 300000, i, 1000) for i in range(2)]
    assert reserve.arena_pages([SiteSizes(2, 300000, 0, two)]) == {0: 1}
    three = [Block(0, 1 + i % 3, 8192, i, 1000) for i in range(243)]
    assert reserve.arena_pages([SiteSizes(243, 8192, 0, three)]) == {0: 1}
    one_thread = [Block(0, 1, 8192, i, 1000) for i in range(243)]
    assert reserve.arena_pages([SiteSizes(243, 8192, 0, one_thread)]) == {0: 1}
    # 520 objects of 8 KiB: 65 slabs, 3 chunks; 16 threads may hold back 30 more: 69
    # slabs, still 3 chunks
    many = [Block(0, 1, 8192, i, 9000) for i in range(520)]
    assert reserve.arena_pages([SiteSizes(520, 8192, 0, many)]) == {0: 3}
    sixteen = [Block(0, 1 + i % 16, 8192, i, 9000) for i in range(520)]
    assert reserve.arena_pages([SiteSizes(520, 8192, 0, sixteen)]) == {0: 3}
    # a few objects of ten classes from each of 16 threads: a slab per class, one chunk
    # (a slab per thread and class would take 160 slabs, five chunks)
    few = [Block(0, 1 + t, 16 * (1 + c), 100 * t + c, 9000) for t in range(16)
           for c in range(10)]
    assert reserve.arena_pages([SiteSizes(160, 160, 0, few)]) == {0: 1}
    # no allocs.csv: which objects went to the arena is unknown → the capacity
    n = one(pf, {"/a+0x1": SiteSizes(100, 100 << 10, 10 * MIB), "/a+0x2": big})
    assert (n.per_process, n.sized_by) == (GIB // PAGE, "capacity")


def test_sites_csv_alone_and_unknown_sites() -> None:
    """Without allocs.csv which objects are packed into chunks is unknown: the tier
    counts as its capacity, as for a site of unknown size."""
    pf = placement(("fast", "hugetlb", 64 * MIB), sites=[("fast", "/a+0x1")])
    for s in (SiteSizes(1, 3 * MIB, 3 * MIB), SiteSizes(9, 900 << 10, 8 * MIB)):
        n = one(pf, {"/a+0x1": s})
        assert (n.per_process, n.sized_by, n.capped) == (32, "capacity", False)
    n = one(pf, {})                                         # a site of unknown size
    assert (n.per_process, n.sized_by, n.capped) == (32, "capacity", False)


def test_static_variables_need_their_whole_2mib_pages() -> None:
    """A static's whole 2 MiB pages at most (SIZE // 2 MiB, however it is aligned), on top
    of the sites' pages; a tier with statics only is sized by the placement itself."""
    pf = placement(("fast", "hugetlb", GIB), sites=[])
    pf.statics = [StaticLine("fast", "/app+0x5080", 16 * MIB),
                  StaticLine("fast", "/app+0x2000000", 5 * MIB),
                  StaticLine("fast", "/app+0x3000000", MIB)]
    n = one(pf, {})
    assert (n.per_process, n.sized_by) == (8 + 2 + 0, "placement")
    pf.sites = [SiteLine("fast", "/a+0x1")]
    n = one(pf, {"/a+0x1": blocks((3 * MIB, 0, 10))})
    assert (n.per_process, n.sized_by) == (2 + 10, "allocs.csv")
    pf.statics = [StaticLine("slow", "/app+0x5080", 16 * MIB)]    # not a hugepage tier
    assert one(pf, {"/a+0x1": blocks((3 * MIB, 0, 10))}).per_process == 2


def write_stage(d: Path, trace_id: str, rows: list[tuple[int, str, int, int, int]],
                allocs: list[tuple[int, int, int]]) -> None:
    """sites.csv (site_id, chain, n_allocs, max_size, peak) and allocs.csv (site_id,
    size, t_free) of a trace with this id."""
    d.mkdir(parents=True, exist_ok=True)
    lines = [version_line("sites", 1, trace="trace.prv", **{"trace-id": trace_id}),
             ",".join(SITES_COLUMNS)]
    for sid, chain, n, mx, peak in rows:
        v = {"site_id": sid, "callstack": "x.c:1", "callstack_raw": f'"{chain}"',
             "n_allocs": n, "max_size": mx, "peak_live_bytes": peak}
        lines.append(",".join(str(v.get(c, 0)) for c in SITES_COLUMNS))
    (d / "sites.csv").write_text("\n".join(lines) + "\n")
    lines = [version_line("allocs", 1, trace="trace.prv", **{"trace-id": trace_id}),
             ",".join(ALLOCS_COLUMNS)]
    lines += [f"{sid},0,1,0x{i:x},{size},{i},{t_free}" for i, (sid, size, t_free)
              in enumerate(allocs)]
    (d / "allocs.csv").write_text("\n".join(lines) + "\n")


def test_sizes_from_the_placements_own_trace(tmp_path: Path) -> None:
    chain = "/app+0x10 > /lib/libc.so.6+0x20"
    write_stage(tmp_path, "00112233aabbccdd", [(3, chain, 2, 3 * MIB, 6 * MIB),
                                               (4, "/app+0x99", 1, MIB, MIB)],
                [(3, 3 * MIB, -1), (4, MIB, 5), (3, 3 * MIB, -1)])
    p = tmp_path / "placement.txt"
    p.write_text(f"# hmtune placement v1\n# trace-id=00112233aabbccdd\n"
                 f"tier fast hugetlb {GIB}\ntier slow default unlimited\ndepth 2\n"
                 f"size-window 0 0\nsite fast {chain}\n")
    sizes, why = reserve.sizes_for(p, [tmp_path], {chain})
    assert why == "" and list(sizes) == [chain]
    assert [b.size for b in sizes[chain].blocks or []] == [3 * MIB, 3 * MIB]
    from hmtune.core.placement import read_placement

    assert one(read_placement(p), sizes).per_process == 4
    p.write_text(p.read_text().replace("00112233aabbccdd", "ffffffffffffffff"))
    sizes, why = reserve.sizes_for(p, [tmp_path], {chain})
    assert sizes == {} and "another trace" in why
    assert reserve.sizes_for(p, [tmp_path / "none"], {chain})[0] == {}


def test_where_the_pages_come_from(tmp_path: Path) -> None:
    assert reserve.numactl_nodes(["numactl", "-m", "1", "./app", "-m", "3"]) == (1,)
    assert reserve.numactl_nodes(["env", "A=1", "numactl", "--membind=0,2", "./app"]) == (0, 2)
    assert reserve.numactl_nodes(["numactl", "-i0-2", "./app"]) == (0, 1, 2)
    assert reserve.numactl_nodes(["numactl", "-C", "3", "-N", "1", "./app"]) == (1,)
    assert reserve.numactl_nodes(["numactl", "-N", "1", "--preferred", "2", "./app"]) == (2,)
    assert reserve.numactl_nodes(["numactl", "--interleave=all", "./app"]) == ()
    assert reserve.numactl_nodes(["./app", "-m", "1"]) == ()
    hbw = "memkind:MEMKIND_HBW_HUGETLB"
    assert reserve.tier_nodes(hbw, ["./app"], {}, {4, 5}, ()) == (4, 5)
    assert reserve.tier_nodes(hbw, ["./app"], {"MEMKIND_HBW_NODES": "1"}, {4}, ()) == (1,)
    assert reserve.tier_nodes("hugetlb", ["numactl", "-m", "1", "./a"], {}, {4}, ()) == (1,)
    assert reserve.tier_nodes("hugetlb", ["./a"], {}, set(), ()) == ()
    assert reserve.tier_nodes("hugetlb", ["./a"], {}, set(), (1,)) == (1,)
    assert reserve.tier_nodes("hugetlb", ["numactl", "-m", "0-1", "./a"], {}, set(),
                              (1,)) == (1,)
    status, nodes = tmp_path / "status", tmp_path / "node"
    nodes.mkdir()
    (nodes / "has_memory").write_text("0-1\n")
    status.write_text("Name:\tx\nMems_allowed_list:\t1\n")
    assert reserve.cpuset_nodes(status, nodes) == (1,)
    status.write_text("Name:\tx\nMems_allowed_list:\t0-1\n")
    assert reserve.cpuset_nodes(status, nodes) == ()


# ---- topping pools up and putting them back (hmtune/workflows/hugepages.py) ----

def fake_sysfs(root: Path, pools: dict[tuple[int, int | None], tuple[int, int]],
               resv: int = 0) -> Sysfs:
    """A sysfs tree with these pools ((page, node): (nr, free)); 2 MiB is the default."""
    fs = Sysfs(sys=root / "sys", nr_default=root / "proc_nr_hugepages",
               meminfo=root / "meminfo")
    (root / "meminfo").write_text("HugePages_Total: 0\nHugePages_Free: 0\n"
                                  "Hugepagesize: 2048 kB\n")
    for (page, node), (nr, free) in pools.items():
        d = fs.pool_dir(Pool(page, node))
        d.mkdir(parents=True)
        (d / "free_hugepages").write_text(f"{free}\n")
        (d / "resv_hugepages").write_text(f"{resv}\n")
        setting = fs.setting(Pool(page, node))
        setting.write_text(f"{nr}\n")
    return fs


def value(p: Path) -> int:
    return int(p.read_text())


def test_only_what_is_missing_is_added_and_put_back(tmp_path: Path) -> None:
    fs = fake_sysfs(tmp_path, {(PAGE, None): (10, 3), (GIB, None): (0, 0)}, resv=1)
    nr, nr1g = fs.nr_default, fs.pool_dir(Pool(GIB)) / "nr_hugepages"
    with hugepages.topped_up([Want(PAGE, 5, (), "tier a"), Want(GIB, 2, (), "tier b")], "t",
                             quiet=True, fs=fs) as t:
        assert (value(nr), value(nr1g)) == (13, 2)           # 3 free less 1 promised: +3
        assert (t.wanted, t.missing, t.notes) == (7, 0, [])
        assert [(c.path, c.old, c.new) for c in t.changes] == [(nr, 10, 13), (nr1g, 0, 2)]
    assert (value(nr), value(nr1g)) == (10, 0)
    with hugepages.topped_up([Want(PAGE, 2)], "t", quiet=True, fs=fs) as t:
        assert t.changes == [] and t.missing == 0 and value(nr) == 10


def test_node_pools_are_topped_up_across_the_nodes(tmp_path: Path) -> None:
    fs = fake_sysfs(tmp_path, {(PAGE, None): (4, 1), (PAGE, 0): (4, 1), (PAGE, 1): (0, 0)})
    n0, n1 = fs.setting(Pool(PAGE, 0)), fs.setting(Pool(PAGE, 1))
    assert n0.parent.name == "hugepages-2048kB" and "node0" in str(n0)
    wants = [Want(PAGE, 3, (0, 1), "tier a"), Want(PAGE, 3, (1, 0), "tier b"),
             Want(PAGE, 1, (), "tier c")]
    with hugepages.topped_up(wants, "t", quiet=True, fs=fs) as t:
        assert (value(n0), value(n1)) == (4 + 3, 0 + 2)      # 6 wanted, 1 free: +5
        assert value(fs.nr_default) == 4 + 1                 # the free page was counted
        assert t.missing == 0
    assert (value(n0), value(n1), value(fs.nr_default)) == (4, 0, 4)
    assert hugepages.merged(wants)[0] == Want(PAGE, 6, (0, 1), "tier a, tier b")


def test_put_back_however_the_block_ends(tmp_path: Path) -> None:
    fs = fake_sysfs(tmp_path, {(PAGE, None): (0, 0)})
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(RuntimeError), hugepages.topped_up([Want(PAGE, 4)], "t", True, fs):
        assert value(fs.nr_default) == 4
        raise RuntimeError("the run failed")
    assert value(fs.nr_default) == 0
    for sig in (signal.SIGTERM, signal.SIGHUP):
        with pytest.raises(SystemExit) as e, hugepages.topped_up([Want(PAGE, 4)], "t", True, fs):
            assert value(fs.nr_default) == 4
            os.kill(os.getpid(), sig)
            time.sleep(5)                                   # the handler interrupts this
        assert e.value.code == 128 + sig and value(fs.nr_default) == 0
    with pytest.raises(KeyboardInterrupt), hugepages.topped_up([Want(PAGE, 4)], "t", True, fs):
        raise KeyboardInterrupt
    assert value(fs.nr_default) == 0
    assert signal.getsignal(signal.SIGTERM) == before


def test_a_setting_that_cannot_be_written(tmp_path: Path) -> None:
    """Not root (here: a read-only kernel file in place of nr_hugepages): nothing
    changes, and the note names the command to run as root."""
    ro = Path("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages")
    if not ro.exists():
        pytest.skip("no 2 MiB hugepage pool in this kernel")
    fs = fake_sysfs(tmp_path, {(PAGE, None): (0, 0)})
    fs.nr_default.unlink()
    fs.nr_default.symlink_to(ro)
    cur = value(ro)
    with hugepages.topped_up([Want(PAGE, cur + 6, (), "tier fast")], "t", True, fs) as t:
        assert t.changes == [] and t.missing == cur + 6
        assert len(t.notes) == 1 and f"echo {2 * cur + 6} > {fs.nr_default}" in t.notes[0]


def test_the_kernel_gives_fewer_pages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fragmented memory: the kernel stops short; what it gave is used, then put back."""
    fs = fake_sysfs(tmp_path, {(PAGE, None): (2, 0)})
    real = Path.write_text

    def kernel(self: Path, text: str, *a: object, **kw: object) -> int:
        if self == fs.nr_default:
            text = f"{min(int(text), 5)}\n"                # room for 3 more only
        return real(self, text, *a, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "write_text", kernel)
    with hugepages.topped_up([Want(PAGE, 8)], "t", True, fs) as t:
        assert value(fs.nr_default) == 5 and t.missing == 5
        assert len(t.notes) == 1 and "gave 3 of the 8" in t.notes[0]
    assert value(fs.nr_default) == 2


# ---- end to end, as root: the machine's pool emptied first ----

NR = hugepages.NR_HUGEPAGES
NODE0 = Path("/sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages")
root_pool = pytest.mark.skipif(
    os.geteuid() != 0 or not os.access(NR, os.W_OK) or not LIB.exists()
    or hugepages.pool() is None or hugepages.pool().page != PAGE,   # type: ignore[union-attr]
    reason="needs root, 2 MiB hugepages and libhmalloc.so")



@pytest.fixture(scope="module")
def stage(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """The latency example traced and analyzed, and a placement of its sites of 1 MiB
    or more (cold1, cold2, stream, gdata, chase: 2+2+4+2+5.5 MiB) in a hugetlb tier;
    with the pages they take (8)."""
    import csv

    d = tmp_path_factory.mktemp("reserve")
    assert hmtune("trace", "-q", "-o", str(d), "--", str(LATENCY), "-q").returncode == 0
    assert hmtune("analyze", str(d)).returncode == 0
    with (d / "sites.csv").open(newline="") as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    big = [r for r in rows if int(r["max_size"]) >= MIB]
    assert len(big) == 5
    chains = [r["callstack_raw"] for r in big]
    write_placement(d / "placement.txt", PlacementFile(
        [TierLine("fast", "hugetlb", GIB), TierLine("slow", "default", None)],
        max(len(frames(c)) for c in chains), (MIB, 6 * MIB),
        [SiteLine("fast", c) for c in chains], program=str(LATENCY)))
    pages = sum(-(-int(r["max_size"]) // PAGE) for r in big)
    assert pages == 8
    return d, pages


def run_latency(d: Path, *opts: str, app: tuple[str, ...] = (str(LATENCY), "-q"),
                out: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(HMTUNE), "run", "-o", str(out or d), "--placement",
                           str(d / "placement.txt"), *opts, "--", *app],
                          capture_output=True, text=True, timeout=300)


def fast_tier(out: Path) -> dict:
    import json

    s = json.loads((out / "run-stats.json").read_text())
    return next(t for t in s["tiers"] if t["name"] == "fast")


@root_pool
def test_reserved_placed_and_put_back(stage: tuple[Path, int], empty_pool: None,
                                      tmp_path: Path) -> None:
    d, pages = stage
    from hmtune.core.placement import read_placement

    pf = read_placement(d / "placement.txt")
    sizes, _ = reserve.sizes_for(d / "placement.txt", [d], {s.chain for s in pf.sites})
    need = reserve.tier_needs(pf, sizes, 1, PAGE)
    assert [(n.tier, n.pages, n.nodes) for n in need] == [("fast", pages, ())]
    r = run_latency(d, "-q", "--reserve-hugepages", out=tmp_path)
    assert r.returncode == 0, r.stderr
    fast = fast_tier(tmp_path)
    assert fast["available"] and fast["placed_blocks"] == 5 and fast["not_fitting"] == 0
    assert fast["high_water_bytes"] == pages * PAGE          # exactly the pages reserved
    assert fast["residency"]["bytes_elsewhere"] == 0
    assert value(NR) == 0


@root_pool
def test_a_short_pool_names_its_node(stage: tuple[Path, int], empty_pool: None,
                                     tmp_path: Path) -> None:
    """A pool with fewer free pages than the placement needs: what fits is placed, the
    rest falls back, and the statistics count the mappings the kernel refused within
    the capacity (map_failed, and `kernel` among the reasons requests did not fit) with
    the node's hostname, which the summary over ranks names (the pool is per node)."""
    import json
    import socket

    d, pages = stage
    NR.write_text("3\n")
    r = run_latency(d, "-q", out=tmp_path)
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path / "run-stats.json").read_text())
    fast = next(t for t in s["tiers"] if t["name"] == "fast")
    assert s["host"] == socket.gethostname()
    assert 0 < fast["placed_blocks"] and fast["map_failed"] > 0
    assert fast["not_fitting"] >= fast["map_failed"]
    # why: every request left out was a mapping the kernel refused (not the capacity)
    why = fast["not_fitting_reasons"]
    assert sum(why.values()) == fast["not_fitting"] == why["kernel"]
    assert fast["high_water_bytes"] <= 3 * PAGE < pages * PAGE
    from hmtune.workflows import runstats

    short = runstats.pool_short("fast", "hugetlb", {0: s}, {0: fast})
    assert len(short) == 1 and f"node {s['host']}" in short[0] and "rank(s) 0" in short[0]


@root_pool
def test_without_the_flag_nothing_goes_to_the_tier(stage: tuple[Path, int], empty_pool: None,
                                                   tmp_path: Path) -> None:
    """Without the flag and with no free hugepage the run is refused before it starts
    (exit 2, nothing run); --allow-unplaced runs it with the tier's sites unplaced."""
    d, _ = stage
    r = run_latency(d, "-q", out=tmp_path)
    assert r.returncode == 2 and "checksum=" not in r.stdout
    assert len(r.stderr.strip().splitlines()) == 1
    assert not list(tmp_path.glob("run-stats*.json"))
    r = run_latency(d, "-q", "--allow-unplaced", out=tmp_path)
    assert r.returncode == 0, r.stderr
    fast = fast_tier(tmp_path)
    assert fast["placed_blocks"] == 0 and not fast["available"]
    assert value(NR) == 0


@root_pool
@pytest.mark.skipif(not NODE0.exists() or shutil.which("numactl") is None,
                    reason="needs numactl and node 0's hugepage pool")
def test_a_run_bound_to_a_node_reserves_there(stage: tuple[Path, int], empty_pool: None,
                                              tmp_path: Path) -> None:
    d, _ = stage
    r = run_latency(d, "-q", "--reserve-hugepages", out=tmp_path,
                    app=("numactl", "-m", "0", str(LATENCY), "-q"))
    assert r.returncode == 0, r.stderr
    fast = fast_tier(tmp_path)
    assert fast["placed_blocks"] == 5 and fast["not_fitting"] == 0
    assert value(NODE0) == 0 and value(NR) == 0


def meminfo_free() -> int:
    p = hugepages.pool()
    return p.free if p else -1


@root_pool
@pytest.mark.parametrize("how", ["SIGTERM", "SIGHUP", "ctrl-c"])
def test_a_signal_to_hmtune_puts_the_pool_back(stage: tuple[Path, int], empty_pool: None,
                                               tmp_path: Path, how: str) -> None:
    """While the application holds the reserved pages (a long run of the example), a
    SIGTERM or SIGHUP to hmtune, or Ctrl-C to the terminal's process group, ends the run
    with the pool put back."""
    d, pages = stage
    cmd = [str(HMTUNE), "run", "-q", "-o", str(tmp_path), "--placement",
           str(d / "placement.txt"), "--reserve-hugepages", "--", str(LATENCY), "-q",
           "-n", "1000000"]
    # as a terminal's foreground job: Ctrl-C not ignored, even when this suite runs as
    # a background job of a non-interactive shell (which starts it with SIGINT ignored,
    # and an ignored signal stays ignored across exec)
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 60
        while not (value(NR) == pages and meminfo_free() == 0) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert value(NR) == pages and meminfo_free() == 0   # reserved, and all in use
        sig = {"SIGTERM": signal.SIGTERM, "SIGHUP": signal.SIGHUP, "ctrl-c": signal.SIGINT}[how]
        if how == "ctrl-c":
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == -sig, err
        assert value(NR) == 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def nobody_python() -> dict[str, str] | None:
    """The environment in which bin/hmtune runs as nobody (uid 65534) with this
    checkout's packages (the virtualenv's interpreter may sit where nobody cannot
    read), or None when it cannot."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        return None
    env = dict(os.environ, PYTHONPATH=sysconfig.get_paths()["purelib"])
    probe = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                            str(HMTUNE), "run", "--help"], capture_output=True, env=env)
    return env if probe.returncode == 0 else None


@root_pool
def test_not_root_prints_the_command(stage: tuple[Path, int], empty_pool: None) -> None:
    """Not root: the exact command to run as root is printed; with nothing placeable the
    run is refused (exit 2) unless --allow-unplaced, which runs it unplaced."""
    env = nobody_python()
    if env is None:
        pytest.skip("cannot run hmtune as nobody here")
    d, pages = stage
    work = Path(tempfile.mkdtemp(prefix="hmtune-nobody-"))
    try:
        work.chmod(0o777)
        for name in ("placement.txt", "sites.csv", "allocs.csv"):
            shutil.copy(d / name, work / name)
            (work / name).chmod(0o644)
        cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", str(HMTUNE),
               "run", "-q", "-o", str(work), "--reserve-hugepages", "--", str(LATENCY), "-q"]
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
        assert r.returncode == 2 and "checksum=" not in r.stdout
        assert [x for x in r.stderr.splitlines()
                if f"echo {pages} > {NR}" in x and x.startswith("hmtune run:")]
        cmd[-3:-3] = ["--allow-unplaced"]
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
        assert r.returncode == 0, r.stderr
        assert "checksum=" in r.stdout
        assert [x for x in r.stderr.splitlines()
                if f"echo {pages} > {NR}" in x and x.startswith("hmtune run:")]
        assert value(NR) == 0
        fast = fast_tier(work)
        assert fast["placed_blocks"] == 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ---- the entry points ----

def test_help_and_make_rerun() -> None:
    r = subprocess.run([str(HMTUNE), "run", "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "--reserve-hugepages" in r.stdout and "RESERVE=1" in r.stdout
    make = ["make", "-s", "-n", "-C", str(ROOT), "rerun", "APP=./app -q", "OUT=/tmp/x"]
    with_flag = subprocess.run([*make, "RESERVE=1"], capture_output=True, text=True)
    without = subprocess.run(make, capture_output=True, text=True)
    assert with_flag.returncode == 0 and without.returncode == 0
    assert "--reserve-hugepages" in with_flag.stdout and " run " in with_flag.stdout
    assert "--reserve-hugepages" not in without.stdout and " run " in without.stdout


def test_imports_stay_light() -> None:
    """hmtune run imports hmtune.workflows.reserve at start: no pandas or numpy."""
    code = ("import sys, hmtune.workflows.reserve, hmtune.workflows.hugepages; "
            "print(sorted(m for m in ('pandas', 'numpy') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.stdout.strip() == "[]", r.stderr


SMALL_OBJECTS = ROOT / "build" / "tests" / "programs" / "small_objects"


@root_pool
def test_small_objects_fill_the_planned_capacity(tmp_path: Path, empty_pool: None) -> None:
    """Sites of objects under 1 MiB (400 x 24 KiB, 12 x 600 KiB) planned into an 18 MiB
    hugetlb tier by their size classes are placed whole: no object of a planned site
    falls back, and the tier's high-water mark is at least 90 % of what was planned."""
    import json

    import numpy as np
    import pandas as pd

    from hmtune.advisor.model import charged_peaks
    from hmtune.core.placement import read_placement

    d = tmp_path / "stage"
    r = hmtune("trace", "-q", "-o", str(d), "--", str(SMALL_OBJECTS), "100")
    assert r.returncode == 0, r.stderr
    assert hmtune("analyze", str(d)).returncode == 0
    m = tmp_path / "m.toml"
    m.write_text((ROOT / "configs" / "machines" / "vm-hugetlb.toml").read_text()
                 .replace('capacity = "4G"', 'capacity = "18M"').replace('per = "node"', ""))
    r = hmtune("advise", str(d), "--machine", str(m))
    assert r.returncode == 0, r.stderr
    pf = read_placement(d / "placement.txt")
    sites = pd.read_csv(d / "sites.csv", comment="#")
    by_chain = {c: int(i) for i, c in zip(sites["site_id"], sites["callstack_raw"], strict=True)}
    placed = [by_chain[s.chain] for s in pf.sites if s.tier == "huge"]
    small = sites[sites["max_size"] < MIB]["site_id"].tolist()
    assert set(placed) & set(small), "no site of small objects was placed"
    allocs = pd.read_csv(d / "allocs.csv", comment="#")
    planned = int(charged_peaks(allocs, np.array(placed), "hugetlb").sum())
    assert 15 * MIB < planned <= 18 * MIB
    out = tmp_path / "run"
    r = run_latency(d, "-q", "--reserve-hugepages", app=(str(SMALL_OBJECTS), "100"), out=out)
    assert r.returncode == 0, r.stderr
    stats = json.loads((out / "run-stats.json").read_text())
    tier = next(t for t in stats["tiers"] if t["name"] == "huge")
    assert tier["available"] and tier["not_fitting"] == 0
    assert tier["high_water_bytes"] >= 0.9 * planned
    assert tier["high_water_bytes"] <= 18 * MIB
    for s in stats["sites"]:
        if s["tier"] == "huge":
            assert s["matches"] > 0 and s["fell_back"] == 0, s
