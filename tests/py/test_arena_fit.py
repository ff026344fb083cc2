"""hmtune/advisor/arena_fit.py: a tier's footprint with the arena's chunk tails, and the repair
that keeps every strategy's placement within the capacity."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hmtune.advisor import strategies
from hmtune.advisor.arena_fit import blocks_footprint, charged_at_once, fit, footprint
from hmtune.advisor.model import Placement, Problem
from hmtune.core.units import KIB, MIB
from hmtune.machine.tiers import Tier

CHUNK = 2 * MIB
COLS = ["site_id", "rank", "thread", "size", "t_alloc", "t_free", "scale"]


def frame(rows: list[tuple[int, ...]]) -> pd.DataFrame:
    return pd.DataFrame([r if len(r) == 7 else (*r, 1) for r in rows], columns=COLS)


def test_chunks_per_class_and_thread_and_rank() -> None:
    """400 objects of 24 KiB (85 to a chunk) take 5 chunks; a 96-byte object a chunk
    of its own class; the same class on another thread its own chunk; a second rank
    is counted apart (the largest)."""
    rows = [(1, 0, 1, 24 * KIB, i, -1) for i in range(400)]
    assert blocks_footprint(frame(rows), "hugetlb") == 5 * CHUNK
    rows.append((2, 0, 1, 96, 500, -1))
    assert blocks_footprint(frame(rows), "hugetlb") == 6 * CHUNK
    rows.append((1, 0, 2, 24 * KIB, 501, -1))
    assert blocks_footprint(frame(rows), "hugetlb") == 7 * CHUNK
    rows.append((1, 1, 1, 24 * KIB, 0, -1))
    assert blocks_footprint(frame(rows), "hugetlb") == 7 * CHUNK


def test_chunks_are_never_given_back_but_blocks_are() -> None:
    """Objects freed before another class is used leave their slab cut (here: in chunks
    of different slab sizes); a block of its own (3 MiB: 4 MiB of hugepages) freed
    before the next one is not counted twice; scale counts a sampled row as that many
    objects."""
    rows = [(1, 0, 1, 64, 0, 10), (2, 0, 1, 300000, 20, -1)]
    assert blocks_footprint(frame(rows), "hugetlb") == 2 * CHUNK
    big = [(3, 0, 1, 3 * MIB, 0, 10), (3, 0, 1, 3 * MIB, 10, 20)]
    assert blocks_footprint(frame(big), "hugetlb") == 4 * MIB
    assert blocks_footprint(frame(big), "numa:0") == 3 * MIB
    # slabs of one size share a chunk: 64 B and 4 KiB objects, one chunk
    rows = [(1, 0, 1, 64, 0, 10), (2, 0, 1, 4096, 20, -1)]
    assert blocks_footprint(frame(rows), "hugetlb") == CHUNK
    # 1 MiB class: 2 to a chunk; one row standing for 5 objects takes 3 chunks
    assert blocks_footprint(frame([(4, 0, 1, MIB, 0, -1, 5)]), "hugetlb") == 3 * CHUNK
    # on 4 KiB pages a chunk's untouched end takes nothing: only the pages reached
    rows = [(1, 0, 1, 24 * KIB, i, -1) for i in range(400)] + [(2, 0, 1, 96, 500, -1)]
    assert blocks_footprint(frame(rows), "numa:0") == 400 * 24 * KIB + 4 * KIB
    assert blocks_footprint(frame(rows), "memkind:MEMKIND_HBW") == 400 * 24 * KIB + 4 * KIB
    assert blocks_footprint(frame(rows), "thp") == 6 * CHUNK
    # above numa's 256 KiB arena limit a 300 KiB object is a mapping of its own
    assert blocks_footprint(frame([(4, 0, 1, 300 * KIB, 0, -1)]), "numa:0") == 300 * KIB


def _small_objects(cap: int) -> Problem:
    """The layout of tests/programs/small_objects: rows (hot), mids (warm) and the
    pointer array of the mids (96 bytes, sampled once)."""
    rows = [(3, 0, 1, 24 * KIB, i, -1) for i in range(400)]
    rows += [(4, 0, 1, 96, 400, -1)]
    rows += [(5, 0, 1, 600 * KIB, 401 + i, -1) for i in range(12)]
    blocks = frame(rows)
    tiers = [Tier("huge", cap, "hugetlb", 0.5, 0.5), Tier("slow", None, "default")]
    return Problem(np.array([3, 4, 5]), np.array([400 * 24 * KIB, 96, 12 * 600 * KIB]),
                   np.array([87.0, 1.0, 42.0]), np.array([87, 1, 42]), np.zeros(3, np.int64),
                   tiers, total_weight=130.0, blocks=blocks)


@pytest.mark.parametrize("strategy", strategies.STRATEGIES)
def test_a_tiny_site_does_not_push_the_rest_out(strategy: str) -> None:
    """Rows + mids fill 9 chunks of an 18 MiB tier exactly; the 96-byte site is charged
    4 KiB but needs a 10th chunk: every strategy leaves it out and keeps the rest, and
    the placement's footprint is within the capacity."""
    p = _small_objects(18 * MIB)
    if strategy == "ilp-lifetime":
        p.allocs = p.blocks
    got = strategies.solve(p, strategy, threshold_pct=0.0)
    assert got.tier_of.tolist() == [0, 1, 0]
    assert footprint(p, 0, got.tier_of == 0) == 9 * CHUNK
    assert np.isclose(got.value, p.values()[np.arange(3), got.tier_of].sum())


