"""The advisor's data model, shared by the tier readers, the strategies and the writers.

A `Problem` is the sites of one `sites.csv` (sizes already per process) plus the
tiers, fastest first; a `Placement` says which tier each site goes to and how good
that choice is known to be.

Value of a site in a tier: the sampled cost the site would no longer pay there,
relative to the fallback tier (the last one, where everything was when the trace
was taken). A site's weight is split into a load part and a store part in
proportion to its sampled loads and stores (all loads when it has neither), and each
part shrinks by the ratio of the tier's cost to the fallback's:

    value(i, t) = w_i * (f_load_i * (1 - load_cost_t / load_cost_fb)
                         + f_store_i * (1 - store_cost_t / store_cost_fb))

so the fallback's value is 0 and a tier no faster than the fallback is worth
nothing. The size a site needs in a tier is its `peak_live_bytes` rounded up to the
tier's page size.

A static variable is a site of its symbol's size, live for the whole run; libhmalloc
moves only the whole pages inside it (2 MiB pages for hugetlb, THP and memkind's
hugepage kinds, else 4 KiB), so its value in a tier is scaled by the share of its
bytes in those pages (`Problem.fraction`, `static_fraction`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

KIB = 1 << 10
MIB = 1 << 20


@dataclass(frozen=True)
class Tier:
    name: str
    capacity: int | None        # bytes per process (per node when per_node); None: unlimited
    backend: str                # "memkind:KIND", "numa:NODES", "hugetlb", "thp", "default"
    load_cost: float = 1.0
    store_cost: float = 1.0
    page_size: int = 4 * KIB    # sizes are rounded up to this in the tier
    per_node: bool = False      # capacity shared by the ranks of one node

    @property
    def unlimited(self) -> bool:
        return self.capacity is None


@dataclass
class Problem:
    """Sites (parallel arrays, one entry per site) and tiers (fastest first)."""

    site_ids: np.ndarray        # int64
    sizes: np.ndarray           # int64, peak_live_bytes (not rounded)
    weights: np.ndarray         # float64, >= 0
    loads: np.ndarray           # int64 sampled loads
    stores: np.ndarray          # int64 sampled stores
    tiers: list[Tier]
    total_weight: float = 0.0   # all sampled weight of the trace (share denominator)
    # ilp-lifetime only: allocs.csv rows (site_id, rank, size, t_alloc, t_free)
    allocs: pd.DataFrame | None = None
    # [site, tier]: the share of a site's weight that placing it there captures (None:
    # all of it; statics: static_fraction)
    fraction: np.ndarray | None = None

    @property
    def n(self) -> int:
        return len(self.site_ids)

    def rounded_sizes(self, tier: int) -> np.ndarray:
        """Sizes rounded up to tier `tier`'s page size."""
        page = np.int64(self.tiers[tier].page_size)
        return ((self.sizes + page - 1) // page) * page

    def values(self) -> np.ndarray:
        """value[i, t] for every site and tier (the fallback column is 0)."""
        fb = self.tiers[-1]
        acc = (self.loads + self.stores).astype(np.float64)
        f_store = np.divide(self.stores, acc, out=np.zeros(self.n), where=acc > 0)
        f_load = 1.0 - f_store
        out = np.zeros((self.n, len(self.tiers)))
        for t, tier in enumerate(self.tiers[:-1]):
            gain_l = max(0.0, 1.0 - tier.load_cost / fb.load_cost)
            gain_s = max(0.0, 1.0 - tier.store_cost / fb.store_cost)
            out[:, t] = self.weights * (f_load * gain_l + f_store * gain_s)
        if self.fraction is not None:
            out *= self.fraction
        return out


HUGE_PAGE = 2 * MIB


def static_granularity(tier: Tier) -> int:
    """The pages libhmalloc moves a static's range in for this tier's backend: 2 MiB
    for hugetlb and THP (the 2 MiB-aligned part) and memkind's hugepage kinds, else
    4 KiB (mbind of the whole pages)."""
    b = tier.backend
    if b in ("hugetlb", "thp") or (b.startswith("memkind:") and "HUGETLB" in b):
        return HUGE_PAGE
    return 4 * KIB


def static_fraction(offset: int, size: int, page: int) -> float:
    """The share of a static's bytes in whole pages of `page` bytes inside it: exact for
    4 KiB pages (modules load at page boundaries, so the offset tells); for 2 MiB
    pages, whose boundaries depend on where the module is loaded, the expected share
    over every place it can be (size - 2 MiB, or nothing)."""
    if size <= 0:
        return 0.0
    if page <= 4 * KIB:
        inner = (offset + size) // page * page - -(-offset // page) * page
    else:
        inner = size - page
    return max(0, inner) / size


@dataclass
class Placement:
    """tier_of[i]: index into problem.tiers for site i (the fallback when not placed)."""

    tier_of: np.ndarray         # int64
    strategy: str
    value: float                # sum of value(i, tier_of[i])
    bound: float                # proven upper bound on the best value (== value when optimal)
    solver: str = ""            # e.g. "knapsack-exact", "cbc", "highs", "greedy"
    notes: list[str] = field(default_factory=list)   # warnings for the user (fallbacks, limits)

    @property
    def gap(self) -> float:
        """Proven relative optimality gap (0 when optimal; 0 when nothing is worth anything)."""
        return 0.0 if self.bound <= 0 else max(0.0, (self.bound - self.value) / self.bound)
