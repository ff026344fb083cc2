"""The exact 0/1 knapsack and the multi-tier assignment, against brute force."""

import itertools

import numpy as np
import pytest

from hmtune.advisor.solve import knapsack
from hmtune.advisor.solve.assign import TierProblem, _fixing, dual_bound, prices, solve_assign


def brute_knapsack(p: np.ndarray, w: np.ndarray, cap: int) -> float:
    x = np.array(list(itertools.product([0, 1], repeat=len(p))), bool)
    ok = ((x * w).sum(axis=1) <= cap) & ~(x & (p <= 0)).any(axis=1)
    return max(0.0, float((x * p).sum(axis=1)[ok].max()))


@pytest.mark.parametrize("beam", [knapsack.BEAM, 1])
@pytest.mark.parametrize("seed", range(200))
def test_knapsack_equals_brute_force(seed, beam, monkeypatch):
    # beam 1: the heuristic pass finds little, so the exact pass does the work.
    monkeypatch.setattr(knapsack, "BEAM", beam)
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 13))
    w = rng.integers(0, 25, n)
    if seed % 3 == 0:
        p = rng.integers(-3, 40, n).astype(float)          # some worthless items
    elif seed % 3 == 1:
        p = w + 10.0                                        # strongly correlated
    else:
        p = np.round(w * rng.uniform(0.5, 1.5, n), 2)       # near-equal efficiencies
    cap = int(rng.integers(0, max(1, int(w.sum())) + 1))
    r = knapsack.solve_knapsack(p, w, cap)
    best = brute_knapsack(p, w, cap)
    assert r.optimal
    assert r.value == pytest.approx(best, abs=1e-9)
    assert int(w[r.take].sum()) <= cap
    assert not (r.take & (p <= 0)).any()
    assert float(p[r.take].sum()) == pytest.approx(r.value)
    assert r.bound >= r.value


def test_knapsack_large_heavy_tailed_is_optimal_and_bounded():
    rng = np.random.default_rng(5)
    n = 3000
    size = np.exp(rng.uniform(np.log(4096), np.log(1 << 32), n))
    w = np.ceil(size / 4096).astype(np.int64)
    p = np.sqrt(size) * rng.lognormal(0, 2, n)
    cap = int(w.sum() * 0.05)
    r = knapsack.solve_knapsack(p, w, cap)
    assert r.optimal and int(w[r.take].sum()) <= cap
    # An optimum leaves no room for any item it does not take.
    room = cap - int(w[r.take].sum())
    assert not np.any(w[~r.take] <= room)
    assert r.bound >= r.value


def test_knapsack_state_budget_returns_incumbent_and_core():
    rng = np.random.default_rng(9)
    n = 400
    w = rng.integers(1000, 2000, n)
    p = w + 100.0                                           # strongly correlated
    r = knapsack.solve_knapsack(p, w, int(w.sum() // 2), budget=10)
    assert int(w[r.take].sum()) <= w.sum() // 2
    assert r.bound >= r.value
    if not r.optimal:
        assert r.core.size > 0


def brute_assign(tp: TierProblem) -> float:
    best = 0.0
    for a in itertools.product(range(-1, tp.k), repeat=tp.n):
        a = np.array(a)
        if tp.feasible(a) and all(tp.profit[i, a[i]] > 0 for i in range(tp.n) if a[i] >= 0):
            best = max(best, tp.value(a))
    return best


@pytest.mark.parametrize("seed", range(25))
def test_assign_equals_brute_force(seed):
    rng = np.random.default_rng(1000 + seed)
    n, k = int(rng.integers(2, 8)), int(rng.integers(2, 4))
    w = rng.integers(1, 20, (n, 1)).repeat(k, axis=1)
    if seed % 2:
        w = w + rng.integers(0, 3, (n, k))                  # different page sizes
    profit = rng.uniform(-1, 10, (n, k))
    cap = rng.integers(1, int(w.sum() // k) + 2, k)
    tp = TierProblem(profit, w, cap)
    r = solve_assign(tp, gap_target=0.0)
    assert tp.feasible(r.assign)
    assert r.value == pytest.approx(brute_assign(tp), abs=1e-9)
    assert r.bound >= r.value - 1e-9


def brute_assign_best(tp: TierProblem) -> tuple[float, np.ndarray]:
    best, arg = 0.0, np.full(tp.n, -1)
    for a in itertools.product(range(-1, tp.k), repeat=tp.n):
        a = np.array(a)
        if tp.feasible(a) and all(tp.profit[i, a[i]] > 0 for i in range(tp.n) if a[i] >= 0):
            if tp.value(a) > best:
                best, arg = tp.value(a), a
    return best, arg


@pytest.mark.parametrize("seed", range(40))
def test_fixing_keeps_every_option_of_an_optimum(seed):
    """Reduced-cost fixing with the optimum as incumbent value must keep the
    optimum's own options (its Lagrangian bound is at least the optimum)."""
    rng = np.random.default_rng(2000 + seed)
    n, k = int(rng.integers(3, 8)), 2
    w = rng.integers(1, 20, (n, 1)).repeat(k, axis=1)
    profit = w * rng.uniform(0.5, 1.5, (n, k))
    tp = TierProblem(profit, w, rng.integers(5, int(w.sum() // 2) + 6, k))
    best, a = brute_assign_best(tp)
    ok = tp.allowed()
    lam = prices(tp, ok)
    ok2, none_ok = _fixing(tp, ok, lam, dual_bound(tp, ok, lam), best, np.full(n, -1))
    for i in range(n):
        assert ok2[i, a[i]] if a[i] >= 0 else none_ok[i]


@pytest.mark.parametrize("seed", range(60))
def test_reduction_keeps_the_optimum(seed):
    rng = np.random.default_rng(3000 + seed)
    n = int(rng.integers(4, 13))
    w = rng.integers(1, 30, n)
    p = np.round(w * rng.uniform(0.7, 1.3, n), 3)
    cap = int(rng.integers(1, int(w.sum())))
    x = np.array(list(itertools.product([0, 1], repeat=n)), bool)
    vals = np.where((x * w).sum(axis=1) <= cap, (x * p).sum(axis=1), -1)
    best = x[int(np.argmax(vals))]
    s = knapsack._Sorted(p, w)
    fix_in, fix_out = knapsack._reduce(s, cap, float(vals.max()))
    taken = best[s.order]
    assert not (fix_in & ~taken).any() and not (fix_out & taken).any()
