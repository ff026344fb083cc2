"""The umf:* backends on the Python side: their spellings (the advisor's check mirrors
interpose/hmi_fields.c), what a tier charges for an object (hmi_backend_umf.c's UMF
buckets and 4 KiB pages), whether UMF is installed, and the UMF machine files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hmtune.advisor import granularity as g
from hmtune.core.backends import uses_hugetlb
from hmtune.core.units import GIB, KIB, MIB
from hmtune.machine import hostcheck
from hmtune.machine.hostcheck import backend_problem
from hmtune.machine.machinefile import load_machine

MACHINES = Path(__file__).resolve().parents[2] / "configs" / "machines"


@pytest.mark.parametrize("backend", ["umf:hugetlb", "umf:numa:0", "umf:numa:8-15",
                                     "umf:numa:0,2,4-7:bind", "umf:numa:2:preferred",
                                     "umf:numa:0-3:interleave"])
def test_umf_spellings(backend: str) -> None:
    assert backend_problem(backend) is None


@pytest.mark.parametrize("backend,word", [
    ("umf:", "UMF backend"), ("umf:numa:", "node list"), ("umf:numa:3-1", "backwards"),
    ("umf:numa:0:sideways", "NUMA mode"), ("umf:numa:0:", "NUMA mode"),
    ("umf:hugetlb:2M", "UMF backend"), ("umf:gpu", "UMF backend"), ("umf", "unknown"),
])
def test_bad_umf_spellings(backend: str, word: str) -> None:
    why = backend_problem(backend)
    assert why is not None and word in why and "\n" not in why


def test_arena_rounding_is_bounded() -> None:
    # above 512 bytes a class is at most 1/32 over the request; below, only the 16-byte
    # alignment every malloc gives
    sizes = np.arange(1, 2 * MIB, 13, dtype=np.int64)
    cs = g.class_sizes(sizes)
    assert (cs >= sizes).all() and (cs % 16 == 0).all()
    big = sizes > 512
    assert (cs[big] - sizes[big] <= sizes[big] / 32).all()
    assert (cs[~big] == np.maximum(16, (sizes[~big] + 15) // 16 * 16)).all()
    assert (cs[::101] == [g.class_size(int(n)) for n in sizes[::101]]).all()


def test_umf_charges() -> None:
    assert uses_hugetlb("umf:hugetlb") and not uses_hugetlb("umf:numa:0")
    # the arena's classes up to 1 MiB, then 4 KiB pages inside shared hugepages or
    # granules
    for b in ("umf:hugetlb", "umf:numa:0"):
        assert g.charge(24, b) == 32
        assert g.charge(4096, b) == 4096
        assert g.charge(20000, b) == 20480
        assert g.charge(100000, b) == 100352
        assert g.charge(MIB, b) == MIB
        assert g.charge(MIB + 1, b) == MIB + 4 * KIB
        assert g.charge(3 * MIB + 5, b) == 3 * MIB + 4 * KIB
        assert g.charge(GIB, b) == GIB
    sizes = np.array([1, 24, 4096, 4097, 20000, 2 * MIB, 2 * MIB + 1, GIB], np.int64)
    for b in ("umf:hugetlb", "umf:numa:0"):
        assert list(g.charges(sizes, b)) == [g.charge(int(n), b) for n in sizes]


def test_umf_missing_says_make_deps(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(hostcheck.ctypes.util, "find_library", lambda name: None)
    why = hostcheck.umf_problem(tmp_path / "libumf.so.1")
    assert why is not None and "make deps" in why
    (tmp_path / "libumf.so.1").write_bytes(b"")
    assert hostcheck.umf_problem(tmp_path / "libumf.so.1") is None


def test_umf_machine_files() -> None:
    hbm = load_machine(MACHINES / "xeon-max-9468-flat-quadrant-umf.toml").tiers
    base = load_machine(MACHINES / "xeon-max-9468-flat-quadrant.toml").tiers
    assert hbm[0].backend == "umf:numa:2-3"
    assert [(t.capacity, t.load_cost, t.per_node) for t in hbm] == \
        [(t.capacity, t.load_cost, t.per_node) for t in base]
    cxl = load_machine(MACHINES / "cxl-dax-kmem-umf.toml").tiers
    assert (cxl[0].backend, cxl[-1].backend) == ("umf:numa:0-1", "umf:numa:2")
