"""Placement strategies of `hmtune advise`: misses, density, ilp, ilp-lifetime.

`solve(problem, strategy)` returns a Placement from the strategy's solver
(hmtune/advisor/solve/), kept within each tier's capacity, chunk tails included
(arena_fit.py); `capacity_curve` and `capacity_for_share` feed the report. The exact
strategies reduce the Problem to its limited tiers: a site's baseline is its best
unlimited tier (normally the fallback, worth 0), and the profit of a limited tier is its
value above that baseline (solve/limited.py, solve/assign.py, solve/lifetime.py). The
heuristics report a proven bound too (the Lagrangian bound of solve/assign.py), so every
Placement carries a gap.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from hmtune.advisor import arena_fit
from hmtune.advisor.model import Placement, Problem
from hmtune.advisor.solve import greedy, ilp, knapsack
from hmtune.advisor.solve.limited import Limited

STRATEGIES = ("misses", "density", "ilp", "ilp-lifetime")


def solve(problem: Problem, strategy: str, threshold_pct: float = 1.0,
          time_limit_s: float = 30.0, gap_target: float = 1e-4) -> Placement:
    """Place the sites of `problem` with `strategy` (one of STRATEGIES).

    threshold_pct: misses only, sites under this % of the total weight stay put.
    time_limit_s, gap_target: the exact strategies stop at this wall time or once
    the proven relative gap is at most gap_target (0: prove optimality), whichever
    comes first. A missing or failing MIP solver gives the density placement with
    a note; ilp-lifetime without problem.allocs raises ValueError. The placement is
    then kept within each tier's capacity, chunk tails included (arena_fit.py)."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}: use one of {', '.join(STRATEGIES)}")
    red = Limited(problem)
    placement = _solve(problem, strategy, threshold_pct, time_limit_s, gap_target, red)
    return arena_fit.fit(problem, placement, red.base_tier, red.values)


def solve_split(problem: Problem, whole: Problem, strategy: str, threshold_pct: float = 1.0,
                time_limit_s: float = 30.0, gap_target: float = 1e-4) -> tuple[Placement, bool]:
    """solve() for a problem whose sites split.py cut into ranges, and for `whole`, the
    same sites uncut: placing a cut site whole is a choice its pieces cannot always
    express (each range costs a mapping; in bigger pages part of a scattered object
    gains less than its share). The better placement, and whether it is `whole`'s."""
    cut = solve(problem, strategy, threshold_pct, time_limit_s, gap_target)
    alt = solve(whole, strategy, threshold_pct, time_limit_s, gap_target)
    if alt.value > cut.value * (1 + 1e-9):
        return alt, True
    return cut, False


def _solve(problem: Problem, strategy: str, threshold_pct: float, time_limit_s: float,
           gap_target: float, red: Limited) -> Placement:
    deadline = time.monotonic() + max(0.0, time_limit_s)
    if strategy in ("misses", "density"):
        return greedy.placement(problem, strategy, threshold_pct, red)
    if strategy == "ilp-lifetime":
        if problem.allocs is None:
            raise ValueError("ilp-lifetime needs the per-allocation table (allocs.csv), "
                             "which this problem does not have")
        return ilp.lifetime_placement(problem, red, deadline, gap_target)
    return ilp.ilp_placement(problem, red, deadline, gap_target)


# ---- capacity curve for the report -----------------------------------------------

CURVE_SHARES = (0.5, 0.8, 0.9, 0.95, 0.99)
CURVE_GAP = 1e-4        # each point's knapsack: proven within 0.01 % (the report's precision)


def capacity_curve(problem: Problem, points: int = 64,
                   whole: Problem | None = None) -> pd.DataFrame:
    """Best placement into tier 0 alone (plus the fallback) as its capacity grows
    from 0 to everything worth placing: one exact knapsack per point.

    Capacities are page-rounded cumulative sizes of the sites in value-per-page
    order: half spread evenly over the captured value, half geometrically over
    the capacity, plus the points where the captured weight crosses CURVE_SHARES,
    0 and the total. With `whole` (the same sites before split.py cut some into
    ranges, in the same tiers), the points of both, each the better of the two
    problems' best placements there: placing a site whole is one choice of the split
    problem, so its curve is never below the whole-object curve. Columns:
    capacity_bytes, value, weight (sampled weight of the placed sites), share (weight
    / total weight), sites, whole (the point's placement is the whole-object one)."""
    page = problem.unit(problem.tiers[0])
    alts = [problem] if whole is None else [problem, whole]
    caps = sorted(set().union(*(_curve_caps(p, points) for p in alts)))
    denom = greedy.weight_denominator(problem)
    rows = []
    for c in caps:
        best: dict[str, float | int | bool] = {}
        for k, p in enumerate(alts):
            fb = len(p.tiers) - 1
            v = p.values()[:, 0] - p.values()[:, fb]
            res = knapsack.solve_knapsack(v, p.units(0), c, gap=CURVE_GAP)
            if best and res.value <= float(best["value"]) * (1 + CURVE_GAP):
                continue
            w = float(p.weights[res.take].sum())
            best = {"capacity_bytes": c * page, "value": res.value, "weight": w,
                    "share": w / denom if denom else 0.0, "sites": int(res.take.sum()),
                    "whole": k == 1}
        rows.append(best)
    return pd.DataFrame(rows, columns=["capacity_bytes", "value", "weight", "share", "sites",
                                       "whole"])


def _curve_caps(problem: Problem, points: int) -> set[int]:
    """capacity_curve's points for one problem, in tier 0's pages."""
    fb = len(problem.tiers) - 1
    v = problem.values()[:, 0] - problem.values()[:, fb]
    pages = problem.units(0)
    pos = np.flatnonzero(v > 0)
    order = pos[np.lexsort((-v[pos], -(v[pos] / np.maximum(pages[pos], 1))))]
    cum_pages = np.concatenate([[0], np.cumsum(pages[order])])
    cum_val = np.concatenate([[0.0], np.cumsum(v[order])])
    cum_w = np.concatenate([[0.0], np.cumsum(problem.weights[order])])
    m = len(order)
    picks = {0, m}
    if m:
        half = max(1, points // 2)
        picks.update(np.searchsorted(cum_val, np.linspace(0, cum_val[-1], half)).tolist())
        positive = cum_pages[cum_pages > 0]
        lo = int(positive[0]) if positive.size else 1
        geo = np.geomspace(lo, max(lo, cum_pages[-1]), max(1, points - half))
        picks.update(np.searchsorted(cum_pages, geo).tolist())
        picks.update(np.searchsorted(cum_w, np.asarray(CURVE_SHARES) * cum_w[-1]).tolist())
    return {int(cum_pages[min(j, m)]) for j in picks}


def capacity_for_share(curve: pd.DataFrame, share: float = 0.9) -> int:
    """Smallest capacity of the curve whose placement captures `share` of the weight
    that the whole curve can capture (its largest captured weight)."""
    if curve.empty:
        return 0
    target = share * float(curve["weight"].max())
    ok = curve[curve["weight"] >= target - 1e-12 * max(1.0, target)]
    return int(ok["capacity_bytes"].min())
