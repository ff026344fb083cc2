"""What memory this host offers, found from maintained sources (`hmtune machine`).

Sources, each optional, read in this order of precedence for a NUMA node's kind:

1. hwloc's view (`lstopo-no-graphics --of xml`, or a recorded XML): the NUMA node's
   subtype (HBM, MCDRAM, DRAM, NVM, SPM, GPUMemory, CXL-DRAM, CXL-NVM; hwloc >= 2.10 sets
   it on every node and adds the MemoryTier info, 2.9 only on some machines) and its
   memory attributes (Bandwidth, Latency).
2. Linux sysfs: a node that is the target of a device-DAX device bound to kmem is
   CXL-DRAM when the device sits below a CXL region, NVM otherwise; a CPU-less node whose
   firmware-published (HMAT) read bandwidth is at least 1.5 times that of the CPUs' own
   node is HBM; a node in a higher kernel memory tier than the CPUs' nodes is slow memory
   of unknown technology ("slow").
3. Otherwise DRAM.

A user's machine file always wins over all of this (`--machine`). memkind's own
availability check (memkind_check_available, in a child process, with the user's
environment such as MEMKIND_HBW_NODES) says which kinds it can reach; the sampler is the
one the tracer's own detection picks (hmtune-probe).

Every reader takes a root directory that stands for "/", so recorded topologies of other
machines (tests/topologies/) are read exactly like this host.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from advisor.model import KIB, MIB, Tier
from advisor.tiers import Machine, check_tiers
from workflows.units import human

# Relative costs used when the firmware publishes no bandwidth or latency for a pair of
# nodes. HBM: Xeon Max 9468, HBM2e 1.64 TB/s vs DDR5-4800 x 8 channels 307.2 GB/s per
# socket (configs/machines/xeon-max-9468-*.toml); MCDRAM: KNL 7250, ~450 GB/s vs DDR4
# ~90 GB/s; CXL-DRAM: about twice the latency of local DRAM; NVM (Optane PMem in App
# Direct as kmem): ~3x DRAM latency; 2 MiB hugepages vs 4 KiB pages on this VM:
# dependent chase 1.55x (/work/shared/MACHINE-NOTES.md, configs/machines/vm-hugetlb.toml).
FALLBACK_COST = {"HBM": 5.3, "MCDRAM": 5.0, "CXL-DRAM": 2.0, "CXL-NVM": 3.0, "NVM": 3.0,
                 "slow": 2.0, "hugetlb": 1.55, "thp": 1.55}
HBW_KINDS = ("HBM", "MCDRAM")
SLOW_KINDS = ("CXL-DRAM", "CXL-NVM", "NVM", "slow")
MEMKIND_KINDS = ("MEMKIND_HBW", "MEMKIND_HBW_ALL", "MEMKIND_DAX_KMEM", "MEMKIND_HUGETLB")
HBM_BW_RATIO = 1.5
GIB = 1024 * MIB


@dataclass
class Node:
    index: int
    kind: str = "DRAM"
    kind_source: str = "default"
    cpus: str = ""
    total: int = 0                       # bytes
    free: int = 0
    distances: list[int] = field(default_factory=list)
    read_bw: int | None = None           # MB/s (HMAT access0) or hwloc's Bandwidth
    read_lat: int | None = None          # ns
    kernel_tier: int | None = None       # /sys/devices/virtual/memory_tiering
    hwloc_tier: int | None = None        # hwloc's MemoryTier info
    cache: int = 0                       # memory-side cache in front of it (bytes)
    hugepages: dict[int, tuple[int, int]] = field(default_factory=dict)  # page: (nr, free)
    dax: str = ""                        # the device-DAX device whose memory it is


@dataclass
class Host:
    name: str
    source: str                          # "this host" or the recorded topology
    live: bool
    nodes: list[Node]
    thp: str                             # always, madvise, never, or "" (no THP)
    default_hugepage: int                # bytes, 0 without hugetlbfs support
    cpu: str = ""
    kernel: str = ""
    hwloc: str = ""                      # hwloc version, or why it was not read
    memkind: dict[str, str] = field(default_factory=dict)   # kind -> "" or why not
    sampler: tuple[str, str] = ("", "")
    notes: list[str] = field(default_factory=list)

    def of_kind(self, *kinds: str) -> list[Node]:
        return [n for n in self.nodes if n.kind in kinds]


class HostError(RuntimeError):
    """A recorded topology hmtune cannot read; str() says what is wrong."""


# ---- small readers ---------------------------------------------------------------------

def _text(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace").strip()
    except OSError:
        return None


def _int(path: Path) -> int | None:
    t = _text(path)
    return int(t) if t is not None and re.fullmatch(r"-?[0-9]+", t) else None


def parse_list(text: str) -> list[int]:
    """A Linux cpulist/nodelist ("0-3,8") as numbers."""
    out: list[int] = []
    for part in text.replace("\n", ",").split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            raise ValueError(f"'{text}' is not a list like 0-3,8")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def format_list(nums: list[int]) -> str:
    """[0, 1, 2, 5] -> "0-2,5"."""
    parts: list[str] = []
    nums = sorted(set(nums))
    i = 0
    while i < len(nums):
        j = i
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        parts.append(str(nums[i]) if i == j else f"{nums[i]}-{nums[j]}")
        i = j + 1
    return ",".join(parts)


def _meminfo(path: Path) -> dict[str, int]:
    """Fields of a /proc/meminfo or nodeN/meminfo file, in bytes (pages stay counts)."""
    out: dict[str, int] = {}
    for line in (_text(path) or "").splitlines():
        m = re.match(r"(?:Node \d+ )?([A-Za-z_()0-9]+):\s+(\d+)(?:\s+(kB))?", line)
        if m:
            out[m.group(1)] = int(m.group(2)) * (1024 if m.group(3) else 1)
    return out


# ---- sysfs -------------------------------------------------------------------------------

def _read_nodes(root: Path) -> list[Node]:
    base = root / "sys/devices/system/node"
    nodes: list[Node] = []
    for d in sorted(base.glob("node[0-9]*"), key=lambda p: int(p.name[4:])):
        n = Node(index=int(d.name[4:]))
        n.cpus = _text(d / "cpulist") or ""
        mi = _meminfo(d / "meminfo")
        n.total, n.free = mi.get("MemTotal", 0), mi.get("MemFree", 0)
        n.distances = [int(x) for x in (_text(d / "distance") or "").split() if x.isdigit()]
        init = d / "access0" / "initiators"
        n.read_bw, n.read_lat = _int(init / "read_bandwidth"), _int(init / "read_latency")
        for size in (d / "memory_side_cache").glob("index*/size"):
            n.cache += _int(size) or 0
        for hp in (d / "hugepages").glob("hugepages-*kB"):
            m = re.fullmatch(r"hugepages-(\d+)kB", hp.name)
            if m:
                n.hugepages[int(m.group(1)) * KIB] = (_int(hp / "nr_hugepages") or 0,
                                                      _int(hp / "free_hugepages") or 0)
        nodes.append(n)
    if not nodes:                        # a kernel without NUMA: one node, all memory
        mi = _meminfo(root / "proc/meminfo")
        if mi:
            nodes.append(Node(index=0, cpus=_online_cpus(root), total=mi.get("MemTotal", 0),
                              free=mi.get("MemFree", 0), distances=[10]))
    return nodes


def _online_cpus(root: Path) -> str:
    return _text(root / "sys/devices/system/cpu/online") or ""


def _kernel_tiers(root: Path, nodes: list[Node]) -> None:
    by_index = {n.index: n for n in nodes}
    for d in (root / "sys/devices/virtual/memory_tiering").glob("memory_tier[0-9]*"):
        try:
            members = parse_list(_text(d / "nodelist") or "")
        except ValueError:
            continue
        for i in members:
            if i in by_index:
                by_index[i].kernel_tier = int(d.name[len("memory_tier"):])


def _dax_nodes(root: Path, nodes: list[Node]) -> None:
    """Nodes made of device-DAX memory (kmem): CXL-DRAM below a CXL region, else NVM."""
    by_index = {n.index: n for n in nodes}
    for dev in sorted((root / "sys/bus/dax/devices").glob("dax*")):
        target = _int(dev / "target_node")
        if target is None or target not in by_index:
            continue
        driver = dev / "driver"
        if driver.exists() and driver.resolve().name != "kmem":
            continue                                 # device_dax: not system RAM
        node = by_index[target]
        node.dax = dev.name
        path = str(dev.resolve()) if dev.is_symlink() else _text(dev / "hmtune_path") or ""
        cxl = "/cxl" in path or re.search(r"/region\d+/", path) is not None
        node.kind, node.kind_source = ("CXL-DRAM" if cxl else "NVM"), f"sysfs: {dev.name} (kmem)"


def _hmat_and_tiers(nodes: list[Node]) -> None:
    """Kinds from published bandwidth and kernel tiers, for nodes no better source named."""
    cpu_nodes = [n for n in nodes if n.cpus]
    ref_bw = max((n.read_bw for n in cpu_nodes if n.read_bw), default=None)
    cpu_tiers = [n.kernel_tier for n in cpu_nodes if n.kernel_tier is not None]
    for n in nodes:
        if n.kind_source != "default":
            continue
        if not n.cpus and ref_bw and n.read_bw and n.read_bw >= HBM_BW_RATIO * ref_bw:
            n.kind, n.kind_source = "HBM", (f"HMAT: read bandwidth {n.read_bw} MB/s vs "
                                            f"{ref_bw} MB/s")
        elif cpu_tiers and n.kernel_tier is not None and n.kernel_tier > max(cpu_tiers):
            n.kind, n.kind_source = "slow", f"kernel memory tier {n.kernel_tier}"


# ---- hwloc ---------------------------------------------------------------------------------

def _hwloc_xml_live() -> tuple[str | None, str]:
    """(XML text, "") from this host's hwloc, or (None, why not)."""
    exe = shutil.which("lstopo-no-graphics") or shutil.which("lstopo")
    if exe is None:
        return None, "hwloc's lstopo is not installed (make deps installs hwloc-nox)"
    try:
        r = subprocess.run([exe, "--of", "xml", "-"], capture_output=True, text=True,
                           timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"lstopo failed: {e}"
    if r.returncode != 0:
        return None, f"lstopo failed: {r.stderr.strip()[:200]}"
    return r.stdout, ""


def apply_hwloc(xml_text: str, nodes: list[Node], where: str) -> str:
    """Take kinds, tiers and attributes from hwloc's XML; returns hwloc's version."""
    try:
        top = ET.fromstring(xml_text)
    except ET.ParseError as e:
        raise HostError(f"{where}: not hwloc XML ({e})") from None
    if top.tag != "topology":
        raise HostError(f"{where}: not hwloc XML (root element <{top.tag}>)")
    by_index = {n.index: n for n in nodes}
    by_gp: dict[str, Node] = {}
    version = ""
    for obj in top.iter("object"):
        for info in obj.findall("info"):
            if info.get("name") == "hwlocVersion":
                version = info.get("value", "")
        if obj.get("type") != "NUMANode":
            continue
        idx = obj.get("os_index")
        if idx is None or not idx.isdigit():
            continue
        node = by_index.get(int(idx))
        if node is None:                 # hwloc knows a node sysfs did not list
            node = Node(index=int(idx), total=int(obj.get("local_memory", "0") or 0))
            nodes.append(node)
            by_index[node.index] = node
        if obj.get("gp_index"):
            by_gp[obj.get("gp_index", "")] = node
        sub = obj.get("subtype")
        if sub:
            node.kind, node.kind_source = sub, "hwloc subtype"
        for info in obj.findall("info"):
            if info.get("name") == "MemoryTier" and (info.get("value") or "").isdigit():
                node.hwloc_tier = int(info.get("value", "0"))
    for attr in top.iter("memattr"):
        name = attr.get("name")
        for v in attr.findall("memattr_value"):
            node = by_gp.get(v.get("target_obj_gp_index", ""))
            value = v.get("value", "")
            if node is None or not value.isdigit():
                continue
            if name == "Bandwidth" and node.read_bw is None:
                node.read_bw = int(value)
            elif name == "Latency" and node.read_lat is None:
                node.read_lat = int(value)
    nodes.sort(key=lambda n: n.index)
    return version or "unknown version"


# ---- memkind and the sampler -----------------------------------------------------------

_MEMKIND_CHECK = r"""
import ctypes, sys
try:
    lib = ctypes.CDLL("libmemkind.so.0")
except OSError as e:
    print("*", "libmemkind.so.0 not found:", e); sys.exit(0)
lib.memkind_check_available.argtypes = [ctypes.c_void_p]
lib.memkind_error_message.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
buf = ctypes.create_string_buffer(256)
for name in sys.argv[1:]:
    try:
        kind = ctypes.c_void_p.in_dll(lib, name).value
    except ValueError:
        print(name, "this libmemkind has no such kind"); continue
    err = lib.memkind_check_available(kind)
    if err:
        lib.memkind_error_message(err, buf, 256)
        print(name, buf.value.decode(errors="replace").strip() or f"error {err}")
    else:
        print(name)
"""


def memkind_reach(kinds: tuple[str, ...] = MEMKIND_KINDS) -> dict[str, str]:
    """kind -> "" when memkind_check_available says yes, else the reason (memkind's own
    message). Runs in a child process: libmemkind's start-up and exit stay out of hmtune."""
    try:
        r = subprocess.run([sys.executable, "-c", _MEMKIND_CHECK, *kinds], capture_output=True,
                           text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {k: f"the check could not run: {e}" for k in kinds}
    out: dict[str, str] = {}
    for line in r.stdout.splitlines():
        name, _, why = line.partition(" ")
        if name == "*":
            return {k: why for k in kinds}
        out[name] = why
    return {k: out.get(k, "the check gave no answer") for k in kinds}


def sampler() -> tuple[str, str]:
    """(sampler, why) as the tracer's own detection (hmtune-probe) decides."""
    from workflows.paths import probe_bin

    try:
        r = subprocess.run([str(probe_bin())], capture_output=True, text=True, timeout=30)
    except OSError as e:
        return "unknown", f"hmtune-probe could not run ({e}); run make build"
    fields = dict(line.partition("=")[::2] for line in r.stdout.splitlines())
    return fields.get("sampler", "unknown"), fields.get("why", r.stderr.strip())


# ---- the host -------------------------------------------------------------------------------

def detect(root: Path = Path("/"), hwloc_xml: Path | None = None, probe: bool = True) -> Host:
    """This host (root "/"), or a recorded topology: a directory with sys/ and proc/ trees
    and optionally hwloc.xml. probe: also ask memkind and hmtune-probe (this host only)."""
    live = root == Path("/")
    if not live and not (root / "sys").is_dir():
        raise HostError(f"{root}: not a recorded topology (no sys/ directory in it)")
    nodes = _read_nodes(root)
    if not nodes:
        raise HostError(f"{root}: no NUMA node and no /proc/meminfo to read")
    _kernel_tiers(root, nodes)
    _dax_nodes(root, nodes)
    xml_text: str | None = None
    why_no_hwloc = ""
    if hwloc_xml is None and not live and (root / "hwloc.xml").is_file():
        hwloc_xml = root / "hwloc.xml"
    if hwloc_xml is not None:
        try:
            xml_text = hwloc_xml.read_text()
        except OSError as e:
            raise HostError(f"{hwloc_xml}: {e.strerror or e}") from None
    elif live:
        xml_text, why_no_hwloc = _hwloc_xml_live()
    else:
        why_no_hwloc = "no hwloc.xml recorded"
    hw = apply_hwloc(xml_text, nodes, str(hwloc_xml or "lstopo")) if xml_text else ""
    _hmat_and_tiers(nodes)
    thp_text = _text(root / "sys/kernel/mm/transparent_hugepage/enabled") or ""
    m = re.search(r"\[(\w+)\]", thp_text)
    name = (_text(root / "proc/sys/kernel/hostname") or root.name or "host").split(".")[0]
    cpu = ""
    for line in (_text(root / "proc/cpuinfo") or "").splitlines():
        if line.startswith("model name"):
            cpu = line.partition(":")[2].strip()
            break
    host = Host(name=name, source="this host" if live else str(root), live=live, nodes=nodes,
                thp=m.group(1) if m else "",
                default_hugepage=_meminfo(root / "proc/meminfo").get("Hugepagesize", 0),
                cpu=cpu, kernel=(_text(root / "proc/sys/kernel/osrelease") or ""),
                hwloc=f"hwloc {hw}" if hw else why_no_hwloc)
    if probe and live:
        host.memkind = memkind_reach()
        host.sampler = sampler()
    return host


# ---- the machine file it implies ----------------------------------------------------------

@dataclass
class Choice:
    machine: Machine
    why: str                              # "fast tier: hugetlb, 2 MiB pages (no HBM ...)"


def _ratio(fast: list[Node], slow: list[Node], kind: str) -> tuple[float, str]:
    """Cost of the slow tier relative to the fast one (1.0): bandwidth-bound accesses for
    HBM/MCDRAM, latency for slow memory; published figures first, then FALLBACK_COST."""
    def mean(vals: list[int | None]) -> float | None:
        got = [v for v in vals if v]
        return sum(got) / len(got) if got else None

    if kind in HBW_KINDS:
        f, s = mean([n.read_bw for n in fast]), mean([n.read_bw for n in slow])
        if f and s and f > s:
            return round(f / s, 2), "read bandwidth published by the firmware"
    else:
        f, s = mean([n.read_lat for n in fast]), mean([n.read_lat for n in slow])
        if f and s and s > f:
            return round(s / f, 2), "read latency published by the firmware"
    return FALLBACK_COST[kind], "hmtune's table for this kind of memory (none published)"


def _capacity(nbytes: int) -> str:
    """Round down to a whole GiB (MiB below 1 GiB) for a machine file."""
    if nbytes >= GIB:
        return f"{nbytes // GIB}G"
    return f"{max(nbytes // MIB, 1)}M"


def choose(host: Host) -> Choice:
    """The tiers this host's fast memory implies, fastest first (`advise --mem` without
    --machine, `hmtune machine --toml`)."""
    dram = host.of_kind("DRAM")
    hbw = host.of_kind(*HBW_KINDS)
    slow = host.of_kind(*SLOW_KINDS)
    if hbw and (dram or slow):
        kind = hbw[0].kind
        reach = host.memkind.get("MEMKIND_HBW")
        nodes = format_list([n.index for n in hbw])
        backend = f"numa:{nodes}" if reach else "memkind:MEMKIND_HBW"
        via = (f"NUMA nodes {nodes} (memkind cannot reach them: {reach})" if reach
               else f"memkind's MEMKIND_HBW (NUMA nodes {nodes})")
        cost, cost_why = _ratio(hbw, dram or slow, kind)
        total = sum(n.total for n in hbw)
        fast = Tier(kind.lower(), _capacity_bytes(total), backend, 1.0, 1.0, 4 * KIB, True)
        rest = Tier("dram" if dram else "rest", None, "default", cost, cost)
        return Choice(_machine(host, [fast, rest], cost_why),
                      f"fast tier: {kind} through {via}, {human(total)}")
    if slow and dram:
        kind = slow[0].kind
        nodes = format_list([n.index for n in dram])
        cost, cost_why = _ratio(dram, slow, kind)
        total = sum(n.total for n in dram)
        reach = host.memkind.get("MEMKIND_DAX_KMEM")
        slow_nodes = format_list([n.index for n in slow])
        back = f"numa:{slow_nodes}" if reach else "memkind:MEMKIND_DAX_KMEM"
        fast = Tier("dram", _capacity_bytes(total), f"numa:{nodes}", 1.0, 1.0, 4 * KIB, True)
        rest = Tier(_tier_name(kind), None, back, cost, cost)
        return Choice(_machine(host, [fast, rest], cost_why),
                      f"fast tier: DRAM (NUMA nodes {nodes}, {human(total)}) in front of "
                      f"{kind} (nodes {slow_nodes})")
    why_none = ("HBM only, no slower memory" if hbw else "no HBM, CXL or NVM")
    total = sum(n.total for n in host.nodes)
    if host.default_hugepage:
        page = host.default_hugepage
        fast = Tier("huge", _capacity_bytes(total // 4), "hugetlb", 1.0, 1.0, page, True)
        cost = FALLBACK_COST["hugetlb"]
        rest = Tier("small", None, "default", cost, cost)
        return Choice(_machine(host, [fast, rest], "measured on hugepages here "
                               "(MACHINE-NOTES.md)"),
                      f"fast tier: hugetlb, {human(page).replace('.0 ', ' ')} pages "
                      f"({why_none} on this host)")
    if host.thp and host.thp != "never":
        fast = Tier("thp", _capacity_bytes(total // 4), "thp", 1.0, 1.0, 2 * MIB, True)
        cost = FALLBACK_COST["thp"]
        rest = Tier("small", None, "default", cost, cost)
        return Choice(_machine(host, [fast, rest], "measured on hugepages here"),
                      f"fast tier: transparent hugepages ({why_none} and no hugetlbfs on "
                      "this host)")
    raise HostError("this host has no memory hmtune can place faster than the default: "
                    f"{why_none}, no hugetlbfs, THP off; give --machine FILE.toml")


def _tier_name(kind: str) -> str:
    return {"CXL-DRAM": "cxl", "CXL-NVM": "cxl", "NVM": "pmem"}.get(kind, "slow")


def _capacity_bytes(nbytes: int) -> int:
    return nbytes // GIB * GIB if nbytes >= GIB else max(nbytes // MIB, 1) * MIB


def _machine(host: Host, tiers: list[Tier], cost_why: str) -> Machine:
    check_tiers(tiers, "detected tiers")
    return Machine(name=host.name, tiers=tiers, source=f"detected on {host.source}",
                   notes=[f"costs: {cost_why}"])


def machine_toml(host: Host, choice: Choice) -> str:
    """A machine file (docs/formats.md §5) for the host, with where each value came from."""
    lines = [f"# {host.name}: written by hmtune machine --toml from {host.source}",
             f"# ({host.hwloc or 'no hwloc'}; {choice.why}).",
             f"# {choice.machine.notes[0]}." if choice.machine.notes else "#",
             f'name = "{host.name}"', ""]
    for t in choice.machine.tiers:
        lines += ["[[tier]]", f'name = "{t.name}"',
                  f'capacity = "{"unlimited" if t.capacity is None else _capacity(t.capacity)}"',
                  f'backend = "{t.backend}"', f"load_cost = {float(t.load_cost)!r}",
                  f"store_cost = {float(t.store_cost)!r}"]
        if t.capacity is not None:
            lines.append(f'per = "{"node" if t.per_node else "process"}"')
        if t.backend in ("hugetlb", "thp"):
            lines.append(f'page = "{human(t.page_size).replace(".0 ", "").replace("iB", "")}"')
        lines.append("")
    return "\n".join(lines)


# ---- the page ---------------------------------------------------------------------------------

def _mb_s(v: int | None) -> str:
    return f"{v / 1000:.0f} GB/s" if v else "-"


def describe(host: Host) -> str:
    """`hmtune machine`: one page on what this host offers."""
    out = [f"host {host.name} ({host.source}): {host.cpu or 'CPU not recorded'}, Linux "
           f"{host.kernel or '?'}; {host.hwloc}"]
    out.append(f"{'node':>4}  {'kind':<9} {'from':<15} {'cpus':<9} {'size':>10} {'free':>10}  "
               f"{'read bw':>9} {'read lat':>8}  {'tier k/h':>8}  distances")
    for n in host.nodes:
        tiers = (f"{n.kernel_tier if n.kernel_tier is not None else '-'}/"
                 f"{n.hwloc_tier if n.hwloc_tier is not None else '-'}")
        src = n.kind_source.split(":")[0]
        out.append(f"{n.index:>4}  {n.kind:<9} {src:<15} {n.cpus or '-':<9} "
                   f"{human(n.total):>10} {human(n.free):>10}  {_mb_s(n.read_bw):>9} "
                   f"{str(n.read_lat) + ' ns' if n.read_lat else '-':>8}  {tiers:>8}  "
                   f"{' '.join(map(str, n.distances)) or '-'}")
        if n.cache:
            out.append(f"      memory-side cache of {human(n.cache)} in front of node "
                       f"{n.index} (HBM or MCDRAM in cache mode: not placeable)")
    for n in host.nodes:
        pools = ", ".join(f"{human(p).replace('.0 ', ' ')}: {free} free of {nr}"
                          for p, (nr, free) in sorted(n.hugepages.items()))
        if pools:
            out.append(f"hugepages node {n.index}: {pools}")
    if not any(n.hugepages for n in host.nodes):
        out.append("hugepages: none (no hugetlbfs support)" if not host.default_hugepage
                   else f"hugepages: default size {human(host.default_hugepage)}")
    out.append(f"transparent hugepages: {host.thp or 'not available'}")
    if host.memkind:
        out.append("memkind: " + "; ".join(f"{k} {'yes' if not v else 'no (' + v + ')'}"
                                           for k, v in host.memkind.items()))
    elif not host.live:
        out.append("memkind: not checked (a recorded topology)")
    out.append("UMF: no UMF backend in this hmtune (not checked)")
    if host.sampler[0]:
        out.append(f"sampler: {host.sampler[0]} ({host.sampler[1]})")
    try:
        c = choose(host)
        out.append(f"{c.why}; hmtune advise --mem SIZE uses it")
    except HostError as e:
        out.append(str(e))
    out.extend(host.notes)
    return "\n".join(out) + "\n"


def env_root() -> Path:
    """HMTUNE_HOST_ROOT: read a recorded topology instead of this host (tests, demos)."""
    return Path(os.environ.get("HMTUNE_HOST_ROOT") or "/")


__all__ = ["Choice", "Host", "HostError", "Node", "apply_hwloc", "choose", "describe",
           "detect", "env_root", "format_list", "machine_toml", "memkind_reach",
           "parse_list", "sampler"]
