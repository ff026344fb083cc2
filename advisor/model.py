"""The advisor's data model, shared by the tier readers, the strategies and the writers.

A `Problem` is the sites of one `sites.csv` (sizes already per process) plus the
tiers, fastest first; a `Placement` says which tier each site goes to and how good
that choice is known to be.

Value of a site in a tier: the cost the site would no longer pay there, relative to
the fallback tier (the last one, where everything was when the trace was taken), for
each thing the tier speeds up (`Tier.speeds_up`):

- access (sampled access stalls): a site's weight is split into a load part and a
  store part in proportion to its sampled loads and stores (all loads when it has
  neither), and each part shrinks by the ratio of the tier's cost to the fallback's:

      access(i, t) = w_i * (f_load_i * (1 - load_cost_t / load_cost_fb)
                            + f_store_i * (1 - store_cost_t / store_cost_fb))

- first_touch (page faults): the site's estimated minor faults F_i (sites.csv
  `faults`), of which the tier keeps the fraction faults_kept_t, each avoided one
  saving fault_cost_ns_t:

      first_touch(i, t) = F_i * (1 - faults_kept_t) * fault_cost_ns_t * ns_weight

  ns_weight converts ns into the unit of the weights: 1 for the software sampler
  (weights are CPU ns) and for traces without access samples; 0 for PEBS/IBS (their
  weights are sampled latency cycles, which ns do not convert to), where first touch
  is left out with a note. A hugetlb tier serves only requests of 1 MiB or more
  (smaller ones stay in ordinary pages), so a site whose largest request is smaller
  avoids no fault there.

value(i, t) = access(i, t) + first_touch(i, t), so the fallback's value is 0 and a
tier no faster than the fallback is worth nothing. The size a site needs in a tier is
its `peak_live_bytes` rounded up to the tier's page size.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

KIB = 1 << 10
MIB = 1 << 20
HUGETLB_MIN = 1 << 20           # HMI_HUGETLB_MIN: smaller hugetlb requests are not placed
SPEEDS_UP = ("access", "first_touch")   # what a tier can speed up (Tier.speeds_up)


def ns_weight(sampler: str) -> float:
    """Weight units per ns of first-touch time for sites.csv's `sampler`: 1 where the
    weights are ns (the software sampler) or where there are none; 0 where they are
    PEBS/IBS latency cycles or of an unknown sampler (first touch is then left out)."""
    name = (sampler or "none").strip().lower()
    return 1.0 if name.startswith("soft") or name in ("none", "") else 0.0


@dataclass(frozen=True)
class Tier:
    name: str
    capacity: int | None        # bytes per process (per node when per_node); None: unlimited
    backend: str                # "memkind:KIND", "numa:NODES", "hugetlb", "thp", "default"
    load_cost: float = 1.0
    store_cost: float = 1.0
    page_size: int = 4 * KIB    # sizes are rounded up to this in the tier
    per_node: bool = False      # capacity shared by the ranks of one node
    speeds_up: tuple[str, ...] = ("access",)   # of SPEEDS_UP
    fault_cost_ns: float = 0.0  # first_touch: ns saved per minor fault avoided
    faults_kept: float = 1.0    # first_touch: fraction of a site's faults still taken here

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
    # first touch: estimated minor faults per site (None: sites.csv has none), the
    # largest request per site (None: not known; the hugetlb rule is then not applied),
    # and weight units per ns (module docstring)
    faults: np.ndarray | None = None
    max_sizes: np.ndarray | None = None
    ns_weight: float = 1.0

    @property
    def n(self) -> int:
        return len(self.site_ids)

    def rounded_sizes(self, tier: int) -> np.ndarray:
        """Sizes rounded up to tier `tier`'s page size."""
        page = np.int64(self.tiers[tier].page_size)
        return ((self.sizes + page - 1) // page) * page

    def values(self) -> np.ndarray:
        """value[i, t] for every site and tier (the fallback column is 0): access plus
        first touch."""
        return self.access_values() + self.first_touch_values()

    def access_values(self) -> np.ndarray:
        """The access part of value[i, t] (0 in tiers that do not speed up access)."""
        fb = self.tiers[-1]
        acc = (self.loads + self.stores).astype(np.float64)
        f_store = np.divide(self.stores, acc, out=np.zeros(self.n), where=acc > 0)
        f_load = 1.0 - f_store
        out = np.zeros((self.n, len(self.tiers)))
        for t, tier in enumerate(self.tiers[:-1]):
            if "access" not in tier.speeds_up:
                continue
            gain_l = max(0.0, 1.0 - tier.load_cost / fb.load_cost)
            gain_s = max(0.0, 1.0 - tier.store_cost / fb.store_cost)
            out[:, t] = self.weights * (f_load * gain_l + f_store * gain_s)
        return out

    def first_touch_values(self) -> np.ndarray:
        """The first-touch part of value[i, t]: page faults avoided times what each
        costs, in weight units (0 without fault data or a unit to convert ns into)."""
        out = np.zeros((self.n, len(self.tiers)))
        if self.faults is None or self.ns_weight <= 0:
            return out
        for t, tier in enumerate(self.tiers[:-1]):
            if "first_touch" not in tier.speeds_up:
                continue
            saved = self.faults * max(0.0, 1.0 - tier.faults_kept) * tier.fault_cost_ns
            if tier.backend == "hugetlb" and self.max_sizes is not None:
                saved = np.where(self.max_sizes >= HUGETLB_MIN, saved, 0.0)
            out[:, t] = saved * self.ns_weight
        return out


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
