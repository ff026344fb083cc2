"""The ilp-lifetime strategy: capacity checked at every peak of every rank.

Same objective as ilp (limited.py), but a limited tier only has to hold the blocks
that are live at the same moment (timeline.py), so sites whose objects never
coexist share capacity. Rows are added lazily:

1. Incumbent: sites by profit per page of their own peak, each into the most
   profitable limited tier where it fits at every peak (exact check on the
   timeline).
2. Rows: the peaks where placing every site in its best tier would overflow most
   (local maxima of the overflow curve).
3. LP rounds: solve the LP relaxation over the current rows, add the peaks its
   (fractional) answer overflows, until it overflows none. Its value bounds the
   optimum (fewer rows = a relaxation). The LP answer, rounded by the greedy
   (sites it takes most fully first), is a second incumbent.
4. MIP rounds (mip.py), started from the incumbent, stopping at the gap target:
   check the answer at every peak (one pass over the blocks); if it overflows,
   repair it (drop sites from overflowing peaks, refill), keep it if it beats the
   incumbent, add the overflowing peaks as rows and repeat.

The result carries the best feasible assignment and the smallest bound seen.
"""

from __future__ import annotations

import time

import numpy as np

from hmtune.advisor.model import Placement, Problem
from hmtune.advisor.solve.greedy import density_key
from hmtune.advisor.solve.limited import Limited
from hmtune.advisor.solve.mip import solve_lp, solve_mip
from hmtune.advisor.solve.timeline import Timeline

ROWS_START = 24       # peaks per tier in the first MIP
ROWS_PER_ROUND = 24   # violated peaks per tier added each round
MIN_MIP_SECONDS = 1.0
CHECK_SECONDS = 0.5   # kept after a MIP for checking and repairing its answer
MAX_LP_ROUNDS = 30
MIP_ROUND_SHARE = 0.5  # of the time left, for a MIP round that may still miss rows
LP_FEAS_TOL = 1e-7    # relative overflow an LP answer may show before a row is added


def timeline_of(problem: Problem, lim: Limited) -> Timeline:
    if problem.allocs is None or len(problem.allocs) == 0:
        raise ValueError("ilp-lifetime needs the per-allocation table (allocs.csv); "
                         "it is missing or empty")
    return Timeline(problem.allocs, problem.site_ids, problem.sizes,
                    [problem.block_units(t) for t in lim.limited])


class _Fitter:
    """Greedy placement with the exact per-peak check, usage kept per tier."""

    def __init__(self, tl: Timeline, cap: np.ndarray) -> None:
        self.tl = tl
        self.cap = cap
        self.usage = [np.zeros(tl.n_peaks) for _ in range(len(cap))]
        self._seg: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}

    def seg(self, i: int, k: int) -> tuple[np.ndarray, np.ndarray]:
        key = (i, k)
        if key not in self._seg:
            self._seg[key] = self.tl.segments(i, k)
        return self._seg[key]

    def fits(self, i: int, k: int) -> bool:
        bp, val = self.seg(i, k)
        if val.size == 0:
            return True
        u = self.usage[k][: bp[-1]]
        top = np.maximum.reduceat(u, bp[:-1])
        return bool(np.all(top + val <= self.cap[k]))

    def put(self, i: int, k: int, sign: int = 1) -> None:
        bp, val = self.seg(i, k)
        if val.size:
            self.usage[k][bp[0]: bp[-1]] += sign * np.repeat(val, np.diff(bp))

    def load(self, assign: np.ndarray) -> None:
        self.usage = [self.tl.usage(assign, k) for k in range(len(self.cap))]

    def fill(self, assign: np.ndarray, order: np.ndarray, tiers: np.ndarray,
             allowed: np.ndarray) -> np.ndarray:
        """Place the unplaced sites of `order`, trying tiers[i] in turn."""
        assign = assign.copy()
        for i in order.tolist():
            if assign[i] >= 0:
                continue
            for k in tiers[i].tolist():
                if allowed[i, k] and self.fits(i, k):
                    self.put(i, k)
                    assign[i] = k
                    break
        return assign


