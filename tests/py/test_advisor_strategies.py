"""Placement strategies: exact ones against brute force, heuristics against hand-worked
cases, fallbacks and limits, and a capacity check on every placement."""

import numpy as np
import pulp
import pytest
from advisorcases import (
    allocs_frame,
    brute_force_static,
    check_placement,
    random_problem,
    tiers_for,
)

import hmtune.advisor.solve.mip
from hmtune.advisor.model import Problem
from hmtune.advisor.strategies import STRATEGIES, capacity_curve, capacity_for_share, solve
from hmtune.core.units import KIB
from hmtune.machine.tiers import DEFAULT_ALLOC_COST_NS, Tier

PAGE = 4 * KIB


# ---- ilp against brute force -------------------------------------------------------

CASES = ([(seed, 14 if seed % 3 == 0 else int(6 + seed % 7), 2, False) for seed in range(16)]
         + [(100 + seed, int(5 + seed % 7), 3, seed % 4 == 0) for seed in range(24)]
         + [(200, 13, 3, False)])


@pytest.mark.parametrize(("seed", "n", "n_tiers", "unlimited_middle"), CASES)
def test_ilp_equals_brute_force(seed, n, n_tiers, unlimited_middle):
    problem = random_problem(seed, n, n_tiers, unlimited_middle)
    p = solve(problem, "ilp", gap_target=0.0)
    check_placement(problem, p)
    best = brute_force_static(problem)
    assert p.value == pytest.approx(best, rel=1e-9, abs=1e-9)
    assert p.bound == pytest.approx(best, rel=1e-7, abs=1e-7)
    assert p.gap <= 1e-7


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_every_strategy_respects_capacity(strategy):
    from advisorcases import random_lifetimes

    for seed in range(4):
        problem = random_problem(300 + seed, 30, 3)
        problem.allocs = random_lifetimes(problem, seed)
        p = solve(problem, strategy)
        check_placement(problem, p, lifetime=strategy == "ilp-lifetime")
        assert p.strategy == strategy
        assert p.solver


def test_ilp_never_places_worthless_sites():
    n = 6
    problem = Problem(np.arange(n), np.full(n, PAGE, np.int64), np.array([5.0, 0, 3, 0, 1, 0]),
                      np.ones(n, np.int64), np.zeros(n, np.int64),
                      tiers_for(2, [100 * PAGE]), total_weight=9.0)
    p = solve(problem, "ilp")
    assert p.tier_of.tolist() == [0, 1, 0, 1, 0, 1]


def test_tier_no_faster_than_fallback_gets_nothing():
    tiers = [Tier("fake", 100 * PAGE, "default", 2.0, 2.0), Tier("slow", None, "default", 2.0, 2.0)]
    problem = Problem(np.arange(3), np.full(3, PAGE, np.int64), np.array([5.0, 4, 3]),
                      np.ones(3, np.int64), np.ones(3, np.int64), tiers)
    for strategy in ("misses", "density", "ilp"):
        p = solve(problem, strategy, threshold_pct=0.0)
        assert p.tier_of.tolist() == [1, 1, 1]
        assert p.value == 0.0


# ---- misses and density, worked by hand -----------------------------------------------

def hand_problem(total_weight: float = 200.0) -> Problem:
    """hbm holds 10000 bytes (not whole pages), mid 3 pages, slow is the fallback.

    site  weight  size   pages
    A     50      4096   1
    B     30      5000   2   (fits hbm's 5904 bytes left after A, but not rounded)
    C     20      3000   1
    D     4       100    1
    E     1       100    1
    F     0       1      1   (worth nothing anywhere)
    """
    tiers = [Tier("hbm", 10000, "default", 1.0, 1.0), Tier("mid", 3 * PAGE, "default", 1.5, 1.5),
             Tier("slow", None, "default", 2.0, 2.0)]
    return Problem(np.arange(10, 16), np.array([4096, 5000, 3000, 100, 100, 1], np.int64),
                   np.array([50.0, 30, 20, 4, 1, 0]), np.ones(6, np.int64),
                   np.zeros(6, np.int64), tiers, total_weight=total_weight)