def test_the_repair_takes_from_the_moment_the_tier_overflows() -> None:
    """Two big blocks and a 64-byte object (its slab: a whole chunk, kept) overflow a
    6 MiB tier early in the run; forty 2 MiB sites later in the run, worth little
    each, overflow nothing. The repair sends back one of the sites live at the
    overflow and keeps the forty: dropping any of them frees nothing (HPCC lost 154
    such sites, 37 % of the placement's value, when the repair took the least
    valuable sites wherever they were live)."""
    rows = [(0, 0, 1, 4 * MIB, 0, 10), (1, 0, 1, 2 * MIB, 0, 10), (2, 0, 1, 64, 5, 6)]
    rows += [(3 + k, 0, 1, 2 * MIB, 20 + 10 * k, 30 + 10 * k) for k in range(40)]
    blocks = frame(rows)
    n = 43
    sizes = np.array([4 * MIB, 2 * MIB, 64] + [2 * MIB] * 40)
    weights = np.array([400.0, 150.0, 50.0] + [1.0] * 40)
    tiers = [Tier("huge", 6 * MIB, "hugetlb", 0.5, 0.5), Tier("slow", None, "default")]
    p = Problem(np.arange(n), sizes, weights, np.ones(n, np.int64), np.zeros(n, np.int64),
                tiers, total_weight=float(weights.sum()), blocks=blocks)
    assert footprint(p, 0, np.ones(n, bool)) == 8 * MIB
    values = p.values()
    placed = Placement(np.zeros(n, np.int64), "test", float(values[:, 0].sum()),
                       float(values[:, 0].sum()))
    got = fit(p, placed, np.ones(n, np.int64), values)
    assert footprint(p, 0, got.tier_of == 0) <= 6 * MIB
    assert (got.tier_of[3:] == 0).all()                 # the later sites all stay
    assert (got.tier_of[:3] == 1).sum() == 1            # one site of the overflow leaves
    assert got.tier_of[0] == 0                          # not the most valuable one
    assert np.isclose(got.value, values[np.arange(n), got.tier_of].sum())


def test_what_libhmalloc_counts_is_the_objects_charges() -> None:
    """HPCC at 16 MiB (bench-apps 2026-11-28): the plan's 16 MiB at once was a 12 MiB
    block and two arena chunks holding a few KiB each, and libhmalloc's high-water mark
    (charges) read 12.0 MiB. charged_at_once gives that figure: a 3 MiB block charged
    4 MiB of hugepages, a 10 KiB object its size class, the chunk not at all; blocks
    freed before another is placed are not counted twice; a second rank apart."""
    rows = [(0, 0, 1, 3 * MIB, 0, 10), (1, 0, 1, 10 * KIB, 5, -1),
            (0, 0, 1, 3 * MIB, 10, 20), (0, 1, 1, 3 * MIB, 0, -1)]
    tiers = [Tier("huge", 8 * MIB, "hugetlb", 0.5, 0.5), Tier("slow", None, "default")]
    p = Problem(np.arange(3), np.array([3 * MIB, 10 * KIB, 64]), np.array([3.0, 1.0, 1.0]),
                np.ones(3, np.int64), np.zeros(3, np.int64), tiers, total_weight=5.0,
                blocks=frame(rows))
    both = np.array([True, True, False])
    cls = 10 * KIB                       # a size class of its own (8 KiB + 8 x 256)
    assert footprint(p, 0, both) == 4 * MIB + CHUNK
    assert charged_at_once(p, 0, both) == 4 * MIB + cls
    # a placed site without blocks adds its charge (a static, say)
    assert charged_at_once(p, 0, np.ones(3, bool)) == 4 * MIB + cls + p.rounded_sizes(0)[2]
    assert p.rounded_sizes(0)[2] > 0
    assert charged_at_once(p, 0, np.array([False, False, True])) is None


