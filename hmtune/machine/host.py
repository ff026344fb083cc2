"""What memory this host offers, found from maintained sources (`hmtune machine`).

Sources, each optional, read in this order of precedence for a NUMA node's kind
(docs/formats.md §5, "Detection"):

1. hwloc's view (`lstopo-no-graphics --of xml`, or a recorded XML): the NUMA node's
   subtype (HBM, MCDRAM, DRAM, NVM, GPUMemory, CXL-DRAM, CXL-NVM; hwloc >= 2.10 guesses
   it for more machines and adds the MemoryTier info, 2.9 sets MCDRAM on KNL and HBM only
   for specific-purpose memory) and its memory attributes (ReadBandwidth/Bandwidth,
   ReadLatency/Latency, from the firmware's HMAT). hwloc's SPM (specific-purpose memory
   of unknown speed) is left to the rules below.
2. Linux sysfs: a node that is the target of a device-DAX device bound to kmem is
   CXL-DRAM when the device sits below a CXL region, NVM when it sits below an NVDIMM bus
   (Optane PMem); a CPU-less node whose firmware-published (HMAT) read bandwidth is at
   least 1.5 times that of the CPUs' own nodes is HBM; a node in a higher kernel memory
   tier than the CPUs' nodes is slow memory of unknown technology ("slow").
3. The CPU: an Intel Xeon CPU Max whose nodes all have CPUs, none behind a memory-side
   cache and none larger than one package's HBM (64 GiB), runs in HBM-only mode: its
   nodes are HBM (Intel documents three modes: flat, with CPU-less HBM nodes; cache, with
   the HBM as memory-side cache; HBM-only, without DDR).
4. Otherwise DRAM.

A user's machine file always wins over all of this (`--machine`). memkind's own
availability check (memkind_check_available, in a child process, with the user's
environment such as MEMKIND_HBW_NODES) says which kinds it can reach; the sampler is the
one the tracer's own detection picks (hmtune-probe).

Every reader takes a root directory that stands for "/", so recorded topologies of other
machines (tests/topologies/) are read exactly like this host. Symbolic links in a
recorded tree are relative, as the kernel's own sysfs links are, and resolve inside it.
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

from hmtune.core.units import GIB, KIB

# Subtypes hwloc documents for NUMA nodes and hmtune takes as they are (SPM is not among
# them: specific-purpose memory may be HBM or CXL, the rules of step 2 decide).
HWLOC_KINDS = ("DRAM", "HBM", "MCDRAM", "NVM", "GPUMemory", "CXL-DRAM", "CXL-NVM")
MEMKIND_KINDS = ("MEMKIND_HBW", "MEMKIND_HBW_ALL", "MEMKIND_DAX_KMEM", "MEMKIND_HUGETLB")
HBM_BW_RATIO = 1.5
# Intel Xeon CPU Max: 64 GB of HBM2e per package (four 16 GB stacks).
XEON_MAX_HBM_PER_PACKAGE = 64 * GIB


@dataclass
class Node:
    index: int
    kind: str = "DRAM"
    kind_source: str = "default"
    cpus: str = ""
    total: int = 0                       # bytes
    free: int = 0
    distances: list[int] = field(default_factory=list)
    read_bw: int | None = None           # MB/s (HMAT access0) or hwloc's bandwidth
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
    counters: str = ""              # hmtune machine's counters line (machine/counters.py)
    notes: list[str] = field(default_factory=list)
    mem_total: int = 0                   # /proc/meminfo MemTotal (bytes)
    hugepages_free: int = 0              # /proc/meminfo HugePages_Free (default size)
    hugepages_reservable: bool = True    # can_reserve_hugepages(); recorded: assumed

    def of_kind(self, *kinds: str) -> list[Node]:
        return [n for n in self.nodes if n.kind in kinds]


class HostError(RuntimeError):
    """A recorded topology hmtune cannot read; str() says what is wrong."""


# ---- small readers ---------------------------------------------------------------------

def _text(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace").strip()
    except (OSError, ValueError):
        return None


def _int(path: Path) -> int | None:
    t = _text(path)
    return int(t) if t is not None and re.fullmatch(r"-?[0-9]{1,19}", t) else None


def parse_list(text: str) -> list[int]:
    """A Linux cpulist/nodelist ("0-3,8") as numbers."""
    out: list[int] = []
    for part in text.replace("\n", ",").split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()) or len(part) > 20:
            raise ValueError(f"'{text[:40]}' is not a list like 0-3,8")
        first, last = int(lo), int(hi or lo)
        if last < first or last - first > 1 << 16:
            raise ValueError(f"'{text[:40]}' is not a list like 0-3,8")
        out.extend(range(first, last + 1))
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
        m = re.match(r"(?:Node \d+ )?([A-Za-z_()0-9]+):\s+(\d{1,19})(?:\s+(kB))?", line)
        if m:
            out[m.group(1)] = int(m.group(2)) * (1024 if m.group(3) else 1)
    return out


def _resolve(path: Path) -> Path | None:
    """Where a symbolic link leads (None: a loop or unreadable)."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return None


