"""Small-call sampling downstream of the tracer (issue 15 item 5): the scanner scales a
sampled block's counts, bytes and sampled weight by the calls it stands for (41000040 /
41000041) and bounds the added weight by the weight sampled in untraced memory; the
advisor charges an allocs.csv row `scale` times and widens the size window around a
sampled site's requests; --reserve-hugepages counts a row's blocks."""

from __future__ import annotations

import math
from pathlib import Path

from advisefix import APP, LIBC, site, write_sites
from scantrace import Trace, alloc_lines, run_scan, site_row

from hmtune.advisor.outputs import size_window
from hmtune.analyze.sites_io import ALLOCS_WRITTEN, version_line

SAMPLED, OBJ_SCALE, CLASS = 41000040, 41000041, 41000023
CALL, SIZE, SITE, PTR_OUT, PTR_IN = 40000040, 40000041, 32000009, 40000043, 40000042
LOAD, OBJECT, WEIGHT = 32000000, 32000007, 41000020


def sampled_malloc(tr: Trace, t: int, size: int, site_id: int, ptr: int, scale: int) -> None:
    tr.event(t, CALL, 1, SIZE, size, SITE, site_id, SAMPLED, scale)
    tr.event(t + 1, CALL, 0, PTR_OUT, ptr)


def sample(tr: Trace, t: int, addr: int, weight: int, cls: int, obj: int | None = None,
           scale: int | None = None) -> None:
    pairs = [LOAD, addr]
    if obj is not None:
        pairs += [OBJECT, obj]
    if scale is not None:
        pairs += [OBJ_SCALE, scale]
    tr.event(t, *pairs, WEIGHT, weight, CLASS, cls)


def two_sampled_blocks(unknown_weight: int) -> Trace:
    """Site 5: blocks of 100 and 300 bytes, each standing for 8; site 6: one traced
    8000-byte block. Samples: one in each sampled block (weights 10 by address, 20 with
    the object and its scale), 40 in site 6, `unknown_weight` in untraced memory."""
    tr = Trace()
    sampled_malloc(tr, 10, 100, 5, 0x1000, 8)
    sampled_malloc(tr, 20, 300, 5, 0x2000, 8)
    tr.malloc(25, 8000, 6, 0x10000)
    sample(tr, 30, 0x1010, 10, 1)                        # attributed by address
    sample(tr, 31, 0x2020, 20, 1, obj=5, scale=8)        # finalize's object and scale
    sample(tr, 32, 0x10100, 40, 1, obj=6)
    sample(tr, 33, 0x500000, unknown_weight, 4)          # untraced memory
    tr.free(50, 0x1000)
    return tr


def test_sampled_blocks_are_scaled(tmp_path: Path) -> None:
    scan = run_scan(two_sampled_blocks(unknown_weight=1000), tmp_path)
    r5, r6 = site_row(scan, 5), site_row(scan, 6)
    # each block stands for 8: counts, bytes and the peak (both live at t=20) scale
    assert (r5["n_allocs"], r5["total_bytes"], r5["max_size"]) == (16, 3200, 300)
    assert r5["peak_live_bytes"] == 3200 and r5["sampled_blocks"] == 2
    # samples are counted as seen; their weight 8 times as far as two samples support
    # it (210 added, of which 1 - 1/sqrt(2) kept: 61 <= 1000 untraced)
    assert (r5["samples"], r5["loads"], r5["weight"]) == (2, 2, 30 + supported(210, 2))
    assert (r6["n_allocs"], r6["weight"], r6["sampled_blocks"]) == (1, 40, 0)
    assert scan.total_weight == 1070 and scan.meta["small_capped_tasks"] == 0
    assert scan.meta["small_unsupported_sites"] == 1
    rows = [line.split(",") for line in alloc_lines(scan)]
    assert [(r[0], r[4], r[7]) for r in rows] == [("5", "100", "8"), ("5", "300", "8"),
                                                  ("6", "8000", "1")]


def supported(extra: int, k: int) -> int:
    """The part of `extra` added weight that k samples in scaled blocks support (the
    scanner's ps_small_support: k - sqrt(k) of k)."""
    return int(extra * (1.0 - 1.0 / math.sqrt(k)))


def test_one_sample_supports_no_scaling(tmp_path: Path) -> None:
    """A block of 64 sampled once: the sample says its block was accessed, nothing about
    the 63 others, so the site keeps the weight it was seen with."""
    tr = Trace()
    sampled_malloc(tr, 10, 1792, 5, 0x1000, 64)
    tr.malloc(20, 8000, 6, 0x10000)
    sample(tr, 30, 0x1010, 10, 1, obj=5, scale=64)
    for i in range(10):
        sample(tr, 40 + i, 0x10100, 10, 1, obj=6)
    sample(tr, 60, 0x500000, 10_000, 4)
    scan = run_scan(tr, tmp_path)
    assert site_row(scan, 5)["weight"] == 10 and site_row(scan, 6)["weight"] == 100


def test_many_samples_support_most_of_the_scaling(tmp_path: Path) -> None:
    """100 samples in a block of 4: 90 % of the 3 x their weight scaling adds is kept."""
    tr = Trace()
    sampled_malloc(tr, 10, 4096, 5, 0x1000, 4)
    for i in range(100):
        sample(tr, 30 + i, 0x1010 + 8 * i, 10, 1, obj=5, scale=4)
    sample(tr, 200, 0x500000, 10_000, 4)
    scan = run_scan(tr, tmp_path)
    assert site_row(scan, 5)["weight"] == 1000 + supported(3000, 100) == 3700