def _order(profit: np.ndarray, peak: np.ndarray) -> np.ndarray:
    best = profit.max(axis=1) if profit.shape[1] else np.zeros(profit.shape[0])
    dens = best / np.maximum(peak.max(axis=1) if peak.shape[1] else 1.0, 1.0)
    return np.argsort(-dens, kind="stable")


def _pick_peaks(over: np.ndarray, rank: np.ndarray, limit: int,
                taken: set[int]) -> list[int]:
    """Up to `limit` peaks with the largest positive overflow that are local maxima
    of their rank's curve and not rows already."""
    left = np.concatenate([[-np.inf], over[:-1]])
    right = np.concatenate([over[1:], [-np.inf]])
    same_l = np.concatenate([[False], rank[1:] == rank[:-1]])
    same_r = np.concatenate([rank[:-1] == rank[1:], [False]])
    local = (over > 0) & (~same_l | (over > left)) & (~same_r | (over >= right))
    cand = np.flatnonzero(local)
    cand = cand[np.argsort(-over[cand], kind="stable")]
    out = []
    for q in cand.tolist():
        if q not in taken:
            out.append(q)
            if len(out) == limit:
                break
    return out


def _repair(fit: _Fitter, assign: np.ndarray, profit: np.ndarray) -> np.ndarray:
    """Drop sites from overflowing peaks (least profit per live page there first)."""
    assign = assign.copy()
    fit.load(assign)
    tl = fit.tl
    for k in range(len(fit.cap)):
        while True:
            over = fit.usage[k] - fit.cap[k]
            if over.size == 0 or over.max() <= 0:
                break
            q = int(np.argmax(over))
            row = tl.row(q, k)
            members = np.flatnonzero((assign == k) & (row > 0))
            worst = int(members[np.argmin(profit[members, k] / row[members])])
            fit.put(worst, k, -1)
            assign[worst] = -1
    return assign


def _value(profit: np.ndarray, assign: np.ndarray) -> float:
    on = assign >= 0
    return float(profit[np.flatnonzero(on), assign[on]].sum())


def density_lifetime(problem: Problem, lim: Limited) -> Placement:
    """Density order, first fit into the fastest limited tier with room at every
    peak: what ilp-lifetime falls back to without a MIP solver."""
    tl = timeline_of(problem, lim)
    tp = lim.tp
    fit = _Fitter(tl, tp.cap)
    pages0 = np.maximum(problem.units(0), 1)
    order = np.argsort(-(density_key(problem) / pages0), kind="stable")
    tiers = np.tile(np.arange(tp.k), (tp.n, 1))
    assign = fit.fill(np.full(tp.n, -1, np.int64), order, tiers, tp.profit > 0)
    tier_of = lim.tier_of(assign)
    value = lim.value(tier_of)
    bound = float(lim.base_value.sum() + np.maximum(tp.profit, 0).max(axis=1, initial=0).sum())
    return Placement(tier_of, "ilp-lifetime", value, max(bound, value), "greedy")


