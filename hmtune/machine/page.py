"""The page `hmtune machine` prints: what a detected host offers, and the fast tier it
implies (hmtune/machine/choice.py)."""

from __future__ import annotations

from hmtune.core.units import human
from hmtune.machine.choice import choose
from hmtune.machine.host import Host, HostError, format_list
from hmtune.machine.hostcheck import umf_problem


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
        why = umf_problem()
        out.append(f"UMF: {why}" if why else
                   "UMF: libumf.so.1 installed (backends umf:numa:NODES[:MODE], umf:hugetlb)")
    else:
        out.append("UMF: not checked (a recorded topology)")
    if host.sampler[0]:
        out.append(f"sampler: {host.sampler[0]} ({host.sampler[1]})")
    if host.counters:
        out.append(host.counters)
    try:
        out.append(f"{choose(host).why}; hmtune advise --mem SIZE uses it")
    except HostError as e:
        out.append(str(e))
    out.extend(f"note: {n}" for n in host.notes)
    return "\n".join(out) + "\n"

