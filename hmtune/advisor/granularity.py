"""What a tier charges for an object: libhmalloc's granularity, per backend.

One model for the advisor (a site's size in a tier), `hmtune run --reserve-hugepages`
(the pages a tier needs) and the report, kept equal to interpose/hmi_mmap.c and
hmi_arena.c:

- Objects up to the backend's arena limit are packed into 2 MiB chunks and charged
  their size class (16..512 bytes in steps of 16, then 32 classes per doubling: at
  most 3.1 % over the request above 512 bytes). The limit is 1 MiB where a block of
  its own would take a whole 2 MiB page (`hugetlb`, `umf:hugetlb`, the memkind
  hugepage kinds), would never get one (`thp`) or takes a 2 MiB granule of UMF's
  (`umf:numa`), 256 KiB on 4 KiB pages (`numa:NODES`, the other memkind kinds).
- Larger objects are mappings of their own, charged their size rounded up to the
  mapping's page: 2 MiB on `hugetlb` and the memkind hugepage kinds, else 4 KiB
  (`umf:*`: UMF's providers hand them out in 4 KiB pages, inside 2 MiB granules or
  hugepages that several objects share).
- `default` places nothing: objects are charged their size.

What the arena's chunks take beyond the charges (interpose/hmi_arena.h): a class of up to
8 KiB (STRIPED_MAX) has one pool shared by every thread and a cache per thread stripe
(at most 16 stripes: HM_STRIPES, threads past the 15th share one); each stripe holds at
most `held(cs)` objects of the class that are not live (a batch of batch(cs) freed
objects, one more batch, and the rest of a run cut from the class's slab); a new slab
is cut only when the stripe asking holds nothing, so the class's slabs hold at most
its most objects live at once plus held(cs) per stripe beyond the first (`cut`); a
larger class has one shard for all threads, whose slabs hold its most objects live
at once. arena_fit.footprint (the advisor) and
hmtune/workflows/reserve.arena_pages (--reserve-hugepages) both count that.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hmtune.core.backends import huge_pages, is_umf, uses_hugetlb
from hmtune.core.units import KIB, MIB

if TYPE_CHECKING:       # numpy only where arrays are used: hmtune run stays light
    import numpy as np

ARENA_MAX = MIB                 # HMI_ARENA_MAX: the largest class
ARENA_MAX_4K = 256 * KIB        # on 4 KiB pages
CHUNK = 2 * MIB                 # HMI_ARENA_CHUNK
SLAB_MIN = 64 * KIB             # 1 << HMI_SLAB_SHIFT
STRIPED_MAX = 8 * KIB           # HMI_ARENA_STRIPED_MAX's class: larger ones, one shard
RUN = KIB                       # HMI_ARENA_RUN: the bytes of a batch (at least one object)
STRIPES = 16                    # HM_STRIPES: threads past the first 15 share stripe 0
HUGE_BLOCK = 2 * MIB            # HMI_PAGE_2M (hmi_backend_int.h): hugepage mappings round to it
SMALL_PAGE = 4 * KIB
UNIT = 4 * KIB                  # the advisor counts sizes and capacities in these


def arena_max(backend: str) -> int:
    """The largest object the backend packs with others in the arena (0: none)."""
    if backend == "default":
        return 0
    if is_umf(backend) or huge_pages(backend):
        return ARENA_MAX
    return ARENA_MAX_4K


def block_page(backend: str) -> int:
    """What an object larger than arena_max is rounded up to."""
    return HUGE_BLOCK if uses_hugetlb(backend) and not is_umf(backend) else SMALL_PAGE


def class_size(n: int) -> int:
    """The size of the arena class an n-byte object takes (hmi_arena.c's class_of and
    hmi_arena_class_size: 16..512 in steps of 16, then 32 classes per doubling)."""
    if n <= 512:
        return max(16, (n + 15) // 16 * 16)
    k = (n - 1).bit_length() - 10                     # n in (512 << k, 1024 << k]
    step = 16 << k
    return (512 << k) + -(-(n - (512 << k)) // step) * step


def class_sizes(n: np.ndarray) -> np.ndarray:
    """class_size over an int64 array."""
    import numpy as np

    n = np.maximum(np.asarray(n, np.int64), 1)
    small = np.maximum(16, (n + 15) // 16 * 16)
    # k = bit_length(n - 1) - 10 for n > 512 (frexp's exponent is the bit length of an
    # integer below 2^53)
    bits = np.frexp((n - 1).astype(np.float64))[1].astype(np.int64)
    k = np.maximum(bits - 10, 0)
    base = np.int64(512) << k
    step = np.int64(16) << k
    big = base + -(-(n - base) // step) * step
    return np.where(n <= 512, small, big)


def slab_size(cs: int) -> int:
    """The slabs of class size cs (hmi_arena_slab_code): 8 objects' worth rounded up to
    a power of two, 64 KiB to 2 MiB."""
    want = 8 * cs
    slab = SLAB_MIN
    while slab < want and slab < CHUNK:
        slab *= 2
    return slab


def slab_sizes(cs: np.ndarray) -> np.ndarray:
    """slab_size over an int64 array of class sizes."""
    import numpy as np

    want = np.maximum(8 * np.asarray(cs, np.int64), 1)
    bits = np.frexp((want - 1).astype(np.float64))[1].astype(np.int64)  # ceil(log2)
    return np.clip(np.int64(1) << np.minimum(bits, 40), SLAB_MIN, CHUNK)


def batch(cs: int) -> int:
    """Objects of class size cs a stripe takes from or gives back to the class's pool at
    a time (hmi_arena_batch): RUN // cs, at least 1."""
    return RUN // cs if cs < RUN else 1