def solve_lifetime(problem: Problem, lim: Limited, deadline: float,
                   gap_target: float) -> Placement:
    tl = timeline_of(problem, lim)
    tp = lim.tp
    n, nk = tp.n, tp.k
    base = float(lim.base_value.sum())
    notes: list[str] = []
    if tl.unseen.size:
        notes.append(f"{tl.unseen.size} site(s) without allocations in allocs.csv: "
                     "taken as live all the time at peak_live_bytes")
    if nk == 0 or n == 0:
        tier_of = lim.tier_of(np.full(n, -1, np.int64))
        return Placement(tier_of, "ilp-lifetime", lim.value(tier_of), lim.value(tier_of),
                         "trivial", notes)
    peak = np.stack([tl.peak_pages(k) for k in range(nk)], axis=1)
    allowed = (tp.profit > 0) & (peak <= tp.cap[None, :])
    profit = np.where(allowed, tp.profit, 0.0)
    trivial_bound = float(profit.max(axis=1).sum())
    fit = _Fitter(tl, tp.cap)
    order = _order(profit, peak)
    pref = np.argsort(-profit, axis=1, kind="stable")
    best = fit.fill(np.full(n, -1, np.int64), order, pref, allowed)
    best_val = _value(profit, best)
    bound = trivial_bound
    # First rows: where everything in its best tier would overflow the most.
    want = np.where(allowed.any(axis=1), profit.argmax(axis=1), -1)
    rows: list[list[int]] = [[] for _ in range(nk)]
    for k in range(nk):
        over = tl.usage(want, k) - tp.cap[k]
        rows[k] = _pick_peaks(over, tl.peak_rank, ROWS_START, set())
    solver = "greedy"
    rounds = lp_rounds = 0

    def matrices() -> tuple[list[np.ndarray], list[np.ndarray]]:
        mats = [np.array([tl.row(q, k) for q in rows[k]]).reshape(len(rows[k]), n)
                for k in range(nk)]
        return mats, [np.full(len(rows[k]), float(tp.cap[k])) for k in range(nk)]

    def add_rows(usage: list[np.ndarray]) -> int:
        added = 0
        for k in range(nk):
            over = usage[k] - tp.cap[k] * (1 + LP_FEAS_TOL)
            new = _pick_peaks(over, tl.peak_rank, ROWS_PER_ROUND, set(rows[k]))
            rows[k].extend(new)
            added += len(new)
        return added

    # LP rounds: cheap, and their answers find the peaks that matter.
    x = np.zeros((n, nk))
    for _ in range(MAX_LP_ROUNDS):
        if deadline - time.monotonic() < MIN_MIP_SECONDS:
            break
        mats, caps = matrices()
        x, lp_bound, name = solve_lp(profit, allowed, mats, caps, deadline - CHECK_SECONDS)
        lp_rounds += 1
        solver = f"lazy-rows-lp+{name}"
        bound = min(bound, lp_bound)
        if add_rows([tl.usage(x[:, k], k) for k in range(nk)]) == 0:
            break
    # Rounding the LP: sites it takes most fully first, each into its LP tier first.
    fit.load(np.full(n, -1, np.int64))
    lp_order = np.lexsort((np.argsort(order), -x.max(axis=1)))
    lp_pref = np.argsort(-(x + 1e-9 * profit), axis=1, kind="stable")
    cand = fit.fill(np.full(n, -1, np.int64), lp_order, lp_pref, allowed)
    if _value(profit, cand) > best_val:
        best, best_val = cand, _value(profit, cand)
    # MIP rounds at the gap target, until an answer violates no peak. A round gets
    # half the time left, so that an answer overflowing a peak found only now can
    # still be followed by a round that knows the peak; once no row is missing,
    # the last round gets all the time left.
    last = False
    while bound - best_val > gap_target * bound + 1e-12 * max(1.0, bound):
        now = time.monotonic()
        if deadline - now < MIN_MIP_SECONDS:
            notes.append(f"time limit reached after {lp_rounds} LP and {rounds} MIP "
                         f"round(s): proven gap "
                         f"{(bound - best_val) / bound:.4%}")
            break
        stop = deadline - CHECK_SECONDS
        if not last:
            stop = now + max(MIN_MIP_SECONDS, (stop - now) * MIP_ROUND_SHARE)
        mats, caps = matrices()
        res = solve_mip(profit, allowed, mats, caps, deadline=stop,
                        gap_rel=1e-9, gap_abs=max(gap_target * best_val, 0.0), start=best)
        rounds += 1
        solver = f"lazy-rows+{res.solver}"
        bound = min(bound, res.bound)
        fit.load(res.assign)
        added = add_rows(fit.usage)
        cand = res.assign
        if added:
            cand = fit.fill(_repair(fit, res.assign, profit), order, pref, allowed)
        val = _value(profit, cand)
        if val > best_val:
            best, best_val = cand, val
        if added == 0:
            if res.optimal or last:
                break
            last = True
    tier_of = lim.tier_of(best)
    value = lim.value(tier_of)
    notes.append(f"lifetime: {tl.n_peaks} peak(s) over {len(np.unique(tl.peak_rank))} "
                 f"rank(s), {sum(len(r) for r in rows)} row(s) used, {lp_rounds} LP and "
                 f"{rounds} MIP round(s)")
    return Placement(tier_of, "ilp-lifetime", value, max(value, base + bound), solver, notes)
