"""Exact 0/1 knapsack: one limited tier plus the fallback.

The instances the advisor sees have thousands of sites whose sizes span 4 KiB to
GiBs, so a dynamic program over capacity (one cell per page per item) is out of the
question. Instead:

1. Sort by value per page; the greedy prefix up to the break item and the Dantzig
   bound (the LP relaxation) bracket the optimum.
2. A greedy completion gives a first incumbent.
3. Reduction: for every item, the Dantzig bound of the problem with that item forced
   to the other side of the LP solution; when it falls below the incumbent the item
   is fixed. What is left is a small core around the break item.
4. The core is solved by an expanding-core dynamic program over (weight, value)
   states: items are added past the break item and removed before it one at a
   time; dominated states and states whose fractional bound cannot beat the
   incumbent are dropped. When no state is left, the incumbent is optimal.

Weights are integral (pages), values are floats. Every comparison against the
incumbent keeps a relative slack of `REL_TOL`, so "optimal" means within that.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

REL_TOL = 1e-10          # relative slack on value comparisons (float sums of many terms)
STATE_BUDGET = 10_000_000  # stored (parent, flag) pairs before the DP gives up
BEAM = 256                 # states kept per step by the heuristic pass


@dataclass
class KnapsackResult:
    take: np.ndarray            # bool per item
    value: float
    bound: float                # proven upper bound on the optimum
    optimal: bool
    method: str                 # "greedy" (LP solution integral), "dp", "incumbent"
    core: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    # when not optimal: the unfixed items (indices) and the capacity left for them
    core_capacity: int = 0


def _tol(scale: float) -> float:
    return REL_TOL * max(1.0, abs(scale))


class _Sorted:
    """Items sorted by value per weight (ties: larger value first), with prefix sums."""

    def __init__(self, p: np.ndarray, w: np.ndarray) -> None:
        eff = p / w
        self.order = np.lexsort((-p, -eff))
        self.p = p[self.order]
        self.w = w[self.order]
        self.e = eff[self.order]
        self.cp = np.concatenate([[0.0], np.cumsum(self.p)])
        self.cw = np.concatenate([[0], np.cumsum(self.w)])

    def break_item(self, cap: int | np.ndarray) -> np.ndarray:
        """Index of the first item that does not fit greedily (len when all fit)."""
        return np.searchsorted(self.cw, cap, side="right") - 1

    def dantzig(self, cap: np.ndarray) -> np.ndarray:
        """LP bound of the sorted items for each capacity in `cap` (cap >= 0)."""
        b = self.break_item(cap)
        n = len(self.p)
        frac = np.where(b < n, (cap - self.cw[b]) * self.e[np.minimum(b, n - 1)], 0.0)
        return self.cp[b] + frac


def _greedy(s: _Sorted, cap: int) -> np.ndarray:
    """Greedy prefix, then every later item that still fits (in efficiency order)."""
    n = len(s.p)
    b = int(s.break_item(cap))
    take = np.zeros(n, bool)
    take[:b] = True
    room = cap - int(s.cw[b])
    if b + 1 < n:
        suffix_min = np.minimum.accumulate(s.w[::-1])[::-1].tolist()
        w = s.w.tolist()
        for j in range(b + 1, n):
            if suffix_min[j] > room:
                break
            if w[j] <= room:
                take[j] = True
                room -= w[j]
    return take


def _reduce(s: _Sorted, cap: int, lb: float) -> tuple[np.ndarray, np.ndarray]:
    """Items that can be fixed in (fix_in) or out (fix_out) without losing any
    solution better than `lb`: the Dantzig bound with the item forced the other way
    is below lb."""
    n = len(s.p)
    b = int(s.break_item(cap))
    tol = _tol(lb)
    idx = np.arange(n)
    fix_in = np.zeros(n, bool)
    fix_out = np.zeros(n, bool)
    # Items before the break item, forced out: capacity grows by w_j and the greedy
    # continues from b (item j itself is skipped, as it lies before b).
    if b > 0:
        j = idx[:b]
        c2 = cap + s.w[j]
        t = np.searchsorted(s.cw, c2, side="right") - 1
        t = np.maximum(t, b)
        tt = np.minimum(t, n - 1)
        frac = np.where(t < n, (c2 - s.cw[t]) * s.e[tt], 0.0)
        ub = s.cp[t] - s.p[j] + frac
        fix_in[j] = ub < lb - tol
    # Items from the break item on, forced in: capacity shrinks by w_j.
    if b < n:
        j = idx[b:]
        c2 = cap - s.w[j]
        ok = c2 >= 0
        c2c = np.maximum(c2, 0)
        t = np.searchsorted(s.cw, c2c, side="right") - 1
        t = np.minimum(t, b)
        tt = np.minimum(t, n - 1)
        frac = np.where(t < n, (c2c - s.cw[t]) * s.e[tt], 0.0)
        ub = np.where(ok, s.p[j] + s.cp[t] + frac, -np.inf)
        fix_out[j] = ub < lb - tol
    return fix_in, fix_out


def _state_bounds(ws: np.ndarray, ps: np.ndarray, feas: np.ndarray, cap: int, s: int, t: int,
                  cw: np.ndarray, cp: np.ndarray, e: np.ndarray) -> np.ndarray:
    """LP bound of each DP state: items before s are in, from t on out, between as
    the state chose. A state within capacity fills its slack greedily (fractionally)
    from item t on; a state over capacity sheds its excess from item s-1 down."""
    n = len(e)
    ub = np.full(ws.size, -np.inf)
    if feas.any():
        slack = cap - ws[feas]
        j = np.searchsorted(cw, cw[t] + slack, side="right") - 1     # j >= t
        jj = np.minimum(j, n - 1)
        frac = np.where(j < n, (cw[t] + slack - cw[j]) * e[jj], 0.0)
        ub[feas] = ps[feas] + (cp[j] - cp[t]) + frac
    over = ~feas
    if s > 0 and over.any():
        excess = ws[over] - cap
        # Largest j with cw[s] - cw[j] >= excess: items j..s-1 cover it, j partly.
        j = np.searchsorted(cw, cw[s] - excess, side="right") - 1
        ok = j >= 0
        jc = np.maximum(j, 0)
        part = excess - (cw[s] - cw[np.minimum(jc + 1, s)])
        val = ps[over] - (cp[s] - cp[np.minimum(jc + 1, s)]) - part * e[jc]
        ub[over] = np.where(ok, val, -np.inf)
    return ub


class _BudgetExceeded(Exception):
    pass


def _core_dp(p: np.ndarray, w: np.ndarray, e: np.ndarray, cap: int, lb: float,
             deadline: float | None, budget: int,
             beam: int = 0) -> tuple[np.ndarray | None, float]:
    """Expanding-core DP over items already sorted by efficiency.

    A state is a (weight, value) pair for the items decided so far: items before s
    are in, items from t on are out, items in [s, t) as the state chose. Returns
    (take, value) of the best solution better than lb, or (None, lb) when nothing
    beats lb. Raises _BudgetExceeded when the state budget or the deadline runs out.

    With beam > 0 only the `beam` states with the best bounds survive each step: a
    heuristic that finds a strong incumbent fast (then nothing is proven).
    """
    n = len(p)
    cw = np.concatenate([[0], np.cumsum(w)])
    cp = np.concatenate([[0.0], np.cumsum(p)])
    b = int(np.searchsorted(cw, cap, side="right") - 1)
    ws = np.array([cw[b]], np.int64)
    ps = np.array([cp[b]])
    s, t = b, b
    best_val = lb
    best_at: tuple[int, int] | None = None
    tol = _tol(lb)
    # Per step: item, +1 (added) / -1 (removed), and for the states after the
    # dominance filter their parent (index into the previous step's survivors) and
    # whether they took the step's choice; `sel` maps survivors to those states.
    items: list[int] = []
    signs: list[int] = []
    parents: list[np.ndarray] = []
    flags: list[np.ndarray] = []
    sels: list[np.ndarray] = []
    stored = 0
    if int(ws[0]) <= cap and ps[0] > best_val + tol:
        best_val, best_at = float(ps[0]), (-1, 0)
    add_next = True
    while ws.size and (s > 0 or t < n):
        if deadline is not None and time.monotonic() > deadline:
            raise _BudgetExceeded("time limit")
        if (add_next and t < n) or s == 0:
            item, sign = t, 1
            t += 1
        else:
            s -= 1
            item, sign = s, -1
        add_next = not add_next
        m = ws.size
        w2 = np.concatenate([ws, ws + sign * w[item]])
        p2 = np.concatenate([ps, ps + sign * p[item]])
        parent = np.concatenate([np.arange(m), np.arange(m)])
        flag = np.concatenate([np.zeros(m, bool), np.ones(m, bool)])
        o = np.lexsort((-p2, w2))
        w2, p2, parent, flag = w2[o], p2[o], parent[o], flag[o]
        prev_max = np.maximum.accumulate(np.concatenate([[-np.inf], p2[:-1]]))
        keep = p2 > prev_max
        w2, p2, parent, flag = w2[keep], p2[keep], parent[keep], flag[keep]
        step = len(items)
        feas = w2 <= cap
        if feas.any():
            k = int(np.flatnonzero(feas)[-1])   # heaviest feasible state = most valuable
            if p2[k] > best_val + tol:
                best_val, best_at = float(p2[k]), (step, k)
        ub = _state_bounds(w2, p2, feas, cap, s, t, cw, cp, e)
        sel = np.flatnonzero(ub > best_val + tol)
        if 0 < beam < sel.size:
            top = np.argpartition(-ub[sel], beam)[:beam]
            sel = np.sort(sel[top])
        items.append(item)
        signs.append(sign)
        parents.append(parent.astype(np.int32))
        flags.append(flag)
        sels.append(sel.astype(np.int32))
        stored += parent.size + sel.size
        if stored > budget:
            raise _BudgetExceeded("state budget")
        ws, ps = w2[sel], p2[sel]
    # The search space is exhausted: best_val is optimal (within tol).
    if best_at is None:
        return None, lb
    take = np.zeros(n, bool)
    take[:b] = True
    step, k = best_at
    while step >= 0:
        if flags[step][k]:
            take[items[step]] = signs[step] > 0
        q = int(parents[step][k])           # index into the survivors of step - 1
        step -= 1
        k = int(sels[step][q]) if step >= 0 else q
    return take, best_val


def solve_knapsack(p: np.ndarray, w: np.ndarray, cap: int, deadline: float | None = None,
                   budget: int = STATE_BUDGET, gap: float = 0.0) -> KnapsackResult:
    """Maximize sum p[i] over a subset with sum w[i] <= cap (w integral, >= 0).

    Items with p <= 0 are never taken; items with w == 0 and p > 0 always are. gap > 0:
    stop as soon as the incumbent is proven within that fraction of the optimum (the
    result then says optimal only if it is)."""
    p = np.asarray(p, np.float64)
    w = np.asarray(w, np.int64)
    cap = int(max(cap, 0))
    free = (p > 0) & (w == 0)                  # take no room: always in
    free_val = float(p[free].sum())
    cand = np.flatnonzero((p > 0) & (w > 0) & (w <= cap))
    if cand.size == 0:
        return KnapsackResult(free, free_val, free_val, True, "greedy")
    s = _Sorted(p[cand], w[cand])
    ub = float(s.dantzig(np.array([cap]))[0])
    g = _greedy(s, cap)
    lb = float(s.p[g].sum())

    def result(sorted_take: np.ndarray, value: float, bound: float, optimal: bool,
               method: str, core: np.ndarray | None = None, core_cap: int = 0) -> KnapsackResult:
        out = free.copy()
        out[cand[s.order[sorted_take]]] = True
        core_idx = cand[s.order[core]] if core is not None else np.zeros(0, np.int64)
        value += free_val
        bound = max(bound + free_val, value)
        return KnapsackResult(out, value, bound, optimal, method, core_idx, core_cap)

    if ub - lb <= _tol(ub):
        return result(g, lb, lb, True, "greedy")
    if ub - lb <= gap * ub:
        return result(g, lb, ub, False, "greedy")
    # A beam search over the reduced core first: a near-optimal incumbent makes the
    # reduction and the exact pass far stronger.
    fix_in, fix_out = _reduce(s, cap, lb)
    core = np.flatnonzero(~fix_in & ~fix_out)
    cap2 = cap - int(s.w[fix_in].sum())
    try:
        sub, val = _core_dp(s.p[core], s.w[core], s.e[core], cap2,
                            lb - float(s.p[fix_in].sum()), deadline, budget, beam=BEAM)
    except _BudgetExceeded:
        sub = None
    if sub is not None:
        cand_take = fix_in.copy()
        cand_take[core[sub]] = True
        if float(s.p[cand_take].sum()) > lb:
            g, lb = cand_take, float(s.p[cand_take].sum())
            fix_in, fix_out = _reduce(s, cap, lb)
            core = np.flatnonzero(~fix_in & ~fix_out)
            cap2 = cap - int(s.w[fix_in].sum())
    fixed_val = float(s.p[fix_in].sum())
    if ub - lb <= _tol(ub):
        return result(g, lb, lb, True, "dp")
    if ub - lb <= gap * ub:
        return result(g, lb, ub, False, "dp")
    # The exact pass; the core keeps the efficiency order of the sorted items.
    try:
        sub, val = _core_dp(s.p[core], s.w[core], s.e[core], cap2, lb - fixed_val,
                            deadline, budget)
    except _BudgetExceeded:
        return result(g, lb, ub, False, "incumbent", core, cap2)
    if sub is None:
        return result(g, lb, lb, True, "dp")
    best = fix_in.copy()
    best[core[sub]] = True
    return result(best, float(s.p[best].sum()), fixed_val + val, True, "dp")
