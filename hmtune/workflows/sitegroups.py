"""The sites of sites.csv as compare and explore place them: groups of sites, and
placements that put groups of them in the fast tier with room for all (explore's
placements, compare's all-fast upper bound). The footprint they divide is
hmtune.core.stage.footprint."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hmtune.core.placement import PlacementFile, SiteLine, TierLine, static_line
from hmtune.core.stage import footprint_of, site_rows

PAGE = 2 << 20                      # the fast tiers' charge unit (whole 2 MiB pages)


@dataclass
class Group:
    label: str                      # "site 8" or "rest (3 sites)"
    chains: list[str]               # callstack_raw of its sites
    site_ids: list[int]
    sizes: list[int]                # each site's peak live bytes
    nbytes: int                     # their sum
    max_size: int                   # largest request


@dataclass
class _Site:
    chain: str                      # callstack_raw (a static's: module+0xOFF [static SIZE])
    weight: float = 0.0
    peak: int = 0
    max_size: int = 0               # largest request (0 for a static: it makes none)


def load_groups(sites_csv: Path, k: int) -> tuple[list[Group], int]:
    """The top-k sites by weight (ties: lower site id first), one group each, then the
    rest as one group when there is any; and the footprint (bytes,
    hmtune.core.stage.footprint). Per-rank rows are folded (hmtune.core.stage.site_rows:
    weights add up, the peak is the largest of any rank). Site ids that
    share a callstack_raw are one site (the lowest id; weights and peaks added). Sites
    without a callstack_raw cannot be named in a placement and are left out of the
    groups (not of the footprint). Static variables (sites.csv v2, kind static) are
    sites too: their chain is their callstack_raw, their peak their size."""
    rows = site_rows(sites_csv)
    per: dict[int, _Site] = {}
    for r in rows:
        if not r["callstack_raw"]:
            continue
        static = r.get("kind") == "static"
        s = per.setdefault(int(r["site_id"]), _Site(r["callstack_raw"]))
        s.weight += float(r["weight"])
        s.peak = max(s.peak, int(r["peak_live_bytes"]))
        s.max_size = max(s.max_size, 0 if static else int(r["max_size"]))
    first: dict[str, int] = {}          # one site per chain: the interposer cannot tell
    for sid in sorted(per):             # apart site ids with one callstack_raw
        keep = first.setdefault(per[sid].chain, sid)
        if keep != sid:
            gone, into = per.pop(sid), per[keep]
            into.weight += gone.weight
            into.peak += gone.peak      # an upper bound: they may be live together
            into.max_size = max(into.max_size, gone.max_size)
    order = sorted(per, key=lambda sid: (-per[sid].weight, sid))

    def group(label: str, ids: list[int]) -> Group:
        sizes = [per[i].peak for i in ids]
        return Group(label, [per[i].chain for i in ids], ids, sizes, sum(sizes),
                     max(per[i].max_size for i in ids))

    groups = [group(f"site {sid}", [sid]) for sid in order[:k]]
    rest = order[k:]
    if rest:
        groups.append(group(f"rest ({len(rest)} site{'s' if len(rest) > 1 else ''})", rest))
    return groups, footprint_of(rows)


def room_for_all(groups: list[Group]) -> int:
    """A fast-tier capacity every group fits in at once: twice each group's bytes in
    whole 2 MiB pages, plus a page per site (hmtune/advisor/granularity.py: an object is
    charged at most twice its size, its size class (at most 3.1 % more from 512 bytes
    on) or its size rounded up to 2 MiB when over 1 MiB)."""
    return sum(-(-2 * g.nbytes // PAGE) * PAGE for g in groups) + PAGE * sum(
        len(g.chains) for g in groups)


def placement_for(mask: int, groups: list[Group], fast: TierLine, slow: TierLine,
                  label: str) -> PlacementFile:
    """The groups whose bit is set in mask in the fast tier, the rest in the slow one
    (static variables as static lines, but for those with no whole page of the fast
    tier's backend inside them, which libhmalloc can never move: one warning per run
    each, and nothing placed)."""
    from hmtune.advisor.inputs import static_share
    from hmtune.core.sitekey import frames
    from hmtune.core.version import version
    from hmtune.machine.tiers import Tier

    chosen = [g for i, g in enumerate(groups) if mask >> i & 1]
    chains = [(c, sid) for g in chosen for c, sid in zip(g.chains, g.site_ids, strict=True)]
    tier = Tier(fast.name, fast.capacity, fast.backend)
    statics = [st for c, sid in chains
               if (st := static_line(fast.name, c, f"site {sid}")) is not None
               and static_share(st, tier) > 0]
    heap = [(c, sid) for c, sid in chains if static_line(fast.name, c) is None]
    sites = [SiteLine(fast.name, c, f"site {sid}") for c, sid in heap]
    return PlacementFile(
        tiers=[fast, slow],
        depth=max([len(frames(c)) for c, _ in heap] or [1]),
        size_window=(0, max([g.max_size for g in chosen] or [0])),
        sites=sites, generated_by=f"hmtune {label} (hmtune {version()})", statics=statics)
