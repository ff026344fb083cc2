"""The backend grammar: what a tier's `backend` string may be (machine files and
placement.txt's tier lines, docs/formats.md §5) and what each kind of backend does with
memory.

    memkind:KIND               a memkind kind (MEMKIND_HBW, MEMKIND_DAX_KMEM, ...)
    numa:NODES                 NUMA nodes (8-15, 0,2,4-7)
    umf:numa:NODES[:MODE]      UMF's NUMA provider (MODE: bind, preferred, interleave)
    umf:hugetlb                UMF's hugepage provider
    hugetlb, thp, default      hugepages from the pool, transparent hugepages, nothing placed

The C reader of placement.txt (interpose/hmi_fields.c) takes exactly these. Whether a
backend can place on a given host is hmtune.machine.hostcheck's backend_problem, which
starts with grammar_problem here.
"""

from __future__ import annotations

import re

from hmtune.core.units import KIB, MIB

BACKENDS = ("memkind:KIND", "numa:NODES", "umf:numa:NODES[:MODE]", "umf:hugetlb", "hugetlb",
            "thp", "default")
UMF_NUMA_MODES = ("bind", "preferred", "interleave")
HUGE_PAGE = 2 * MIB             # the pages of THP and of memkind's hugepage kinds
_MEMKIND = re.compile(r"MEMKIND_[A-Z0-9_]+\Z")
_NODES = re.compile(r"[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*\Z")


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


# ---- the grammar ------------------------------------------------------------------------

def _as_number(digits: str) -> tuple[int, str]:
    """A digit string as a sort key of its value, of any length (int() refuses more than
    4300 digits)."""
    d = digits.lstrip("0") or "0"
    return len(d), d


def _nodes_problem(arg: str) -> str | None:
    """Why `arg` is not a NUMA node list (None when it is one)."""
    if not _NODES.match(arg):
        return f"'{arg}' is not a NUMA node list (e.g. 8-15 or 0,2,4-7)"
    for part in arg.split(","):
        lo, _, hi = part.partition("-")
        if hi and _as_number(hi) < _as_number(lo):
            return f"NUMA node range '{part[:40]}' runs backwards"
    return None


def grammar_problem(backend: str) -> str | None:
    """Why `backend` is not a backend of the grammar (None when it is one)."""
    kind, sep, arg = backend.partition(":")
    if kind == "memkind" and sep:
        return None if _MEMKIND.match(arg) else (
            f"'{arg}' is not a memkind kind name (e.g. MEMKIND_HBW, MEMKIND_DAX_KMEM)")
    if kind == "numa" and sep:
        return _nodes_problem(arg)
    if kind == "umf" and sep:
        # umf:hugetlb, umf:numa:NODES, umf:numa:NODES:MODE (interpose/hmi_fields.c)
        if arg == "hugetlb":
            return None
        sub, sep2, rest = arg.partition(":")
        if sub == "numa" and sep2:
            nodes, sep3, mode = rest.partition(":")
            if sep3 and mode not in UMF_NUMA_MODES:
                return (f"'{mode[:40]}' is not a NUMA mode of umf:numa "
                        f"(use {', '.join(UMF_NUMA_MODES)})")
            return _nodes_problem(nodes)
        return (f"unknown UMF backend 'umf:{arg[:40]}' "
                "(use umf:numa:NODES[:MODE] or umf:hugetlb)")
    if backend in ("hugetlb", "thp", "default"):
        return None
    return f"unknown backend '{backend}' (use one of {', '.join(BACKENDS)})"
