"""`hmtune advise --mem SIZE` without --machine advises for this host's fastest tier
(hmtune/machine/host.py), and a machine file whose tier cannot place here gets a note naming
the tier that can. Hosts are small recorded trees (HMTUNE_HOST_ROOT) written here."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from advisefix import STANDARD, STANDARD_TOTAL, write_sites

from hmtune.core.placement import read_placement
from hmtune.core.units import GIB, MIB

ROOT = Path(__file__).resolve().parents[2]
HMTUNE = ROOT / "bin" / "hmtune"


def fake_host(root: Path, nodes: list[tuple[str, int, str | None]], hugepagesize_kb: int = 2048,
              thp: str = "always [madvise] never") -> Path:
    """A recorded topology: nodes as (cpulist, bytes, hwloc subtype or None)."""
    base = root / "sys/devices/system/node"
    xml = ['<?xml version="1.0" encoding="UTF-8"?>', '<topology version="2.0">',
           '<object type="Machine" os_index="0" gp_index="1">',
           '<info name="hwlocVersion" value="2.10.0"/>']
    for i, (cpus, size, subtype) in enumerate(nodes):
        d = base / f"node{i}"
        d.mkdir(parents=True)
        (d / "cpulist").write_text(cpus + "\n")
        (d / "meminfo").write_text(f"Node {i} MemTotal: {size // 1024} kB\n"
                                   f"Node {i} MemFree: {size // 2048} kB\n")
        (d / "distance").write_text(" ".join("10" if j == i else "20"
                                             for j in range(len(nodes))) + "\n")
        if hugepagesize_kb:
            hp = d / "hugepages" / f"hugepages-{hugepagesize_kb}kB"
            hp.mkdir(parents=True)
            (hp / "nr_hugepages").write_text("0\n")
            (hp / "free_hugepages").write_text("0\n")
        sub = f' subtype="{subtype}"' if subtype else ""
        xml.append(f'<object type="NUMANode" os_index="{i}" gp_index="{10 + i}" '
                   f'local_memory="{size}"{sub}/>')
    xml += ["</object>", "</topology>"]
    (root / "hwloc.xml").write_text("\n".join(xml) + "\n")
    proc = root / "proc"
    (proc / "sys/kernel").mkdir(parents=True)
    (proc / "sys/kernel/hostname").write_text(root.name + "\n")
    total = sum(n[1] for n in nodes)
    (proc / "meminfo").write_text(f"MemTotal: {total // 1024} kB\n" + (
        f"Hugepagesize: {hugepagesize_kb} kB\n" if hugepagesize_kb else ""))
    thp_dir = root / "sys/kernel/mm/transparent_hugepage"
    thp_dir.mkdir(parents=True)
    (thp_dir / "enabled").write_text(thp + "\n")
    return root


def advise(host: Path, stage: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, HMTUNE_HOST_ROOT=str(host))
    return subprocess.run([str(HMTUNE), "advise", str(stage), *args], capture_output=True,
                          text=True, env=env, timeout=300)


def stage(tmp: Path) -> Path:
    d = tmp / "stage"
    write_sites(d / "sites.csv", STANDARD, STANDARD_TOTAL)
    return d


def test_mem_alone_takes_hbm_where_there_is_hbm(tmp_path: Path) -> None:
    host = fake_host(tmp_path / "knl", [("0-63", 96 * GIB, "DRAM"), ("", 16 * GIB, "MCDRAM")])
    r = advise(host, stage(tmp_path), "--mem", "64M")
    assert r.returncode == 0, r.stderr
    pf = read_placement(tmp_path / "stage" / "placement.txt")
    fast, slow = pf.tiers
    assert (fast.backend, fast.capacity, slow.backend) == \
        ("memkind:MEMKIND_HBW", 64 * MIB, "default")
    assert pf.sites and all(s.tier == fast.name for s in pf.sites)
    assert "MCDRAM" in r.stdout


def test_mem_alone_takes_hugepages_on_a_dram_only_host(tmp_path: Path) -> None:
    host = fake_host(tmp_path / "vm", [("0-1", 24 * GIB, None)])
    r = advise(host, stage(tmp_path), "--mem", "64M")
    assert r.returncode == 0, r.stderr
    pf = read_placement(tmp_path / "stage" / "placement.txt")
    assert (pf.tiers[0].backend, pf.tiers[0].capacity) == ("hugetlb", 64 * MIB)
    assert pf.sites and "hugetlb" in r.stdout


def test_mem_alone_takes_dram_in_front_of_cxl(tmp_path: Path) -> None:
    host = fake_host(tmp_path / "cxl", [("0-31", 64 * GIB, "DRAM"), ("", 256 * GIB, "CXL-DRAM")])
    r = advise(host, stage(tmp_path), "--mem", "64M")
    assert r.returncode == 0, r.stderr
    pf = read_placement(tmp_path / "stage" / "placement.txt")
    assert (pf.tiers[0].backend, pf.tiers[-1].backend) == \
        ("numa:0", "memkind:MEMKIND_DAX_KMEM")


def test_no_fast_memory_at_all_is_one_clear_error(tmp_path: Path) -> None:
    host = fake_host(tmp_path / "bare", [("0-1", 8 * GIB, None)], hugepagesize_kb=0,
                     thp="always madvise [never]")
    d = stage(tmp_path)
    before = sorted(p.name for p in d.iterdir())
    r = advise(host, d, "--mem", "64M")
    assert r.returncode == 1
    assert len(r.stderr.strip().splitlines()) == 1 and "--machine" in r.stderr
    assert sorted(p.name for p in d.iterdir()) == before         # nothing written


def test_a_tier_absent_here_gets_a_note_naming_the_one_that_can(tmp_path: Path) -> None:
    host = fake_host(tmp_path / "vm", [("0-1", 24 * GIB, None)])
    machine = tmp_path / "other.toml"
    machine.write_text('name = "other"\n[[tier]]\nname = "hbm"\ncapacity = "16G"\n'
                       'backend = "numa:5"\nload_cost = 1.0\nstore_cost = 1.0\n'
                       '[[tier]]\nname = "ddr"\ncapacity = "unlimited"\nbackend = "default"\n'
                       'load_cost = 5.0\nstore_cost = 5.0\n')
    r = advise(host, stage(tmp_path), "--machine", str(machine))
    assert r.returncode == 0, r.stderr                  # advising for another host is legal
    pf = read_placement(tmp_path / "stage" / "placement.txt")
    assert pf.tiers[0].backend == "numa:5" and pf.sites
    notes = [line for line in r.stderr.splitlines() if "'hbm'" in line]
    assert len(notes) == 1 and "hugetlb" in notes[0]
    # a tier that can place here: no such note
    ok = advise(host, stage(tmp_path / "b"), "--machine",
                str(ROOT / "configs" / "machines" / "vm-hugetlb.toml"))
    assert ok.returncode == 0 and "cannot place" not in ok.stderr


def test_fraction_sizes_the_tier_from_the_footprint(tmp_path: Path) -> None:
    """--fraction F: F of the traced footprint in whole 2 MiB pages, the size compare
    --fraction gives (one function); it goes with --machine as --mem does."""
    from hmtune.core.stage import fast_tier_bytes, footprint

    host = fake_host(tmp_path / "vm", [("0-1", 24 * GIB, None)])
    d = stage(tmp_path)
    foot = footprint(d / "sites.csv")
    assert foot == sum(s["peak_live_bytes"] for s in STANDARD)
    r = advise(host, d, "--fraction", "0.3")
    assert r.returncode == 0, r.stderr
    cap = read_placement(d / "placement.txt").tiers[0].capacity
    assert cap == fast_tier_bytes(d / "sites.csv", 0.3)
    assert cap % (2 * MIB) == 0 and 0.3 * foot <= cap < 0.3 * foot + 2 * MIB
    r = advise(host, d, "--fraction", "0.3", "--machine",
               str(ROOT / "configs" / "machines" / "vm-thp.toml"))
    pf = read_placement(d / "placement.txt")
    assert r.returncode == 0 and (pf.tiers[0].backend, pf.tiers[0].capacity) == ("thp", cap)


def test_fraction_bad_values_and_empty_traces(tmp_path: Path) -> None:
    host = fake_host(tmp_path / "vm", [("0-1", 24 * GIB, None)])
    d = stage(tmp_path)
    for bad in (["--fraction", "0"], ["--fraction", "1.5"], ["--fraction", "x"],
                ["--fraction", "0.5", "--mem", "64M"]):
        r = advise(host, d, *bad)
        assert r.returncode == 2 and not (d / "placement.txt").exists(), bad
    empty = tmp_path / "empty"
    write_sites(empty / "sites.csv", [], 0.0)
    r = advise(host, empty, "--fraction", "0.5")
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1
    assert not (empty / "placement.txt").exists()



def test_a_per_node_tier_is_shared_by_one_nodes_ranks(tmp_path: Path) -> None:
    """A trace of 4 ranks on 2 nodes: vm-hugetlb.toml's 4 GiB per node go to the 2 ranks
    of a node (2 GiB each), not to all 4."""
    d = stage(tmp_path)                 # its sites.csv names the trace t.prv
    (d / "t.prv").write_text("#Paraver (01/01/2026 at 00:00):1000_ns:2(1,1):1:"
                             "4(1:1,1:1,1:2,1:2)\n")
    (d / "t.row").write_text("LEVEL NODE SIZE 2\nn1\nn2\n")
    r = subprocess.run([str(HMTUNE), "advise", str(d), "--machine",
                        str(ROOT / "configs" / "machines" / "vm-hugetlb.toml")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert read_placement(d / "placement.txt").tiers[0].capacity == 2 * GIB
    (d / "t.prv").write_text("#Paraver (01/01/2026 at 00:00):1000_ns:1(1):1:"
                             "4(1:1,1:1,1:1,1:1)\n")
    r = subprocess.run([str(HMTUNE), "advise", str(d), "--machine",
                        str(ROOT / "configs" / "machines" / "vm-hugetlb.toml")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert read_placement(d / "placement.txt").tiers[0].capacity == GIB


def test_compare_takes_the_tier_advise_takes(tmp_path: Path) -> None:
    """One rule for advise and compare (issue 44 item 5): where hugepages can be
    reserved but the pool is empty, advise takes hugetlb; compare takes it too and,
    without --reserve-hugepages, refuses before measuring anything, saying to give it
    (it used to fall back to THP, saying only root could reserve pages, to root)."""
    host = fake_host(tmp_path / "host", [("0-1", 16 * GIB, None)])
    d = stage(tmp_path)
    r = advise(host, d, "--mem", "64M")
    assert r.returncode == 0, r.stderr
    assert "tier huge hugetlb" in (d / "placement.txt").read_text()
    env = dict(os.environ, HMTUNE_HOST_ROOT=str(host))
    r = subprocess.run([str(HMTUNE), "compare", "-o", str(d), "--mem", "64M", "--repeats", "1",
                        "--", "/bin/true"], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 2 and "--reserve-hugepages" in r.stderr
    assert not (d / "compare" / "runs.csv").exists()
