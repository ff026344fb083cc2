"""A Problem seen from its limited tiers, as the exact strategies solve it.

A site's baseline is its best unlimited tier (normally the fallback, where its
value is 0; an unlimited tier faster than the fallback takes whatever it is worth
more). The profit of limited tier k is value(i, k) minus the baseline, its weight the
size in the tier's pages (peak_live_bytes rounded up to the page size), its capacity
the tier's capacity in whole pages. Sites not placed in a limited tier go to their
baseline tier.
"""

from __future__ import annotations

import numpy as np

from hmtune.advisor.model import Problem
from hmtune.advisor.solve.assign import TierProblem, dual_bound, prices


class Limited:
    """The Problem seen from its limited tiers."""

    def __init__(self, problem: Problem) -> None:
        tiers = problem.tiers
        if not tiers or not tiers[-1].unlimited:
            raise ValueError("the last tier is the fallback and must be unlimited")
        self.values = problem.values()
        nt = len(tiers)
        self.limited = [t for t in range(nt - 1) if not tiers[t].unlimited]
        unlimited = [t for t in range(nt) if tiers[t].unlimited]
        # Baseline: the best unlimited tier; on equal value the later one (the
        # fallback wins ties, so nothing moves for no gain).
        uv = self.values[:, unlimited]
        pick = len(unlimited) - 1 - np.argmax(uv[:, ::-1], axis=1)
        self.base_tier = np.asarray(unlimited, np.int64)[pick]
        self.base_value = uv[np.arange(problem.n), pick]
        k = len(self.limited)
        profit = np.zeros((problem.n, k))
        weight = np.zeros((problem.n, k), np.int64)
        cap = np.zeros(k, np.int64)
        for j, t in enumerate(self.limited):
            profit[:, j] = self.values[:, t] - self.base_value
            weight[:, j] = problem.units(t)
            cap[j] = problem.capacity_units(t)
        self.tp = TierProblem(profit, weight, cap)

    def tier_of(self, assign: np.ndarray) -> np.ndarray:
        out = self.base_tier.copy()
        on = assign >= 0
        out[on] = np.asarray(self.limited, np.int64)[assign[on]]
        return out

    def value(self, tier_of: np.ndarray) -> float:
        return float(self.values[np.arange(len(tier_of)), tier_of].sum())

    def bound(self) -> float:
        """Lagrangian (LP) bound on the best static placement."""
        ok = self.tp.allowed()
        return float(self.base_value.sum()) + dual_bound(self.tp, ok, prices(self.tp, ok))