# ---- sysfs -------------------------------------------------------------------------------

def _read_nodes(root: Path, notes: list[str]) -> list[Node]:
    base = root / "sys/devices/system/node"
    found: list[tuple[int, Path]] = []
    for d in base.glob("node*"):
        m = re.fullmatch(r"node(\d{1,5})", d.name)
        if m and d.is_dir():
            found.append((int(m.group(1)), d))
    nodes: list[Node] = []
    for index, d in sorted(found):
        n = Node(index=index)
        cpus = _text(d / "cpulist") or ""
        try:
            parse_list(cpus)
            n.cpus = cpus
        except ValueError:
            notes.append(f"node {index}: cpulist '{cpus[:40]}' is not a CPU list; taken as "
                         "CPU-less")
        mi = _meminfo(d / "meminfo")
        if "MemTotal" not in mi:
            notes.append(f"node {index}: no meminfo, its size is unknown (counted as 0)")
        n.total, n.free = mi.get("MemTotal", 0), mi.get("MemFree", 0)
        n.distances = [int(x) for x in (_text(d / "distance") or "").split()
                       if x.isdigit() and len(x) < 6]
        init = d / "access0" / "initiators"
        n.read_bw, n.read_lat = _int(init / "read_bandwidth"), _int(init / "read_latency")
        for size in (d / "memory_side_cache").glob("index*/size"):
            n.cache += max(_int(size) or 0, 0)
        for hp in (d / "hugepages").glob("hugepages-*kB"):
            m = re.fullmatch(r"hugepages-(\d{1,10})kB", hp.name)
            if m:
                n.hugepages[int(m.group(1)) * KIB] = (max(_int(hp / "nr_hugepages") or 0, 0),
                                                      max(_int(hp / "free_hugepages") or 0, 0))
        nodes.append(n)
    if not nodes:                        # a kernel without NUMA: one node, all memory
        mi = _meminfo(root / "proc/meminfo")
        if mi:
            notes.append("no NUMA nodes in sysfs: one node with all of /proc/meminfo")
            nodes.append(Node(index=0, cpus=_online_cpus(root), total=mi.get("MemTotal", 0),
                              free=mi.get("MemFree", 0), distances=[10]))
    return nodes


def _online_cpus(root: Path) -> str:
    return _text(root / "sys/devices/system/cpu/online") or ""


def _kernel_tiers(root: Path, nodes: list[Node], notes: list[str]) -> None:
    by_index = {n.index: n for n in nodes}
    for d in sorted((root / "sys/devices/virtual/memory_tiering").glob("memory_tier*")):
        m = re.fullmatch(r"memory_tier(\d{1,6})", d.name)
        if not m:
            continue
        text = _text(d / "nodelist")
        if text is None:
            continue
        try:
            members = parse_list(text)
        except ValueError:
            notes.append(f"{d.name}/nodelist: '{text[:40]}' is not a node list; ignored")
            continue
        for i in members:
            if i in by_index:
                by_index[i].kernel_tier = int(m.group(1))


def _dax_kind(real: Path, root: Path) -> str:
    """The memory behind a device-DAX device, from where sysfs puts the device: below a
    CXL region (the CXL root ACPI0017, a root decoder, a region) it is CXL memory, below
    an NVDIMM bus (ndbusN) persistent memory; otherwise (hmem: memory the firmware marked
    specific-purpose) unknown."""
    base = _resolve(root) or root
    try:
        parts = real.relative_to(base).parts
    except ValueError:
        parts = real.parts
    if any(p.startswith("ACPI0017:") for p in parts) or any(
            re.fullmatch(r"region\d+", p) and i > 0 and re.fullmatch(r"decoder\d+\.\d+",
                                                                      parts[i - 1])
            for i, p in enumerate(parts)):
        return "CXL-DRAM"
    if any(re.fullmatch(r"ndbus\d+", p) for p in parts):
        return "NVM"
    return ""


