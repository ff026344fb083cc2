"""This host's fast tier: the tiers a detected host implies and their costs.

hmtune/machine/host.py finds what memory the host has (nodes, their kinds, hugepage
pools, memkind's reach); `choose` turns that into tiers: the fast tier (HBM or MCDRAM
nodes, DRAM in front of slow memory, else 2 MiB pages) and its costs. `fast_tier` is
this host's (detect, then choose): what `hmtune advise --mem SIZE` without --machine,
`hmtune machine`, compare's and explore's default and the hints of advise and run take.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hmtune.core.units import GIB, KIB, MIB, human
from hmtune.machine.host import Host, HostError, Node, detect, env_root, format_list
from hmtune.machine.machinefile import check_tiers
from hmtune.machine.tiers import Machine, Tier

# Relative costs used when the firmware publishes no bandwidth (HBM, MCDRAM) or latency
# (slower memory) for the nodes. Each is the ratio the shipped machine file of such a
# host explains (configs/machines/):
# - HBM: Xeon Max 9468, HBM2e 4 x 409.6 GB/s = 1638.4 GB/s vs DDR5-4800 x 8 channels
#   307.2 GB/s per socket: 5.3 (xeon-max-9468-flat-*.toml);
# - MCDRAM: KNL 7250, 400+ GB/s vs DDR4 80+ GB/s: 5.0 (knl-7250-flat-quadrant.toml);
# - CXL-DRAM: 2-5x the latency of local DRAM on three real expanders (arXiv:2405.14209),
#   the low end (cxl-dax-kmem.toml); "slow" (a higher kernel tier, technology unknown)
#   gets the same;
# - NVM: Optane PMem as kmem, ~305 ns random loads (arXiv:1903.05714) and ~350 ns idle
#   read latency by Intel's figure, against < 100 ns for DRAM: 3.0 (dram-pmem.toml);
# - 2 MiB hugepages vs 4 KiB pages on this VM: dependent chase 1.55x
#   (/work/shared/MACHINE-NOTES.md, vm-hugetlb.toml).
FALLBACK_COST = {"HBM": 5.3, "MCDRAM": 5.0, "CXL-DRAM": 2.0, "CXL-NVM": 3.0, "NVM": 3.0,
                 "slow": 2.0, "hugetlb": 1.55, "thp": 1.55}
# Per access kind (tiers.KINDS, docs/formats.md §5), the fallback's cost against the
# fast tier's 1.0:
# - HBM, MCDRAM: a streamed access by the bandwidth ratio above; a scattered one about
#   1 (HBM's and MCDRAM's unloaded latency is not lower than DDR's; published
#   measurements put both a little higher), a synchronization access 1 (it waits on
#   other threads, and the contended line is in cache);
# - CXL, NVM: a scattered access by the latency ratio above, a streamed one by the
#   published bandwidth ratio (else the same), synchronization 1;
# - 2 MiB pages: a scattered access beyond the TLB's reach by the chase's 1.55; a
#   streamed one 1.05 (sequential sum 1.0-1.2x, MACHINE-NOTES.md: prefetched streams
#   touch each page once, so its TLB miss is paid once per 512 lines), synchronization 1.
SYNC_COST = 1.0
PAGES_STREAM_COST = 1.05
# What large pages save at first touch (speeds_up "first_touch", docs/formats.md §5):
# ns saved per 4 KiB page fault avoided, measured on this project's VM with
# bench/faultcost (1190-1330 ns; vm-hugetlb.toml), and the fraction of the faults a
# THP tier still takes (0.5: a real code's THP run, vm-thp.toml); a hugetlb tier keeps
# one fault per page instead of one per 4 KiB. Other fast tiers (HBM, MCDRAM, DRAM in
# front of CXL or NVM) fault in 4 KiB pages like their fallback: access only.
FAULT_COST_NS = 1200.0
THP_FAULTS_KEPT = 0.5
HBW_KINDS = ("HBM", "MCDRAM")
SLOW_KINDS = ("CXL-DRAM", "CXL-NVM", "NVM", "slow")


# ---- the tiers it implies ----------------------------------------------------------

@dataclass
class Choice:
    host: Host                            # what the tiers were chosen from
    machine: Machine
    why: str                              # "fast tier: hugetlb, 2 MiB pages (no HBM ...)"


def _ratio(fast: list[Node], slow: list[Node], kind: str) -> tuple[float, str]:
    """Cost of the slow tier relative to the fast one (1.0): bandwidth-bound accesses for
    HBM/MCDRAM, latency for slow memory; published figures first, then FALLBACK_COST.
    Rounded to one decimal: the figures are nominal (peak bandwidth, idle latency) and
    carry no more precision than that."""
    def mean(vals: list[int | None]) -> float | None:
        got = [v for v in vals if v]
        return sum(got) / len(got) if got else None

    if kind in HBW_KINDS:
        f, s = mean([n.read_bw for n in fast]), mean([n.read_bw for n in slow])
        if f and s and f > s:
            return (round(f / s, 1), f"read bandwidth published by the firmware, "
                    f"{f:.0f} vs {s:.0f} MB/s per node")
    else:
        f, s = mean([n.read_lat for n in fast]), mean([n.read_lat for n in slow])
        if f and s and s > f:
            return (round(s / f, 1), f"read latency published by the firmware, "
                    f"{s:.0f} vs {f:.0f} ns")
    return FALLBACK_COST[kind], f"hmtune's table for {kind} (the firmware publishes no figures)"


def _kind_costs(kind: str, cost: float, fast: list[Node], slow: list[Node]
                ) -> tuple[tuple[str, float], ...]:
    """The fallback's cost per access kind when the fast tier is `kind`'s (FALLBACK_COST's
    comment), `cost` its bandwidth (HBM, MCDRAM) or latency (slower memory) ratio."""
    if kind in HBW_KINDS:
        return (("streaming", cost), ("scattered", 1.0), ("sync", SYNC_COST))
    f = [n.read_bw for n in fast if n.read_bw]
    w = [n.read_bw for n in slow if n.read_bw]
    bw = round((sum(f) / len(f)) / (sum(w) / len(w)), 1) if f and w else cost
    return (("streaming", max(bw, 1.0)), ("scattered", cost), ("sync", SYNC_COST))


def _gib_floor(nbytes: int) -> int:
    """Node memory as a tier capacity: rounded down to a whole GiB (MiB below 1 GiB)."""
    return nbytes // GIB * GIB if nbytes >= GIB else max(nbytes // MIB, 1) * MIB


def _pool_capacity(host: Host, page: int) -> int:
    """The hugepage (or THP) tier's capacity: the pool of `page` pages already reserved,
    or a quarter of the memory rounded down to a power of two when that is more. A pool's
    pages are lost to everything else, so at most a quarter is asked for; a round power
    of two is how pools are sized (2048 pages = 4 GiB, the smallest reservation tried on
    this VM, configs/machines/vm-hugetlb.toml)."""
    total = sum(n.total for n in host.nodes) or host.mem_total
    pool = sum(n.hugepages.get(page, (0, 0))[0] for n in host.nodes) * page
    quarter = max(page, 1 << max((total // 4).bit_length() - 1, 0))
    return max(pool, quarter)


def _where(host: Host) -> str:
    return "this host" if host.live else "this topology"


def choose(host: Host, reservable: bool | None = None) -> Choice:
    """The tiers this host's fast memory implies, fastest first (`advise --mem` without
    --machine, `hmtune machine --toml`, compare's and explore's default). Hugepages when
    the host has a pool with free pages or this user can reserve some (reservable:
    whether the caller will; default host.hugepages_reservable), else THP when the
    kernel has it."""
    if reservable is None:
        reservable = host.hugepages_reservable
    dram = [n for n in host.of_kind("DRAM") if n.total]
    hbw = [n for n in host.of_kind(*HBW_KINDS) if n.total]
    slow = [n for n in host.of_kind(*SLOW_KINDS) if n.total]
    if hbw and (dram or slow):
        # MCDRAM through memkind:MEMKIND_HBW (unless memkind's own check says it cannot
        # reach it): on Xeon Phi x200 memkind takes the CPU-less nodes as its HBW nodes
        # (memkind_hbw.c, the CPU model check), exactly these. HBM through numa:NODES:
        # elsewhere memkind finds HBW nodes only through hwloc's Bandwidth attribute
        # >= MEMKIND_HBW_THRESHOLD (200 GB/s), which the DDR5 of a Xeon Max socket
        # (307 GB/s) passes too. libhmalloc's numa backend binds with MPOL_BIND, which
        # takes the nearest listed node with free memory, the locality memkind gives.
        kind = hbw[0].kind
        nodes = format_list([n.index for n in hbw])
        cost, cost_why = _ratio(hbw, dram or slow, kind)
        total = sum(_gib_floor(n.total) for n in hbw)
        memkind = kind == "MCDRAM" and not host.memkind.get("MEMKIND_HBW")
        backend = "memkind:MEMKIND_HBW" if memkind else f"numa:{nodes}"
        fast = Tier(kind.lower(), total, backend, 1.0, 1.0, 4 * KIB, True)
        rest = Tier("ddr" if dram else "rest", None, "default", cost, cost,
                    kind_costs=_kind_costs(kind, cost, hbw, dram or slow))
        return Choice(host, _machine(host, [fast, rest], cost_why),
                      f"fast tier: {kind} on NUMA {_nodes(hbw)} through {backend} "
                      f"({human(total)} for the node's processes), the rest in "
                      f"{'DDR' if dram else slow[0].kind}")
    if slow and dram:
        kind = slow[0].kind
        nodes = format_list([n.index for n in dram])
        cost, cost_why = _ratio(dram, slow, kind)
        total = sum(_gib_floor(n.total) for n in dram)
        # memkind's MEMKIND_DAX_KMEM finds the kmem devices read here (libdaxctl's
        # system-ram devices and their target nodes); numa:NODES when its check says no.
        reach = host.memkind.get("MEMKIND_DAX_KMEM")
        slow_nodes = format_list([n.index for n in slow])
        back = f"numa:{slow_nodes}" if reach else "memkind:MEMKIND_DAX_KMEM"
        fast = Tier("dram", total, f"numa:{nodes}", 1.0, 1.0, 4 * KIB, True)
        rest = Tier(_tier_name(kind), None, back, cost, cost,
                    kind_costs=_kind_costs(kind, cost, dram, slow))
        return Choice(host, _machine(host, [fast, rest], cost_why),
                      f"fast tier: DRAM on NUMA {_nodes(dram)} ({human(total)} for the node's "
                      f"processes) in front of {kind} on {_nodes(slow)}")
    if hbw:
        why_none = "HBM only, no slower memory"
    elif any(n.cache for n in host.nodes):
        cache = sum(n.cache for n in host.nodes)
        why_none = (f"only a memory-side cache of {human(cache)}, not placeable; "
                    "no HBM, CXL or NVM node")
    else:
        why_none = "no HBM, CXL or NVM"
    thp = bool(host.thp and host.thp != "never")
    page = host.default_hugepage
    # An empty pool this user cannot grow places nothing (hmtune run would warn that the
    # tier stays empty): THP, which the kernel may grant, serves better then.
    usable = host.hugepages_free > 0 or reservable
    if page and (usable or not thp):
        return _page_tier(host, "huge", "hugetlb", page,
                          f"fast tier: hugetlb, {human(page).replace('.0 ', ' ')} pages "
                          f"({why_none} on {_where(host)})")
    if thp:
        no_huge = ("its hugepage pool has no free page and only root can reserve some"
                   if page else "no hugetlbfs")
        return _page_tier(host, "thp", "thp", 2 * MIB,
                          f"fast tier: transparent hugepages ({why_none}, and {no_huge} "
                          f"on {_where(host)})")
    raise HostError(f"{_where(host)} has no memory hmtune can place faster than the default: "
                    f"{why_none}, no hugetlbfs, THP off; give --machine FILE.toml")


def _nodes(nodes: list[Node]) -> str:
    return f"node{'s' if len(nodes) > 1 else ''} {format_list([n.index for n in nodes])}"


def _page_tier(host: Host, name: str, backend: str, page: int, why: str) -> Choice:
    """Large pages (hugetlb or THP) as the fast tier, ordinary pages as the fallback."""
    kept = 4 * KIB / page if backend == "hugetlb" else THP_FAULTS_KEPT
    fast = Tier(name, _pool_capacity(host, page), backend, 1.0, 1.0, page, True,
                ("access", "first_touch"), FAULT_COST_NS, kept)
    cost = FALLBACK_COST[backend]
    rest = Tier("small", None, "default", cost, cost,
                kind_costs=(("streaming", PAGES_STREAM_COST), ("scattered", cost),
                            ("sync", SYNC_COST)))
    return Choice(host, _machine(host, [fast, rest], "2 MiB pages against 4 KiB ones, "
                                 "measured on a Zen 4 VM (configs/machines/vm-hugetlb.toml)"),
                  why)


def _tier_name(kind: str) -> str:
    return {"CXL-DRAM": "cxl", "CXL-NVM": "cxl", "NVM": "pmem"}.get(kind, "slow")


def _machine(host: Host, tiers: list[Tier], cost_why: str) -> Machine:
    check_tiers(tiers, "detected tiers")
    return Machine(name=host.name, tiers=tiers, source=f"detected on {host.source}",
                   notes=[f"costs: {cost_why}"])


def fast_tier(root: Path | None = None, hwloc_xml: Path | None = None,
              probe: bool = True) -> Choice:
    """This host's fast tier and the tiers it implies: the host detected (root: a recorded
    topology; default $HMTUNE_HOST_ROOT, else /; probe: also ask memkind and
    hmtune-probe), then `choose`. Raises HostError (a topology that cannot be read, or
    no tier to choose)."""
    return choose(detect(env_root() if root is None else root, hwloc_xml, probe))
