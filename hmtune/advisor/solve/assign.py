"""Exact assignment of sites to limited tiers (the ilp strategy).

The problem handed in here is already relative: profit[i, k] is what site i gains
in limited tier k over the best unlimited tier it could go to instead, weight[i, k]
its size in tier k's pages, cap[k] the tier's capacity in pages.

One limited tier is a 0/1 knapsack (knapsack.py). Several limited tiers:

1. Lagrangian bound. Pricing tier k's pages at lam[k] decouples the sites:
   D(lam) = sum_k lam_k cap_k + sum_i max(0, max_k profit[i,k] - lam_k weight[i,k])
   bounds the optimum for every lam >= 0; its minimum is the LP bound. lam comes
   from coordinate descent with an exact line search per tier (a weighted-median
   step, as in the Dantzig bound).
2. Incumbent: the sites' choices at lam, trimmed to fit, then block-coordinate
   ascent: for one tier at a time, the exact knapsack over the sites that are
   unplaced, in that tier, or would gain by moving there. Never decreases the value.
3. Reduced-cost fixing: site i in option j (a tier or none) can only be part of a
   solution worth D(lam) - (best reduced profit of i - reduced profit of j); options
   for which that is below the incumbent are dropped. Sites with one option left are
   fixed.
4. The rest (the core) goes to a MIP (mip.py) with the incumbent as its start and an
   absolute gap of gap_target times the incumbent, so the final relative gap is at
   most gap_target. The final bound is min(D(lam), fixed value + the MIP's bound).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from hmtune.advisor.solve import knapsack
from hmtune.advisor.solve.mip import solve_mip

MAX_SWEEPS = 60        # coordinate-descent sweeps over the tiers' prices
MAX_ROUNDS = 8         # block-coordinate ascent rounds over the tiers
MIN_MIP_SECONDS = 1.0  # below this much time left, the MIP is not started


@dataclass
class TierProblem:
    profit: np.ndarray      # (n, K) float: gain over the site's best unlimited tier
    weight: np.ndarray      # (n, K) int64: pages in each limited tier
    cap: np.ndarray         # (K,) int64: pages of each limited tier

    @property
    def n(self) -> int:
        return self.profit.shape[0]

    @property
    def k(self) -> int:
        return self.profit.shape[1]

    def allowed(self) -> np.ndarray:
        return (self.profit > 0) & (self.weight <= self.cap[None, :])

    def value(self, assign: np.ndarray) -> float:
        on = assign >= 0
        return float(self.profit[np.flatnonzero(on), assign[on]].sum())

    def usage(self, assign: np.ndarray) -> np.ndarray:
        return np.array([self.weight[assign == k, k].sum() for k in range(self.k)], np.int64)

    def feasible(self, assign: np.ndarray) -> bool:
        return bool(np.all(self.usage(assign) <= self.cap))


@dataclass
class AssignResult:
    assign: np.ndarray      # (n,) int64: limited tier per site, -1 for none
    value: float
    bound: float
    optimal: bool
    solver: str
    notes: list[str] = field(default_factory=list)


def _reduced(tp: TierProblem, ok: np.ndarray, lam: np.ndarray) -> np.ndarray:
    return np.where(ok, tp.profit - lam[None, :] * tp.weight, -np.inf)


def dual_bound(tp: TierProblem, ok: np.ndarray, lam: np.ndarray) -> float:
    """D(lam): an upper bound on the best assignment for any lam >= 0."""
    r = _reduced(tp, ok, lam)
    u = np.maximum(r.max(axis=1, initial=-np.inf), 0.0) if tp.k else np.zeros(tp.n)
    return float(lam @ tp.cap + u.sum())


def prices(tp: TierProblem, ok: np.ndarray) -> np.ndarray:
    """Tier prices lam >= 0 from coordinate descent on D(lam)."""
    lam = np.zeros(tp.k)
    for _ in range(MAX_SWEEPS):
        old = lam.copy()
        for k in range(tp.k):
            r = _reduced(tp, ok, lam)
            r[:, k] = -np.inf
            alt = np.maximum(r.max(axis=1), 0.0)
            inn = ok[:, k] & (tp.profit[:, k] > alt)
            idx = np.flatnonzero(inn)
            w = tp.weight[idx, k]
            theta = np.where(w > 0, (tp.profit[idx, k] - alt[idx]) / np.maximum(w, 1), np.inf)
            o = np.argsort(-theta, kind="stable")
            cw = np.cumsum(w[o])
            j = int(np.searchsorted(cw, tp.cap[k], side="right"))
            lam[k] = max(0.0, float(theta[o[j]])) if j < idx.size else 0.0
        if np.allclose(lam, old, rtol=1e-12, atol=0.0):
            break
    return lam


def _round(tp: TierProblem, ok: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """The sites' choices at prices lam, trimmed to the capacities, then filled."""
    r = _reduced(tp, ok, lam)
    best = r.argmax(axis=1)
    assign = np.where(r[np.arange(tp.n), best] > 0, best, -1).astype(np.int64)
    for k in range(tp.k):
        idx = np.flatnonzero(assign == k)
        o = idx[np.argsort(tp.profit[idx, k] / np.maximum(tp.weight[idx, k], 1))]
        excess = int(tp.weight[idx, k].sum() - tp.cap[k])
        if excess > 0:
            cum = np.cumsum(tp.weight[o, k])
            drop = int(np.searchsorted(cum, excess, side="left")) + 1
            assign[o[:drop]] = -1
    room = (tp.cap - tp.usage(assign)).tolist()
    free = np.flatnonzero((assign < 0) & ok.any(axis=1))
    eff = np.where(ok[free], tp.profit[free] / np.maximum(tp.weight[free], 1), -np.inf)
    for pos in np.argsort(-eff.max(axis=1), kind="stable"):
        i = int(free[pos])
        for k in np.argsort(-np.where(ok[i], tp.profit[i], -np.inf)):
            if ok[i, k] and tp.weight[i, k] <= room[k]:
                assign[i] = k
                room[k] -= int(tp.weight[i, k])
                break
    return assign


