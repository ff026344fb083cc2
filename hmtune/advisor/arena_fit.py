"""What a tier's placed sites really take, chunk tails included, and the repair that
keeps a placement within the tier's capacity.

The strategies charge an object packed in libhmalloc's arena its size class
(hmtune/advisor/granularity.py). The arena maps 2 MiB chunks and cuts them into slabs
of 64 KiB to 2 MiB (8 objects' worth, granularity.slab_size), each holding objects of
one class, cut from the slab's start in order (interpose/hmi_arena.c). Every thread
shares a class's slabs; what a class cuts is its most objects live at once in the
process plus what its thread stripes may hold back (granularity.cut: at most
granularity.held objects per stripe beyond the first for a class of up to 8 KiB, none
above), never given back. Where a chunk is one 2 MiB page (`hugetlb`, `umf:hugetlb`,
memkind's hugepage kinds, `thp`) the tier also takes the unused end of the last slab
of every class it serves, and of the last chunk cut into slabs of each size. On a
small tier, or with many classes, that can push a placement past the capacity, and
the objects that come last then fall back at run time (hugetlb: the reserved pool
runs out). On 4 KiB pages a slab's untouched end takes no memory: only the pages its
objects reach count.

`footprint` is one process's most bytes at once in a tier for a set of sites: from
allocs.csv, the slabs each (rank, class) has cut so far (its objects live at once so
far, summed over threads, plus granularity.held per thread stripe of the rank beyond
the first, the stripes counted from the threads allocating in the tier), on hugepages
rounded up per (rank, slab size) to whole chunks, plus the live blocks of their own,
over time; without allocs.csv, the sites' charges plus one slab's rounding per class
of their mean object size. hmtune/workflows/reserve.arena_pages counts the same
chunks for `hmtune run --reserve-hugepages`.
`fit` repairs a placement whose footprint exceeds a tier's capacity: among the sites
live where the footprint peaks (the others cannot lower it), it moves back to their
baseline tier the ones that give up the least value per byte they free (measured for
the CANDIDATES least valuable of them and the CANDIDATES least valuable per byte
charged), then places again, densest first, sites that now fit.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from hmtune.advisor import granularity
from hmtune.advisor.model import Placement, Problem, group_cumsum, group_starts
from hmtune.core.backends import huge_pages

CANDIDATES = 32         # sites whose freed bytes are measured per repair step
FILL_TRIES = 64         # sites tried when placing again


def rank_stripes(rank: np.ndarray, thread: np.ndarray) -> np.ndarray:
    """Per block, the thread stripes its rank uses (granularity.stripes of the distinct
    threads of that rank among these blocks)."""
    if not rank.size:
        return np.zeros(0, np.int64)
    pairs = np.unique(np.stack([rank, thread]), axis=1)
    ranks, counts = np.unique(pairs[0], return_counts=True)
    per = np.array([granularity.stripes(int(n)) for n in counts], np.int64)
    return per[np.searchsorted(ranks, rank)]


def arena_page(backend: str) -> int:
    """The page a slab's memory is taken in: the whole slab (and chunk) on hugepages."""
    return granularity.CHUNK if huge_pages(backend) else granularity.SMALL_PAGE