def _dax_nodes(root: Path, nodes: list[Node], notes: list[str]) -> None:
    """Nodes made of device-DAX memory onlined by kmem: CXL-DRAM below a CXL region, NVM
    below an NVDIMM bus; other (soft-reserved) memory is left to HMAT and kernel tiers."""
    by_index = {n.index: n for n in nodes}
    for dev in sorted((root / "sys/bus/dax/devices").glob("dax*")):
        target = _int(dev / "target_node")
        if target is None or target not in by_index:
            continue
        driver = dev / "driver"
        drv = _resolve(driver) if driver.is_symlink() else None
        if drv is None or drv.name != "kmem":
            continue                     # unbound, or device_dax: not system RAM
        real = _resolve(dev) if dev.is_symlink() else dev
        node = by_index[target]
        node.dax = dev.name
        kind = _dax_kind(real or dev, root)
        if kind:
            node.kind, node.kind_source = kind, f"sysfs: {dev.name} (kmem)"
        else:
            notes.append(f"node {target}: {dev.name} is soft-reserved memory onlined by kmem "
                         "(neither CXL nor NVDIMM); its kind comes from HMAT or kernel tiers")


def _hmat_and_tiers(nodes: list[Node], cpu: str) -> None:
    """Kinds from published bandwidth, kernel tiers and the CPU, for nodes no better source
    named."""
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
    if (re.search(r"Xeon\(R\) CPU Max", cpu) and nodes
            and all(n.cpus and not n.cache and 0 < n.total <= XEON_MAX_HBM_PER_PACKAGE
                    and n.kind_source == "default" for n in nodes)):
        for n in nodes:
            n.kind, n.kind_source = "HBM", "cpu: Xeon CPU Max in HBM-only mode"


# ---- hwloc ---------------------------------------------------------------------------------

