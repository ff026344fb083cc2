"""Split sites: place the hot ranges of a site's objects, not only whole objects.

analyze's profile.csv says where in a site's objects the sampled weight falls (offsets
from each object's start, summed over its objects). `expand` turns every site whose
largest object spans at least two range units into pieces, one per offset range, each
a site of its own for the strategies: its weight is the site's weight in that range,
its blocks (allocs.csv) are the site's blocks cut to the range, so the exact charges,
the lifetime model and the arena check all hold for pieces as they do for sites. Every
strategy then chooses whole sites or ranges of sites at once, and its proven bound is a
bound over both (placing every piece of a site is placing the site). `ranges` gathers a
solved placement's pieces back into their site: placement.txt's `split` lines.

The range unit is 2 MiB on every backend (a hugepage; on NUMA tiers a finer unit
would be possible, at more ranges per object), or the profile's granularity when that
is coarser. A site's buckets of that unit are merged into at most MAX_RANGES ranges of
similar density (adjacent ranges whose merge changes the weight-per-byte picture the
least go first: Ward's criterion in one dimension), so zero-weight runs become one
range each and the hot window keeps its edges to the unit.

What a range costs beyond its bytes: libhmalloc maps each placed range of each object
with one more mmap call (docs/formats.md §6); MAP_COST_NS per range and object is
taken off the piece's value where weights are ns (the software sampler), so a range
worth less than its mappings stays out. A piece's blocks are charged as mappings of
their own: a range at the object's end that is shorter than the arena's largest class
is charged as one just over it (on hugetlb the whole 2 MiB page the interposer maps;
elsewhere at most 1 MiB more than the interposer takes).

A site whose samples are spread evenly over its objects (hmtune.analyze.profile's flatness
test) is cut into equal contiguous pieces weighted by their bytes instead, the earlier
ones a millionth heavier: its sampled ranges would differ only by noise, and a strategy
that takes part of it then takes one range from the object's start.

Static variables are split the same way (placement.txt's `static-split` lines): their
profile's offsets are from the object's start, and each piece's value in a tier is
scaled, like a whole static's, by the share of its bytes in the pages libhmalloc will
move there (hmtune.advisor.model.static_fraction over the piece's extent: exact on 4 KiB
pages; on 2 MiB pages, whose boundaries depend on the load address, its expected share
(L - 2 MiB) / L). That loses a page per piece where libhmalloc loses one per run of
adjacent placed pieces, so on 2 MiB tiers a static is split only when the tier cannot
hold it whole (whole, its value is exact), into fewer, longer pieces (one per 16 units
or so, at least 2), which keeps the undervaluation small.

Splitting needs one limited tier (a site's ranges go to one tier, the rest to the
fallback); with more, sites are placed whole and a note says so.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from hmtune.advisor import granularity
from hmtune.advisor.inputs import Sites
from hmtune.advisor.model import PART_POWER, Placement, Problem, static_fraction
from hmtune.analyze.profile import LARGE_BUCKETS, buckets_of, flat_counts
from hmtune.core.backends import static_page
from hmtune.core.placement import static_line
from hmtune.core.units import MIB

UNIT = 2 * MIB              # the smallest range a split places
MAX_RANGES = 64             # ranges per site (placement.txt's limit per split line)
MAP_COST_NS = 10_000        # one more mmap + munmap per placed range and object
PIECE_COLUMNS = ("parent_id", "range_start", "range_end")
FLAT_CUT = "flat_cut"       # a piece of a site cut evenly (no hot range in its samples)


@dataclass
class Expanded:
    """A problem whose split sites are replaced by their pieces, and the sites table to
    match (one row per piece: the parent's row with the piece's figures and the
    PIECE_COLUMNS; range_start -1 on sites that are not split)."""

    problem: Problem
    sites: Sites
    split_sites: int = 0                # sites cut into pieces
    notes: list[str] = field(default_factory=list)


def segments(weights: np.ndarray, max_ranges: int = MAX_RANGES) -> list[tuple[int, int]]:
    """Adjacent buckets merged into at most max_ranges [start, end) runs: the pair whose
    merge loses the least between-range variance of the density (Ward) first, so equal
    neighbours (zero runs) always merge before different ones."""
    starts, ends = segment_bounds(np.asarray(weights, np.float64), max_ranges)
    return list(zip(starts.tolist(), ends.tolist(), strict=True))


def segment_bounds(w: np.ndarray, max_ranges: int) -> tuple[np.ndarray, np.ndarray]:
    """segments as two int64 arrays (starts, ends)."""
    n = int(w.size)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    # runs of equal weight merge at no cost: start from those
    cut = np.flatnonzero(w[1:] != w[:-1]) + 1
    starts = np.concatenate([[0], cut]).astype(np.int64)
    ends = np.concatenate([cut, [n]]).astype(np.int64)
    k = int(starts.size)
    if k <= max_ranges:
        return starts, ends
    size = (ends - starts).astype(np.float64)
    tot = np.add.reduceat(w, starts)
    nxt = list(range(1, k)) + [-1]
    prv = [-1] + list(range(k - 1))
    alive = [True] * k
    ver = [0] * k

    def cost(i: int, j: int) -> float:
        di, dj = tot[i] / size[i], tot[j] / size[j]
        return size[i] * size[j] / (size[i] + size[j]) * (di - dj) ** 2

    heap = [(cost(i, i + 1), i, 0, 0) for i in range(k - 1)]
    heapq.heapify(heap)
    left = k
    while left > max_ranges and heap:
        _, i, vi, vj = heapq.heappop(heap)
        j = nxt[i] if alive[i] else -1
        if j < 0 or ver[i] != vi or ver[j] != vj:
            continue
        tot[i] += tot[j]
        size[i] += size[j]
        ends[i] = ends[j]
        alive[j] = False
        nxt[i] = nxt[j]
        if nxt[j] >= 0:
            prv[nxt[j]] = i
        ver[i] += 1
        left -= 1
        if nxt[i] >= 0:
            heapq.heappush(heap, (cost(i, nxt[i]), i, ver[i], ver[nxt[i]]))
        p = prv[i]
        if p >= 0:
            heapq.heappush(heap, (cost(p, i), p, ver[p], ver[i]))
    on = np.asarray(alive)
    return starts[on], ends[on]


def part_factor(frac_w: np.ndarray, frac_b: np.ndarray, held: np.ndarray) -> np.ndarray:
    """What a piece's scattered accesses gain in bigger pages, per share of their
    object's gain (Problem.part_scattered), for pieces holding frac_w of the object's
    sampled weight in frac_b of its bytes, of an object of which the tier can hold the
    part `held` (capacity / size, at most 1). The rest of the object stays in 4 KiB
    pages, whose accesses keep missing the TLB and evict the pieces' 2 MiB entries, as
    far as they are as dense as the piece's: a part f of an evenly accessed object gains
    f^PART_POWER of its gain (measured), so held^(PART_POWER - 1) of its share; a hot
    window whose rest is cold all of it; an object the tier holds whole, all of it."""
    rest_b = 1.0 - frac_b
    dens = np.divide(frac_w, frac_b, out=np.zeros_like(frac_w), where=frac_b > 0)
    rest = np.divide(1.0 - frac_w, rest_b, out=np.zeros_like(frac_w), where=rest_b > 0)
    cold = np.clip(1.0 - np.divide(rest, dens, out=np.ones_like(dens), where=dens > 0),
                   0.0, 1.0)
    base = np.clip(held, 0.0, 1.0) ** (PART_POWER - 1.0)
    return base + (1.0 - base) * cold


def range_unit(profile_granularity: int) -> int:
    return max(UNIT, int(profile_granularity))


def _flat_pieces(nb: int, size: int, unit: int,
                 max_ranges: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A flat site (hmtune.analyze.profile's test: its samples spread evenly) in at most
    max_ranges contiguous pieces whose weights are their shares of the bytes: the
    sampled ranges would differ only by noise, and scattered ranges cost more mappings
    for nothing. Earlier pieces weigh a millionth more, so a strategy that can take only
    part of the object takes it from the start, as one range."""
    per = -(-nb // min(max_ranges, nb))        # equal pieces but the last: interchangeable
    edges = np.append(np.arange(0, nb, per, dtype=np.int64), nb)
    u, v = edges[:-1], edges[1:]
    nbytes = (np.minimum(v * unit, size) - u * unit).astype(np.float64)
    fw = nbytes * (1.0 + 1e-6 * (u.size - np.arange(u.size)) / u.size)
    return u, v, fw / fw.sum()


def _piece_blocks(blocks: pd.DataFrame, parent: np.ndarray, pid: np.ndarray, a: np.ndarray,
                  b: np.ndarray, floor: int) -> pd.DataFrame:
    """Every piece's blocks: its parent's blocks cut to [a, b) (blocks not reaching a
    left out), each at least `floor` bytes (charged as a mapping of its own)."""
    pieces = pd.DataFrame({"site_id": parent, "_pid": pid, "_a": a, "_b": b})
    rows = blocks.reset_index(drop=True).merge(pieces, on="site_id", how="inner")
    cut = np.minimum(rows["size"].to_numpy(np.int64), rows["_b"].to_numpy(np.int64)) \
        - rows["_a"].to_numpy(np.int64)
    keep = cut > 0
    out = rows[keep].copy()
    out["site_id"] = out["_pid"].to_numpy(np.int64)
    out["size"] = np.maximum(cut[keep], floor)
    return out[list(blocks.columns)].reset_index(drop=True)


def expand(problem: Problem, sites: Sites, profile: pd.DataFrame, gran: int,
           max_ranges: int = MAX_RANGES) -> Expanded:
    """Cut every splittable site of `problem` (aligned with sites.table) into pieces by
    profile rows (site_id, offset, weight, samples at `gran` bytes; ids as sites.csv's,
    merged ids already renamed). Sites and statics without profile rows, and those whose
    largest object is under two range units, stay whole."""
    table = sites.table.reset_index(drop=True)
    base = table.assign(parent_id=table["site_id"].to_numpy(np.int64),
                        range_start=np.int64(-1), range_end=np.int64(-1))
    limited = [t for t in problem.tiers[:-1] if t.capacity is not None]
    if len(limited) != 1 or problem.n == 0 or not len(profile) or problem.max_sizes is None:
        notes = []
        if len(limited) > 1 and len(profile):
            notes.append(f"{len(limited)} limited tiers: sites are placed whole (a split "
                         "site's ranges go to one tier)")
        return Expanded(problem, replace(sites, table=base), 0, notes)
    tier = limited[0]
    unit = range_unit(gran)
    floor = granularity.arena_max(tier.backend) + 1
    prof = profile[profile["site_id"].isin(set(problem.site_ids.tolist()))]
    prof = prof.sort_values(["site_id", "offset"], kind="stable")
    p_site = prof["site_id"].to_numpy(np.int64)
    p_off = prof["offset"].to_numpy(np.int64)
    p_w = prof["weight"].to_numpy(np.float64)
    p_n = prof["samples"].to_numpy(np.float64)
    lo = np.searchsorted(p_site, problem.site_ids, "left")
    hi = np.searchsorted(p_site, problem.site_ids, "right")
    statics = problem.statics if problem.statics is not None else np.zeros(problem.n, bool)
    mxs = problem.max_sizes.astype(np.int64)
    nbs = -(-mxs // unit)
    # a static's pieces on 2 MiB pages each lose a page: fewer, longer ones there, and
    # only for a static the tier cannot hold whole (whole, it is valued exactly)
    coarse = static_page(tier.backend) > granularity.SMALL_PAGE
    assert tier.capacity is not None
    whole_fits = statics & coarse & (mxs <= int(tier.capacity))
    cand = np.flatnonzero((hi > lo) & (nbs >= 2) & (problem.weights > 0) & ~whole_fits)
    src_l, u_l, v_l, fw_l, smp_l = [], [], [], [], []
    flat_why: dict[int, str] = {}       # site index -> why it is cut evenly
    for i in cand.tolist():
        nb = int(nbs[i])
        sl = slice(int(lo[i]), int(hi[i]))
        bucket = np.minimum(p_off[sl] // unit, nb - 1)
        w = np.bincount(bucket, weights=p_w[sl], minlength=nb)
        wsum = float(w.sum())
        if wsum <= 0:
            continue
        most = max_ranges if not (statics[i] and coarse) else max(2, min(max_ranges, nb // 16))
        verdict = flat_counts(zip(p_off[sl].tolist(), p_n[sl].tolist(), strict=True),
                              int(mxs[i]))
        if verdict is True or (verdict is None and
                               buckets_of(int(mxs[i])) >= LARGE_BUCKETS):
            # flat, or too few samples to tell: no hot range to pick, so the part that
            # fits is one range from the start, never pieces where noise fell
            flat_why[i] = "flat" if verdict else "too few samples to tell"
            u, v, fw = _flat_pieces(nb, int(mxs[i]), unit, most)
            src_l.append(np.full(u.size, i, np.int64))
            u_l.append(u)
            v_l.append(v)
            fw_l.append(fw)
            smp_l.append(fw * float(p_n[sl].sum()))
            continue
        u, v = segment_bounds(w, most)
        if u.size < 2:
            continue
        cw = np.concatenate([[0.0], np.cumsum(w)])
        cn = np.concatenate([[0.0], np.cumsum(np.bincount(bucket, weights=p_n[sl],
                                                          minlength=nb))])
        src_l.append(np.full(u.size, i, np.int64))
        u_l.append(u)
        v_l.append(v)
        fw_l.append((cw[v] - cw[u]) / wsum)
        smp_l.append(cn[v] - cn[u])
    if not src_l:
        return Expanded(problem, replace(sites, table=base), 0, [])
    src = np.concatenate(src_l)
    split_idx = np.unique(src)
    keep = np.setdiff1d(np.arange(problem.n), split_idx)
    mx = mxs[src]
    a = np.concatenate(u_l) * unit
    b = np.minimum(np.concatenate(v_l) * unit, mx)
    frac_w = np.concatenate(fw_l)
    frac_b = (b - a) / mx
    next_id = int(max(problem.site_ids.max(), int(table["site_id"].max()))) + 1
    pid = next_id + np.arange(src.size, dtype=np.int64)
    calls = problem.call_costs()
    n_allocs = problem.n_allocs if problem.n_allocs is not None else np.ones(problem.n)
    per_map = MAP_COST_NS * problem.ns_weight * n_allocs[src].astype(np.float64)
    pw = problem.weights[src] * frac_w
    weight = np.where(pw > 0, np.maximum(0.0, pw - per_map), 0.0)
    size = np.round(problem.sizes[src] * frac_b).astype(np.int64)

    def cat(arr: np.ndarray | None, extra: np.ndarray | None = None) -> np.ndarray | None:
        if arr is None:
            return None
        more = arr[src] if extra is None else np.asarray(extra).astype(arr.dtype)
        return np.concatenate([arr[keep], more])

    blocks = problem.blocks
    if blocks is not None and len(blocks):
        parent_ids = problem.site_ids[src]
        cut = _piece_blocks(blocks, parent_ids, pid, a, b, floor)
        blocks = pd.concat([blocks[~blocks["site_id"].isin(set(parent_ids.tolist()))], cut],
                           ignore_index=True)
    ep = Problem(
        site_ids=np.concatenate([problem.site_ids[keep], pid]),
        sizes=cat(problem.sizes, size),
        weights=cat(problem.weights, weight),
        loads=cat(problem.loads), stores=cat(problem.stores),
        tiers=problem.tiers, total_weight=problem.total_weight,
        allocs=blocks if problem.allocs is not None else None,
        faults=cat(problem.faults, None if problem.faults is None
                   else problem.faults[src] * frac_b),
        ns_weight=problem.ns_weight,
        samples=cat(problem.samples, None if problem.samples is None
                    else np.round(np.concatenate(smp_l))),
        max_sizes=cat(problem.max_sizes, b - a),
        n_allocs=cat(problem.n_allocs),
        # an object's calls are paid once whichever of its ranges are placed: each piece
        # is charged its share of the bytes
        calls=np.concatenate([calls[keep], calls[src] * frac_b]),
        total_bytes=cat(problem.total_bytes, None if problem.total_bytes is None
                        else np.round(problem.total_bytes[src] * frac_b)),
        blocks=blocks,
        fraction=None if problem.fraction is None
        else np.concatenate([problem.fraction[keep],
                             _piece_fractions(problem, table, src, a, b)]),
        statics=cat(problem.statics), kind_shares=cat(problem.kind_shares),
        memory_factor=cat(problem.memory_factor), counted=cat(problem.counted),
        part_scattered=np.concatenate([
            np.ones(keep.size) if problem.part_scattered is None
            else problem.part_scattered[keep],
            part_factor(frac_w, frac_b, float(tier.capacity or 0) / np.maximum(mx, 1))]))
    rows = base.iloc[src].copy()
    rows["site_id"] = pid
    rows["range_start"] = a
    rows["range_end"] = b
    rows["weight"] = weight
    rows["label"] = [f"{lab} [{x / MIB:g}-{y / MIB:g} MiB of {z / MIB:g} MiB]"
                     for lab, x, y, z in zip(rows["label"].tolist(), a.tolist(), b.tolist(),
                                             mx.tolist(), strict=True)]
    if "peak_live_bytes" in rows.columns:
        rows["peak_live_bytes"] = size
    rows[FLAT_CUT] = np.isin(src, list(flat_why))
    out_table = pd.concat([base.iloc[keep].assign(**{FLAT_CUT: False}), rows],
                          ignore_index=True)
    fb = problem.tiers[-1]
    notes = [] if fb.backend == "default" else [
        f"split objects keep their unplaced ranges in ordinary memory, not in the "
        f"fallback tier '{fb.name}' ({fb.backend})"]
    hot = int(split_idx.size) - len(flat_why)
    if flat_why:
        whys = sorted(set(flat_why.values()))
        notes.append(f"{int(split_idx.size)} site(s) could be placed by ranges of their "
                     f"objects; {len(flat_why)} of them show no hot range in their profile "
                     f"({', '.join(whys)}), so what the tier takes of one is one range from "
                     f"its start, and {hot} would be cut at the hot ranges their samples "
                     "show (the split lines of placement.txt are those placed)")
    return Expanded(ep, replace(sites, table=out_table), int(split_idx.size), notes)


def _piece_fractions(problem: Problem, table: pd.DataFrame, src: np.ndarray, a: np.ndarray,
                     b: np.ndarray) -> np.ndarray:
    """[piece, tier]: the share of each piece's weight a placement there captures: its
    parent's (1 for a heap site) or, for a static's piece, the share of the piece's
    bytes in the whole pages libhmalloc moves in that tier (static_fraction over the
    piece's extent in the module)."""
    assert problem.fraction is not None
    out = problem.fraction[src].copy()
    statics = problem.statics if problem.statics is not None else np.zeros(problem.n, bool)
    raw = table["callstack_raw"].astype(str).to_numpy()
    for k in np.flatnonzero(statics[src]).tolist():
        line = static_line("t", str(raw[src[k]]))
        if line is None:
            continue
        for t, tier in enumerate(problem.tiers):
            out[k, t] = static_fraction(line.offset + int(a[k]), int(b[k] - a[k]),
                                        static_page(tier.backend))
    return out


def merge_ranges(ranges: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """Sorted, touching ranges joined."""
    out: list[list[int]] = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return tuple((a, b) for a, b in out)


@dataclass(frozen=True)
class SplitSite:
    """One site of sites.csv as placed: its row in the expanded table's first piece (or
    the whole row), the tier index, and its ranges (empty: the whole object)."""

    row: int                            # a row of the expanded table with the parent's fields
    parent_id: int
    tier: int
    ranges: tuple[tuple[int, int], ...]
    placed_bytes: int                   # of the largest object, in the ranges
    object_bytes: int                   # the largest object
    pieces: bool = False                # row is one of the site's pieces (its label too)

    def label(self, table: pd.DataFrame) -> str:
        """The site's label (a piece's without its `[a-b MiB of M MiB]`)."""
        text = str(table["label"].iloc[self.row])
        return (text.rpartition(" [")[0] or text) if self.pieces else text


def placed_sites(table: pd.DataFrame, tier_of: np.ndarray, last: int,
                 object_sizes: dict[int, int] | None = None) -> list[SplitSite]:
    """The placed rows of an expanded table gathered per parent site: an unsplit row as
    it is, a split site's placed pieces as ranges (all of them, end to end: the whole
    object). object_sizes: parent id -> its largest object (default: the last piece's
    end)."""
    out: list[SplitSite] = []
    start = table["range_start"].to_numpy(np.int64) if "range_start" in table.columns \
        else np.full(len(table), -1, np.int64)
    end = table["range_end"].to_numpy(np.int64) if "range_end" in table.columns \
        else np.full(len(table), -1, np.int64)
    parent = table["parent_id"].to_numpy(np.int64) if "parent_id" in table.columns \
        else table["site_id"].to_numpy(np.int64)
    groups: dict[int, list[int]] = {}
    for i in np.flatnonzero(tier_of != last):
        if start[i] < 0:
            out.append(SplitSite(int(i), int(parent[i]), int(tier_of[i]), (), 0, 0))
        else:
            groups.setdefault(int(parent[i]), []).append(int(i))
    whole_end: dict[int, int] = {}
    for i in np.flatnonzero(start >= 0):
        p = int(parent[i])
        whole_end[p] = max(whole_end.get(p, 0), int(end[i]))
    for p, rows in groups.items():
        tiers = {int(tier_of[i]) for i in rows}
        t = max(tiers, key=lambda x: sum(1 for i in rows if int(tier_of[i]) == x))
        rows = [i for i in rows if int(tier_of[i]) == t]
        rs = merge_ranges([(int(start[i]), int(end[i])) for i in rows])
        obj = (object_sizes or {}).get(p, whole_end[p])
        placed = sum(b - a for a, b in rs)
        if rs == ((0, whole_end[p]),):
            rs = ()                     # every piece: the whole object
        else:                           # placement.txt ranges are whole 4 KiB pages
            rs = tuple((a, -(-b // 4096) * 4096) for a, b in rs)
        out.append(SplitSite(rows[0], p, t, rs, placed, obj, True))
    return sorted(out, key=lambda s: s.row)



def _moved(problem: Problem, placement: Placement, tier_of: np.ndarray) -> Placement:
    """placement with its sites in tier_of instead, its value (and bound) moved by
    what that gains."""
    v = problem.values()
    rows = np.arange(problem.n)
    gained = float((v[rows, tier_of] - v[rows, placement.tier_of]).sum())
    return replace(placement, tier_of=tier_of, value=placement.value + gained,
                   bound=max(placement.bound, placement.value + gained))


def flat_first(problem: Problem, table: pd.DataFrame, placement: Placement) -> Placement:
    """A site cut evenly (FLAT_CUT: no hot range in its samples) has interchangeable
    pieces: the same size, lifetime and weight per byte. Whatever pieces the solver took
    (its gap hides the millionth that earlier ones weigh more), the same number of
    pieces of each size go to each tier from the object's start, the fastest tier first,
    so that each tier holds one range of it. Only equal pieces of one object trade
    places; where the objects of a site differ in size (later pieces in fewer of them)
    a tier's footprint could change, so the placement stays as solved unless every
    tier's footprint (arena_fit.footprint) is still within its capacity."""
    from hmtune.advisor.arena_fit import footprint

    if FLAT_CUT not in table.columns:
        return placement
    flat = table[FLAT_CUT].to_numpy(bool)
    start = table["range_start"].to_numpy(np.int64)
    parent = table["parent_id"].to_numpy(np.int64)
    tier_of = placement.tier_of.copy()
    for p in np.unique(parent[flat]).tolist():
        rows = np.flatnonzero(flat & (parent == p))
        for size in np.unique(problem.sizes[rows]).tolist():
            same = rows[problem.sizes[rows] == size]
            same = same[np.argsort(start[same], kind="stable")]
            tier_of[same] = np.sort(tier_of[same])
    if np.array_equal(tier_of, placement.tier_of):
        return placement
    for t, tier in enumerate(problem.tiers[:-1]):
        if tier.capacity is not None and footprint(problem, t, tier_of == t) > tier.capacity:
            return placement
    return _moved(problem, placement, tier_of)


def complete(problem: Problem, table: pd.DataFrame, placement: Placement) -> Placement:
    """Place the rest of a partly placed split site where the tier still holds it: a
    range without sampled weight is worth nothing to the solver, but sampling may have
    missed its accesses, and a whole object needs fewer mappings. Ranges go in by
    density, each only while the tier's footprint (arena_fit.footprint) stays within
    its capacity."""
    from hmtune.advisor.arena_fit import footprint

    if "range_start" not in table.columns:
        return placement
    start = table["range_start"].to_numpy(np.int64)
    parent = table["parent_id"].to_numpy(np.int64)
    tier_of = placement.tier_of.copy()
    last = len(problem.tiers) - 1
    grew = False
    for p in np.unique(parent[(start >= 0) & (tier_of != last)]):
        rows = np.flatnonzero(parent == p)
        t = int(np.bincount(tier_of[rows][tier_of[rows] != last]).argmax())
        cap = problem.tiers[t].capacity
        if cap is None:
            continue
        size = np.maximum(problem.rounded_sizes(t)[rows], 1)
        for i in rows[np.argsort(-problem.weights[rows] / size, kind="stable")]:
            if tier_of[i] != last:
                continue
            tier_of[i] = t
            if footprint(problem, t, tier_of == t) > cap:
                tier_of[i] = last
            else:
                grew = True
    if not grew:
        return placement
    return _moved(problem, placement, tier_of)