def class_bytes(objects: np.ndarray, cs: np.ndarray, page: int) -> np.ndarray:
    """Memory `objects` objects of class cs cut in order from a class's slabs take:
    full slabs, each the pages its objects reach (on hugepages the whole slab), plus
    the pages the last one's objects reach."""
    slab = granularity.slab_sizes(cs)
    unit = np.minimum(slab, page)
    per = slab // cs
    full, rest = objects // per, objects % per
    whole = -(-(per * cs) // unit) * unit
    return full * whole + -(-(rest * cs) // unit) * unit


def _group_cummax(values: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Running maximum restarted at each group start (values >= 0)."""
    if not values.size:
        return values
    group = np.cumsum(start) - 1
    # offset every group above the previous ones, so one running max serves all
    span = float(values.max()) + 1.0
    shifted = values + group * span
    return np.maximum.accumulate(shifted) - group * span


def _blocks_peak(blocks: pd.DataFrame, backend: str) -> tuple[int, tuple[int, int] | None]:
    """blocks_footprint, and the (rank, time) where it is reached (None: no blocks)."""
    if not len(blocks):
        return 0, None
    size = blocks["size"].to_numpy(np.int64)
    rank = blocks["rank"].to_numpy(np.int64)
    scale = _scales(blocks)
    thread = (blocks["thread"].to_numpy(np.int64) if "thread" in blocks.columns
              else np.zeros(size.size, np.int64))
    t0 = blocks["t_alloc"].to_numpy(np.int64)
    t1 = blocks["t_free"].to_numpy(np.int64)
    freed = t1 >= 0
    packed = size <= granularity.arena_max(backend)

    # blocks of their own: +charge at the allocation, -charge at the free
    own = ~packed
    ev_rank, ev_time, ev_kind, ev_delta = (
        [x] for x in _block_events(rank[own], t0[own], t1[own],
                                   granularity.charges(size[own], backend) * scale[own]))

    # arena: live objects per (rank, class) over every thread; slabs follow their
    # running peak plus what the rank's stripes may hold back (granularity.cut)
    if packed.any():
        cs = granularity.class_sizes(size[packed])
        pf = freed[packed]
        slack = granularity.helds(cs) * (rank_stripes(rank[packed], thread[packed]) - 1)
        k_rank = np.concatenate([rank[packed], rank[packed][pf]])
        k_cls = np.concatenate([cs, cs[pf]])
        k_slack = np.concatenate([slack, slack[pf]])
        k_time = np.concatenate([t0[packed], t1[packed][pf]])
        k_kind = np.concatenate([np.ones(int(packed.sum()), np.int8),
                                 np.zeros(int(pf.sum()), np.int8)])
        k_delta = np.concatenate([scale[packed], -scale[packed][pf]])
        order = np.lexsort((k_kind, k_time, k_cls, k_rank))
        k_rank, k_cls, k_slack = k_rank[order], k_cls[order], k_slack[order]
        k_time, k_kind, k_delta = k_time[order], k_kind[order], k_delta[order]
        start = group_starts(k_rank, k_cls)
        live = group_cumsum(k_delta, start)
        peak = _group_cummax(live.astype(np.float64), start).astype(np.int64)
        peak = np.where(peak > 0, peak + k_slack, 0)
        mem = class_bytes(peak, k_cls, arena_page(backend))
        prev = np.concatenate([[0], mem[:-1]])
        prev[start] = 0
        grew = mem > prev
        g_rank, g_time, g_delta = k_rank[grew], k_time[grew], (mem - prev)[grew]
        page = arena_page(backend)
        if page == granularity.CHUNK and g_rank.size:
            # slabs of one size share chunks: per (rank, slab size) whole chunks
            code = granularity.slab_sizes(k_cls[grew])
            o = np.lexsort((g_time, code, g_rank))
            g_rank, g_time, code, g_delta = g_rank[o], g_time[o], code[o], g_delta[o]
            cut = group_cumsum(g_delta, group_starts(g_rank, code))
            chunks = -(-cut // page) * page
            before = np.concatenate([[0], chunks[:-1]])
            before[group_starts(g_rank, code)] = 0
            g_delta = chunks - before
        ev_rank.append(g_rank)
        ev_time.append(g_time)
        ev_kind.append(np.ones(g_rank.size, np.int8))
        ev_delta.append(g_delta)

    r = np.concatenate(ev_rank)
    if not r.size:
        return 0, None
    r, t, used = _running_use(r, np.concatenate(ev_time), np.concatenate(ev_kind),
                              np.concatenate(ev_delta))
    q = int(np.argmax(used))
    return int(max(0, used[q])), (int(r[q]), int(t[q]))


def _scales(blocks: pd.DataFrame) -> np.ndarray:
    """The blocks each row stands for (allocs.csv `scale`; 1 without the column)."""
    return (blocks["scale"].to_numpy(np.int64) if "scale" in blocks.columns
            else np.ones(len(blocks), np.int64))


def _block_events(rank: np.ndarray, t0: np.ndarray, t1: np.ndarray, cost: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Blocks as events (rank, time, kind, delta): +cost at the allocation (kind 1),
    -cost at the free (kind 0, first at equal times) for the blocks freed (t1 >= 0)."""
    freed = t1 >= 0
    return (np.concatenate([rank, rank[freed]]), np.concatenate([t0, t1[freed]]),
            np.concatenate([np.ones(rank.size, np.int8), np.zeros(int(freed.sum()), np.int8)]),
            np.concatenate([cost, -cost[freed]]))


def _running_use(r: np.ndarray, t: np.ndarray, kind: np.ndarray, delta: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The events in time order per rank (frees before allocations at equal times) and
    each rank's bytes in use after each: (rank, time, used)."""
    order = np.lexsort((kind, t, r))
    r, t = r[order], t[order]
    return r, t, group_cumsum(delta[order], group_starts(r))


def blocks_footprint(blocks: pd.DataFrame, backend: str) -> int:
    """One process's most bytes at once (the largest over ranks) that these blocks take
    in a tier of this backend: arena chunks mapped so far plus blocks of their own.
    blocks: site_id, rank, size, t_alloc, t_free (never freed: -1 or past the end),
    optionally thread and scale."""
    return _blocks_peak(blocks, backend)[0]


def _placed_blocks(problem: Problem, placed: np.ndarray) -> pd.DataFrame | None:
    """The blocks (allocs.csv rows, with times) of the sites placed[i]; None when the
    problem has no such table."""
    blocks = problem.blocks if problem.blocks is not None else problem.allocs
    if blocks is None or not len(blocks) or "t_alloc" not in blocks:
        return None
    return blocks[blocks["site_id"].isin(problem.site_ids[placed])]


def footprint(problem: Problem, tier: int, placed: np.ndarray) -> int:
    """One process's most bytes at once in tier `tier` for the sites placed[i] (a
    boolean mask): from their blocks where the problem has them, else their charges plus
    one chunk's rounding per size class (module doc)."""
    if not placed.any():
        return 0
    t = problem.tiers[tier]
    charged = problem.rounded_sizes(tier)
    total = 0
    with_blocks = np.zeros(problem.n, bool)
    inside = _placed_blocks(problem, placed)
    if inside is not None:
        total += blocks_footprint(inside, t.backend)
        with_blocks = np.isin(problem.site_ids, inside["site_id"].unique()) & placed
    rest = placed & ~with_blocks
    total += int(charged[rest].sum())
    # sites of packed objects known from sites.csv alone: their charge in objects of
    # their mean size's class, laid out in chunks per class
    if problem.statics is not None:
        rest &= ~problem.statics
    limit = granularity.arena_max(t.backend)
    if limit == 0:
        return total
    mx = problem.max_sizes if problem.max_sizes is not None else problem.sizes
    rest &= (mx > 0) & (mx <= limit)
    if rest.any():
        na = problem.n_allocs if problem.n_allocs is not None else np.ones(problem.n, np.int64)
        tb = problem.total_bytes if problem.total_bytes is not None else problem.sizes
        mean = np.maximum(1, tb[rest] // np.maximum(na[rest], 1))
        cs = granularity.class_sizes(np.minimum(mean, limit))
        objs = -(-charged[rest] // cs)
        classes, which = np.unique(cs, return_inverse=True)
        n = np.bincount(which, weights=objs).astype(np.int64)      # objects per class
        page = arena_page(t.backend)
        # as one thread (the threads are not known without allocs.csv): no slack
        mem = class_bytes(n, classes, page)
        if page == granularity.CHUNK:       # slabs of one size share whole chunks
            _, code = np.unique(granularity.slab_sizes(classes), return_inverse=True)
            cut = np.bincount(code, weights=mem).astype(np.int64)
            mem = -(-cut // page) * page
        total += int(mem.sum()) - int((n * classes).sum())
    return total


def charged_at_once(problem: Problem, tier: int, placed: np.ndarray) -> int | None:
    """One process's most bytes at once that libhmalloc charges tier `tier` for the
    sites placed[i] (its statistics' high_water_bytes): each live block's charge (its
    size class in the arena, else whole pages: granularity.charges) and the charges of
    sites without blocks, but not the arena's partly used slabs and chunks that
    footprint adds; None when the placed sites have no blocks."""
    inside = _placed_blocks(problem, placed)
    if inside is None or not len(inside):
        return None
    backend = problem.tiers[tier].backend
    size = inside["size"].to_numpy(np.int64)
    cost = granularity.charges(size, backend) * _scales(inside)
    _, _, used = _running_use(*_block_events(
        inside["rank"].to_numpy(np.int64), inside["t_alloc"].to_numpy(np.int64),
        inside["t_free"].to_numpy(np.int64), cost))
    rest = placed & ~np.isin(problem.site_ids, inside["site_id"].unique())
    return int(max(0, used.max())) + int(problem.rounded_sizes(tier)[rest].sum())


def _live_at_peak(problem: Problem, tier: int, placed: np.ndarray) -> np.ndarray | None:
    """Sites with a block in the tier at the moment its footprint peaks (on that rank;
    an arena block from its allocation on: its slab stays), and the sites without
    blocks; None when the placed sites have no blocks."""
    inside = _placed_blocks(problem, placed)
    if inside is None:
        return None
    backend = problem.tiers[tier].backend
    _, moment = _blocks_peak(inside, backend)
    if moment is None:
        return None
    rank, when = moment
    b = inside[inside["rank"].to_numpy(np.int64) == rank]
    t0 = b["t_alloc"].to_numpy(np.int64)
    t1 = b["t_free"].to_numpy(np.int64)
    packed = b["size"].to_numpy(np.int64) <= granularity.arena_max(backend)
    live = (t0 <= when) & (packed | (t1 < 0) | (t1 > when))
    out = np.isin(problem.site_ids, b["site_id"].to_numpy()[live])
    return out | ~np.isin(problem.site_ids, inside["site_id"].unique())


def fit(problem: Problem, placement: Placement, base_tier: np.ndarray,
        values: np.ndarray) -> Placement:
    """placement with every limited tier's footprint within its capacity (module doc);
    base_tier[i]: where site i goes when it leaves a tier; values[i, t]: its value
    there. Tiers without an arena (`default`) have no tails and are left as they are.
    The placement is returned changed in place, with a note when it was."""
    moved_out = moved_in = 0
    for t, tier in enumerate(problem.tiers[:-1]):
        if tier.capacity is None or granularity.arena_max(tier.backend) == 0:
            continue
        cap = int(tier.capacity)
        placed = placement.tier_of == t
        if not placed.any():
            continue
        used = footprint(problem, t, placed)
        if used <= cap:
            continue
        charged = problem.rounded_sizes(t)
        gain = values[:, t] - values[np.arange(problem.n), base_tier]
        while used > cap and placed.any():
            idx = np.flatnonzero(placed)
            at = _live_at_peak(problem, t, placed)
            if at is not None and (placed & at).any():
                idx = np.flatnonzero(placed & at)     # only these can lower the peak
            # the least valuable sites, and the least valuable per byte: a big range of
            # a split site may free a whole chunk for less than many small sites' worth
            low = idx[np.argsort(gain[idx], kind="stable")[:CANDIDATES]]
            thin = idx[np.argsort(gain[idx] / np.maximum(charged[idx], 1),
                                  kind="stable")[:CANDIDATES]]
            cand = np.concatenate([low, thin[~np.isin(thin, low)]])
            best, best_rate, best_used = -1, np.inf, used
            for i in cand:
                placed[i] = False
                after = footprint(problem, t, placed)
                placed[i] = True
                freed = used - after
                if freed <= 0:
                    continue
                rate = max(0.0, float(gain[i])) / freed
                if rate < best_rate:
                    best, best_rate, best_used = int(i), rate, after
            if best < 0:    # nothing frees anything alone: drop the least worth per byte
                best = int(cand[np.argmin(gain[cand] / np.maximum(charged[cand], 1))])
                placed[best] = False
                best_used = footprint(problem, t, placed)
                placed[best] = True
            placed[best] = False
            placement.tier_of[best] = base_tier[best]
            used = best_used
            moved_out += 1
        # place again what now fits, densest first
        free_sites = np.flatnonzero((placement.tier_of == base_tier) & (gain > 0)
                                    & (charged <= cap - used))
        order = free_sites[np.argsort(-gain[free_sites] / np.maximum(charged[free_sites], 1),
                                      kind="stable")]
        for i in order[:FILL_TRIES]:
            if charged[i] > cap - used:
                continue
            placed[i] = True
            after = footprint(problem, t, placed)
            if after <= cap:
                placement.tier_of[i] = t
                used = after
                moved_in += 1
            else:
                placed[i] = False
    if moved_out or moved_in:
        value = float(values[np.arange(problem.n), placement.tier_of].sum())
        placement.value = value
        placement.bound = max(placement.bound, value)
        placement.notes.append(
            f"the arena's partly used slabs and 2 MiB chunks (per size class, with what "
            f"each thread stripe may hold back) did not fit the capacity: {moved_out} "
            f"site(s) left the tier and {moved_in} took their room")
    return placement
