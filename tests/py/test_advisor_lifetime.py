"""ilp-lifetime: capacity shared by sites whose blocks never coexist, checked against a
per-moment brute force written independently of the peak logic."""

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from advisorcases import (
    allocs_frame,
    brute_force_lifetime,
    brute_force_static,
    check_placement,
    random_lifetimes,
    random_problem,
    tiers_for,
)

import hmtune.advisor.solve.mip
from hmtune.advisor.model import Problem
from hmtune.advisor.solve.timeline import Timeline
from hmtune.advisor.strategies import solve
from hmtune.core.units import KIB

PAGE = 4 * KIB


def two_sites(t_alloc_b: int, t_free_b: int) -> Problem:
    """A (weight 10) and B (weight 8), 3 pages each, a 4-page fast tier, one rank.
    A lives on [0, 10); B on [t_alloc_b, t_free_b)."""
    problem = Problem(np.array([3, 4]), np.array([3 * PAGE, 3 * PAGE], np.int64),
                      np.array([10.0, 8.0]), np.ones(2, np.int64), np.zeros(2, np.int64),
                      tiers_for(2, [4 * PAGE]), total_weight=18.0)
    problem.allocs = allocs_frame([(3, 0, 3 * PAGE, 0, 10), (4, 0, 3 * PAGE, t_alloc_b, t_free_b)])
    return problem


def test_disjoint_lifetimes_share_capacity():
    # B is allocated when A is freed: frees come first, so they never coexist.
    problem = two_sites(10, 20)
    static = solve(problem, "ilp")
    life = solve(problem, "ilp-lifetime")
    assert static.tier_of.tolist() == [0, 1]
    assert life.tier_of.tolist() == [0, 0]
    assert life.value > static.value
    check_placement(problem, life, lifetime=True)


def test_overlapping_lifetimes_give_the_static_answer():
    problem = two_sites(9, 20)
    static = solve(problem, "ilp")
    life = solve(problem, "ilp-lifetime")
    assert life.tier_of.tolist() == static.tier_of.tolist() == [0, 1]
    assert life.value == static.value


