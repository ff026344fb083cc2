"""What a trace's hardware counters say of each site (counters.csv, docs/formats.md §5
"Counters in the value"): the share of its sampled time that waits on memory, and
whether its accesses are bandwidth-bound.

The sampler alone values every sampled nanosecond of a site as memory time and tells
streamed from scattered accesses by their addresses (sites.csv `weight_KIND`). Where
counters.csv gives a site's counts over enough of its samples (MIN_SAMPLES):

- memory share: the cycles stalled on memory over all cycles of the intervals its
  samples stand for (PAPI_MEM_SCY / PAPI_TOT_CYC, or a native stall count). The part of
  the site's time that is not waiting (computing on data already in cache) gains
  nothing from a faster tier, so its access value is scaled by this share. Only for
  weights that are time (the software sampler's CPU ns); PEBS/IBS weights are already
  the sampled loads' latencies.
- bandwidth-bound: the last-level misses' traffic (64 bytes each) per second of those
  intervals at least the machine's bound (the fallback tier's bandwidth_bound_gbs,
  else BANDWIDTH_BOUND: `bound_for`). Then the site's accesses that are not
  synchronization are valued as streamed (the tier's bandwidth ratio), else as
  scattered (its latency ratio): this replaces the sampler's split for that site.

`Counted.source` says which sites' values came from counters; the report lists them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hmtune.analyze.counters import counters_next_to, site_figures, total_figures
from hmtune.machine.tiers import KINDS, Tier

# samples of a site that took a reading before its counts are used: fewer give a share
# whose sampling error (one interval's mix of sites) is over a third
MIN_SAMPLES = 10
# bytes/s per thread of last-level misses above which a site is bandwidth-bound. A
# dependent chase moves one 64-byte line per miss latency: 0.5-0.7 GB/s at DDR's
# 90-130 ns, less on CXL or PMem; a core streaming with its prefetchers moves 5-15 GB/s
# alone, and ~3 GB/s when every core of a Xeon Max 9468 socket streams from its DDR5
# (~150 GB/s over 48 cores). 2 GB/s lies between, a factor 3 from each. The default
# when a machine file does not give its own (docs/formats.md §5 says how one is derived).
BANDWIDTH_BOUND = 2.0e9


def bound_for(tiers: list[Tier]) -> float:
    """Bytes/s per thread from which a site is bandwidth-bound on this machine: its
    fallback tier's (where the traced run's data was), else BANDWIDTH_BOUND."""
    fb = tiers[-1].bandwidth_bound if tiers else None
    return BANDWIDTH_BOUND if fb is None else fb


def bound_of(bandwidth: np.ndarray, threshold: float) -> np.ndarray:
    """Per miss traffic (bytes/s per thread; NaN unknown): 1.0 bandwidth-bound (at least
    threshold), 0.0 latency-bound, NaN unknown."""
    out = np.full(np.shape(bandwidth), np.nan)
    known = ~np.isnan(bandwidth)
    out[known] = (np.asarray(bandwidth)[known] >= threshold).astype(np.float64)
    return out


@dataclass
class Counted:
    """Per site (the problem's order): what counters say, NaN where they say nothing."""

    memory_share: np.ndarray        # share of its time stalled on memory, 0..1
    bandwidth: np.ndarray           # its misses' traffic, bytes/s per thread
    names: list[str]                # the trace's counters
    threshold: float                # bytes/s per thread from which a site is bound

    @property
    def bound(self) -> np.ndarray:
        """1.0 bandwidth-bound, 0.0 latency-bound, NaN unknown."""
        return bound_of(self.bandwidth, self.threshold)

    @property
    def source(self) -> np.ndarray:
        """Whether a site's value came from counters (its share or its bound)."""
        return ~np.isnan(self.memory_share) | ~np.isnan(self.bandwidth)


def load_counted(sites_csv: Path, site_ids: np.ndarray, threshold: float,
                 merged: dict[int, int] | None = None) -> Counted | None:
    """The counters of the analyze output next to sites_csv for these sites (ids after
    the merge of shared chains, `merged`), bandwidth-bound from threshold bytes/s per
    thread (bound_for); None without counters.csv or without any
    site the counters say something of. Raises CountersFormatError (a ValueError)."""
    data = counters_next_to(sites_csv)
    if data is None:
        return None
    figures = site_figures(data, merged)
    share = np.full(len(site_ids), np.nan)
    bw = np.full(len(site_ids), np.nan)
    for i, sid in enumerate(site_ids.tolist()):
        f = figures.get(int(sid))
        if f is None or f.samples < MIN_SAMPLES:
            continue
        if (s := f.stall_share) is not None:
            share[i] = s
        if (b := f.miss_bytes_per_s) is not None:
            bw[i] = b
    c = Counted(share, bw, list(data.names), threshold)
    return c if c.source.any() else None


def uncounted_reason(sites_csv: Path) -> str | None:
    """Why counters.csv next to sites_csv valued no site (load_counted gave None): the
    report's line; None without counters.csv."""
    data = counters_next_to(sites_csv)
    if data is None:
        return None
    names = ", ".join(data.names) or "no counter"
    whole = total_figures(data)
    if whole.stall_share is None and whole.misses is None:
        return (f"counters.csv records {names}, which give neither memory stall cycles "
                "over cycles nor last-level misses: every site valued from the sampler alone")
    return (f"counters.csv records {names}, but no site has their counts over "
            f"{MIN_SAMPLES} or more samples: every site valued from the sampler alone")


def counted_shares(shares: np.ndarray | None, counted: Counted) -> np.ndarray:
    """The kind shares (Problem.kind_shares; None: none known) with the counted sites'
    split replaced: all that is not synchronization streamed when bandwidth-bound,
    scattered when not."""
    n = counted.bandwidth.size
    out = np.zeros((n, len(KINDS))) if shares is None else shares.copy()
    bound = counted.bound
    known = ~np.isnan(bound)
    sync = out[:, KINDS.index("sync")]
    rest = np.clip(1.0 - sync, 0.0, 1.0)
    stream, scatter = KINDS.index("streaming"), KINDS.index("scattered")
    out[known, stream] = np.where(bound[known] > 0, rest[known], 0.0)
    out[known, scatter] = np.where(bound[known] > 0, 0.0, rest[known])
    return out


def memory_factor(counted: Counted, time_weights: bool) -> np.ndarray | None:
    """Per site the factor on its access value: its memory share where counted and
    the weights are time, else 1. None when no site has one."""
    if not time_weights or np.isnan(counted.memory_share).all():
        return None
    return np.where(np.isnan(counted.memory_share), 1.0, counted.memory_share)
