"""The size window's cost: which placed sites are worth the calls they make libhmalloc
look up.

libhmalloc looks up the call stack of every request inside placement.txt's size-window
(the smallest to the largest request of any placed site, hmtune/advisor/outputs.py),
placed or not: outside it a call costs one compare. A placed site whose requests are
small therefore makes every small call of the program pay the lookup (an unwound stack
and a match), whatever site it comes from. Measured on bench-apps' BWA-MEM here: the
advisor's placement at 90 MiB (its 61 MiB index and two split tables, plus five small
sites of a few hundred bytes) ran 11.5-13.7 s, as slow as nothing placed, because its
window reached down to 2 bytes; the same big objects alone (window from 1 MiB) ran
9.3-9.8 s.

`trim` weighs that cost after a strategy has placed the sites: for each candidate
lower bound L (the smallest request of each placed site), the sites whose smallest
request is at least L stay placed and the others go to the fallback; the value kept is
their value less the cost of the other sites' calls inside [L, largest request] (each
one the fastest tier's alloc_cost_ns, in weight units; allocs.csv's blocks, small-call
sampling's scaled). The best L wins; ties keep more sites. Without allocs.csv (no
request sizes) nothing changes. Only removes sites, so capacities still hold; the
value and bound both lose the dropped sites' values, so the gap reported is the
strategy's own.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from hmtune.advisor.model import Placement, Problem


def trim(problem: Problem, table: pd.DataFrame, placement: Placement,
         allocs: pd.DataFrame | None) -> tuple[Placement, str | None]:
    """The placement with the sites the window's cost outweighs sent to the fallback, and
    a note saying what was dropped (None when nothing was)."""
    last = len(problem.tiers) - 1
    if allocs is None or not len(allocs) or problem.ns_weight <= 0 or not problem.n:
        return placement, None
    statics = problem.statics if problem.statics is not None else np.zeros(problem.n, bool)
    placed = np.flatnonzero((placement.tier_of != last) & ~statics)
    if placed.size < 2:
        return placement, None
    cost_ns = min(problem.tiers[int(t)].call_cost_ns for t in set(placement.tier_of[placed]))
    if cost_ns <= 0:
        return placement, None
    parent = (table["parent_id"].to_numpy(np.int64) if "parent_id" in table.columns
              else problem.site_ids)
    sizes = allocs["size"].to_numpy(np.int64)
    scale = (allocs["scale"].to_numpy(np.float64) if "scale" in allocs.columns
             else np.ones(len(allocs)))
    owner = allocs["site_id"].to_numpy(np.int64)
    smallest = pd.Series(sizes).groupby(owner).min()
    lo_of = np.array([int(smallest.get(int(parent[i]), 0)) for i in placed], np.int64)
    mine = np.isin(owner, parent[placed])
    hi = int(sizes[mine].max(initial=0))
    values = problem.values()[placed, placement.tier_of[placed]]
    # calls of unplaced sites by request size, for the cost of each lower bound
    other = ~mine & (sizes <= hi)
    order = np.argsort(sizes[other], kind="stable")
    osz, ocalls = sizes[other][order], np.cumsum(scale[other][order][::-1])[::-1]

    def window_cost(lo: int) -> float:
        k = int(np.searchsorted(osz, lo, side="left"))
        return float(ocalls[k]) * cost_ns * problem.ns_weight if k < osz.size else 0.0

    best_lo, best = 0, None
    for lo in sorted(set(lo_of.tolist())):
        got = float(values[lo_of >= lo].sum()) - window_cost(lo)
        if best is None or got > best + 1e-9 * max(1.0, abs(best)):
            best_lo, best = lo, got
    below = lo_of < best_lo
    drop = placed[below]
    if not drop.size:
        return placement, None
    tier_of = placement.tier_of.copy()
    tier_of[drop] = last
    lost = float(values[below].sum())
    note = (f"{len(set(parent[drop].tolist()))} placed site(s) with requests under "
            f"{best_lo} bytes left in the fallback: libhmalloc looks up every request in "
            "the placement's size window, and the other sites' calls they would bring "
            f"into it cost more than they gain (window from {best_lo} bytes)")
    return replace(placement, tier_of=tier_of, value=placement.value - lost,
                   bound=max(placement.bound - lost, placement.value - lost)), note
