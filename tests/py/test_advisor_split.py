"""hmtune/advisor/split.py: sites cut into ranges by their profile, solved and gathered back."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hmtune.advisor import split, strategies
from hmtune.advisor.inputs import Sites
from hmtune.advisor.model import Problem
from hmtune.core.placement import SiteLine
from hmtune.core.units import MIB
from hmtune.machine.tiers import Tier

HOT = (8 * MIB, 16 * MIB)       # the hot window of the big object


def test_segments_merge_equal_runs_first_and_keep_a_window_edge() -> None:
    w = np.zeros(32)
    w[4:8] = 10.0
    assert split.segments(w) == [(0, 4), (4, 8), (8, 32)]
    noisy = np.r_[np.full(10, 1.0), np.full(6, 50.0) + np.arange(6), np.full(16, 1.0)]
    segs = split.segments(noisy, 3)
    assert segs == [(0, 10), (10, 16), (16, 32)]


def test_segments_never_exceed_the_limit_and_tile_the_object() -> None:
    rng = np.random.default_rng(1)
    for n in (1, 2, 65, 500):
        w = rng.random(n)
        segs = split.segments(w, 64)
        assert len(segs) <= 64
        assert segs[0][0] == 0 and segs[-1][1] == n
        assert all(a < b for a, b in segs)
        assert all(segs[k][1] == segs[k + 1][0] for k in range(len(segs) - 1))


def _case(cap: int, backend: str = "hugetlb") -> tuple[Problem, Sites, pd.DataFrame]:
    """A 64 MiB object whose weight is in HOT (60 % of the weight) beside four warm
    4 MiB objects (10 % each), one block each, live all run."""
    ids = np.array([3, 4, 5, 6, 7], np.int64)
    sizes = np.array([64 * MIB] + [4 * MIB] * 4, np.int64)
    weights = np.array([600.0, 100.0, 100.0, 100.0, 100.0])
    blocks = pd.DataFrame({"site_id": ids, "rank": 0, "size": sizes, "t_alloc": 0,
                           "t_free": 100, "scale": 1})
    tiers = [Tier("fast", cap, backend, 0.5, 0.5, page_size=2 * MIB),
             Tier("slow", None, "default", 1.0, 1.0)]
    problem = Problem(ids, sizes, weights, np.ones(5, np.int64), np.zeros(5, np.int64),
                      tiers, total_weight=1000.0, allocs=blocks,
                      samples=np.array([60, 10, 10, 10, 10]), max_sizes=sizes.copy(),
                      n_allocs=np.ones(5, np.int64), total_bytes=sizes.copy(),
                      blocks=blocks, statics=np.zeros(5, bool), ns_weight=0.0)
    table = pd.DataFrame({"site_id": ids, "label": [f"app.c:{i}" for i in ids],
                          "callstack_raw": [f"/app+0x{i:x}" for i in ids],
                          "kind": "heap", "peak_live_bytes": sizes, "max_size": sizes,
                          "weight": weights})
    sites = Sites(Path("sites.csv"), {}, table, table.iloc[0:0], 1000.0)
    offs = np.arange(HOT[0], HOT[1], 4096 * 64)
    prof = pd.DataFrame({"site_id": 3, "offset": offs,
                         "weight": 600.0 / offs.size, "samples": 1})
    return problem, sites, prof


def test_expand_keeps_weights_and_cuts_the_blocks() -> None:
    problem, sites, prof = _case(16 * MIB)
    ex = split.expand(problem, sites, prof, 4096)
    ep = ex.problem
    assert ex.split_sites == 1
    assert ep.weights.sum() == pytest.approx(problem.weights.sum())
    pieces = ex.sites.table[ex.sites.table["range_start"] >= 0]
    assert list(zip(pieces["range_start"], pieces["range_end"], strict=True)) == [
        (0, HOT[0]), HOT, (HOT[1], 64 * MIB)]
    hot = ep.site_ids[ep.weights == 600.0]
    assert hot.size == 1
    blk = ep.blocks[ep.blocks["site_id"] == hot[0]]
    assert blk["size"].tolist() == [HOT[1] - HOT[0]]
    assert len(set(ep.site_ids.tolist())) == ep.n
    assert (ex.sites.table["site_id"].to_numpy() == ep.site_ids).all()


@pytest.mark.parametrize("strategy", ["ilp", "ilp-lifetime", "density"])
def test_a_hot_window_is_placed_with_the_warm_objects(strategy: str) -> None:
    """16 MiB: the whole object never fits; its 8 MiB window and two warm objects do."""
    problem, sites, prof = _case(16 * MIB)
    whole = strategies.solve(problem, strategy)
    assert whole.tier_of[0] == 1
    ex = split.expand(problem, sites, prof, 4096)
    got = strategies.solve(ex.problem, strategy)
    assert got.value > 1.5 * whole.value
    placed = split.placed_sites(ex.sites.table, got.tier_of, 1)
    big = [s for s in placed if s.parent_id == 3]
    assert len(big) == 1 and big[0].ranges == (HOT,)
    assert big[0].placed_bytes == 8 * MIB and big[0].object_bytes == 64 * MIB
    assert sorted(s.parent_id for s in placed) == [3, 4, 5]


def test_every_piece_placed_is_the_whole_object() -> None:
    problem, sites, prof = _case(128 * MIB)
    ex = split.expand(problem, sites, prof, 4096)
    got = strategies.solve(ex.problem, "ilp")
    placed = split.placed_sites(ex.sites.table, got.tier_of, 1)
    assert [s.ranges for s in placed if s.parent_id == 3] == [(HOT,)]
    done = split.complete(ex.problem, ex.sites.table, got)
    placed = split.placed_sites(ex.sites.table, done.tier_of, 1)
    assert [s.ranges for s in placed] == [()] * 5
    # at 24 MiB the window and the warm objects fill the tier: nothing more of the big one
    problem, sites, prof = _case(24 * MIB)
    ex = split.expand(problem, sites, prof, 4096)
    got = split.complete(ex.problem, ex.sites.table, strategies.solve(ex.problem, "ilp"))
    big = [s for s in split.placed_sites(ex.sites.table, got.tier_of, 1) if s.parent_id == 3]
    assert big[0].ranges == (HOT,)


def test_no_split_with_two_limited_tiers_or_without_profile() -> None:
    problem, sites, prof = _case(16 * MIB)
    assert split.expand(problem, sites, prof.iloc[0:0], 4096).split_sites == 0
    two = Problem(**{**problem.__dict__, "tiers": [
        Tier("a", 8 * MIB, "hugetlb"), Tier("b", 8 * MIB, "numa:0"),
        Tier("slow", None, "default", 2.0, 2.0)], "_charged": {}})
    ex = split.expand(two, sites, prof, 4096)
    assert ex.split_sites == 0 and ex.notes


def test_the_placement_line_carries_the_ranges(tmp_path: Path) -> None:
    from hmtune.core.placement import PlacementFile, TierLine, read_placement, write_placement

    pf = PlacementFile([TierLine("fast", "hugetlb", 16 * MIB),
                        TierLine("slow", "default", None)], 1, (0, 64 * MIB),
                       [SiteLine("fast", "/app+0x3", "app.c:3", (HOT,))])
    write_placement(tmp_path / "p.txt", pf)
    back = read_placement(tmp_path / "p.txt")
    assert back.sites[0].ranges == (HOT,)


def test_explore_counts_a_split_site_by_its_ranges(tmp_path: Path) -> None:
    """An advisor placement with ranges is no explored placement (no mask) and counts
    only the bytes of its ranges."""
    from hmtune.core.placement import PlacementFile, TierLine, write_placement
    from hmtune.workflows.explore import advisor_bytes
    from hmtune.workflows.sitegroups import Group

    groups = [Group("site 3", ["/app+0x3"], [3], [64 * MIB], 64 * MIB, 64 * MIB),
              Group("site 4", ["/app+0x4"], [4], [4 * MIB], 4 * MIB, 4 * MIB)]
    tiers = [TierLine("fast", "hugetlb", 16 * MIB), TierLine("slow", "default", None)]
    whole = PlacementFile(tiers, 1, (0, 64 * MIB), [SiteLine("fast", "/app+0x4")])
    write_placement(tmp_path / "w.txt", whole)
    assert advisor_bytes(tmp_path / "w.txt", groups) == (4 * MIB, 0b10)
    split = PlacementFile(tiers, 1, (0, 64 * MIB), [SiteLine("fast", "/app+0x3", "", (HOT,)),
                                                   SiteLine("fast", "/app+0x4")])
    write_placement(tmp_path / "s.txt", split)
    assert advisor_bytes(tmp_path / "s.txt", groups) == (12 * MIB, None)


def test_a_flat_object_is_placed_from_its_start_in_one_range() -> None:
    """Evenly sampled (analyze's flatness test says flat): equal contiguous pieces, and
    the part that fits is one range from the start, not ranges picked by noise."""
    problem, sites, _ = _case(24 * MIB)        # the warm objects and 8 MiB more
    rng = np.random.default_rng(3)
    offs = np.arange(0, 64 * MIB, 2 * MIB)
    flat = pd.DataFrame({"site_id": 3, "offset": offs,
                         "weight": 600.0 / offs.size * rng.uniform(0.9, 1.1, offs.size),
                         "samples": 10})
    ex = split.expand(problem, sites, flat, 4096)
    pieces = ex.sites.table[ex.sites.table["parent_id"] == 3]
    assert len(pieces) == 32 and ex.problem.weights[-32:].sum() == pytest.approx(600.0)
    got = strategies.solve(ex.problem, "ilp")
    big = [s for s in split.placed_sites(ex.sites.table, got.tier_of, 1) if s.parent_id == 3]
    assert big and big[0].ranges == ((0, 8 * MIB),)
    # whatever pieces a solver takes (its gap hides the tie-break), flat_first moves them
    # to the object's start: the last four pieces become the first four
    rows = np.flatnonzero(ex.sites.table["parent_id"].to_numpy() == 3)
    tail = got.tier_of.copy()
    tail[rows] = 1
    tail[rows[np.argsort(ex.sites.table["range_start"].to_numpy()[rows])][-4:]] = 0
    moved = split.flat_first(ex.problem, ex.sites.table, replace(got, tier_of=tail))
    big = [s for s in split.placed_sites(ex.sites.table, moved.tier_of, 1) if s.parent_id == 3]
    assert big and big[0].ranges == ((0, 8 * MIB),)
    assert (np.bincount(moved.tier_of[rows]) == np.bincount(tail[rows])).all()
    # equal pieces: the same value but for the tie-break's millionths, towards the start
    v = ex.problem.values()
    n = np.arange(ex.problem.n)
    before, after = float(v[n, tail].sum()), float(v[n, moved.tier_of].sum())
    assert before < after < before * (1 + 1e-4)


def test_a_flat_object_is_cut_in_equal_pieces() -> None:
    """88 buckets in at most 64 pieces: 2 buckets each, none of 1 between them (pieces of
    two sizes interleaved are not interchangeable, and the solver picked the larger
    ones, leaving gaps)."""
    u, v, fw = split._flat_pieces(88, 176 * MIB, 2 * MIB, 64)
    assert (v - u).tolist() == [2] * 44 and u[0] == 0 and v[-1] == 88
    u, v, _ = split._flat_pieces(89, 177 * MIB, 2 * MIB, 64)
    assert (v - u)[:-1].tolist() == [2] * 44 and (v - u)[-1] == 1
    assert (np.diff(fw[:44]) < 0).all()               # earlier pieces weigh a little more


def test_compare_predicts_a_split_site_by_the_weight_in_its_ranges() -> None:
    """calibrate.split_shares: the profile's weight inside the ranges over the site's."""
    from hmtune.workflows.calibrate import split_shares

    problem, _, prof = _case(16 * MIB)
    chains = [f"/app+0x{i:x}" for i in problem.site_ids]
    half = {chains[0]: ((HOT[0], HOT[0] + 4 * MIB),)}
    share = split_shares(problem, chains, half, prof)
    assert share[0] == pytest.approx(0.5) and (share[1:] == 1.0).all()
    assert split_shares(problem, chains, half, None)[0] == 0.0


def _many_allocs_case(cap: int) -> tuple[Problem, Sites, pd.DataFrame]:
    """_case with the big object allocated 20000 times and its weight spread flat over
    it: every range of it pays a mapping per allocation, so its pieces together are
    worth less than the whole object."""
    problem, sites, _ = _case(cap)
    n_allocs = np.array([20000, 1, 1, 1, 1], np.int64)
    problem = Problem(**{**problem.__dict__, "n_allocs": n_allocs, "ns_weight": 1e-7,
                         "_charged": {}})
    offs = np.arange(0, 64 * MIB, 4096 * 64)
    w = np.where((offs >= HOT[0]) & (offs < HOT[1]), 3.0, 1.0)
    prof = pd.DataFrame({"site_id": 3, "offset": offs, "weight": 600.0 * w / w.sum(),
                         "samples": 50})
    return problem, sites, prof


def _best(problem: Problem, cap_bytes: int) -> float:
    from hmtune.advisor.solve import knapsack
    v = problem.values()[:, 0] - problem.values()[:, -1]
    page = problem.unit(problem.tiers[0])
    return knapsack.solve_knapsack(v, problem.units(0), cap_bytes // page, gap=1e-9).value


def test_the_split_curve_is_never_below_the_whole_object_curve() -> None:
    problem, sites, prof = _many_allocs_case(256 * MIB)
    ex = split.expand(problem, sites, prof, 4096)
    assert ex.split_sites == 1
    whole_curve = strategies.capacity_curve(problem)
    alone = strategies.capacity_curve(ex.problem)
    merged = strategies.capacity_curve(ex.problem, whole=problem)
    # the pieces alone lose where the whole object fits (their mappings cost more)
    everything = int(whole_curve["capacity_bytes"].max())
    assert _best(ex.problem, everything) < _best(problem, everything)
    for c in sorted(set(whole_curve["capacity_bytes"]) | set(alone["capacity_bytes"])):
        got = merged[merged["capacity_bytes"] == c]["value"]
        assert len(got) == 1
        assert float(got.iloc[0]) >= max(_best(problem, c), _best(ex.problem, c)) * (1 - 1e-4)
    assert bool(merged["whole"].any()) and not bool(merged["whole"].all())
    assert strategies.capacity_for_share(merged) <= strategies.capacity_for_share(whole_curve)


def _scattered_case(cap: int, backend: str) -> tuple[Problem, Sites, pd.DataFrame]:
    """Two objects of scattered accesses, each sampled evenly: A of 64 MiB (weight 640)
    and B of 24 MiB (weight 200): per byte A is the hotter."""
    ids = np.array([3, 4], np.int64)
    sizes = np.array([64 * MIB, 24 * MIB], np.int64)
    weights = np.array([640.0, 200.0])
    blocks = pd.DataFrame({"site_id": ids, "rank": 0, "size": sizes, "t_alloc": 0,
                           "t_free": 100, "scale": 1})
    tiers = [Tier("fast", cap, backend, 0.7, 0.7, page_size=2 * MIB,
                  kind_costs=(("streaming", 0.95), ("scattered", 0.65), ("sync", 1.0))),
             Tier("slow", None, "default", 1.0, 1.0,
                  kind_costs=(("streaming", 1.0), ("scattered", 1.0), ("sync", 1.0)))]
    kinds = np.array([[0.0, 1.0, 0.0], [0.0, 1.0, 0.0]])
    problem = Problem(ids, sizes, weights, np.ones(2, np.int64), np.zeros(2, np.int64),
                      tiers, total_weight=840.0, allocs=blocks, samples=np.array([640, 200]),
                      max_sizes=sizes.copy(), n_allocs=np.ones(2, np.int64),
                      total_bytes=sizes.copy(), blocks=blocks, statics=np.zeros(2, bool),
                      ns_weight=0.0, kind_shares=kinds)
    table = pd.DataFrame({"site_id": ids, "label": ["a.c:3", "b.c:4"],
                          "callstack_raw": ["/app+0x3", "/app+0x4"], "kind": "heap",
                          "peak_live_bytes": sizes, "max_size": sizes, "weight": weights})
    sites = Sites(Path("sites.csv"), {}, table, table.iloc[0:0], 840.0)
    rows = []
    for sid, size, w in ((3, 64 * MIB, 640.0), (4, 24 * MIB, 200.0)):
        offs = np.arange(0, size, 4096 * 64)
        rows.append(pd.DataFrame({"site_id": sid, "offset": offs, "weight": w / offs.size,
                                  "samples": 10}))
    return problem, sites, pd.concat(rows)


def test_a_part_of_a_scattered_object_in_bigger_pages_is_worth_less_than_its_share() -> None:
    """32 MiB of 2 MiB pages: half of A would hold 320 of the weight, B 200, but half of an
    object of scattered accesses in bigger pages gains less than its share (the 4 KiB
    pages left keep missing the TLB; the tier holds half of A: 0.25 of its share): B whole is
    worth more. In a tier that is not only
    bigger pages (HBM) a part keeps its share, and half of A is the better choice."""
    problem, sites, prof = _scattered_case(32 * MIB, "hugetlb")
    ex = split.expand(problem, sites, prof, 4096)
    assert ex.split_sites == 2
    got, uncut = strategies.solve_split(ex.problem, problem, "ilp")
    if uncut:
        assert list(got.tier_of) == [1, 0]            # B whole, A left out
    else:                                             # B whole, at most the rest of A
        done = split.complete(ex.problem, ex.sites.table, got)
        placed = {s.parent_id: s for s in split.placed_sites(ex.sites.table, done.tier_of, 1)}
        assert placed[4].ranges == () and placed[4].placed_bytes == 24 * MIB
        assert 3 not in placed or placed[3].placed_bytes <= 8 * MIB
    problem, sites, prof = _scattered_case(32 * MIB, "memkind:MEMKIND_HBW")
    ex = split.expand(problem, sites, prof, 4096)
    got, uncut = strategies.solve_split(ex.problem, problem, "ilp")
    placed = {s.parent_id: s for s in split.placed_sites(ex.sites.table, got.tier_of, 1)}
    assert not uncut and 4 not in placed and placed[3].placed_bytes >= 30 * MIB


def test_a_hot_window_in_bigger_pages_keeps_its_gain() -> None:
    """The part factor: an evenly accessed object's parts gain held^2 of their share
    (held: the part of the object the tier can hold; tlbspan-part measured a half at
    0.24 and three quarters at 0.41 of their share), a window holding all the weight
    all of it, its cold rest the base factor; an object the tier holds whole: 1."""
    from hmtune.advisor.model import PART_POWER
    fw = np.array([0.5, 0.75, 1.0, 0.0, 0.9])
    fb = np.array([0.5, 0.75, 0.125, 0.875, 0.5])
    half = np.full(5, 0.5)
    got = split.part_factor(fw, fb, half)
    base = 0.5 ** (PART_POWER - 1)
    assert got[:2] == pytest.approx([base] * 2) and base == pytest.approx(0.25)
    assert got[2] == pytest.approx(1.0) and got[3] == pytest.approx(base)
    assert got[4] == pytest.approx(base + (1 - base) * (1 - 0.2 / 1.8))
    assert split.part_factor(fw, fb, np.ones(5)) == pytest.approx(np.ones(5))
    assert split.part_factor(fw[:1], fb[:1], np.array([0.75]))[0] == pytest.approx(0.5625)


def test_too_few_samples_to_tell_are_cut_evenly() -> None:
    """A 64 MiB object with 5 samples at scattered offsets: its profile cannot tell a
    hot range from noise, so the part that fits is one range from its start, not the
    2 MiB pieces where the samples fell; a note says why."""
    problem, sites, _ = _case(32 * MIB)              # the warm objects, and 16 MiB more
    offs = np.array([3, 17, 29, 41, 58]) * MIB + 4096
    prof = pd.DataFrame({"site_id": 3, "offset": offs, "weight": 120.0, "samples": 1})
    ex = split.expand(problem, sites, prof, 4096)
    assert ex.split_sites == 1
    assert any("too few samples to tell" in n for n in ex.notes)
    got = split.complete(ex.problem, ex.sites.table, strategies.solve(ex.problem, "ilp"))
    big = [s for s in split.placed_sites(ex.sites.table, got.tier_of, 1) if s.parent_id == 3]
    assert big and len(big[0].ranges) == 1 and big[0].ranges[0][0] == 0
