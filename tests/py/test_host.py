"""hmtune/machine/host.py and `hmtune machine`: what the recorded topologies of real machines
(tests/topologies/, see its README.md) and this host offer, the tiers choose() derives,
the shipped machine files that must equal `hmtune machine --toml`, and broken trees."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from hmtune.core.units import GIB, KIB, MIB
from hmtune.machine.choice import choose
from hmtune.machine.host import Host, HostError, apply_hwloc, detect, parse_list
from hmtune.machine.machinefile import load_machine
from hmtune.machine.page import describe

ROOT = Path(__file__).resolve().parents[2]
HMTUNE = ROOT / "bin" / "hmtune"
TOPOLOGIES = ROOT / "tests" / "topologies"
MACHINES = ROOT / "configs" / "machines"
HUGE = {2 * MIB: (0, 0), GIB: (0, 0)}         # the pools every reconstruction records

# What each recorded topology holds: kinds and where they come from, CPU-less nodes'
# sizes, kernel and hwloc tiers, published read bandwidth, memory-side caches, dax
# devices; then the tiers choose() must derive: (name, capacity, backend, cost, per
# node, page) fastest first.
EXPECT: dict[str, dict] = {
    "xeon-max-9468-flat-quadrant": dict(
        config="xeon-max-9468-flat-quadrant", hwloc="hwloc 2.10.0",
        kinds={0: "DRAM", 1: "DRAM", 2: "HBM", 3: "HBM"}, source="hwloc subtype",
        cpuless={2: 64 * GIB, 3: 64 * GIB}, ktier={0: 4, 1: 4, 2: 4, 3: 4},
        htier={0: 1, 1: 1, 2: 0, 3: 0},
        bw={0: 307200, 1: 307200, 2: 1638400, 3: 1638400}, cache={}, dax={},
        tiers=[("hbm", 128 * GIB, "numa:2-3", 1.0, True, 4 * KIB),
               ("ddr", None, "default", 5.3, False, 4 * KIB)]),
    "xeon-max-9468-flat-snc4": dict(
        config="xeon-max-9468-flat-snc4", hwloc="hwloc 2.9.0",
        kinds={**{i: "DRAM" for i in range(8)}, **{i: "HBM" for i in range(8, 16)}},
        source="HMAT", cpuless={i: 16 * GIB for i in range(8, 16)},
        ktier={i: 4 for i in range(16)}, htier={},
        bw={**{i: 76800 for i in range(8)}, **{i: 409600 for i in range(8, 16)}},
        cache={}, dax={},
        tiers=[("hbm", 128 * GIB, "numa:8-15", 1.0, True, 4 * KIB),
               ("ddr", None, "default", 5.3, False, 4 * KIB)]),
    "xeon-max-9468-cache-quadrant": dict(
        config="xeon-max-9468-cache-quadrant", hwloc="hwloc 2.10.0",
        kinds={0: "DRAM", 1: "DRAM"}, source="default", cpuless={},
        ktier={0: 4, 1: 4}, htier={}, bw={}, cache={0: 64 * GIB, 1: 64 * GIB}, dax={},
        tiers=[("huge", 64 * GIB, "hugetlb", 1.0, True, 2 * MIB),
               ("small", None, "default", 1.55, False, 4 * KIB)]),
    "xeon-max-9468-hbm-only": dict(
        config="xeon-max-9468-hbm-only", hwloc="hwloc 2.10.0",
        kinds={0: "HBM", 1: "HBM"}, source="cpu", cpuless={},
        ktier={0: 4, 1: 4}, htier={}, bw={0: 1638400, 1: 1638400}, cache={}, dax={},
        tiers=[("huge", 16 * GIB, "hugetlb", 1.0, True, 2 * MIB),
               ("small", None, "default", 1.55, False, 4 * KIB)]),
    "knl-7250-flat-quadrant": dict(
        config="knl-7250-flat-quadrant", hwloc="hwloc 2.9.0",
        kinds={0: "DRAM", 1: "MCDRAM"}, source="hwloc subtype", cpuless={1: 16 * GIB},
        ktier={0: 4, 1: 4}, htier={}, bw={}, cache={}, dax={},
        tiers=[("mcdram", 16 * GIB, "memkind:MEMKIND_HBW", 1.0, True, 4 * KIB),
               ("ddr", None, "default", 5.0, False, 4 * KIB)]),
    "cxl-dax-kmem": dict(
        config="cxl-dax-kmem", hwloc="no hwloc.xml recorded",
        kinds={0: "DRAM", 1: "DRAM", 2: "CXL-DRAM"}, source="sysfs", cpuless={2: 256 * GIB},
        ktier={0: 4, 1: 4, 2: 22}, htier={}, bw={}, cache={}, dax={2: "dax0.0"},
        tiers=[("dram", 375 * GIB, "numa:0-1", 1.0, True, 4 * KIB),
               ("cxl", None, "memkind:MEMKIND_DAX_KMEM", 2.0, False, 4 * KIB)]),
    "dram-pmem": dict(
        config="dram-pmem", hwloc="hwloc 2.10.0",
        kinds={0: "DRAM", 1: "DRAM", 2: "NVM", 3: "NVM"}, source="hwloc subtype",
        cpuless={2: 744 * GIB, 3: 744 * GIB}, ktier={0: 4, 1: 4, 2: 22, 3: 22},
        htier={0: 0, 1: 0, 2: 1, 3: 1}, bw={}, cache={}, dax={2: "dax0.0", 3: "dax1.0"},
        tiers=[("dram", 375 * GIB, "numa:0-1", 1.0, True, 4 * KIB),
               ("pmem", None, "memkind:MEMKIND_DAX_KMEM", 3.0, False, 4 * KIB)]),
    "vm": dict(
        config="vm-hugetlb", hwloc="hwloc 2.9.0", kinds={0: "DRAM"}, source="default",
        cpuless={}, ktier={0: 4}, htier={}, bw={}, cache={}, dax={},
        tiers=[("huge", 4 * GIB, "hugetlb", 1.0, True, 2 * MIB),
               ("small", None, "default", 1.55, False, 4 * KIB)]),
}


def hmtune(*args: str, root: Path | None = None, umask: int | None = None
           ) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "HMTUNE_HOST_ROOT"}
    argv = [str(HMTUNE), "machine", *args] + (["--root", str(root)] if root else [])
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120,
                          preexec_fn=(lambda: os.umask(umask)) if umask is not None else None)


def fields(tiers: list) -> list[tuple]:
    return [(t.name, t.capacity, t.backend, t.load_cost, t.store_cost, t.per_node, t.page_size,
             t.speeds_up, t.fault_cost_ns, t.faults_kept, t.kind_costs) for t in tiers]


def kind_costs(fast: str, cost: float) -> tuple:
    """The fallback's cost per access kind in front of a fast tier named fast: HBM and
    MCDRAM speed up streamed accesses only, large pages scattered ones mostly, slower
    memory both (no bandwidth recorded here: the latency ratio for both)."""
    if fast in ("hbm", "mcdram"):
        return (("streaming", cost), ("scattered", 1.0), ("sync", 1.0))
    if fast == "huge":
        return (("streaming", 1.05), ("scattered", cost), ("sync", 1.0))
    return (("streaming", cost), ("scattered", cost), ("sync", 1.0))


def first_touch(backend: str, page: int, fallback: bool) -> tuple:
    """What a tier speeds up and its first-touch figures: large pages save page faults
    (1200 ns each, measured on the VM; hugetlb keeps one per page, THP half), every
    other tier only access."""
    if fallback or backend not in ("hugetlb", "thp"):
        return (("access",), 0.0, 1.0)
    return (("access", "first_touch"), 1200.0, 4096 / page if backend == "hugetlb" else 0.5)


def expected_fields(name: str) -> list[tuple]:
    tiers = EXPECT[name]["tiers"]
    fast = tiers[0][0]
    return [(n, c, b, cost, cost, per, page, *first_touch(b, page, c is None),
             kind_costs(fast, cost) if c is None else ())
            for n, c, b, cost, per, page in tiers]


def one_line_error(r: subprocess.CompletedProcess, code: int = 1) -> str:
    assert r.returncode == code, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0]


def copy(name: str, tmp_path: Path) -> Path:
    dst = tmp_path / name
    shutil.copytree(TOPOLOGIES / name, dst, symlinks=True)
    return dst


# ---- the recorded topologies ----------------------------------------------------------

def test_every_topology_is_listed_and_documented() -> None:
    assert {d.name for d in TOPOLOGIES.iterdir() if d.is_dir()} == set(EXPECT)
    for name in EXPECT:
        readme = (TOPOLOGIES / name / "README.md").read_text()
        assert "live host" in readme if name == "vm" else "Not a dump" in readme


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_detected_nodes(name: str) -> None:
    e = EXPECT[name]
    host = detect(TOPOLOGIES / name, probe=False)
    assert not host.live and host.memkind == {} and host.hwloc == e["hwloc"]
    assert {n.index: n.kind for n in host.nodes} == e["kinds"]
    fast = [n for n in host.nodes if n.kind != "DRAM"] or host.nodes
    assert {n.kind_source.split(":")[0] for n in fast} == {e["source"]}
    assert {n.index: n.total for n in host.nodes if not n.cpus} == e["cpuless"]
    assert all(n.total > 0 and n.free <= n.total for n in host.nodes)
    assert {n.index: n.kernel_tier for n in host.nodes} == e["ktier"]
    assert {n.index: n.hwloc_tier for n in host.nodes if n.hwloc_tier is not None} == \
        e["htier"]
    assert {n.index: n.read_bw for n in host.nodes if n.read_bw} == e["bw"]
    assert {n.index: n.cache for n in host.nodes if n.cache} == e["cache"]
    assert {n.index: n.dax for n in host.nodes if n.dax} == e["dax"]
    assert host.default_hugepage == 2 * MIB and host.thp in ("always", "madvise")
    if name != "vm":
        assert all(n.hugepages == HUGE for n in host.nodes)
    for n in host.nodes:                          # distances: one per node, 10 to itself
        assert len(n.distances) == len(host.nodes) and n.distances[host.nodes.index(n)] == 10
    assert host.notes == []


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_chosen_tiers(name: str) -> None:
    host = detect(TOPOLOGIES / name, probe=False)
    choice = choose(host)
    assert fields(choice.machine.tiers) == expected_fields(name)
    assert choice.why and "\n" not in choice.why
    fast = choice.machine.tiers[0]
    if fast.backend.startswith("numa:"):                # the nodes named are the fast ones
        kind = EXPECT[name]["kinds"][parse_list(fast.backend[5:])[0]]
        assert all(EXPECT[name]["kinds"][i] == kind for i in parse_list(fast.backend[5:]))
    page = describe(host)
    assert "hmtune advise --mem SIZE uses it" in page and "Traceback" not in page
    for n in host.nodes:
        assert re.search(rf"^\s*{n.index}\s+{re.escape(n.kind)}\s", page, re.M)


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_machine_file_equals_toml_output(name: str, tmp_path: Path) -> None:
    r = hmtune("--toml", root=TOPOLOGIES / name)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    out = tmp_path / "out.toml"
    out.write_text(r.stdout)
    written = load_machine(out)
    shipped = load_machine(MACHINES / f"{EXPECT[name]['config']}.toml")
    assert fields(written.tiers) == fields(shipped.tiers) == expected_fields(name)
    assert written.notes == [] and shipped.notes == []
    assert r.stdout.startswith("#") and all(line.startswith("#") for line in
                                            r.stdout.splitlines()[:3])


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_page(name: str) -> None:
    r = hmtune(root=TOPOLOGIES / name)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert "memkind: not checked (a recorded topology)" in r.stdout
    assert r.stdout.count("fast tier:") == 1


def test_env_root_stands_for_the_root(tmp_path: Path) -> None:
    env = dict(os.environ, HMTUNE_HOST_ROOT=str(TOPOLOGIES / "cxl-dax-kmem"))
    r = subprocess.run([str(HMTUNE), "machine"], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0 and "CXL-DRAM" in r.stdout


# ---- rules that the reconstructions do not all exercise -------------------------------

def test_hwloc_takes_the_best_initiator_and_read_figures() -> None:
    host = detect(TOPOLOGIES / "vm", probe=False)
    node = host.nodes[0]
    xml = ('<topology version="2.0"><object type="Machine" gp_index="1">'
           '<info name="hwlocVersion" value="2.11.0"/>'
           '<object type="NUMANode" os_index="0" gp_index="7" subtype="SPM"/></object>'
           '<memattr name="Bandwidth" flags="5">'
           '<memattr_value target_obj_type="NUMANode" target_obj_gp_index="7" value="9"'
           ' initiator_cpuset="0x1"/></memattr>'
           '<memattr name="ReadBandwidth" flags="5">'
           '<memattr_value target_obj_type="NUMANode" target_obj_gp_index="7" value="100"'
           ' initiator_cpuset="0x2"/>'
           '<memattr_value target_obj_type="NUMANode" target_obj_gp_index="7" value="300"'
           ' initiator_cpuset="0x1"/></memattr>'
           '<memattr name="Latency" flags="6">'
           '<memattr_value target_obj_type="NUMANode" target_obj_gp_index="7" value="250"'
           ' initiator_cpuset="0x2"/>'
           '<memattr_value target_obj_type="NUMANode" target_obj_gp_index="7" value="90"'
           ' initiator_cpuset="0x1"/></memattr></topology>')
    node.read_bw = node.read_lat = None
    assert apply_hwloc(xml, host.nodes, "x.xml") == "2.11.0"
    assert (node.read_bw, node.read_lat) == (300, 90)
    assert node.kind == "DRAM"                 # SPM is left to sysfs


def soft_reserved(tmp_path: Path, *, bw: int | None, tier: int) -> Host:
    """The VM with a CPU-less node 1 of firmware-reserved memory (hmem) onlined by kmem."""
    root = copy("vm", tmp_path)
    (root / "hwloc.xml").unlink()
    node = root / "sys/devices/system/node/node1"
    node.mkdir()
    (node / "cpulist").write_text("\n")
    (node / "meminfo").write_text("Node 1 MemTotal: 16777216 kB\nNode 1 MemFree: 1 kB\n")
    if bw:
        (node / "access0/initiators").mkdir(parents=True)
        (node / "access0/initiators/read_bandwidth").write_text(f"{bw}\n")
        (root / "sys/devices/system/node/node0/access0/initiators").mkdir(parents=True)
        (root / "sys/devices/system/node/node0/access0/initiators/read_bandwidth"
         ).write_text("100000\n")
    t = root / f"sys/devices/virtual/memory_tiering/memory_tier{tier}"
    t.mkdir(parents=True, exist_ok=True)
    (t / "nodelist").write_text("1\n")
    dev = root / "sys/devices/platform/hmem.0/dax0.0"
    dev.mkdir(parents=True)
    (dev / "target_node").write_text("1\n")
    (dev / "driver").symlink_to("../../../../bus/dax/drivers/kmem")
    (root / "sys/bus/dax/devices").mkdir(parents=True)
    (root / "sys/bus/dax/devices/dax0.0").symlink_to("../../../devices/platform/hmem.0/dax0.0")
    return detect(root, probe=False)


def test_soft_reserved_memory_is_told_by_hmat_or_kernel_tier(tmp_path: Path) -> None:
    host = soft_reserved(tmp_path / "a", bw=400000, tier=22)
    assert (host.nodes[1].kind, host.nodes[1].dax) == ("HBM", "dax0.0")
    assert any("soft-reserved" in n for n in host.notes)
    assert choose(host).machine.tiers[0].backend == "numa:1"
    host = soft_reserved(tmp_path / "b", bw=None, tier=22)
    assert host.nodes[1].kind == "slow"
    tiers = choose(host).machine.tiers
    assert (tiers[0].backend, tiers[-1].name, tiers[-1].load_cost) == \
        ("numa:0", "slow", 2.0)


def test_dax_kind_comes_from_below_the_root_not_its_name(tmp_path: Path) -> None:
    # a recorded PMem box in a directory whose path says "cxl" and "region1" is still PMem
    root = tmp_path / "cxl" / "region1"
    root.parent.mkdir()
    shutil.copytree(TOPOLOGIES / "dram-pmem", root, symlinks=True)
    (root / "hwloc.xml").unlink()
    host = detect(root, probe=False)
    assert [n.kind for n in host.nodes] == ["DRAM", "DRAM", "NVM", "NVM"]
    assert host.nodes[2].kind_source == "sysfs: dax0.0 (kmem)"


def test_dax_devices_not_onlined_by_kmem_are_not_memory(tmp_path: Path) -> None:
    root = copy("cxl-dax-kmem", tmp_path)
    dev = root / "sys/devices/platform/ACPI0017:00/root0/decoder0.0/region0/dax_region0/dax0.0"
    (dev / "driver").unlink()
    host = detect(root, probe=False)                       # unbound: the kernel tier speaks
    assert (host.nodes[2].kind, host.nodes[2].dax) == ("slow", "")
    (dev / "driver").symlink_to("../../../../../../../../bus/dax/drivers/device_dax")
    assert detect(root, probe=False).nodes[2].kind == "slow"
    (dev / "driver").unlink()
    (dev / "driver").symlink_to("driver")                  # a loop: no traceback
    assert detect(root, probe=False).nodes[2].kind == "slow"


def test_hugetlb_capacity_is_the_pool_when_more_is_reserved(tmp_path: Path) -> None:
    root = copy("vm", tmp_path)
    pool = root / "sys/devices/system/node/node0/hugepages/hugepages-2048kB"
    (pool / "nr_hugepages").write_text("3000\n")
    (pool / "free_hugepages").write_text("3000\n")
    host = detect(root, probe=False)
    assert host.nodes[0].hugepages[2 * MIB] == (3000, 3000)
    assert choose(host).machine.tiers[0].capacity == 3000 * 2 * MIB
    assert "hugepages on node 0: 2 MiB: 3000 free of 3000" in describe(host)
    r = hmtune("--toml", root=root)
    assert r.returncode == 0 and 'capacity = "6000M"' in r.stdout


def test_thp_when_there_is_no_hugetlbfs(tmp_path: Path) -> None:
    root = copy("vm", tmp_path)
    meminfo = root / "proc/meminfo"
    meminfo.write_text(re.sub(r"Hugepagesize:.*\n", "", meminfo.read_text()))
    tiers = choose(detect(root, probe=False)).machine.tiers
    assert [(t.backend, t.capacity, t.page_size) for t in tiers] == \
        [("thp", 4 * GIB, 2 * MIB), ("default", None, 4 * KIB)]
    (root / "sys/kernel/mm/transparent_hugepage/enabled").write_text("always madvise [never]\n")
    with pytest.raises(HostError):
        choose(detect(root, probe=False))
    line = one_line_error(hmtune("--toml", root=root))
    assert "--machine" in line
    r = hmtune(root=root)                       # the page still shows the host
    assert r.returncode == 0 and "no memory hmtune can place" in r.stdout



def test_empty_pool_this_user_cannot_grow_gives_thp(tmp_path: Path) -> None:
    """An empty hugepage pool places nothing for a user who cannot reserve pages:
    THP then; free pages, or a caller that will reserve, keep hugetlb."""
    root = copy("vm", tmp_path)
    meminfo = root / "proc/meminfo"
    meminfo.write_text(re.sub(r"HugePages_Free:.*\n", "HugePages_Free:        0\n",
                              meminfo.read_text()))
    host = detect(root, probe=False)
    assert host.hugepages_free == 0 and host.hugepages_reservable   # recorded: assumed
    assert choose(host).machine.tiers[0].backend == "hugetlb"
    assert choose(host, reservable=False).machine.tiers[0].backend == "thp"
    assert "only root can reserve" in choose(host, reservable=False).why
    host.hugepages_reservable = False
    assert choose(host).machine.tiers[0].backend == "thp"
    assert choose(host, reservable=True).machine.tiers[0].backend == "hugetlb"
    host.hugepages_free = 1
    assert choose(host, reservable=False).machine.tiers[0].backend == "hugetlb"
    host.hugepages_free, host.thp = 0, "never"          # nothing better than hugetlb
    assert choose(host, reservable=False).machine.tiers[0].backend == "hugetlb"

# ---- broken trees: one clear line, or a sane fallback; never a traceback --------------

@pytest.mark.parametrize("content", [b"<topology><object", b"\xff\xfe\x00garbage",
                                     b"<html><body>not hwloc</body></html>", b""])
def test_corrupt_hwloc_xml_is_one_line(tmp_path: Path, content: bytes) -> None:
    root = copy("knl-7250-flat-quadrant", tmp_path)
    (root / "hwloc.xml").write_bytes(content)
    for args in ((), ("--toml",)):
        line = one_line_error(hmtune(*args, root=root))
        assert "hwloc.xml" in line and "not hwloc XML" in line


def test_hwloc_xml_given_apart_is_read_and_checked(tmp_path: Path) -> None:
    xml = tmp_path / "other.xml"
    xml.write_text("nonsense")
    line = one_line_error(hmtune("--hwloc-xml", str(xml), root=TOPOLOGIES / "vm"))
    assert "other.xml" in line
    line = one_line_error(hmtune("--hwloc-xml", str(tmp_path / "none.xml"),
                                 root=TOPOLOGIES / "vm"))
    assert "none.xml" in line
    r = hmtune("--hwloc-xml", str(TOPOLOGIES / "knl-7250-flat-quadrant" / "hwloc.xml"),
               root=TOPOLOGIES / "vm")
    assert r.returncode == 0 and "MCDRAM" in r.stdout     # hwloc's node 1, unknown to sysfs


def test_odd_values_in_hwloc_xml_are_skipped(tmp_path: Path) -> None:
    root = copy("vm", tmp_path)
    (root / "hwloc.xml").write_text(
        '<topology version="2.0"><object type="Machine" gp_index="1">'
        '<object type="NUMANode" os_index="x" gp_index="2"/>'
        '<object type="NUMANode" os_index="0" gp_index="3" subtype="Whatever">'
        '<info name="MemoryTier" value="-1"/></object>'
        '<object type="NUMANode" os_index="5" gp_index="4" local_memory="lots"/></object>'
        '<memattr name="Bandwidth" flags="5"><memattr_value target_obj_gp_index="3" '
        'value="-7"/><memattr_value target_obj_gp_index="99" value="5"/></memattr>'
        '</topology>')
    host = detect(root, probe=False)
    assert [(n.index, n.kind, n.total, n.read_bw, n.hwloc_tier) for n in host.nodes] == \
        [(0, "DRAM", host.nodes[0].total, None, None), (5, "DRAM", 0, None, None)]
    assert choose(host).machine.tiers[0].backend == "hugetlb"
    assert hmtune(root=root).returncode == 0


def test_odd_names_stay_out_of_the_toml(tmp_path: Path) -> None:
    root = copy("knl-7250-flat-quadrant", tmp_path / 'we"ird\nname')
    (root / "proc/sys/kernel/hostname").write_text('a"b\\c\n')
    xml = (root / "hwloc.xml").read_text()
    (root / "hwloc.xml").write_text(xml.replace('value="2.9.0"', 'value="2.9&#10;x = 1"'))
    r = hmtune("--toml", root=root)
    assert r.returncode == 0, r.stderr
    (tmp_path / "m.toml").write_text(r.stdout)
    m = load_machine(tmp_path / "m.toml")
    assert m.name == "a-b-c" and fields(m.tiers) == expected_fields("knl-7250-flat-quadrant")


def test_garbage_nodelist_and_cpulist_are_noted(tmp_path: Path) -> None:
    root = copy("cxl-dax-kmem", tmp_path)
    (root / "sys/devices/virtual/memory_tiering/memory_tier22/nodelist").write_text("2-x\n")
    (root / "sys/devices/virtual/memory_tiering/memory_tier4/nodelist").write_bytes(b"\xff\n")
    (root / "sys/devices/virtual/memory_tiering/memory_tierX").mkdir()
    (root / "sys/devices/system/node/node1/cpulist").write_text("64-oops\n")
    host = detect(root, probe=False)
    assert [n.kernel_tier for n in host.nodes] == [None, None, None]
    assert host.nodes[1].cpus == "" and host.nodes[2].kind == "CXL-DRAM"  # dax still says
    assert sum("memory_tier" in n for n in host.notes) == 2
    assert any("cpulist" in n for n in host.notes)
    r = hmtune(root=root)
    assert r.returncode == 0 and "note: memory_tier22/nodelist" in r.stdout
    assert hmtune("--toml", root=root).returncode == 0


def test_empty_node_directory_is_noted_and_ignored(tmp_path: Path) -> None:
    root = copy("xeon-max-9468-flat-quadrant", tmp_path)
    node = root / "sys/devices/system/node/node2"
    shutil.rmtree(node)
    node.mkdir()
    (root / "sys/devices/system/node/node7junk").mkdir()      # not a node: skipped
    host = detect(root, probe=False)
    assert [n.index for n in host.nodes] == [0, 1, 2, 3]
    assert host.nodes[2].total == 64 * GIB                    # hwloc still knows its size
    assert any("node 2: no meminfo" in n for n in host.notes)
    (root / "hwloc.xml").unlink()
    host = detect(root, probe=False)
    assert host.nodes[2].total == 0 and host.nodes[3].kind == "HBM"
    tiers = choose(host).machine.tiers
    assert (tiers[0].backend, tiers[0].capacity) == ("numa:3", 64 * GIB)
    assert hmtune(root=root).returncode == 0


def test_missing_or_empty_trees_are_one_line(tmp_path: Path) -> None:
    line = one_line_error(hmtune(root=tmp_path / "nowhere"))
    assert "nowhere" in line and "no sys/" in line
    (tmp_path / "nosys" / "proc").mkdir(parents=True)
    assert "no sys/" in one_line_error(hmtune("--toml", root=tmp_path / "nosys"))
    (tmp_path / "file").write_text("x")
    assert "no sys/" in one_line_error(hmtune(root=tmp_path / "file"))
    (tmp_path / "empty" / "sys").mkdir(parents=True)
    assert "no NUMA node" in one_line_error(hmtune(root=tmp_path / "empty"))
    # no NUMA in sysfs but /proc/meminfo: one node with all the memory
    (tmp_path / "empty" / "proc").mkdir()
    (tmp_path / "empty" / "proc/meminfo").write_text("MemTotal: 8388608 kB\n"
                                                     "Hugepagesize: 2048 kB\n")
    host = detect(tmp_path / "empty", probe=False)
    assert [(n.index, n.total) for n in host.nodes] == [(0, 8 * GIB)]
    assert choose(host).machine.tiers[0].capacity == 2 * GIB
    assert hmtune(root=tmp_path / "empty").returncode == 0


# ---- this host -------------------------------------------------------------------------

def test_this_host_page() -> None:
    r = hmtune()
    assert r.returncode == 0, r.stderr
    assert re.search(r"^\s*0\s+DRAM\s", r.stdout, re.M)                # names node 0
    assert re.search(r"^fast tier: hugetlb, 2 MiB pages", r.stdout, re.M)
    assert "memkind: MEMKIND_HBW" in r.stdout and "sampler:" in r.stdout


def test_this_host_toml_loads(tmp_path: Path) -> None:
    r = hmtune("--toml")
    assert r.returncode == 0, r.stderr
    (tmp_path / "here.toml").write_text(r.stdout)
    m = load_machine(tmp_path / "here.toml")
    assert m.tiers[0].backend == "hugetlb" and m.tiers[-1].unlimited and m.notes == []


def test_output_file_umask_and_force(tmp_path: Path) -> None:
    out = tmp_path / "sub" / "here.toml"
    r = hmtune("--toml", "-o", str(out), root=TOPOLOGIES / "vm", umask=0o027)
    assert r.returncode == 0 and r.stdout == "" and "wrote" in r.stderr
    assert (out.stat().st_mode & 0o777) == 0o640
    assert load_machine(out).name == "vm"
    out.write_text("mine\n")
    line = one_line_error(hmtune("--toml", "-o", str(out), root=TOPOLOGIES / "vm"), code=2)
    assert "--force" in line and out.read_text() == "mine\n"
    r = hmtune("--toml", "-o", str(out), "--force", root=TOPOLOGIES / "vm", umask=0o022)
    assert r.returncode == 0 and load_machine(out).tiers[0].backend == "hugetlb"
    assert (out.stat().st_mode & 0o777) == 0o644


def test_output_needs_toml(tmp_path: Path) -> None:
    line = one_line_error(hmtune("-o", str(tmp_path / "x.toml"), root=TOPOLOGIES / "vm"),
                          code=2)
    assert "--toml" in line and not (tmp_path / "x.toml").exists()
