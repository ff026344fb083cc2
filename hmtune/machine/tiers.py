"""A memory tier and a machine (its tiers, fastest first; the last is the fallback), with
the defaults of what a tier costs and speeds up when its machine file does not say.

Machine files are read in hmtune/machine/machinefile.py; this host's tiers are chosen in
hmtune/machine/choice.py; what the advisor does with them (the value of a site in a tier)
is hmtune/advisor/model.py's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hmtune.core.backends import pages_only
from hmtune.core.units import KIB

SPEEDS_UP = ("access", "first_touch")   # what a tier can speed up (Tier.speeds_up)
# Access kinds with a cost of their own (sites.csv weight_KIND, machine files' KIND_cost):
# streamed (bandwidth-bound), scattered (latency-bound: dependent or random accesses),
# synchronization (locked instructions, spin-waits: waiting on other threads).
KINDS = ("streaming", "scattered", "sync")
# ns libhmalloc's placing path adds per allocation (alloc + free) when a machine file
# does not say: `make bench-callcost` (bench/bench_callcost.py) on BWA-MEM, 0.77 M small
# allocations a run from stripped code's many call paths, two runs of 40 interleaved
# rounds (bench/results/callcost-2026-11-29-vm.txt): every site placed and matched cost
# 86 ns [-39, 196] and 39 ns [-181, 126] of CPU a call more than the index placed alone;
# a call looked up that matched nothing 25 ns [-28, 112] and 96 ns [61, 189]. (It was
# 2000 while libhmalloc unwound each request's stack: 2.1-2.5 us a call then.)
DEFAULT_ALLOC_COST_NS = 100.0
# bytes: a site whose peak live bytes are at most this gains nothing on access from a
# tier that only maps bigger pages of the same memory (hugetlb, THP, memkind's and
# UMF's hugetlb): the first-level TLB holds that span in 4 KiB pages (72 entries, 288
# KiB on the Zen 4 here). make bench-tlbspan (bench/results/tlbspan-2026-11-29-vm.txt):
# a dependent random chase gains 0.986-1.003x at 16-256 KiB in 2 MiB pages, 1.08-1.14x
# from 16 MiB on. A machine file's access_min_span sets it per tier.
SMALL_SPAN = 256 * KIB


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
    alloc_cost_ns: float | None = None   # ns placing adds per allocation (None: the default)
    access_min_span: int | None = None   # sites this small gain no access (None: default)
    kind_costs: tuple[tuple[str, float], ...] = ()   # (KINDS entry, cost); others: load_cost
    bandwidth_bound: float | None = None   # fallback: bytes/s per thread of misses served
    #                                        here from which a site is bandwidth-bound

    def kind_cost(self, kind: str) -> float:
        """The relative cost of an access of this kind here (load_cost when not given)."""
        return next((c for k, c in self.kind_costs if k == kind), self.load_cost)

    @property
    def unlimited(self) -> bool:
        return self.capacity is None

    @property
    def min_span(self) -> int:
        """Sites whose peak live bytes are at most this gain nothing on access here:
        access_min_span, else SMALL_SPAN on a tier of bigger pages of the same memory
        (pages_only), else 0."""
        if self.access_min_span is not None:
            return self.access_min_span
        return SMALL_SPAN if pages_only(self.backend) else 0

    @property
    def call_cost_ns(self) -> float:
        """What placing one allocation here costs, in ns: 0 on a `default` tier (it
        places nothing), else alloc_cost_ns or DEFAULT_ALLOC_COST_NS."""
        if self.backend == "default":
            return 0.0
        return DEFAULT_ALLOC_COST_NS if self.alloc_cost_ns is None else self.alloc_cost_ns


@dataclass
class Machine:
    name: str
    tiers: list[Tier]
    source: str                         # the file, or "--mem 256M"
    notes: list[str] = field(default_factory=list)