@pytest.mark.parametrize("seed", range(6))
def test_all_overlapping_equals_ilp(seed):
    """Every block lives for the whole run and sizes are whole pages: per-moment
    capacity is exactly the static one."""
    problem = random_problem(400 + seed, 12, 2 + seed % 2)
    problem.sizes = (problem.sizes // PAGE + 1) * PAGE
    rows = []
    for sid, size in zip(problem.site_ids.tolist(), problem.sizes.tolist(), strict=True):
        rows += [(sid, 0, size // 2, 0, -1), (sid, 0, size - size // 2, 0, -1),
                 (sid, 1, size, 5, -1)]
    problem.allocs = allocs_frame(rows)
    static = solve(problem, "ilp", gap_target=0.0)
    life = solve(problem, "ilp-lifetime", gap_target=0.0)
    assert life.value == pytest.approx(static.value, rel=1e-9)
    check_placement(problem, life, lifetime=True)


@pytest.mark.parametrize("seed", range(14))
def test_lifetime_equals_brute_force(seed):
    n = 7 + seed % 4
    n_tiers = 2 if seed % 3 else 3
    problem = random_problem(500 + seed, n, n_tiers)
    problem.allocs = random_lifetimes(problem, seed, ranks=1 + seed % 2)
    p = solve(problem, "ilp-lifetime", gap_target=0.0)
    check_placement(problem, p, lifetime=True)
    assert p.value == pytest.approx(brute_force_lifetime(problem), rel=1e-9, abs=1e-9)
    # Sharing never hurts: the lifetime optimum is at least the static one.
    assert p.value >= brute_force_static(problem) - 1e-9


def test_sites_missing_from_allocs_are_taken_as_always_live():
    problem = two_sites(10, 20)
    problem.allocs = problem.allocs[problem.allocs["site_id"] == 3]
    p = solve(problem, "ilp-lifetime")
    assert p.tier_of.tolist() == [0, 1]
    assert any("without allocations" in n for n in p.notes)


def test_capacity_is_per_rank():
    problem = two_sites(0, 10)
    # The same two overlapping sites, but each on its own rank.
    problem.allocs = allocs_frame([(3, 0, 3 * PAGE, 0, 10), (4, 1, 3 * PAGE, 0, 10)])
    assert solve(problem, "ilp-lifetime").tier_of.tolist() == [0, 0]


def test_blocks_are_rounded_to_pages_one_by_one():
    problem = two_sites(10, 20)
    # A as 5 blocks of 1 byte: 5 pages live at once, more than the tier's 4.
    problem.allocs = allocs_frame([(3, 0, 1, 0, 10)] * 5 + [(4, 0, 3 * PAGE, 10, 20)])
    p = solve(problem, "ilp-lifetime")
    assert p.tier_of.tolist() == [1, 0]


def test_timeline_peaks_are_just_before_frees():
    allocs = allocs_frame([(1, 0, PAGE, 0, 10), (2, 0, PAGE, 5, 20), (1, 0, PAGE, 10, -1),
                           (2, 0, PAGE, 30, 40)])
    tl = Timeline(allocs, np.array([1, 2]), np.array([PAGE, PAGE]), [lambda s: -(-s // PAGE)])
    # Events: a0 a5 | f10 a10 | f20 | a30 | f40 : peaks after a5, after a10, after a30.
    assert tl.n_peaks == 3
    assert tl.usage(np.array([0, 0]), 0).tolist() == [2, 2, 2]
    assert tl.usage(np.array([0, -1]), 0).tolist() == [1, 1, 1]
    assert tl.row(0, 0).tolist() == [1, 1]


def test_lifetime_fallback_without_solver(monkeypatch):
    problem = random_problem(77, 40, 2)
    problem.tiers[0] = replace(problem.tiers[0], capacity=int(problem.sizes.sum()) // 20)
    problem.allocs = random_lifetimes(problem, 3)
    assert "lazy-rows" in solve(problem, "ilp-lifetime", gap_target=0.0).solver   # MIP needed
    monkeypatch.setattr(hmtune.advisor.solve.mip, "available_solvers", lambda: [])
    p = solve(problem, "ilp-lifetime", gap_target=0.0)
    assert p.solver == "density-fallback"
    assert any("fell back" in n for n in p.notes)
    check_placement(problem, p, lifetime=True)


def test_lifetime_time_limit_returns_valid_placement():
    problem = random_problem(78, 200, 3)
    problem.allocs = random_lifetimes(problem, 4, ranks=2, blocks=4)
    p = solve(problem, "ilp-lifetime", time_limit_s=0.0, gap_target=0.0)
    check_placement(problem, p, lifetime=True)
    assert p.bound >= p.value
    assert any("time limit" in n for n in p.notes)


def test_time_shared_capacity_is_reported_as_such():
    """Two sites of 3 pages that never coexist, both in a 4-page tier: the tier holds
    3 pages at once (within its capacity), while their own peaks add up to 6."""
    import pandas as pd

    from hmtune.advisor.inputs import Sites
    from hmtune.advisor.report import tier_use

    problem = two_sites(10, 20)
    problem.blocks = problem.allocs
    life = solve(problem, "ilp-lifetime")
    assert life.tier_of.tolist() == [0, 0]
    table = pd.DataFrame({"site_id": [3, 4], "label": ["a", "b"]})
    sites = Sites(Path("sites.csv"), {}, table, table.iloc[:0], 18.0)
    fast = tier_use(sites, problem, life)[0]
    assert fast.used == 6 * PAGE and fast.at_once == 3 * PAGE
    assert fast.tier.capacity is not None and fast.at_once <= fast.tier.capacity < fast.used
    # overlapping: at once is the sum
    problem = two_sites(9, 20)
    problem.blocks = problem.allocs
    both = replace(life, tier_of=np.array([0, 0]))
    fast = tier_use(sites, problem, both)[0]
    assert fast.used == fast.at_once == 6 * PAGE