def improve(tp: TierProblem, ok: np.ndarray, assign: np.ndarray,
            deadline: float | None) -> np.ndarray:
    """Block-coordinate ascent: re-solve one tier's knapsack exactly at a time."""
    assign = assign.copy()
    cur = tp.value(assign)
    for _ in range(MAX_ROUNDS):
        before = cur
        for k in range(tp.k):
            if deadline is not None and time.monotonic() > deadline:
                return assign
            held = np.where(assign >= 0, tp.profit[np.arange(tp.n), np.maximum(assign, 0)], 0.0)
            gain = np.where(assign == k, tp.profit[:, k], tp.profit[:, k] - held)
            cand = np.flatnonzero(ok[:, k] & ((assign == k) | (gain > 0)))
            if cand.size == 0:
                continue
            res = knapsack.solve_knapsack(gain[cand], tp.weight[cand, k], int(tp.cap[k]),
                                          deadline=deadline)
            new = assign.copy()
            new[cand[(assign[cand] == k) & ~res.take]] = -1
            new[cand[res.take]] = k
            val = tp.value(new)
            if val > cur and tp.feasible(new):
                assign, cur = new, val
        if cur <= before * (1 + 1e-15):
            break
    return assign


def _fixing(tp: TierProblem, ok: np.ndarray, lam: np.ndarray, d: float, lb: float,
            incumbent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Options that can still be part of a solution better than lb.

    Returns (ok2, none_ok): tier options and the "no limited tier" option per site."""
    r = _reduced(tp, ok, lam)
    u = np.maximum(r.max(axis=1), 0.0)
    tol = knapsack.REL_TOL * max(1.0, abs(d)) * 10
    ok2 = ok & (d - (u[:, None] - r) >= lb - tol)
    none_ok = d - u >= lb - tol
    # Keep the incumbent representable whatever the rounding did.
    on = incumbent >= 0
    ok2[np.flatnonzero(on), incumbent[on]] = True
    none_ok |= ~on
    return ok2, none_ok


def _single(tp: TierProblem, deadline: float | None, gap_target: float) -> AssignResult:
    res = knapsack.solve_knapsack(tp.profit[:, 0], tp.weight[:, 0], int(tp.cap[0]),
                                  deadline=deadline, gap=gap_target)
    assign = np.where(res.take, 0, -1).astype(np.int64)
    if res.optimal or res.bound - res.value <= gap_target * res.bound:
        return AssignResult(assign, res.value, res.bound, res.optimal, "knapsack-exact")
    # The DP ran out of states or time: the core goes to the MIP.
    core = res.core
    sub = TierProblem(tp.profit[core], tp.weight[core], np.array([res.core_capacity]))
    fixed = assign.copy()
    fixed[core] = -1
    return _core_mip(tp, sub, core, fixed, assign, res.value, res.bound, deadline,
                     gap_target, "knapsack-exact")


def _core_mip(tp: TierProblem, sub: TierProblem, core: np.ndarray, fixed: np.ndarray,
              incumbent: np.ndarray, lb: float, d: float, deadline: float | None,
              gap_target: float, pre: str,
              sub_ok: np.ndarray | None = None) -> AssignResult:
    left = 3600.0 if deadline is None else deadline - time.monotonic()
    if left < MIN_MIP_SECONDS:
        return AssignResult(incumbent, lb, d, False, pre,
                            ["time limit reached before the exact step; gap "
                             f"{(d - lb) / d:.3%}" if d > 0 else "time limit reached"])
    ok = sub.allowed() if sub_ok is None else sub_ok
    fixed_val = tp.value(fixed)
    rows = [sub.weight[:, k][None, :] for k in range(sub.k)]
    caps = [np.array([sub.cap[k]]) for k in range(sub.k)]
    start = incumbent[core]
    m = solve_mip(sub.profit, ok, rows, caps, deadline=time.monotonic() + left,
                  gap_rel=1e-9 if gap_target <= 0 else 0.0,
                  gap_abs=max(gap_target * lb, 0.0), start=start)
    assign = fixed.copy()
    assign[core] = m.assign
    value = tp.value(assign)
    if value < lb:           # the solver did worse than the start it was given
        assign, value = incumbent, lb
    bound = min(d, max(lb, fixed_val + m.bound))
    notes = []
    if not m.optimal:
        notes.append(f"time limit reached: proven gap {(bound - value) / bound:.4%}"
                     if bound > 0 else "time limit reached")
    optimal = bound - value <= knapsack.REL_TOL * max(1.0, bound) * 10
    return AssignResult(assign, value, max(bound, value), optimal, f"{pre}+{m.solver}", notes)


def solve_assign(tp: TierProblem, deadline: float | None = None,
                 gap_target: float = 1e-4) -> AssignResult:
    """Best assignment of sites to the limited tiers (see the module docstring).

    Raises mip.SolverUnavailable when the MIP step is needed and cannot run."""
    if tp.k == 0 or tp.n == 0:
        return AssignResult(np.full(tp.n, -1, np.int64), 0.0, 0.0, True, "trivial")
    if tp.k == 1:
        return _single(tp, deadline, gap_target)
    ok = tp.allowed()
    lam = prices(tp, ok)
    d = dual_bound(tp, ok, lam)
    inc = improve(tp, ok, _round(tp, ok, lam), deadline)
    lb = tp.value(inc)
    closed = d - lb <= knapsack.REL_TOL * max(1.0, d) * 10
    if closed or d - lb <= gap_target * d:
        return AssignResult(inc, lb, max(d, lb), closed, "lagrange+knapsack")
    ok2, none_ok = _fixing(tp, ok, lam, d, lb, inc)
    n_opts = ok2.sum(axis=1) + none_ok
    core = np.flatnonzero(n_opts >= 2)
    fixed = np.full(tp.n, -1, np.int64)
    single = np.flatnonzero((n_opts == 1) & ~none_ok)
    fixed[single] = ok2[single].argmax(axis=1)
    cap2 = tp.cap - tp.usage(fixed)
    sub = TierProblem(tp.profit[core], tp.weight[core], cap2)
    sub_ok = ok2[core] & (sub.weight <= cap2[None, :])
    return _core_mip(tp, sub, core, fixed, inc, lb, d, deadline, gap_target,
                     "lagrange+knapsack", sub_ok)