def test_misses_threshold_and_first_fit():
    problem = hand_problem()
    # 5 % of 200 = 10: D and E are skipped. A -> hbm (5904 B left); B rounds to
    # 8192 B > 5904 -> mid (1 page left); C -> hbm.
    p = solve(problem, "misses", threshold_pct=5.0)
    assert p.tier_of.tolist() == [0, 1, 0, 2, 2, 2]
    check_placement(problem, p)
    # No threshold: D no longer fits hbm (1808 B left) -> mid's last page; E -> slow.
    p = solve(problem, "misses", threshold_pct=0.0)
    assert p.tier_of.tolist() == [0, 1, 0, 1, 2, 2]
    # 12 % of 200 = 24 also drops C.
    p = solve(problem, "misses", threshold_pct=12.0)
    assert p.tier_of.tolist() == [0, 1, 2, 2, 2, 2]


def test_misses_threshold_without_total_weight_uses_sites_weight():
    problem = hand_problem(total_weight=0.0)
    # 5 % of the sites' 105 = 5.25: D (4) and E (1) are skipped, C (20) is not.
    p = solve(problem, "misses", threshold_pct=5.0)
    assert p.tier_of.tolist() == [0, 1, 0, 2, 2, 2]
    # 20 % = 21: C is skipped too.
    p = solve(problem, "misses", threshold_pct=20.0)
    assert p.tier_of.tolist() == [0, 1, 2, 2, 2, 2]


def test_density_order_and_first_fit():
    problem = hand_problem()
    # Weight per page: A 50, C 20, B 15, D 4, E 1. A -> hbm, C -> hbm (1808 B left),
    # B -> mid (1 page left), D -> mid, E -> slow.
    p = solve(problem, "density")
    assert p.tier_of.tolist() == [0, 1, 0, 1, 2, 2]
    check_placement(problem, p)
    # The value: weight * (1 - cost / 2) in each tier.
    assert p.value == pytest.approx(50 * 0.5 + 30 * 0.25 + 20 * 0.5 + 4 * 0.25)


def test_density_uses_peak_pages_not_bytes():
    tiers = [Tier("hbm", 2 * PAGE, "default", 1.0, 1.0), Tier("slow", None, "default", 2.0, 2.0)]
    # X: 10 per 1 byte but one whole page; Y: 15 over 2 pages (7.5/page).
    problem = Problem(np.arange(2), np.array([1, 2 * PAGE], np.int64), np.array([10.0, 15.0]),
                      np.ones(2, np.int64), np.zeros(2, np.int64), tiers)
    p = solve(problem, "density")
    assert p.tier_of.tolist() == [0, 1]
    q = solve(problem, "ilp")
    assert q.tier_of.tolist() == [1, 0]          # 15 > 10: the exact answer differs
    assert q.value > p.value
    assert p.bound >= q.value - 1e-9             # the heuristics report a valid bound


# ---- fallbacks and limits -------------------------------------------------------------

def needs_mip(problem: Problem) -> None:
    """Precondition: the exact strategy really runs a MIP on this problem."""
    p = solve(problem, "ilp", gap_target=0.0)
    assert "+" in p.solver, p.solver


def test_missing_solver_falls_back_to_density(monkeypatch):
    problem = random_problem(7, 60, 3)
    needs_mip(problem)
    monkeypatch.setattr(hmtune.advisor.solve.mip, "available_solvers", lambda: [])
    p = solve(problem, "ilp", gap_target=0.0)
    dens = solve(problem, "density")
    assert p.solver == "density-fallback"
    assert p.tier_of.tolist() == dens.tier_of.tolist()
    assert any("fell back to the density strategy" in n for n in p.notes)
    check_placement(problem, p)


def test_failing_solver_falls_back_to_density(monkeypatch):
    problem = random_problem(7, 60, 3)
    needs_mip(problem)

    def boom(self, *args, **kwargs):
        raise pulp.PulpSolverError("solver crashed")

    monkeypatch.setattr(pulp.LpProblem, "solve", boom)
    p = solve(problem, "ilp", gap_target=0.0)
    assert p.solver == "density-fallback"
    assert any("solver crashed" in n for n in p.notes)
    check_placement(problem, p)


@pytest.mark.parametrize("n_tiers", [2, 3])
def test_time_limit_returns_valid_placement(n_tiers):
    problem = random_problem(11, 3000, n_tiers)
    p = solve(problem, "ilp", time_limit_s=0.0, gap_target=0.0)
    check_placement(problem, p)
    assert p.bound >= p.value
    if p.bound > p.value * (1 + 1e-9):
        assert any("time limit" in n for n in p.notes)


