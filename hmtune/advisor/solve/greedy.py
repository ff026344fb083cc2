"""The misses and density strategies: an order of the sites, then first fit.

First fit: a site goes to the fastest tier that is worth something to it
(value(i, t) > 0) and still has room for its size rounded up to that tier's pages;
failing all, to the fallback. Unlimited tiers always have room. Sites worth nothing
in every tier stay in the fallback. `placement` gives the Placement of either, with
the Lagrangian bound of the limited tiers (limited.py), so a heuristic carries a gap.
"""

from __future__ import annotations

import numpy as np

from hmtune.advisor.model import Placement, Problem
from hmtune.advisor.solve.limited import Limited


def weight_denominator(problem: Problem) -> float:
    """What shares are taken of: the trace's total weight, else the sites' weight."""
    if problem.total_weight > 0:
        return float(problem.total_weight)
    return float(np.sum(problem.weights))


def misses_order(problem: Problem, threshold_pct: float) -> np.ndarray:
    """Sites by weight, heaviest first, without those under threshold_pct % of the
    total weight (ties keep the sites' order)."""
    limit = threshold_pct / 100.0 * weight_denominator(problem)
    order = np.argsort(-problem.weights, kind="stable")
    return order[problem.weights[order] >= limit]


def density_key(problem: Problem) -> np.ndarray:
    """What the density orders rank per unit of size: a site's weight, plus its
    first-touch value in tier 0 (page faults avoided, in weight units), so a site that
    gains by first touch alone is ranked, less its calls' cost there."""
    return (problem.weights + problem.first_touch_values()[:, 0]
            - problem.call_cost_values()[:, 0])


def density_order(problem: Problem) -> np.ndarray:
    """Sites by density_key per unit of their size in tier 0, densest first."""
    pages = np.maximum(problem.units(0), 1)
    return np.argsort(-(density_key(problem) / pages), kind="stable")


def first_fit(problem: Problem, order: np.ndarray) -> np.ndarray:
    """tier_of for the sites taken in `order`; everything else in the fallback."""
    values = problem.values()
    nt = len(problem.tiers)
    tier_of = np.full(problem.n, nt - 1, np.int64)
    room = [t.capacity for t in problem.tiers]
    sizes = [problem.rounded_sizes(t) for t in range(nt)]
    for i in order.tolist():
        for t in range(nt - 1):
            if values[i, t] <= 0:
                continue
            cap = room[t]
            if cap is None:
                tier_of[i] = t
                break
            need = int(sizes[t][i])
            if need <= cap:
                room[t] = cap - need
                tier_of[i] = t
                break
    return tier_of


def placement(problem: Problem, strategy: str, threshold_pct: float, red: Limited) -> Placement:
    """The misses (threshold_pct: the least share of the weight) or density placement."""
    if strategy == "misses":
        order = misses_order(problem, threshold_pct)
    else:
        order = density_order(problem)
    tier_of = first_fit(problem, order)
    value = red.value(tier_of)
    return Placement(tier_of, strategy, value, max(value, red.bound()), "greedy")
