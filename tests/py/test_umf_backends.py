"""The umf:* backends on the Python side: their spellings (the advisor's check mirrors
interpose/hmi_fields.c), what a tier charges for an object (hmi_backend_umf.c's UMF
buckets and 4 KiB pages), whether UMF is installed, and the UMF machine files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hmtune.advisor import granularity as g
from hmtune.advisor import hostcheck
from hmtune.advisor.tiers import backend_problem, load_machine

MACHINES = Path(__file__).resolve().parents[2] / "configs" / "machines"
KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30


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


def test_umf_buckets_are_the_pools() -> None:
    # measured on UMF 1.2.0's disjoint pool, minimum bucket 16 (hmi_backend_umf.c)
    seen = {1: 16, 17: 32, 33: 48, 49: 64, 65: 96, 97: 128, 129: 192, 193: 256, 2049: 3072,
            3073: 4096, 4097: 6144, 16385: 24576, 1048577: 1572864, 1572865: 2097152}
    for n, bucket in seen.items():
        assert g.umf_bucket(n) == bucket, n
        assert g.umf_bucket(bucket) == bucket
    sizes = np.arange(1, 300_000, 7, dtype=np.int64)
    assert (g.umf_buckets(sizes) == [g.umf_bucket(int(n)) for n in sizes]).all()


def test_umf_charges() -> None:
    assert g.uses_hugetlb("umf:hugetlb") and not g.uses_hugetlb("umf:numa:0")
    # umf:hugetlb: buckets up to 4 KiB, then 4 KiB pages inside shared hugepages
    assert g.charge(24, "umf:hugetlb") == 32
    assert g.charge(4096, "umf:hugetlb") == 4096
    assert g.charge(20000, "umf:hugetlb") == 20480
    assert g.charge(100000, "umf:hugetlb") == 102400
    assert g.charge(GIB, "umf:hugetlb") == GIB
    # umf:numa: buckets up to 2 MiB
    assert g.charge(20000, "umf:numa:0") == 24576
    assert g.charge(3 * MIB + 5, "umf:numa:0") == 3 * MIB + 4 * KIB
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
