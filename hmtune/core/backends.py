"""The backend grammar: what a tier's `backend` string may be (machine files and
placement.txt's tier lines, docs/formats.md §5) and what each kind of backend does with
memory.

    memkind:KIND               a memkind kind (MEMKIND_HBW, MEMKIND_DAX_KMEM, ...)
    numa:NODES                 NUMA nodes (8-15, 0,2,4-7)
    umf:numa:NODES[:MODE]      UMF's NUMA provider (MODE: bind, preferred, interleave)
    umf:hugetlb                UMF's hugepage provider
    hugetlb, thp, default      hugepages from the pool, transparent hugepages, nothing placed

The C reader of placement.txt (interpose/hmi_fields.c) takes exactly these.
"""

from __future__ import annotations

from hmtune.core.units import KIB, MIB

HUGE_PAGE = 2 * MIB             # the pages of THP and of memkind's hugepage kinds


# ---- what a backend does --------------------------------------------------------------

def uses_hugetlb(backend: str) -> bool:
    """Whether a tier of this backend maps hugepages from a reserved pool."""
    return backend in ("hugetlb", "umf:hugetlb") or (
        backend.startswith("memkind:") and "HUGETLB" in backend)


def is_umf(backend: str) -> bool:
    """Whether a tier of this backend allocates from a UMF pool."""
    return backend.startswith("umf:")


def is_hbw(backend: str) -> bool:
    """Whether a tier of this backend is one of memkind's high-bandwidth kinds."""
    return backend.startswith("memkind:MEMKIND_HBW")


def huge_pages(backend: str) -> bool:
    """Whether a tier of this backend maps 2 MiB pages: hugepages from a pool or THP."""
    return uses_hugetlb(backend) or backend == "thp"


def pages_only(backend: str) -> bool:
    """Whether a backend gives the same memory in bigger pages (its access gain is the
    TLB's): hugetlb, THP, UMF's hugetlb and memkind's hugepage kinds without HBW."""
    return huge_pages(backend) and "HBW" not in backend


def static_page(backend: str) -> int:
    """The pages libhmalloc moves a static's range in for this backend: 2 MiB for hugetlb
    and THP (the 2 MiB-aligned part) and memkind's hugepage kinds, else 4 KiB (mbind of
    the whole pages)."""
    if backend in ("hugetlb", "thp") or (backend.startswith("memkind:") and
                                         "HUGETLB" in backend):
        return HUGE_PAGE
    return 4 * KIB
