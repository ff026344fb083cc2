"""The advisor's data model, shared by the problem's readers, the strategies and the writers.

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

  Where counters.csv measured a site (hmtune/advisor/counted.py), its access value is
  scaled by the share of its time stalled on memory (software sampler), and whether it
  is bandwidth-bound decides its streamed and scattered shares below.

  Where sites.csv gives the weight per access kind (KINDS: streaming, scattered,
  synchronization; `weight_KIND`) and the machine file gives a tier or the fallback a
  cost per kind (`KIND_cost`, `Tier.kind_costs`; a kind it does not list costs its
  load_cost), each kind's share s_ik of the weight shrinks by that kind's ratio, and
  only the rest by the load/store formula above:

      access(i, t) = w_i * (sum_k s_ik * (1 - cost_k,t / cost_k,fb)
                            + (1 - sum_k s_ik) * (the load/store gain above))

  HBM speeds up bandwidth, not latency or waiting on other threads: on the Xeon Max
  files a streamed array gains the bandwidth ratio, a chased one or a lock array
  nothing; hugepages speed up the TLB's reach: a scattered array gains, a streamed one
  little.

- first_touch (page faults): the site's estimated minor faults F_i (sites.csv
  `faults`), of which the tier keeps the fraction faults_kept_t, each avoided one
  saving fault_cost_ns_t:

      first_touch(i, t) = F_i * (1 - faults_kept_t) * fault_cost_ns_t * ns_weight

  ns_weight converts ns into the unit of the weights: 1 for the software sampler
  (weights are CPU ns) and for traces without access samples; 0 for PEBS/IBS (their
  weights are sampled latency cycles, which ns do not convert to), where first touch
  is left out with a note.

- calls (what placing costs): every allocation of a placed site takes libhmalloc's
  placing path (its call stack unwound and matched, the tier's allocator, and the
  matching free) instead of the default allocator's; the tier's alloc_cost_ns is what
  that adds per allocation, over the site's allocation calls C_i (sites.csv `n_allocs`,
  estimated for small-call sampled sites; 0 for static variables):

      calls(i, t) = C_i * alloc_cost_ns_t * ns_weight

  so a site of many small, short-lived objects is worth placing only when its sampled
  accesses gain more than its calls cost (bench-apps' BWA-MEM: 3.1 M placed
  allocations cost more than the hugepages gained).

  On a tier of bigger pages of the same memory (hugetlb, THP: core.backends.pages_only)
  the access gain is the TLB's, and a site whose peak live bytes fit the first-level
  TLB's reach in 4 KiB pages gains nothing: access(i, t) = 0 when the site's peak is
  at most the tier's min_span (access_min_span, default machine.tiers.SMALL_SPAN,
  256 KiB).

value(i, t) = access(i, t) + first_touch(i, t) - calls(i, t), so the fallback's value is
0 and a tier no faster than the fallback is worth nothing (less: its calls).

The size a site needs in a tier is what libhmalloc charges the tier for it at the
site's peak (hmtune/advisor/granularity.py: objects up to the backend's arena limit take their
size class, larger ones their size rounded up to the mapping's page): exactly, from
the site's blocks in allocs.csv (the most charged at once in one process); else
estimated from sites.csv (`peak_live_bytes` in objects of the site's mean size, or
blocks rounded up); then rounded up to UNIT (4 KiB), the unit in which the strategies
count sizes and capacities. A `default` tier (which places nothing) takes the peak
rounded up to its page.

A static variable is a site of its symbol's size, live for the whole run, charged its
size (libhmalloc moves only the whole pages inside it and charges those); since only
those pages move (2 MiB pages for hugetlb, THP and memkind's hugepage kinds, else
4 KiB), its value in a tier is scaled by the share of its bytes in them
(`Problem.fraction`, `static_fraction`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from hmtune.advisor import granularity
from hmtune.core.backends import pages_only
from hmtune.core.units import KIB
from hmtune.machine.tiers import KINDS, Tier

# What part of an object in bigger pages gains of the scattered accesses' gain, per
# share of its bytes (a split piece on a pages_only tier): the 4 KiB pages left keep
# missing the TLB and evicting the 2 MiB entries. make bench-tlbspan --part
# (bench/results/tlbspan-part-2026-11-29-vm.txt), a dependent random chase over one
# object: half of it in 2 MiB pages gains 5-19 % of the whole's gain (12 % at the
# middle), three quarters 15-48 % (31 %): the gain of a part f is about f^PART_POWER
# (0.5^3 = 0.125, 0.75^3 = 0.42), so f^(PART_POWER - 1) of its share, f the part of the
# object the tier can hold (split.part_factor). The demo's latency pool, 74 % of it
# placed (bench-apps 2026-11-29b), gained 49 % of every site fast's: 0.66 of its share
# against 0.55 by this rule.
PART_POWER = 3.0


def ns_weight(sampler: str) -> float:
    """Weight units per ns of first-touch time for sites.csv's `sampler`: 1 where the
    weights are ns (the software sampler) or where there are none; 0 where they are
    PEBS/IBS latency cycles or of an unknown sampler (first touch is then left out)."""
    name = (sampler or "none").strip().lower()
    return 1.0 if name.startswith("soft") or name in ("none", "") else 0.0


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
    # first touch: estimated minor faults per site (None: sites.csv has none) and
    # weight units per ns (module docstring)
    faults: np.ndarray | None = None
    ns_weight: float = 1.0
    # the granularity model's inputs (sites.csv's columns; None: one object of the
    # peak's size per site) and allocs.csv's rows for exact charges (None: estimated)
    samples: np.ndarray | None = None   # sampled accesses per site (the weight's precision)
    max_sizes: np.ndarray | None = None
    n_allocs: np.ndarray | None = None
    total_bytes: np.ndarray | None = None
    blocks: pd.DataFrame | None = None
    _charged: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    # [site, tier]: the share of a site's weight that placing it there captures (None:
    # all of it; statics: static_fraction), and which sites are static variables
    fraction: np.ndarray | None = None
    statics: np.ndarray | None = None
    # allocation calls charged the tier's call cost (None: n_allocs; split pieces: their
    # share of the site's)
    calls: np.ndarray | None = None
    # [site, kind of KINDS]: the share of a site's weight of each access kind (None:
    # unknown, every access valued by the load/store costs); split pieces: their site's
    kind_shares: np.ndarray | None = None
    # [site]: the factor on the scattered accesses' gain in a pages_only tier (None: 1;
    # split pieces, a part of their object: split.part_factor)
    part_scattered: np.ndarray | None = None
    # [site]: the factor on its access value, the share of its time stalled on memory
    # where counters measured it (None: 1 for all; hmtune/advisor/counted.py); [site, 2]:
    # what counters say of it, its memory share and its misses' bytes/s (NaN: nothing;
    # None: no counters)
    memory_factor: np.ndarray | None = None
    counted: np.ndarray | None = None

    @property
    def n(self) -> int:
        return len(self.site_ids)

    @staticmethod
    def unit(tier: Tier) -> int:
        """The unit in which a tier's sizes and capacity are counted."""
        return tier.page_size if tier.backend == "default" else granularity.UNIT

    def rounded_sizes(self, tier: int) -> np.ndarray:
        """What each site needs in tier `tier` (module doc), a multiple of its unit."""
        t = self.tiers[tier]
        unit = np.int64(self.unit(t))
        if t.backend == "default":
            return ((self.sizes + unit - 1) // unit) * unit
        got = self._charged.get(t.backend)
        if got is None:
            got = self._charges(t.backend)
            got = ((got + unit - 1) // unit) * unit
            self._charged[t.backend] = got
        return got

    def units(self, tier: int) -> np.ndarray:
        """rounded_sizes in the tier's units."""
        return self.rounded_sizes(tier) // self.unit(self.tiers[tier])

    def block_units(self, tier: int) -> Callable[[np.ndarray], np.ndarray]:
        """Block sizes -> what tier `tier` charges for each block, in its units: rounded
        up to whole pages on a `default` tier, else exact (an object packed in the arena
        takes its class, a fraction of a unit: 16 bytes is 1/256 of 4 KiB, so sums stay
        exact in float64)."""
        t = self.tiers[tier]
        unit = np.int64(self.unit(t))

        def f(sizes: np.ndarray) -> np.ndarray:
            if t.backend == "default":
                return -(-np.asarray(sizes, np.int64) // unit)
            return granularity.charges(sizes, t.backend).astype(np.float64) / float(unit)
        return f

    def capacity_units(self, tier: int) -> int:
        t = self.tiers[tier]
        assert t.capacity is not None
        return int(t.capacity) // self.unit(t)

    def _charges(self, backend: str) -> np.ndarray:
        peak = self.sizes.astype(np.int64)
        mx = self.max_sizes if self.max_sizes is not None else peak
        na = self.n_allocs if self.n_allocs is not None else np.ones(self.n, np.int64)
        tb = self.total_bytes if self.total_bytes is not None else peak
        out = np.full(self.n, -1, np.int64)
        if self.blocks is not None and len(self.blocks):
            out = charged_peaks(self.blocks, self.site_ids, backend)
        # estimated where no block is known (sites.csv alone)
        for i in np.flatnonzero(out < 0).tolist():
            out[i] = granularity.estimate(int(peak[i]), int(mx[i]), int(na[i]), int(tb[i]),
                                          backend)
        if self.statics is not None:        # charged the whole pages moved: at most its size
            out = np.where(self.statics, peak, out)
        return out

    def values(self) -> np.ndarray:
        """value[i, t] for every site and tier (the fallback column is 0): access plus
        first touch, less the calls' cost."""
        return self.access_values() + self.first_touch_values() - self.call_cost_values()

    def call_costs(self) -> np.ndarray:
        """Allocation calls per site that placing it pays for (statics none)."""
        calls = self.calls if self.calls is not None else self.n_allocs
        if calls is None:
            return np.zeros(self.n)
        out = np.asarray(calls, np.float64).copy()
        if self.statics is not None:
            out[self.statics] = 0.0
        return out

    def call_cost_values(self) -> np.ndarray:
        """What placing each site in each tier costs, in weight units (module doc:
        calls); 0 in the fallback and without a unit to convert ns into."""
        out = np.zeros((self.n, len(self.tiers)))
        if self.ns_weight <= 0:
            return out
        calls = self.call_costs()
        for t, tier in enumerate(self.tiers[:-1]):
            out[:, t] = calls * tier.call_cost_ns * self.ns_weight
        return out

    def access_values(self) -> np.ndarray:
        """The access part of value[i, t] (0 in tiers that do not speed up access)."""
        return self.kind_values().sum(axis=2)

    def kind_values(self) -> np.ndarray:
        """access_values by what gains: [site, tier, j], j the access kinds of KINDS,
        then the rest (weight of no known kind, valued by the load/store costs; all of
        it without kind shares or kind costs)."""
        fb = self.tiers[-1]
        acc = (self.loads + self.stores).astype(np.float64)
        f_store = np.divide(self.stores, acc, out=np.zeros(self.n), where=acc > 0)
        f_load = 1.0 - f_store
        out = np.zeros((self.n, len(self.tiers), len(KINDS) + 1))
        for t, tier in enumerate(self.tiers[:-1]):
            if "access" not in tier.speeds_up:
                continue
            gain_l = max(0.0, 1.0 - tier.load_cost / fb.load_cost)
            gain_s = max(0.0, 1.0 - tier.store_cost / fb.store_cost)
            legacy = f_load * gain_l + f_store * gain_s
            ks = self.kind_shares
            if ks is None or not (tier.kind_costs or fb.kind_costs):
                out[:, t, -1] = self.weights * legacy
            else:
                gains = np.array([max(0.0, 1.0 - tier.kind_cost(k) / fb.kind_cost(k))
                                  for k in KINDS])
                per = ks * gains[None, :]
                if self.part_scattered is not None and pages_only(tier.backend):
                    per[:, KINDS.index("scattered")] *= self.part_scattered
                rest = np.clip(1.0 - ks.sum(axis=1), 0.0, 1.0)
                out[:, t, :-1] = self.weights[:, None] * per
                out[:, t, -1] = self.weights * rest * legacy
            if tier.min_span > 0:       # a span the TLB holds anyway: no access gain
                out[self.sizes <= tier.min_span, t, :] = 0.0
        if self.fraction is not None:
            out *= self.fraction[:, :, None]
        if self.memory_factor is not None:
            out *= self.memory_factor[:, None, None]
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
            out[:, t] = saved * self.ns_weight
        return out


def group_starts(*keys: np.ndarray) -> np.ndarray:
    """Boolean: the row starts a new group of equal keys (rows sorted by the keys)."""
    n = keys[0].size
    start = np.zeros(n, bool)
    if n:
        start[0] = True
        for k in keys:
            start[1:] |= k[1:] != k[:-1]
    return start


def group_cumsum(values: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Cumulative sum of values restarted at each group start."""
    if not values.size:
        return np.cumsum(values)
    cum = np.cumsum(values)
    idx = np.flatnonzero(start)
    before = np.concatenate([[0], cum[idx[1:] - 1]])
    return cum - before[np.cumsum(start) - 1]


def charged_peaks(blocks: pd.DataFrame, site_ids: np.ndarray, backend: str) -> np.ndarray:
    """Per site, the most the backend charges for its live blocks at once in one
    process (frees before allocations at equal times, as analyze orders them); -1 for
    a site without blocks. blocks: site_id, rank, size, t_alloc, t_free (-1: never), and
    optionally scale (the blocks a row stands for, small-call sampling: its charge counts
    that many times)."""
    site = pd.Index(np.asarray(site_ids)).get_indexer(blocks["site_id"].to_numpy())
    keep = site >= 0
    site = site[keep].astype(np.int64)
    rank = blocks["rank"].to_numpy(np.int64)[keep]
    cost = granularity.charges(blocks["size"].to_numpy(np.int64)[keep], backend)
    if "scale" in blocks.columns:
        cost = cost * blocks["scale"].to_numpy(np.int64)[keep]
    t0 = blocks["t_alloc"].to_numpy(np.float64)[keep]
    t1 = blocks["t_free"].to_numpy(np.float64)[keep]
    freed = t1 >= 0
    ev_site = np.concatenate([site, site[freed]])
    ev_rank = np.concatenate([rank, rank[freed]])
    ev_time = np.concatenate([t0, t1[freed]])
    ev_kind = np.concatenate([np.ones(site.size, np.int8), np.zeros(int(freed.sum()), np.int8)])
    ev_delta = np.concatenate([cost, -cost[freed]])
    order = np.lexsort((ev_kind, ev_time, ev_rank, ev_site))
    ev_site, ev_rank, ev_delta = ev_site[order], ev_rank[order], ev_delta[order]
    out = np.full(len(site_ids), -1, np.int64)
    if not ev_site.size:
        return out
    # running sum per (site, rank)
    live = group_cumsum(ev_delta, group_starts(ev_site, ev_rank))
    np.maximum.at(out, ev_site, live)
    return np.maximum(out, np.where(np.isin(np.arange(len(site_ids)), site), 0, -1))


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
