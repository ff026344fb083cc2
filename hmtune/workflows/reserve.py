"""The hugepages a placement needs on this machine, for `hmtune run --reserve-hugepages`
(hmtune/workflows/hugepages.py reserves them and puts the pools back).

Per tier of the placement that maps hugepages and has sites:
- The page: `hugetlb` maps with MAP_HUGETLB and no size flag, so the kernel's default
  hugepage size (Hugepagesize: 2 MiB here, 1 GiB on hosts booted with
  default_hugepagesz=1G); the memkind hugepage kinds (MEMKIND_HUGETLB, ...) use 2 MiB
  pages (libhmalloc refuses kinds of other sizes).
- What one process needs: each placed site's blocks laid out as libhmalloc lays them
  (interpose/hmi_mmap.c, hmi_arena.c; hmtune/advisor/granularity.py). On `hugetlb` and the
  memkind hugepage kinds a request of up to 1 MiB is an object of its size class,
  packed into 2 MiB chunks (slabs per class shared by every thread, with what each
  thread stripe may hold back: arena_pages; chunks are never given back), and a
  larger one is a mapping of its own, its size rounded up to 2 MiB
  (what the library charges) and by the kernel to whole pages. A site needs the most
  pages its live blocks held at once in the trace (allocs.csv, per rank; a row of
  small-call sampling counts as the `scale` blocks it stands for); the tier needs
  the sum over its sites plus its chunks, but never more than its capacity can hold
  (in whole pages). Without allocs.csv (which objects are packed is then unknown), or
  for a site found in neither file, the tier counts as its whole capacity.
- Static variables (`static` lines) on a hugepage tier: libhmalloc remaps the whole
  2 MiB pages inside each (at most SIZE // 2 MiB of them, however it is aligned; for a
  `static-split` line, inside each of its ranges clipped to the object),
  2 MiB pages whatever the default size; they come on top of the sites' pages.
- How many processes place: 1, or under an MPI launcher its ranks on this node
  (`--npernode N`, else `-np N`); each needs the largest traced rank's pages (the
  placement's capacity is per process, per-node tiers already divided by the ranks).
- Where: the NUMA nodes the tier's backend binds to (memkind HBW kinds: the
  high-bandwidth nodes, MEMKIND_HBW_NODES or the memory-only nodes), else those the run
  binds to (numactl in the command, hmtune's own cpuset), else the machine's pool.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from hmtune.advisor.granularity import (
    ARENA_MAX,
    CHUNK,
    HUGE_BLOCK,
    class_size,
    cut,
    slab_size,
)
from hmtune.core.backends import is_hbw, uses_hugetlb
from hmtune.core.placement import PlacementFile
from hmtune.core.sitesfile import iter_rows
from hmtune.core.stage import Stage
from hmtune.workflows import launch

CHARGE = HUGE_BLOCK             # mappings are charged in these
MEMKIND_PAGE = 2 << 20          # the only hugepage size memkind kinds may use here
STATUS = Path("/proc/self/status")
NODE_DIR = Path("/sys/devices/system/node")


def tier_page(backend: str, default_page: int | None) -> int | None:
    """The hugepage size a tier's blocks take (None: no hugepages, or none here)."""
    if backend == "hugetlb":
        return default_page
    return MEMKIND_PAGE if uses_hugetlb(backend) else None