def _hwloc_xml_live() -> tuple[bytes | None, str]:
    """(XML text, "") from this host's hwloc, or (None, why not)."""
    exe = shutil.which("lstopo-no-graphics") or shutil.which("lstopo")
    if exe is None:
        return None, "hwloc's lstopo is not installed (make deps installs hwloc-nox)"
    try:
        r = subprocess.run([exe, "--of", "xml", "-"], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"lstopo failed: {e}"
    if r.returncode != 0:
        return None, f"lstopo failed: {r.stderr.decode(errors='replace').strip()[:200]}"
    return r.stdout, ""


def _best(values: list[tuple[str, int]], name: str) -> int | None:
    """The value of the first attribute in `name` order that has one: the node's best
    initiator (highest bandwidth, lowest latency: its own CPUs)."""
    for attr in name.split("|"):
        got = [v for a, v in values if a == attr]
        if got:
            return min(got) if "Latency" in attr else max(got)
    return None


def apply_hwloc(xml_text: str | bytes, nodes: list[Node], where: str) -> str:
    """Take kinds, tiers and attributes from hwloc's XML; returns hwloc's version."""
    try:
        top = ET.fromstring(xml_text)
    except ET.ParseError as e:
        raise HostError(f"{where}: not hwloc XML ({e})") from None
    if top.tag != "topology":
        raise HostError(f"{where}: not hwloc XML (root element <{top.tag[:40]}>)")
    by_index = {n.index: n for n in nodes}
    by_gp: dict[str, Node] = {}
    version = ""
    for obj in top.iter("object"):
        for info in obj.findall("info"):
            if info.get("name") == "hwlocVersion":
                version = re.sub(r"[^\w.+-]", "", info.get("value", ""))[:20]
        if obj.get("type") != "NUMANode":
            continue
        idx = obj.get("os_index") or ""
        if not idx.isdigit() or len(idx) > 5:
            continue
        node = by_index.get(int(idx))
        mem = obj.get("local_memory") or ""
        if node is None:                 # hwloc knows a node sysfs did not list
            node = Node(index=int(idx))
            nodes.append(node)
            by_index[node.index] = node
        if not node.total and mem.isdigit() and len(mem) < 20:
            node.total = int(mem)        # sysfs gave no size: hwloc's
        if obj.get("gp_index"):
            by_gp[obj.get("gp_index", "")] = node
        sub = obj.get("subtype")
        if sub in HWLOC_KINDS:
            node.kind, node.kind_source = sub, "hwloc subtype"
        for info in obj.findall("info"):
            value = info.get("value") or ""
            if info.get("name") == "MemoryTier" and value.isdigit() and len(value) < 6:
                node.hwloc_tier = int(value)
    values: dict[int, list[tuple[str, int]]] = {}
    for attr in top.iter("memattr"):
        name = attr.get("name") or ""
        for v in attr.findall("memattr_value"):
            node = by_gp.get(v.get("target_obj_gp_index", ""))
            value = v.get("value", "")
            if node is not None and value.isdigit() and len(value) < 20:
                values.setdefault(node.index, []).append((name, int(value)))
    for index, vals in values.items():
        node = by_index[index]
        if node.read_bw is None:
            node.read_bw = _best(vals, "ReadBandwidth|Bandwidth")
        if node.read_lat is None:
            node.read_lat = _best(vals, "ReadLatency|Latency")
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
    from hmtune.core.paths import probe_bin

    try:
        r = subprocess.run([str(probe_bin())], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
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
    notes: list[str] = []
    nodes = _read_nodes(root, notes)
    if not nodes:
        raise HostError(f"{root}: no NUMA node and no /proc/meminfo to read")
    _kernel_tiers(root, nodes, notes)
    _dax_nodes(root, nodes, notes)
    xml_text: str | bytes | None = None
    why_no_hwloc = ""
    if hwloc_xml is None and not live and (root / "hwloc.xml").is_file():
        hwloc_xml = root / "hwloc.xml"
    if hwloc_xml is not None:
        try:
            xml_text = hwloc_xml.read_bytes()
        except OSError as e:
            raise HostError(f"{hwloc_xml}: {e.strerror or e}") from None
    elif live:
        xml_text, why_no_hwloc = _hwloc_xml_live()
    else:
        why_no_hwloc = "no hwloc.xml recorded"
    hw = ""
    if xml_text is not None:
        try:
            hw = apply_hwloc(xml_text, nodes, str(hwloc_xml or "lstopo"))
        except HostError as e:
            if hwloc_xml is not None:    # a file the user gave or recorded: theirs to fix
                raise
            why_no_hwloc = f"lstopo's XML was not usable ({e})"
    cpu = ""
    for line in (_text(root / "proc/cpuinfo") or "").splitlines():
        if line.startswith("model name"):
            cpu = line.partition(":")[2].strip()
            break
    _hmat_and_tiers(nodes, cpu)
    thp_text = _text(root / "sys/kernel/mm/transparent_hugepage/enabled") or ""
    m = re.search(r"\[(\w+)\]", thp_text)
    name = (_text(root / "proc/sys/kernel/hostname") or root.name or "host").split(".")[0]
    name = re.sub(r"[^A-Za-z0-9_-]", "-", name)[:64]      # goes into TOML and comments
    meminfo = _meminfo(root / "proc/meminfo")
    host = Host(name=name or "host", source="this host" if live else str(root),
                live=live, nodes=nodes, thp=m.group(1) if m else "",
                default_hugepage=meminfo.get("Hugepagesize", 0),
                cpu=cpu, kernel=(_text(root / "proc/sys/kernel/osrelease") or ""),
                hwloc=f"hwloc {hw}" if hw else why_no_hwloc, notes=notes,
                mem_total=meminfo.get("MemTotal", 0),
                hugepages_free=meminfo.get("HugePages_Free", 0),
                hugepages_reservable=not live or can_reserve_hugepages(root))
    if probe and live:
        host.memkind = memkind_reach()
        host.sampler = sampler()
        from hmtune.machine import counters

        host.counters = counters.line(counters.probe())
    return host


def can_reserve_hugepages(root: Path = Path("/")) -> bool:
    """Whether this process can grow the default hugepage pool (root, and a writable
    ROOT/proc/sys/vm/nr_hugepages: not a container's read-only /proc/sys)."""
    return os.geteuid() == 0 and os.access(root / "proc/sys/vm/nr_hugepages", os.W_OK)


def memory_only_nodes(node_dir: Path = Path("/sys/devices/system/node")) -> set[int] | None:
    """NUMA nodes with memory and no CPU — how HBM (Xeon Max, KNL flat) and CXL memory
    appear; None when sysfs does not say (`hmtune run`'s memkind HBW checks)."""
    try:
        mem = set(parse_list((node_dir / "has_memory").read_text()))
        cpu = set(parse_list((node_dir / "has_cpu").read_text()))
    except (OSError, ValueError):
        return None
    return mem - cpu


def env_root() -> Path:
    """HMTUNE_HOST_ROOT: read a recorded topology instead of this host (tests, demos)."""
    return Path(os.environ.get("HMTUNE_HOST_ROOT") or "/")


__all__ = ["Host", "HostError", "Node", "apply_hwloc", "can_reserve_hugepages", "detect",
           "env_root", "format_list", "memkind_reach", "memory_only_nodes", "parse_list",
           "sampler"]
