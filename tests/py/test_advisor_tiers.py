"""hmtune/machine/machinefile.py: machine files (the shipped ones and broken ones), sizes, --mem."""

from __future__ import annotations

from pathlib import Path

import pytest

from hmtune.advisor.process_tiers import per_process
from hmtune.core.units import GIB, KIB, MIB
from hmtune.machine.machinefile import TierFileError, load_machine, with_fast_capacity

ROOT = Path(__file__).resolve().parents[2]
MACHINES = ROOT / "configs" / "machines"

GOOD = """name = "test-box"
[[tier]]
name = "fast"
capacity = "{cap}"
backend = "memkind:MEMKIND_HBW"
load_cost = 1.0
store_cost = 1.0
[[tier]]
name = "slow"
capacity = "unlimited"
backend = "default"
load_cost = 2.0
store_cost = 3.0
"""


def write(tmp_path: Path, text: str, name: str = "box.toml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_every_shipped_machine_file_loads() -> None:
    files = sorted(MACHINES.glob("*.toml"))
    assert {f.stem for f in files} >= {"xeon-max-9468-flat-snc4", "xeon-max-9468-flat-quadrant",
                                       "xeon-max-9468-cache-quadrant", "xeon-max-9468-hbm-only",
                                       "knl-7250-flat-quadrant", "cxl-dax-kmem", "dram-pmem",
                                       "vm-hugetlb", "vm-thp"}
    for f in files:
        m = load_machine(f)
        assert m.name == f.stem
        assert m.tiers[-1].unlimited and all(not t.unlimited for t in m.tiers[:-1])
        fb = m.tiers[-1]
        for t in m.tiers[:-1]:                    # every fast tier really is faster
            assert t.load_cost < fb.load_cost and t.store_cost < fb.store_cost
        assert m.notes == []


def test_shipped_machine_layouts() -> None:
    snc4 = load_machine(MACHINES / "xeon-max-9468-flat-snc4.toml").tiers
    assert (snc4[0].backend, snc4[0].capacity, snc4[0].per_node) == ("numa:8-15", 128 * GIB,
                                                                     True)
    quad = load_machine(MACHINES / "xeon-max-9468-flat-quadrant.toml").tiers
    assert (quad[0].backend, quad[0].capacity, quad[0].per_node) == ("numa:2-3", 128 * GIB,
                                                                     True)
    knl = load_machine(MACHINES / "knl-7250-flat-quadrant.toml").tiers
    assert (knl[0].backend, knl[0].capacity) == ("memkind:MEMKIND_HBW", 16 * GIB)
    cxl = load_machine(MACHINES / "cxl-dax-kmem.toml").tiers
    assert cxl[-1].backend == "memkind:MEMKIND_DAX_KMEM"
    pmem = load_machine(MACHINES / "dram-pmem.toml").tiers
    assert (pmem[0].backend, pmem[-1].backend) == ("numa:0-1", "memkind:MEMKIND_DAX_KMEM")
    for name in ("xeon-max-9468-cache-quadrant", "xeon-max-9468-hbm-only"):
        huge = load_machine(MACHINES / f"{name}.toml").tiers
        assert (huge[0].backend, huge[0].page_size, huge[0].per_node) == \
            ("hugetlb", 2 * MIB, True)
    vm = load_machine(MACHINES / "vm-hugetlb.toml").tiers
    assert (vm[0].backend, vm[0].page_size, vm[0].per_node) == ("hugetlb", 2 * MIB, True)
    # fits the smallest reservation tried on this VM (2048 hugepages of 2 MiB)
    assert vm[0].capacity is not None and vm[0].capacity <= 2048 * 2 * MIB
    assert vm[0].capacity % (2 * MIB) == 0 and vm[1].page_size == 4 * KIB


@pytest.mark.parametrize("cap", ["16G", "16GiB", "16GB", "16g", "16384M", "16777216K",
                                 "17179869184"])
def test_size_spellings(tmp_path: Path, cap: str) -> None:
    m = load_machine(write(tmp_path, GOOD.format(cap=cap)))
    assert m.tiers[0].capacity == 16 * GIB
    assert (m.tiers[1].load_cost, m.tiers[1].store_cost) == (2.0, 3.0)


def test_page_and_per_defaults(tmp_path: Path) -> None:
    text = GOOD.format(cap="1G").replace('backend = "memkind:MEMKIND_HBW"',
                                         'backend = "hugetlb"')
    m = load_machine(write(tmp_path, text))
    assert m.tiers[0].page_size == 2 * MIB and m.tiers[1].page_size == 4 * KIB
    assert not m.tiers[0].per_node
    text = text.replace('name = "fast"', 'name = "fast"\npage = "1G"\nper = "node"')
    m = load_machine(write(tmp_path, text))
    assert m.tiers[0].page_size == GIB and m.tiers[0].per_node


def test_alloc_cost_default_and_key(tmp_path: Path) -> None:
    """alloc_cost_ns: the default on a placing tier, none on the fallback, the file's
    value (0 allowed) otherwise."""
    from hmtune.machine.tiers import DEFAULT_ALLOC_COST_NS

    m = load_machine(write(tmp_path, GOOD.format(cap="1G")))
    assert m.tiers[0].call_cost_ns == DEFAULT_ALLOC_COST_NS and m.tiers[1].call_cost_ns == 0
    for ns in (0, 350.5):
        text = GOOD.format(cap="1G").replace('name = "fast"',
                                             f'name = "fast"\nalloc_cost_ns = {ns}')
        assert load_machine(write(tmp_path, text)).tiers[0].call_cost_ns == ns


def test_access_min_span_default_and_key(tmp_path: Path) -> None:
    """access_min_span: 256 KiB on tiers of bigger pages of the same memory (hugetlb, THP,
    memkind's hugepage kind without HBW), 0 elsewhere; the file's size otherwise."""
    from hmtune.machine.tiers import SMALL_SPAN, Tier

    assert SMALL_SPAN == 256 * KIB
    for backend, span in (("hugetlb", SMALL_SPAN), ("thp", SMALL_SPAN),
                          ("umf:hugetlb", SMALL_SPAN), ("memkind:MEMKIND_HUGETLB", SMALL_SPAN),
                          ("memkind:MEMKIND_HBW_HUGETLB", 0), ("memkind:MEMKIND_HBW", 0),
                          ("numa:1", 0), ("default", 0)):
        assert Tier("t", None, backend).min_span == span, backend
    m = load_machine(write(tmp_path, GOOD.format(cap="1G")))        # memkind HBW
    assert m.tiers[0].min_span == 0
    for value, want in (('"1M"', MIB), ("0", 0), ("65536", 64 * KIB)):
        text = GOOD.format(cap="1G").replace('name = "fast"',
                                             f'name = "fast"\naccess_min_span = {value}')
        assert load_machine(write(tmp_path, text)).tiers[0].min_span == want


def test_small_sites_gain_nothing_on_access_from_bigger_pages() -> None:
    """On a hugetlb tier a site whose peak is at most 256 KiB (the span a first-level TLB
    holds in 4 KiB pages: make bench-tlbspan, no gain at 16-256 KiB) has no access value;
    larger ones keep theirs; an HBM-like tier, or access_min_span = 0, keeps them all."""
    import numpy as np

    from hmtune.advisor.model import Problem
    from hmtune.machine.tiers import Tier

    sizes = np.array([64 * KIB, 256 * KIB, 256 * KIB + 4096, 8 * MIB], np.int64)

    def access(fast: Tier) -> list[float]:
        p = Problem(np.arange(4), sizes, np.full(4, 1e6), np.full(4, 100, np.int64),
                    np.zeros(4, np.int64), [fast, Tier("slow", None, "default", 2.0, 2.0)],
                    total_weight=4e6)
        return p.access_values()[:, 0].tolist()

    assert access(Tier("huge", 64 * MIB, "hugetlb")) == [0.0, 0.0, 5e5, 5e5]
    assert access(Tier("huge", 64 * MIB, "hugetlb", access_min_span=0)) == [5e5] * 4
    assert access(Tier("hbm", 64 * MIB, "numa:1")) == [5e5] * 4


def test_bandwidth_bound_default_and_key(tmp_path: Path) -> None:
    """bandwidth_bound_gbs on the fallback: its GB/s as bytes/s, the advisor's bound from
    it; without it the default."""
    from hmtune.advisor.counted import BANDWIDTH_BOUND, bound_for

    m = load_machine(write(tmp_path, GOOD.format(cap="1G")))
    assert m.tiers[-1].bandwidth_bound is None and bound_for(m.tiers) == BANDWIDTH_BOUND
    text = GOOD.format(cap="1G").replace('name = "slow"',
                                         'name = "slow"\nbandwidth_bound_gbs = 0.75')
    m = load_machine(write(tmp_path, text))
    assert m.tiers[-1].bandwidth_bound == 0.75e9 and bound_for(m.tiers) == 0.75e9
    assert bound_for(with_fast_capacity(m, MIB).tiers) == 0.75e9


def _replace(old: str, new: str) -> str:
    text = GOOD.format(cap="16G")
    assert old in text
    return text.replace(old, new, 1)


BROKEN = {
    "size": (_replace('capacity = "16G"', 'capacity = "16Q"'), "capacity"),
    "size-float": (_replace('capacity = "16G"', "capacity = 1.5"), "capacity"),
    "zero": (_replace('capacity = "16G"', 'capacity = "0"'), "capacity"),
    "backend": (_replace("memkind:MEMKIND_HBW", "gpu"), "backend"),
    "memkind-kind": (_replace("memkind:MEMKIND_HBW", "memkind:hbw"), "backend"),
    "numa-list": (_replace("memkind:MEMKIND_HBW", "numa:8-"), "backend"),
    "numa-backwards": (_replace("memkind:MEMKIND_HBW", "numa:15-8"), "backend"),
    "missing-cost": (_replace("load_cost = 1.0\n", ""), "load_cost"),
    "missing-name": (_replace('name = "test-box"\n', ""), "name"),
    "missing-backend": (_replace('backend = "default"\n', ""), "backend"),
    "fallback-limited": (_replace('capacity = "unlimited"', 'capacity = "64G"'), "unlimited"),
    "unlimited-first": (_replace('capacity = "16G"', 'capacity = "unlimited"'), "fast"),
    "nan": (_replace("load_cost = 1.0", "load_cost = nan"), "load_cost"),
    "negative": (_replace("store_cost = 1.0", "store_cost = -1.0"), "store_cost"),
    "zero-cost": (_replace("load_cost = 1.0", "load_cost = 0"), "load_cost"),
    "inf": (_replace("store_cost = 3.0", "store_cost = inf"), "store_cost"),
    "text-cost": (_replace("load_cost = 1.0", 'load_cost = "1.0"'), "load_cost"),
    "no-tiers": ('name = "empty"\n', "tier"),
    "one-tier": ('name = "x"\n[[tier]]\nname = "a"\ncapacity = "unlimited"\n'
                 'backend = "default"\nload_cost = 1\nstore_cost = 1\n', "tier"),
    "syntax": (_replace('name = "fast"', 'name = "fast'), "line"),
    "unknown-key": (_replace('capacity = "16G"', 'capacity = "16G"\ncapcity = "1G"'),
                    "capcity"),
    "duplicate": (_replace('name = "slow"', 'name = "fast"'), "fast"),
    "per": (_replace('name = "fast"', 'name = "fast"\nper = "socket"'), "per"),
    "page": (_replace('name = "fast"', 'name = "fast"\npage = "3K"'), "page"),
    "tier-name": (_replace('name = "fast"', 'name = "fast tier"'), "name"),
    "empty": ("", "empty"),
    "alloc-cost-negative": (_replace('name = "fast"', 'name = "fast"\nalloc_cost_ns = -1'),
                            "alloc_cost_ns"),
    "alloc-cost-text": (_replace('name = "fast"', 'name = "fast"\nalloc_cost_ns = "2us"'),
                        "alloc_cost_ns"),
    "alloc-cost-huge": (_replace('name = "fast"', 'name = "fast"\nalloc_cost_ns = 5e9'),
                        "alloc_cost_ns"),
    "span-text": (_replace('name = "fast"', 'name = "fast"\naccess_min_span = "big"'),
                  "access_min_span"),
    "span-negative": (_replace('name = "fast"', 'name = "fast"\naccess_min_span = -1'),
                      "access_min_span"),
    "span-bool": (_replace('name = "fast"', 'name = "fast"\naccess_min_span = true'),
                  "access_min_span"),
    "span-huge": (_replace('name = "fast"', 'name = "fast"\naccess_min_span = "2T"'),
                  "access_min_span"),
    "kind-cost-negative": (_replace('name = "slow"', 'name = "slow"\nstreaming_cost = -5.3'),
                           "streaming_cost"),
    "kind-cost-text": (_replace('name = "slow"', 'name = "slow"\nscattered_cost = "1x"'),
                       "scattered_cost"),
    "kind-cost-zero": (_replace('name = "slow"', 'name = "slow"\nsync_cost = 0'), "sync_cost"),
    "bound-on-fast": (_replace('name = "fast"', 'name = "fast"\nbandwidth_bound_gbs = 1.3'),
                      "fallback"),
    "bound-zero": (_replace('name = "slow"', 'name = "slow"\nbandwidth_bound_gbs = 0'),
                   "bandwidth_bound_gbs"),
    "bound-bytes": (_replace('name = "slow"', 'name = "slow"\nbandwidth_bound_gbs = 2e9'),
                    "bandwidth_bound_gbs"),
    "bound-text": (_replace('name = "slow"', 'name = "slow"\nbandwidth_bound_gbs = "2G"'),
                   "bandwidth_bound_gbs"),
    "kind-cost-unknown": (_replace('name = "slow"', 'name = "slow"\nlatency_cost = 1.0'),
                          "latency_cost"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_machine_files(tmp_path: Path, case: str) -> None:
    text, word = BROKEN[case]
    p = write(tmp_path, text, f"{case}.toml")
    with pytest.raises(TierFileError) as e:
        load_machine(p)
    msg = str(e.value)
    assert str(p) in msg and word in msg
    assert "\n" not in msg


def test_syntax_error_names_the_line(tmp_path: Path) -> None:
    p = write(tmp_path, GOOD.format(cap="1G").replace("load_cost = 2.0", "load_cost = = 2"))
    with pytest.raises(TierFileError) as e:
        load_machine(p)
    assert "line 12" in str(e.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(TierFileError) as e:
        load_machine(tmp_path / "nope.toml")
    assert "nope.toml" in str(e.value)


def test_mem_resizes_the_fastest_tier() -> None:
    m = load_machine(MACHINES / "xeon-max-9468-flat-quadrant.toml")
    r = with_fast_capacity(m, 3 * GIB)
    assert (r.tiers[0].capacity, r.tiers[0].per_node, r.tiers[0].backend) == \
        (3 * GIB, False, "numa:2-3")
    assert r.tiers[1:] == m.tiers[1:]
    assert m.tiers[0].capacity == 128 * GIB                 # the original is unchanged


def test_per_node_capacity_is_split_over_processes() -> None:
    m = load_machine(MACHINES / "vm-hugetlb.toml")
    node = m.tiers[0].capacity
    assert node is not None
    tiers, notes = per_process(m, 4)
    assert tiers[0].capacity == node // 4 and not tiers[0].per_node
    assert tiers[1].capacity is None and len(notes) == 1
    tiers, notes = per_process(m, None)
    assert tiers[0].capacity == node and len(notes) == 1
    # a job on several nodes: a node's capacity is shared by that node's ranks only
    tiers, notes = per_process(m, 8, node_procs=3, nnodes=3)
    assert tiers[0].capacity == node // 3 and len(notes) == 1 and "3 nodes" in notes[0]
    tiers, notes = per_process(m, None, node_procs=2)
    assert tiers[0].capacity == node // 2 and len(notes) == 1
    snc4 = load_machine(MACHINES / "xeon-max-9468-flat-snc4.toml")
    tiers, notes = per_process(snc4, 8)              # one rank per SNC4 quadrant: one stack
    assert tiers[0].capacity == 16 * GIB and len(notes) == 1
    one = with_fast_capacity(snc4, 16 * GIB)         # per-process tiers are left alone
    tiers, notes = per_process(one, 8)
    assert tiers[0].capacity == 16 * GIB and notes == []