def test_scaled_weight_is_bounded_by_untraced_weight(tmp_path: Path) -> None:
    """Unsampled blocks' accesses land in untraced memory: 61 added weight supported by
    the two samples, but only 40 sampled there, so the site gets its 30 seen plus those
    40 (the bound scales the added part by 40/61)."""
    scan = run_scan(two_sampled_blocks(unknown_weight=40), tmp_path)
    kept = supported(210, 2)
    assert site_row(scan, 5)["weight"] == 30 + int(kept * (40 / kept)) <= 70
    assert site_row(scan, 6)["weight"] == 40            # a traced site is never touched
    assert scan.meta["small_capped_tasks"] == 1


def test_realloc_of_a_sampled_block_ends_it(tmp_path: Path) -> None:
    tr = Trace()
    sampled_malloc(tr, 10, 200, 5, 0x1000, 4)
    tr.event(20, CALL, 3, SIZE, 6000, SITE, 7, PTR_IN, 0x1000)     # grows past min_size
    tr.event(21, CALL, 0, PTR_OUT, 0x9000)
    scan = run_scan(tr, tmp_path)
    r5, r7 = site_row(scan, 5), site_row(scan, 7)
    assert (r5["n_allocs"], r5["peak_live_bytes"], r5["last_free_ns"]) == (4, 800, 20)
    assert (r7["n_allocs"], r7["total_bytes"], r7["sampled_blocks"]) == (1, 6000, 0)


def test_size_window_widens_around_sampled_requests() -> None:
    import pandas as pd

    placed = pd.DataFrame([site(3, 1 << 20, 10.0, max_size=1990) | {"sampled_blocks": 60},
                           site(4, 1 << 20, 5.0, max_size=1 << 20) | {"sampled_blocks": 0}])
    allocs = pd.DataFrame({"site_id": [3, 3, 4], "rank": 0, "size": [230, 1990, 1 << 20],
                           "scale": [32, 32, 1]})
    assert size_window(placed, allocs) == (128, 1 << 20)
    assert size_window(placed.iloc[:1], allocs) == (128, 2047)
    assert size_window(placed.iloc[:1], None) == (0, 2047)          # sites.csv only
    exact = allocs.assign(scale=1)
    assert size_window(placed.iloc[:1], exact) == (230, 1990)
    assert size_window(placed.iloc[:0], allocs) == (0, 0)


def write_allocs_scaled(path: Path, rows: list[tuple[int, int, int, int, int]]) -> None:
    """allocs.csv rows (site, size, t_alloc, t_free, scale), rank 0, thread 1."""
    lines = [version_line("allocs", 1, trace="t.prv"), ",".join(ALLOCS_WRITTEN)]
    lines += [f"{s},0,1,0x{0x10000 * (n + 1):x},{size},{t0},{t1},{scale}"
              for n, (s, size, t0, t1, scale) in enumerate(rows)]
    path.write_text("\n".join(lines) + "\n")


def test_advise_charges_a_row_for_the_blocks_it_stands_for(tmp_path: Path) -> None:
    """100 rows of 1000 bytes standing for 32 blocks each: 3200 objects of class 1008,
    3.1 MiB in the tier, not the 100 KiB the rows alone would take."""
    from hmtune.advisor.inputs import load_allocs, load_sites
    from hmtune.advisor.model import charged_peaks

    d = tmp_path / "stage"
    raw = f"{APP}+0x1240 > {LIBC}+0x2724a"
    write_sites(d / "sites.csv", [site(3, 3200 * 1000, 90.0, raw, max_size=1000)
                                  | {"n_allocs": 3200, "total_bytes": 3_200_000}])
    write_allocs_scaled(d / "allocs.csv", [(3, 1000, 10 + i, -1, 32) for i in range(100)])
    sites = load_sites(d / "sites.csv")
    allocs = load_allocs(d / "allocs.csv", {3}, full=True)
    assert list(allocs["scale"]) == [32] * 100
    import numpy as np

    peak = charged_peaks(allocs, np.array([3]), "numa:0")
    assert int(peak[0]) == 3200 * 1008
    assert len(sites.table) == 1


def test_reserve_counts_a_rows_blocks(tmp_path: Path) -> None:
    """--reserve-hugepages: 2 rows of 512-byte objects standing for 4096 each fill
    2 chunks of 2 MiB (4096 objects of class 512 per chunk)."""
    from hmtune.core.stage import Stage
    from hmtune.workflows.reserve import arena_pages, read_sizes

    d = tmp_path / "stage"
    raw = f"{APP}+0x1240 > {LIBC}+0x2724a"
    write_sites(d / "sites.csv", [site(3, 8192 * 512, 90.0, raw, max_size=512)])
    write_allocs_scaled(d / "allocs.csv", [(3, 512, 10, -1, 4096), (3, 512, 11, -1, 4096)])
    sizes = read_sizes(Stage(d), {raw})
    assert [b.scale for b in sizes[raw].blocks or []] == [4096, 4096]
    assert arena_pages([sizes[raw]]) == {0: 2}
