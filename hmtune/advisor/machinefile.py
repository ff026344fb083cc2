"""The machine file a detected host implies, and the page `hmtune machine` prints about it.

hmtune.advisor.host finds what memory the host has (nodes, their kinds, hugepage pools,
memkind's reach); this module turns that into tiers: `choose` picks the fast tier
(HBM or MCDRAM nodes, DRAM in front of slow memory, else 2 MiB pages) and its costs,
`machine_toml` writes it as a machine file (docs/formats.md §5), `describe` is the page.
"""

from __future__ import annotations

from dataclasses import dataclass

from hmtune.advisor.host import Host, HostError, Node, format_list
from hmtune.advisor.model import Tier
from hmtune.advisor.tiers import Machine, check_tiers
from hmtune.core.units import GIB, KIB, MIB, human

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
# Per access kind (model.KINDS, docs/formats.md §5), the fallback's cost against the
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


# ---- the machine file it implies ----------------------------------------------------------

@dataclass
class Choice:
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


def _capacity(nbytes: int) -> str:
    """A capacity for a machine file: whole GiB as G, else MiB as M."""
    if nbytes >= GIB and nbytes % GIB == 0:
        return f"{nbytes // GIB}G"
    return f"{max(nbytes // MIB, 1)}M"


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
        return Choice(_machine(host, [fast, rest], cost_why),
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
        return Choice(_machine(host, [fast, rest], cost_why),
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
    return Choice(_machine(host, [fast, rest], "2 MiB pages against 4 KiB ones, measured on "
                           "a Zen 4 VM (configs/machines/vm-hugetlb.toml)"), why)


def _tier_name(kind: str) -> str:
    return {"CXL-DRAM": "cxl", "CXL-NVM": "cxl", "NVM": "pmem"}.get(kind, "slow")


def _machine(host: Host, tiers: list[Tier], cost_why: str) -> Machine:
    check_tiers(tiers, "detected tiers")
    return Machine(name=host.name, tiers=tiers, source=f"detected on {host.source}",
                   notes=[f"costs: {cost_why}"])


def machine_toml(host: Host, choice: Choice) -> str:
    """A machine file (docs/formats.md §5) for the host, with where each value came from."""
    def comment(text: str) -> str:
        return "# " + " ".join(text.split())          # one line whatever the text holds

    lines = [comment(f"{host.name}: written by hmtune machine --toml from {host.source}"),
             comment(f"({host.hwloc or 'no hwloc'}; {choice.why})."),
             comment(f"{choice.machine.notes[0]}.") if choice.machine.notes else "#",
             f'name = "{host.name}"', ""]
    for t in choice.machine.tiers:
        lines += ["[[tier]]", f'name = "{t.name}"',
                  f'capacity = "{"unlimited" if t.capacity is None else _capacity(t.capacity)}"',
                  f'backend = "{t.backend}"', f"load_cost = {float(t.load_cost)!r}",
                  f"store_cost = {float(t.store_cost)!r}"]
        if t.capacity is not None:
            lines.append(f'per = "{"node" if t.per_node else "process"}"')
        if t.backend in ("hugetlb", "thp"):
            lines.append(f'page = "{_capacity(t.page_size)}"')
        if t.capacity is not None:
            lines.append("speeds_up = [" + ", ".join(f'"{s}"' for s in t.speeds_up) + "]")
        if "first_touch" in t.speeds_up:
            lines += [f"fault_cost_ns = {float(t.fault_cost_ns)!r}",
                      f"faults_kept = {float(t.faults_kept)!r}"]
        if t.backend != "default":
            lines.append(f"alloc_cost_ns = {float(t.call_cost_ns)!r}")
        lines += [f"{k}_cost = {float(c)!r}" for k, c in t.kind_costs]
        if t.min_span:
            span = t.min_span
            lines.append(f'access_min_span = "{span // 1024}K"' if span % 1024 == 0 else
                         f"access_min_span = {span}")
        lines.append("")
    return "\n".join(lines)


# ---- the page ---------------------------------------------------------------------------------

def _mb_s(v: int | None) -> str:
    return f"{v / 1000:.0f} GB/s" if v else "-"


def describe(host: Host) -> str:
    """`hmtune machine`: one page on what this host offers."""
    out = [f"host {host.name} ({host.source}): {host.cpu or 'CPU not recorded'}, Linux "
           f"{host.kernel or '?'}; {host.hwloc}"]
    out.append(f"{'node':>4}  {'kind':<9} {'from':<15} {'cpus':<14} {'size':>10} "
               f"{'free':>10}  {'read bw':>9} {'read lat':>8}  {'tier k/h':>8}  distances")
    for n in host.nodes:
        tiers = (f"{n.kernel_tier if n.kernel_tier is not None else '-'}/"
                 f"{n.hwloc_tier if n.hwloc_tier is not None else '-'}")
        src = n.kind_source.split(":")[0]
        cpus = n.cpus if len(n.cpus) <= 14 else n.cpus[:13] + "+"
        out.append(f"{n.index:>4}  {n.kind:<9} {src:<15} {cpus or '-':<14} "
                   f"{human(n.total):>10} {human(n.free):>10}  {_mb_s(n.read_bw):>9} "
                   f"{str(n.read_lat) + ' ns' if n.read_lat else '-':>8}  {tiers:>8}  "
                   f"{' '.join(map(str, n.distances)) or '-'}")
        if n.cache:
            out.append(f"      memory-side cache of {human(n.cache)} in front of node "
                       f"{n.index} (HBM or MCDRAM in cache mode: not placeable)")
        if n.dax:
            out.append(f"      node {n.index} is device-DAX {n.dax} onlined by kmem")
    out.append("tier k/h: the kernel's memory tier (4 is DRAM's; device-DAX kmem memory "
               "without published figures goes to 22) / hwloc's MemoryTier (0 fastest)")
    same: dict[str, list[int]] = {}          # nodes with the same pools share a line
    for n in host.nodes:
        pools = ", ".join(f"{human(p).replace('.0 ', ' ')}: {free} free of {nr}"
                          for p, (nr, free) in sorted(n.hugepages.items()))
        if pools:
            same.setdefault(pools, []).append(n.index)
    for pools, idx in same.items():
        out.append(f"hugepages on node{'s' if len(idx) > 1 else ''} {format_list(idx)}: "
                   f"{pools}")
    if not any(n.hugepages for n in host.nodes):
        out.append("hugepages: none (no hugetlbfs support)" if not host.default_hugepage
                   else f"hugepages: default size {human(host.default_hugepage)}")
    out.append(f"transparent hugepages: {host.thp or 'not available'}")
    if host.memkind:
        out.append("memkind: " + "; ".join(f"{k} {'yes' if not v else 'no (' + v + ')'}"
                                           for k, v in host.memkind.items()))
    elif not host.live:
        out.append("memkind: not checked (a recorded topology)")
    if host.live:
        # hostcheck imports this module
        from hmtune.advisor.hostcheck import umf_problem

        why = umf_problem()
        out.append(f"UMF: {why}" if why else
                   "UMF: libumf.so.1 installed (backends umf:numa:NODES[:MODE], umf:hugetlb)")
    else:
        out.append("UMF: not checked (a recorded topology)")
    if host.sampler[0]:
        out.append(f"sampler: {host.sampler[0]} ({host.sampler[1]})")
    try:
        c = choose(host)
        out.append(f"{c.why}; hmtune advise --mem SIZE uses it")
    except HostError as e:
        out.append(str(e))
    out.extend(f"note: {n}" for n in host.notes)
    return "\n".join(out) + "\n"


__all__ = ["Choice", "choose", "describe", "machine_toml"]