def capacity_pages(capacity: int | None, backend: str, page: int) -> int | None:
    """The most pages a tier of this capacity (bytes per process) can take."""
    if capacity is None:
        return None
    return -(-capacity // page)


def block_pages(size: int, page: int) -> int:
    """Pages a block of its own takes: its mapping, size rounded up to 2 MiB, in whole
    pages."""
    return -(-(-(-size // CHARGE) * CHARGE) // page)


def static_pages(sizes: Iterable[int], page: int) -> int:
    """Pages of `page` bytes the static variables of these sizes take at most on a
    hugepage tier: the whole 2 MiB pages inside each."""
    return -(-sum(size // CHARGE * CHARGE for size in sizes) // page)



def in_arena(size: int) -> bool:
    """Whether a hugepage tier packs an object of this size into its chunks."""
    return size <= ARENA_MAX


# ---- the sizes of the sites, from sites.csv and allocs.csv ----

@dataclass(frozen=True)
class Block:
    rank: int
    thread: int
    size: int
    t_alloc: int
    t_free: int                     # -1: never freed
    scale: int = 1                  # blocks the row stands for (small-call sampling)


@dataclass
class SiteSizes:
    """One site's sizes (all site ids of one chain together)."""
    n_allocs: int
    max_size: int
    peak_live: int                  # per process (the largest rank's)
    blocks: list[Block] | None = None   # from allocs.csv


def read_sizes(stage: Stage, chains: set[str]) -> dict[str, SiteSizes]:
    """The sizes of the sites with these chains, from the stage's sites.csv (ranks
    folded: hmtune.core.stage.site_rows) and, when it is there, allocs.csv. Site ids
    that share a chain add up (their peaks too: an upper bound, as the advisor takes
    them). Raises OSError or ValueError for files that cannot be read."""
    ids: dict[str, str] = {}                       # site id -> chain
    out: dict[str, SiteSizes] = {}
    for r in stage.site_rows():
        chain = r["callstack_raw"]
        if chain not in chains:
            continue
        ids[r["site_id"]] = chain
        s = out.setdefault(chain, SiteSizes(0, 0, 0))
        s.n_allocs += int(r["n_allocs"])
        s.max_size = max(s.max_size, int(r["max_size"]))
        s.peak_live += int(r["peak_live_bytes"])
    if not stage.allocs.is_file():
        return out
    blocks: dict[str, list[Block]] = {c: [] for c in out}
    for r in iter_rows(stage.allocs, "allocs"):
        chain = ids.get(r["site_id"])
        if chain is not None:
            blocks[chain].append(Block(int(r["rank"]), int(r["thread"]), int(r["size"]),
                                       int(r["t_alloc"]), int(r["t_free"]),
                                       max(1, int(r.get("scale") or 1))))
    for chain, b in blocks.items():
        out[chain].blocks = b
    return out


def sizes_for(placement: Path, dirs: list[Path], chains: set[str]
              ) -> tuple[dict[str, SiteSizes], str]:
    """The sizes of the placement's sites from the first directory of dirs holding a
    sites.csv of the trace the placement was made from (both record its id; a file
    without one is taken as it is); ({}, why) when none does."""
    from hmtune.analyze.traceid import recorded_id

    want = recorded_id(placement)
    why = "no sites.csv next to the placement"
    for d in dict.fromkeys(dirs):
        stage = Stage(d)
        if not stage.sites.is_file():
            continue
        got = recorded_id(stage.sites)
        if want and got and got != want:
            why = f"{stage.sites} is of another trace than the placement"
            continue
        try:
            return read_sizes(stage, chains), ""
        except (OSError, ValueError, KeyError) as e:
            why = f"cannot read the sizes in {d}: {e}"
    return {}, why


# ---- pages per tier ----

def _peak(events: list[tuple[int, int, int]]) -> int:
    """The largest sum of live pages; events (time, 0 free / 1 alloc, pages), frees
    first at equal times (analyze's order)."""
    live = peak = 0
    for _, _, delta in sorted(events):
        live += delta
        peak = max(peak, live)
    return peak


def _events(b: Block, pages: int) -> list[tuple[int, int, int]]:
    ev = [(b.t_alloc, 1, pages)]
    if b.t_free >= 0:
        ev.append((b.t_free, 0, -pages))
    return ev


def range_pages(size: int, ranges: tuple[tuple[int, int], ...], page: int) -> int:
    """Pages the ranges of a split object of `size` bytes take: each range cut to the
    object, widened to 2 MiB boundaries within the object's 2 MiB-rounded mapping (as
    libhmalloc maps them), in whole pages."""
    span = -(-size // CHARGE) * CHARGE
    total = 0
    for a, b in ranges:
        if a >= size:
            continue
        lo, hi = a // CHARGE * CHARGE, min(-(-b // CHARGE) * CHARGE, span)
        total += max(0, hi - lo)
    return -(-total // page)


def site_pages(s: SiteSizes, page: int,
               ranges: tuple[tuple[int, int], ...] = ()) -> dict[int, int] | None:
    """Pages the site's blocks of their own need at most at once, per traced rank
    (objects packed in the arena apart: arena_pages; a split site's objects are
    mappings of their own, only their ranges in hugepages); None when unknown (no
    allocs.csv: which objects went to the arena is not known)."""
    if s.blocks is None:
        return None
    per_rank: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
    for b in s.blocks:
        if ranges:
            per_rank[b.rank] += _events(b, range_pages(b.size, ranges, page) * b.scale)
        elif not in_arena(b.size):
            per_rank[b.rank] += _events(b, block_pages(b.size, page) * b.scale)
    return {r: _peak(ev) for r, ev in per_rank.items()}


def arena_pages(sites: list[SiteSizes]) -> dict[int, int]:
    """2 MiB chunks the tier's small objects take per rank, as the arena cuts them
    (interpose/hmi_arena.h, granularity.cut): per size class, enough slabs for its most
    objects live at once over every thread plus what each thread stripe of the rank but
    one may hold back (the stripes: the rank's threads allocating in the tier, at most 16),
    and per slab size enough chunks for those slabs (neither is ever given back).
    hmtune/advisor/arena_fit.footprint counts the same for the advisor."""
    per_key: dict[tuple[int, int], list[tuple[int, int, int]]] = defaultdict(list)
    threads: dict[int, set[int]] = defaultdict(set)
    for s in sites:
        for b in s.blocks or []:
            if in_arena(b.size):
                per_key[(b.rank, class_size(b.size))] += _events(b, b.scale)
                threads[b.rank].add(b.thread)
    slabs: dict[tuple[int, int], int] = defaultdict(int)    # (rank, slab) -> bytes
    for (rank, cs), ev in per_key.items():
        slab = slab_size(cs)
        objects = cut(_peak(ev), cs, len(threads[rank]))
        slabs[(rank, slab)] += -(-objects // (slab // cs)) * slab
    out: dict[int, int] = defaultdict(int)
    for (rank, _), n in slabs.items():
        out[rank] += -(-n // CHUNK) * (CHUNK // MEMKIND_PAGE)
    return out


@dataclass(frozen=True)
class TierNeed:
    """The hugepages one tier of the placement needs on this node."""
    tier: str
    backend: str
    page: int
    per_process: int                # pages
    processes: int
    nodes: tuple[int, ...]          # empty: the machine's pool
    sized_by: str                   # "allocs.csv", "placement" or "capacity"
    capped: bool                    # the sites need more than the capacity holds

    @property
    def pages(self) -> int:
        return self.per_process * self.processes


def tier_needs(pf: PlacementFile, sizes: dict[str, SiteSizes], processes: int,
               default_page: int | None, nodes_of: dict[str, tuple[int, ...]] | None = None
               ) -> list[TierNeed]:
    """The pages each hugepage tier of pf with sites needs (see the module's doc);
    nodes_of: the NUMA nodes to take them from, per tier name (default: the machine's
    pool). A tier without hugepages here (no default size) is left out."""
    out: list[TierNeed] = []
    for t in pf.tiers:
        page = tier_page(t.backend, default_page)
        sites = [s for s in pf.sites if s.tier == t.name]
        # a static-split line's ranges each on their own (clipped to the object)
        extents = [n for s in pf.statics if s.tier == t.name
                   for n in ([min(b, s.size) - a for a, b in s.ranges] or [s.size])]
        fixed = static_pages(extents, page or CHARGE)
        if page is None or not (sites or fixed):
            continue
        cap = capacity_pages(t.capacity, t.backend, page)
        known = [sizes.get(s.chain) for s in sites]
        per_site = [site_pages(k, page, s.ranges) if k else None
                    for k, s in zip(known, sites, strict=True)]
        if not sites:
            need, by = 0, "placement"
        elif any(p is None for p in per_site):
            need, by = cap, "capacity"
        else:
            ranks: dict[int, int] = defaultdict(int)
            for p in per_site:
                for r, n in (p or {}).items():
                    ranks[r] += n
            whole = [k for k, s in zip(known, sites, strict=True)
                     if k and not s.ranges]
            for r, n in arena_pages(whole).items():
                ranks[r] += n
            need = max(ranks.values(), default=0)
            by = "allocs.csv"
        if need is not None and by != "capacity":
            need += fixed
        capped = cap is not None and (need is None or need > cap)
        per_process = cap if capped or need is None else need
        if per_process is None:         # an unlimited tier of unknown sizes: not a fast tier
            continue
        out.append(TierNeed(t.name, t.backend, page, per_process, processes,
                            (nodes_of or {}).get(t.name, ()), by, capped and by != "capacity"))
    return out


# ---- where: NUMA nodes ----

def parse_nodes(text: str) -> tuple[int, ...] | None:
    """`0-3,8` → (0, 1, 2, 3, 8); None for what is not a plain node list (`all`,
    numactl's relative `+1` or inverted `!0` forms)."""
    nodes: set[int] = set()
    for part in text.strip().split(","):
        lo, _, hi = part.partition("-")
        if not lo.isdigit() or not (hi or lo).isdigit() or int(hi or lo) < int(lo):
            return None
        nodes.update(range(int(lo), int(hi or lo) + 1))
    return tuple(sorted(nodes)) or None


_NUMACTL_MEM = {"-m": 1, "--membind": 1, "-i": 1, "--interleave": 1, "-p": 1,
                "--preferred": 1, "-P": 1, "--preferred-many": 1, "-w": 1,
                "--weighted-interleave": 1}
_NUMACTL_CPU = {"-N": 1, "--cpunodebind": 1, "-c": 1, "--cpubind": 1}
_NUMACTL_ARG = {"-C", "--physcpubind", "-S", "--shm", "-f", "--file", "-L", "--length",
                "-o", "--offset", "-M", "--shmmode", "-I", "--shmid"}


def numactl_nodes(app: list[str]) -> tuple[int, ...]:
    """The nodes a numactl in the command binds the program's memory to (--membind,
    --interleave, --preferred), else the nodes of its CPUs (--cpunodebind: the kernel
    takes hugepages from the local node first); () when there is no such numactl."""
    mem: tuple[int, ...] | None = None
    cpu: tuple[int, ...] | None = None
    for i, word in enumerate(app):
        if Path(word).name != "numactl":
            continue
        j = i + 1
        while j < len(app) and app[j].startswith("-") and app[j] != "--":
            opt, eq, value = app[j].partition("=")
            if not eq and not opt.startswith("--") and len(opt) > 2:
                opt, value, eq = opt[:2], opt[2:], "="          # -m0
            takes = opt in _NUMACTL_MEM or opt in _NUMACTL_CPU or opt in _NUMACTL_ARG
            if takes and not eq:
                value = app[j + 1] if j + 1 < len(app) else ""
                j += 1
            if opt in _NUMACTL_MEM:
                mem = parse_nodes(value)
            elif opt in _NUMACTL_CPU:
                cpu = parse_nodes(value)
            j += 1
        break
    return mem or cpu or ()


def cpuset_nodes(status: Path = STATUS, node_dir: Path = NODE_DIR) -> tuple[int, ...]:
    """The memory nodes this process's cpuset allows, when that is not all of them."""
    try:
        allowed = next((line.split(":", 1)[1] for line in status.read_text().splitlines()
                        if line.startswith("Mems_allowed_list:")), "")
        memory = parse_nodes((node_dir / "has_memory").read_text())
    except OSError:
        return ()
    mems = parse_nodes(allowed)
    return mems if mems and memory and set(mems) < set(memory) else ()


def hbw_nodes(environ: dict[str, str], memory_only: set[int] | None) -> tuple[int, ...]:
    """The nodes memkind takes for high-bandwidth memory: MEMKIND_HBW_NODES, else the
    nodes with memory and no CPU."""
    given = environ.get("MEMKIND_HBW_NODES", "")
    if given:
        return parse_nodes(given) or ()
    return tuple(sorted(memory_only or ()))


def tier_nodes(backend: str, app: list[str], environ: dict[str, str],
               memory_only: set[int] | None, cpuset: tuple[int, ...]) -> tuple[int, ...]:
    """Where a tier's hugepages come from: the nodes its backend binds to, else the nodes
    the run binds to, within the cpuset; () for the machine's pool."""
    own = hbw_nodes(environ, memory_only) if is_hbw(backend) else ()
    for nodes in (own, numactl_nodes(app)):
        if nodes:
            inside = tuple(n for n in nodes if not cpuset or n in cpuset)
            return inside or nodes
    return cpuset


def node_processes(launcher: list[str], total: int | None,
                   environ: dict[str, str] | None = None) -> int:
    """The processes an MPI launcher starts on one node: `--npernode N`, `-npernode N`,
    `--ntasks-per-node=N` or Open MPI's `-N N`; srun's `-N N`/`--nodes=N` (or, without
    them, the job's SLURM_JOB_NUM_NODES) spread the total over that many nodes; else all
    of them (total, 1 unknown)."""
    srun = launch.is_srun(launcher)
    nodes = 0
    for i, word in enumerate(launcher):
        key, eq, value = word.partition("=")
        value = value if eq else (launcher[i + 1] if i + 1 < len(launcher) else "")
        if srun and key in ("-N", "--nodes"):
            value = value.partition("-")[0]                 # srun -N 2-4: at least 2
            nodes = int(value) if value.isdigit() and int(value) > 0 else 0
            continue
        if key in ("--npernode", "-npernode", "--ntasks-per-node", "-N"):
            if value.isdigit() and int(value) > 0:
                return min(int(value), total or int(value))
    if srun and not nodes:
        env = os.environ if environ is None else environ
        n = env.get("SLURM_JOB_NUM_NODES", "")
        nodes = int(n) if n.isdigit() and int(n) > 0 else 0
    if nodes and total:
        return -(-total // nodes)                           # the fullest node
    return total or 1


def describe(n: TierNeed) -> str:
    """`tier fast (hugetlb): 6 pages of 2.0 MiB` with how it was sized."""
    from hmtune.core.units import human

    procs = f" x {n.processes} processes" if n.processes > 1 else ""
    why = {"capacity": "its capacity: the sites' sizes are unknown",
           "allocs.csv": "from allocs.csv",
           "placement": "from the placement's static lines"}[n.sized_by]
    capped = ", capped at the capacity" if n.capped else ""
    return (f"tier {n.tier} ({n.backend}): {n.per_process}{procs} pages of "
            f"{human(n.page)} ({why}{capped})")