def test_room_freed_is_filled_again() -> None:
    """At 17 MiB the mids cannot all stay with the rows (9 chunks): the repair moves
    the least worth per byte freed out, then fills the room again; the hottest, densest
    site stays and the tier holds at most its capacity."""
    p = _small_objects(17 * MIB)
    got = strategies.solve(p, "ilp")
    assert footprint(p, 0, got.tier_of == 0) <= 17 * MIB
    assert got.tier_of[0] == 0


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("backend", ["hugetlb", "numa:0", "memkind:MEMKIND_HBW"])
def test_every_strategy_stays_within_the_capacity(seed: int, backend: str) -> None:
    """Random sites of small and large objects on several threads and ranks: whatever
    the strategy, the placed sites' footprint (chunk tails included) fits each tier."""
    rng = np.random.default_rng(seed)
    n = 14
    rows = []
    for sid in range(n):
        size = int(rng.choice([48, 700, 8 * KIB, 40 * KIB, 200 * KIB, 900 * KIB, 3 * MIB]))
        for _ in range(int(rng.integers(1, 30))):
            a = int(rng.integers(0, 100))
            f = -1 if rng.random() < 0.5 else a + int(rng.integers(1, 50))
            rows.append((sid, int(rng.integers(0, 2)), int(rng.integers(1, 4)), size, a, f,
                         int(rng.choice([1, 1, 1, 32]))))
    blocks = frame(rows)
    sizes = blocks.groupby("site_id")["size"].sum().reindex(range(n), fill_value=1)
    weights = np.round(rng.pareto(1.2, n) * 20 + 1, 1)
    total = int(sizes.sum())
    caps = [max(CHUNK, int(total * f)) for f in rng.uniform(0.1, 0.5, 2)]
    tiers = [Tier("t0", caps[0], backend, 0.4, 0.4), Tier("t1", caps[1], backend, 0.7, 0.7),
             Tier("slow", None, "default")]
    for strategy in strategies.STRATEGIES:
        p = Problem(np.arange(n), sizes.to_numpy(np.int64), weights,
                    rng.integers(1, 9, n), np.zeros(n, np.int64), tiers,
                    total_weight=float(weights.sum()), blocks=blocks,
                    allocs=blocks if strategy == "ilp-lifetime" else None)
        got = strategies.solve(p, strategy, threshold_pct=0.0)
        for t in (0, 1):
            assert footprint(p, t, got.tier_of == t) <= caps[t], (strategy, t)
        assert np.isclose(got.value, p.values()[np.arange(n), got.tier_of].sum())


def test_without_allocs_a_class_is_rounded_to_whole_chunks() -> None:
    """From sites.csv alone: a site of 100 objects of 24 KiB (mean size) is charged
    2400 KiB and takes 10 slabs of 256 KiB in 2 chunks; a site of one 3 MiB object its
    4 MiB mapping."""
    tiers = [Tier("huge", 64 * MIB, "hugetlb", 0.5, 0.5), Tier("slow", None, "default")]
    p = Problem(np.array([1, 2]), np.array([100 * 24 * KIB, 3 * MIB]), np.ones(2),
                np.ones(2, np.int64), np.zeros(2, np.int64), tiers,
                max_sizes=np.array([24 * KIB, 3 * MIB]), n_allocs=np.array([100, 1]),
                total_bytes=np.array([100 * 24 * KIB, 3 * MIB]))
    assert footprint(p, 0, np.array([True, False])) == 2 * CHUNK
    assert footprint(p, 0, np.array([False, True])) == 4 * MIB
    assert footprint(p, 0, np.array([True, True])) == 2 * CHUNK + 4 * MIB


def test_lifetime_charges_small_blocks_their_class_not_a_page() -> None:
    """20000 objects of 1000 bytes (class 1008: 19.2 MiB) fit a 24 MiB numa tier;
    ilp-lifetime places them (charged a 4 KiB unit each they would need 78 MiB)."""
    rows = [(1, 0, 1, 1000, i, -1) for i in range(20000)]
    blocks = frame(rows)
    tiers = [Tier("fast", 24 * MIB, "numa:0", 0.5, 0.5), Tier("slow", None, "default")]
    p = Problem(np.array([1]), np.array([20000 * 1000]), np.array([10.0]),
                np.array([10]), np.zeros(1, np.int64), tiers, total_weight=10.0,
                blocks=blocks, allocs=blocks)
    got = strategies.solve(p, "ilp-lifetime")
    assert got.tier_of.tolist() == [0]
    # 65 to a 64 KiB slab, each slab the 4 KiB pages its objects reach
    assert footprint(p, 0, got.tier_of == 0) == 307 * 64 * KIB + 12 * 4 * KIB