def test_unknown_strategy_is_an_error():
    with pytest.raises(ValueError, match="unknown strategy"):
        solve(random_problem(1, 4, 2), "best")


def test_lifetime_without_allocs_is_an_error():
    with pytest.raises(ValueError, match="allocs"):
        solve(random_problem(1, 4, 2), "ilp-lifetime")
    problem = random_problem(1, 4, 2)
    problem.allocs = allocs_frame([])
    with pytest.raises(ValueError, match="allocs"):
        solve(problem, "ilp-lifetime")


# ---- capacity curve ------------------------------------------------------------------

def test_capacity_curve_is_exact_and_monotone():
    problem = random_problem(21, 12, 2)
    curve = capacity_curve(problem, points=16)
    assert curve["capacity_bytes"].iloc[0] == 0 and curve["value"].iloc[0] == 0
    assert np.all(np.diff(curve["capacity_bytes"]) > 0)
    assert np.all(np.diff(curve["value"]) >= -1e-9)
    worth = problem.values()[:, 0] > 0
    assert curve["capacity_bytes"].iloc[-1] == problem.rounded_sizes(0)[worth].sum()
    assert curve["sites"].iloc[-1] == worth.sum()
    assert curve["share"].iloc[-1] == pytest.approx(problem.weights[worth].sum()
                                                    / problem.total_weight)
    for cap in curve["capacity_bytes"].iloc[1:-1:3]:
        one = Problem(problem.site_ids, problem.sizes, problem.weights, problem.loads,
                      problem.stores, [Tier("fast", int(cap), "default", problem.tiers[0].load_cost,
                                            problem.tiers[0].store_cost), problem.tiers[-1]],
                      problem.total_weight)
        row = curve[curve["capacity_bytes"] == cap].iloc[0]
        assert row["value"] == pytest.approx(brute_force_static(one), rel=1e-9)


def test_capacity_for_share():
    problem = random_problem(22, 40, 2)
    curve = capacity_curve(problem)
    cap = capacity_for_share(curve, 0.9)
    full = curve["weight"].max()
    at = curve[curve["capacity_bytes"] == cap]["weight"].iloc[0]
    assert at >= 0.9 * full
    smaller = curve[curve["capacity_bytes"] < cap]
    assert (smaller["weight"] < 0.9 * full).all()
    assert capacity_for_share(curve, 0.0) == 0
    assert capacity_for_share(curve, 1.0) <= curve["capacity_bytes"].max()


@pytest.mark.parametrize("strategy", ["misses", "density", "ilp"])
def test_sites_whose_calls_cost_more_than_they_gain_stay_put(strategy):
    """value = access gain - allocation calls x the tier's alloc_cost_ns (weights in ns):
    a site of 100,000 small allocations whose accesses gain less than they cost is not
    placed although it fits; one allocation of a heavy site is; with alloc_cost_ns = 0
    both are."""
    from dataclasses import replace

    def problem(cost: float | None) -> Problem:
        mib = 1 << 20
        tiers = [Tier("huge", 64 * mib, "hugetlb", 1.0, 1.0, alloc_cost_ns=cost),
                 Tier("slow", None, "default", 2.0, 2.0)]
        return Problem(np.array([1, 2]), np.array([16 * mib, mib], np.int64),
                       np.array([4e9, 2e8]), np.array([100, 10]), np.zeros(2, np.int64),
                       tiers, total_weight=5e9, n_allocs=np.array([1, 100_000]),
                       max_sizes=np.array([16 * mib, 64]),
                       total_bytes=np.array([16 * mib, 6_400_000]))

    p = problem(2000.0)          # 2 us a call: site 2 gains 1e8 ns, costs 2e8
    assert p.call_cost_values()[:, 0].tolist() == [2000.0, 2e8]
    assert solve(p, strategy).tier_of.tolist() == [0, 1]
    assert solve(problem(0.0), strategy).tier_of.tolist() == [0, 0]
    # the default (100 ns, measured by make bench-callcost): site 2's calls cost 1e7 ns,
    # less than it gains
    d = problem(None)
    assert d.call_cost_values()[:, 0].tolist() == pytest.approx(
        [DEFAULT_ALLOC_COST_NS, DEFAULT_ALLOC_COST_NS * 100_000])
    assert solve(d, strategy).tier_of.tolist() == [0, 0]
    # statics pay no calls
    s = replace(problem(2000.0), statics=np.array([False, True]))
    assert s.call_cost_values()[1, 0] == 0.0
