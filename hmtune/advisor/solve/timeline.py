"""When each site's blocks are live, reduced to the moments that matter.

Capacity is per process, so each rank has its own timeline. A block is live on
[t_alloc, t_free) (t_free = -1: to the end); at equal times frees come before
allocations. The live set only grows through a run of allocations, so every
moment's live set is contained in the one just before the next free (or at the end
of the rank's events): those moments, the peaks, are the only ones to check.

Peaks are numbered over all ranks (rank-major, in time order), so a block is live
on a contiguous range [lo, hi) of peak numbers. Each block counts what its limited
tier would charge for it (hmtune/advisor/granularity.py), in that tier's units, rounded up
per block (conservative: the sum of rounded blocks is at least the rounded sum), times
the blocks a row stands for (allocs.csv `scale`, small-call sampling: that many blocks
of its size live over its interval).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

ALLOC_COLUMNS = ("site_id", "rank", "size", "t_alloc", "t_free")


class Timeline:
    """Blocks of the placeable sites as ranges of peaks, pages per limited tier."""

    def __init__(self, allocs: pd.DataFrame, site_ids: np.ndarray, sizes: np.ndarray,
                 units: list[Callable[[np.ndarray], np.ndarray]]) -> None:
        """units: per limited tier, block sizes -> what the tier charges, in its units."""
        missing = [c for c in ALLOC_COLUMNS if c not in allocs.columns]
        if missing:
            raise ValueError(f"allocs table lacks column(s) {', '.join(missing)}")
        n = len(site_ids)
        site = pd.Index(np.asarray(site_ids)).get_indexer(allocs["site_id"].to_numpy())
        keep = site >= 0
        rank = allocs["rank"].to_numpy(np.int64)[keep]
        size = allocs["size"].to_numpy(np.int64)[keep]
        scale = (allocs["scale"].to_numpy(np.int64)[keep] if "scale" in allocs.columns
                 else np.ones(size.size, np.int64))
        t0 = allocs["t_alloc"].to_numpy(np.float64)[keep]
        t1 = allocs["t_free"].to_numpy(np.float64)[keep]
        site = site[keep].astype(np.int64)
        t1 = np.where(t1 < 0, np.inf, t1)
        live = t1 > t0                              # [t, t) is never live
        rank, size, t0, t1, site = rank[live], size[live], t0[live], t1[live], site[live]
        scale = scale[live]
        self.unseen = np.setdiff1d(np.arange(n), site)   # sites without any block
        if self.unseen.size:
            # Conservative: such a site is live at its peak size all the time, everywhere.
            ranks = np.unique(rank) if rank.size else np.zeros(1, np.int64)
            extra_site = np.repeat(self.unseen, ranks.size)
            rank = np.concatenate([rank, np.tile(ranks, self.unseen.size)])
            size = np.concatenate([size, sizes[extra_site]])
            scale = np.concatenate([scale, np.ones(extra_site.size, np.int64)])
            t0 = np.concatenate([t0, np.full(extra_site.size, -np.inf)])
            t1 = np.concatenate([t1, np.full(extra_site.size, np.inf)])
            site = np.concatenate([site, extra_site])
        nb = site.size
        # Events: (rank, time, kind) with kind 0 = free before 1 = alloc.
        has_free = np.isfinite(t1)
        ev_block = np.concatenate([np.arange(nb), np.flatnonzero(has_free)])
        ev_rank = rank[ev_block]
        ev_time = np.concatenate([t0, t1[has_free]])
        ev_kind = np.concatenate([np.ones(nb, np.int8), np.zeros(int(has_free.sum()), np.int8)])
        order = np.lexsort((ev_kind, ev_time, ev_rank))
        ev_block, ev_rank, ev_kind = ev_block[order], ev_rank[order], ev_kind[order]
        ne = ev_block.size
        pos = np.arange(ne)
        alloc_pos = np.empty(nb, np.int64)
        alloc_pos[ev_block[ev_kind == 1]] = pos[ev_kind == 1]
        # Never freed: live to the end of the rank's events.
        rank_end = np.searchsorted(ev_rank, ev_rank, side="right")
        free_pos = np.empty(nb, np.int64)
        free_pos[ev_block[ev_kind == 1]] = rank_end[ev_kind == 1]
        free_pos[ev_block[ev_kind == 0]] = pos[ev_kind == 0]
        nxt_kind = np.concatenate([ev_kind[1:], [0]])
        nxt_rank = np.concatenate([ev_rank[1:], [-1]])
        is_peak = (ev_kind == 1) & ((nxt_kind == 0) | (nxt_rank != ev_rank))
        peak_pos = pos[is_peak]
        self.n = n
        self.n_peaks = int(peak_pos.size)
        self.peak_rank = ev_rank[is_peak]
        self.site = site
        self.lo = np.searchsorted(peak_pos, alloc_pos, side="left")
        self.hi = np.searchsorted(peak_pos, free_pos, side="left")
        self.pages = [f(size) * scale for f in units]            # per tier, per row
        self._by_site = np.argsort(site, kind="stable")
        self._site_start = np.searchsorted(site[self._by_site], np.arange(n + 1))

    def blocks_of(self, i: int) -> np.ndarray:
        return self._by_site[self._site_start[i]:self._site_start[i + 1]]

    def usage(self, assign: np.ndarray, k: int) -> np.ndarray:
        """Pages of tier k in use at every peak when site i is in tier assign[i]
        (fractional assignments allowed: assign may be a 0..1 weight per site)."""
        if assign.dtype.kind == "f":
            w = assign[self.site] * self.pages[k]
        else:
            w = np.where(assign[self.site] == k, self.pages[k], 0)
        diff = np.zeros(self.n_peaks + 1)
        np.add.at(diff, self.lo, w)
        np.add.at(diff, self.hi, -w)
        return np.cumsum(diff)[:-1]

    def row(self, q: int, k: int) -> np.ndarray:
        """Pages of tier k that each site has live at peak q."""
        on = (self.lo <= q) & (q < self.hi)
        return np.bincount(self.site[on], weights=self.pages[k][on], minlength=self.n)

    def segments(self, i: int, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Site i's live pages of tier k as constant pieces over the peaks:
        breakpoints bp (pieces [bp[j], bp[j+1])) and the pages of each piece."""
        b = self.blocks_of(i)
        if b.size == 0:
            return np.zeros(1, np.int64), np.zeros(0)
        pts = np.concatenate([self.lo[b], self.hi[b]])
        bp = np.unique(pts)
        diff = np.zeros(bp.size)
        np.add.at(diff, np.searchsorted(bp, self.lo[b]), self.pages[k][b])
        np.add.at(diff, np.searchsorted(bp, self.hi[b]), -self.pages[k][b])
        return bp, np.cumsum(diff)[:-1]

    def peak_pages(self, k: int) -> np.ndarray:
        """Each site's own largest live pages of tier k at any peak."""
        out = np.zeros(self.n)
        for i in range(self.n):
            bp, val = self.segments(i, k)
            if val.size:
                out[i] = val.max()
        return out