def held(cs: int) -> int:
    """The most objects of class size cs that are not live one thread stripe holds: two
    batches of freed objects and a run short of one (0 for a class over STRIPED_MAX: one
    shard for all threads, which reuses every object freed)."""
    return 3 * batch(cs) - 1 if cs <= STRIPED_MAX else 0


def helds(cs: np.ndarray) -> np.ndarray:
    """held over an int64 array of class sizes."""
    import numpy as np

    cs = np.asarray(cs, np.int64)
    b = np.where(cs < RUN, RUN // np.maximum(cs, 1), 1)
    return np.where(cs <= STRIPED_MAX, 3 * b - 1, 0)


def stripes(threads: int) -> int:
    """Thread stripes a process of this many threads allocating in a tier uses."""
    return max(1, min(STRIPES, threads))


def cut(peak: int, cs: int, threads: int) -> int:
    """What the slabs of class size cs hold at most, in objects, in one process whose
    most objects of that class live at once are `peak`, allocated by `threads` threads:
    the slabs are ceil(cut / objects per slab). A slab is cut only when the stripe
    asking holds nothing and the others hold at most held(cs) each, so one stripe
    cuts no more slabs than its objects live at once fill (module doc)."""
    return peak + (stripes(threads) - 1) * held(cs) if peak > 0 else 0


def charge(size: int, backend: str) -> int:
    """Bytes the tier charges for one object of size bytes."""
    if backend == "default":
        return size
    size = max(size, 1)
    if size <= arena_max(backend):
        return class_size(size)
    page = block_page(backend)
    return -(-size // page) * page


def charges(sizes: np.ndarray, backend: str) -> np.ndarray:
    """charge over an int64 array of object sizes."""
    import numpy as np

    sizes = np.asarray(sizes, np.int64)
    if backend == "default":
        return sizes.copy()
    page = np.int64(block_page(backend))
    blocks = -(-np.maximum(sizes, 1) // page) * page
    return np.where(sizes <= arena_max(backend), class_sizes(sizes), blocks)


def estimate(peak: int, max_size: int, n_allocs: int, total_bytes: int, backend: str) -> int:
    """A site's charge at its peak from sites.csv alone (no allocs.csv): its live bytes
    at the peak, each object taken at the site's mean size (objects of the arena) or
    rounded up to the mapping's page (the rest)."""
    if peak <= 0 or backend == "default":
        return max(peak, 0)
    mean = max(1, total_bytes // n_allocs) if n_allocs > 0 else max(1, max_size)
    if max_size <= arena_max(backend):
        return -(-peak * class_size(mean) // mean)
    page = block_page(backend)
    # about k objects over the arena limit live at once (the peak in objects of the
    # mean size, or of just over the limit), each rounded up by less than a page
    k = max(1, min(max(n_allocs, 1), peak // max(mean, arena_max(backend) + 1)))
    return max(-(-peak // page) * page,
               min(k * (-(-max_size // page) * page), -(-peak // page) * page + (k - 1) * page))