def test_weight_in_objects_larger_than_the_tier_is_named() -> None:
    """A hot site of one 36 MiB object cannot go into a 14 MiB hugetlb tier: advise
    names its share of the weight, the tier and the object's charge; a site that fits
    and a tier large enough give nothing."""
    from hmtune.advisor.notes import too_large

    tiers = [Tier("huge", 14 * MIB, "hugetlb", 0.5, 0.5), Tier("slow", None, "default")]
    p = Problem(np.array([1, 2, 3]), np.array([35 * MIB, 4 * MIB, 40 * MIB]),
                np.array([50e6, 30e6, 0.0]), np.array([50, 30, 0]), np.zeros(3, np.int64),
                tiers, total_weight=100e6, max_sizes=np.array([35 * MIB, MIB, 40 * MIB]),
                n_allocs=np.ones(3, np.int64), total_bytes=np.array([35 * MIB, 4 * MIB, 40 * MIB]))
    got = strategies.solve(p, "ilp")
    assert got.tier_of.tolist() == [1, 0, 1]
    assert too_large(p, got.tier_of) == [("huge", 0.5, 1, 14 * MIB, 36 * MIB)]
    p.tiers = [Tier("huge", 64 * MIB, "hugetlb", 0.5, 0.5), Tier("slow", None, "default")]
    assert too_large(p, strategies.solve(p, "ilp").tier_of) == []


# tests/c/test_arena.c's workload: objects of each size per round over all threads;
# the arena mapped 4 chunks for it at 1, 4 and 16 threads, however the objects were
# freed (their own thread, another, or one thread freeing all)
ARENA_WORKLOAD = ((48, 4096), (200, 1024), (640, 512), (2000, 512), (6000, 256),
                  (20000, 128))


def _workload(threads: int, rounds: int = 4) -> pd.DataFrame:
    """The workload's blocks: each round every thread allocates its share, then all
    are freed."""
    rows = []
    for r in range(rounds):
        for t in range(threads):
            for k, (size, n) in enumerate(ARENA_WORKLOAD):
                rows += [(1 + k, 0, 2 + t, size, 1000 * r + t, 1000 * r + 500)] * (n // threads)
    return frame(rows)


@pytest.mark.parametrize("threads", [1, 4, 16])
def test_the_advisor_and_the_reservation_count_the_arenas_chunks(threads: int) -> None:
    """The advisor's footprint and --reserve-hugepages' chunks agree with each other and
    with what the arena mapped (tests/c/test_arena.c) at 1, 4 and 16 threads: the slabs
    are counted per class over every thread (plus what each stripe but one may hold
    back), not per (thread, class), which took 5 chunks at 16 threads and more each
    round when another thread freed the objects."""
    from hmtune.workflows.reserve import Block, SiteSizes, arena_pages

    blocks = _workload(threads)
    assert blocks_footprint(blocks, "hugetlb") == 4 * CHUNK
    sizes = [SiteSizes(0, 0, 0, [Block(0, int(b.thread), int(b.size), int(b.t_alloc),
                                       int(b.t_free)) for b in g.itertuples()])
             for _, g in blocks.groupby("site_id")]
    assert arena_pages(sizes) == {0: 4}


def test_a_few_objects_of_many_classes_on_many_threads() -> None:
    """Sixteen threads each allocating one object of each of ten small classes: one
    64 KiB slab per class in one chunk, where a slab per (thread, class) took 160 slabs
    (five chunks); granularity.cut counts what the stripes may hold back."""
    from hmtune.advisor import granularity

    rows = [(1, 0, 1 + t, 16 * (1 + c), 100 * t + c, -1) for t in range(16) for c in range(10)]
    assert blocks_footprint(frame(rows), "hugetlb") == CHUNK
    assert granularity.cut(16, 16, 16) == 16 + 15 * (3 * 64 - 1)
    assert granularity.cut(16, 16, 1) == 16 and granularity.cut(0, 16, 16) == 0
    assert granularity.cut(100, 20480, 16) == 100           # one shard above 8 KiB
    assert granularity.stripes(40) == 16 and granularity.batch(3000) == 1


def test_the_advisor_reads_the_threads(tmp_path: Path) -> None:
    """allocs.csv's thread column reaches the advisor's blocks (it counted every rank as
    one thread before: 16 threads' slabs were missing from its footprint)."""
    from hmtune.advisor.inputs import load_allocs
    from hmtune.analyze.sites_io import ALLOCS_COLUMNS, version_line

    lines = [version_line("allocs", 1, trace="trace.prv"), ",".join(ALLOCS_COLUMNS)]
    lines += [f"1,0,{2 + i % 16},0x{i:x},64,{i},-1" for i in range(32)]
    (tmp_path / "allocs.csv").write_text("\n".join(lines) + "\n")
    got = load_allocs(tmp_path / "allocs.csv", {1}, full=True)
    assert sorted(set(got["thread"])) == list(range(2, 18))
    assert "thread" not in load_allocs(tmp_path / "allocs.csv", {1}, full=False).columns
