"""A stage directory's files and the one merge of sites.csv's per-rank rows
(hmtune.core.stage): the rows of a site's ranks fold by one rule, every reader of the
sites (the advisor's, all-fast's and explore's groups, the footprint, run's hugepage
sizes) sees the same per-site numbers, and a per-rank file that cannot be folded is
refused with the file, column and row."""

from __future__ import annotations

from pathlib import Path

import pytest
from advisefix import APP, LIBC, MS, site, static_site, write_allocs, write_sites

from hmtune.advisor.inputs import load_sites
from hmtune.analyze.sites_io import ACCESS_KIND_COLUMNS, FIRST_TOUCH_COLUMNS, SITES_WRITTEN
from hmtune.core.sitesfile import SitesFormatError
from hmtune.core.stage import (
    RANK_MAX,
    RANK_MIN,
    RANK_SUM,
    Stage,
    fast_tier_bytes,
    footprint,
    rank_fold,
    site_rows,
)
from hmtune.core.units import MIB
from hmtune.workflows import reserve, sitegroups

SHARED = f"{APP}+0x1990 > {LIBC}+0x2724a"      # the chain sites 5 and 6 share


def ranks(tmp_path: Path) -> Stage:
    """Three heap sites and a static over two ranks; sites 5 and 6 share one chain and
    peak in different ranks."""
    rows = []
    for rank, (a, b, c, s) in enumerate([(30, 8, 6, 4), (10, 20, 2, 4)]):
        rows += [
            {**site(4, a * MIB, 100.0 + rank, max_size=(2 + rank) * MIB), "rank": rank,
             "n_allocs": 3 + rank, "first_alloc_ns": 50 - 40 * rank,
             "last_free_ns": 900 + 100 * rank},
            {**site(5, b * MIB, 40.0, SHARED), "rank": rank, "n_allocs": 2},
            {**site(6, c * MIB, 10.0 * (rank + 1), SHARED), "rank": rank},
            {**static_site(9, s * MIB, 5.0), "rank": rank},
        ]
    stage = Stage(tmp_path / "stage")
    write_sites(stage.sites, rows)
    write_allocs(stage.allocs, [(4, 0, 2 * MIB, 10, 900), (5, 1, 8 * MIB, 20, 800)])
    return stage


def test_names_the_stage_files(tmp_path: Path) -> None:
    st = Stage(tmp_path)
    assert [st.trace.name, st.sites.name, st.allocs.name, st.profile.name,
            st.placement.name, st.calibration.name] == [
        "trace.prv", "sites.csv", "allocs.csv", "profile.csv", "placement.txt",
        "calibration.json"]
    assert [st.compare, st.explore, st.stale] == [tmp_path / "compare",
                                                  tmp_path / "explore", tmp_path / "stale"]


def test_the_fold_covers_every_numeric_column() -> None:
    """Each column analyze writes that adds up or takes an extreme across ranks is in
    one of the rule's lists; the text columns are the first rank's."""
    numeric = {"n_allocs", "total_bytes", "samples", "loads", "stores", "misses",
               "weight", "share", "max_size", "peak_live_bytes", "live_ns",
               "last_free_ns", "first_alloc_ns", "sampled_blocks",
               *FIRST_TOUCH_COLUMNS, *ACCESS_KIND_COLUMNS}
    assert numeric <= set(RANK_SUM) | set(RANK_MAX) | set(RANK_MIN)
    how = rank_fold(["site_id", "rank", *SITES_WRITTEN])
    assert "site_id" not in how and "rank" not in how
    assert {c for c, h in how.items() if h == "first"} == \
        set(SITES_WRITTEN) - numeric - {"site_id"}


def test_site_rows_fold_ranks(tmp_path: Path) -> None:
    stage = ranks(tmp_path)
    rows = {r["site_id"]: r for r in stage.site_rows()}
    assert list(rows) == ["4", "5", "6", "9"] and all("rank" not in r for r in rows.values())
    four = rows["4"]
    assert int(four["peak_live_bytes"]) == 30 * MIB            # the largest rank's
    assert int(four["max_size"]) == 3 * MIB
    assert int(four["n_allocs"]) == 7                          # 3 + 4
    assert float(four["weight"]) == (100.0 + 101.0) * MS
    assert int(four["first_alloc_ns"]) == 10 and int(four["last_free_ns"]) == 1000
    assert four["callstack"] == site(4, 1, 1.0)["callstack"]   # text: the first rank's
    static = rows["9"]                                          # one object per process
    assert (int(static["n_allocs"]), int(static["total_bytes"])) == (1, 4 * MIB)


def test_every_reader_sees_the_same_sites(tmp_path: Path) -> None:
    """The advisor (pandas), the groups of all-fast and explore, run's hugepage sizes
    and the footprint give each site the numbers site_rows gives it."""
    stage = ranks(tmp_path)
    rows = {int(r["site_id"]): r for r in stage.site_rows()}
    peak = {i: int(r["peak_live_bytes"]) for i, r in rows.items()}
    weight = {i: float(r["weight"]) for i, r in rows.items()}

    assert footprint(stage.sites) == sum(peak.values()) == (30 + 20 + 6 + 4) * MIB
    assert fast_tier_bytes(stage.sites, 0.5) == 30 * MIB

    sites = load_sites(stage.sites)            # site 6 merged into 5 (one chain)
    t = sites.table.set_index("site_id")
    assert sorted(t.index) == [4, 5, 9] and sites.merged == {6: 5}
    assert int(t.loc[4, "peak_live_bytes"]) == peak[4]
    assert int(t.loc[5, "peak_live_bytes"]) == peak[5] + peak[6]
    assert float(t.loc[5, "weight"]) == weight[5] + weight[6]
    assert int(t.loc[4, "n_allocs"]) == int(rows[4]["n_allocs"])
    assert int(t.loc[9, "n_allocs"]) == 1

    groups, foot = sitegroups.load_groups(stage.sites, 3)
    assert foot == footprint(stage.sites)
    by = {g.site_ids[0]: g for g in groups}
    assert by[4].nbytes == peak[4] and by[5].nbytes == peak[5] + peak[6]

    sizes = reserve.read_sizes(stage, {SHARED, rows[4]["callstack_raw"]})
    assert sizes[SHARED].peak_live == peak[5] + peak[6]       # as the advisor takes it
    assert sizes[SHARED].n_allocs == int(rows[5]["n_allocs"]) + int(rows[6]["n_allocs"])
    four = sizes[rows[4]["callstack_raw"]]
    assert (four.peak_live, four.max_size) == (peak[4], 3 * MIB)
    assert four.blocks is not None and [b.size for b in four.blocks] == [2 * MIB]


def test_a_file_without_ranks_comes_as_it_is(tmp_path: Path) -> None:
    p = write_sites(tmp_path / "sites.csv", [site(3, 5 * MIB, 2.5), site(4, MIB, 1.0)])
    meta: dict[str, str] = {}
    rows = site_rows(p, meta)
    assert [r["site_id"] for r in rows] == ["3", "4"] and meta["version"] == "1"
    assert rows[0]["weight"] == str(2.5 * MS)


@pytest.mark.parametrize(("spoil", "why"), [
    (lambda r: {**r, "rank": 0}, "site_id 4 appears twice for rank 0"),
    (lambda r: {**r, "peak_live_bytes": "lots"}, "column peak_live_bytes, data row 2: 'lots'"),
])
def test_a_per_rank_file_that_cannot_fold(tmp_path: Path, spoil, why: str) -> None:
    """Refused with one line naming the file, by every light reader; the file is left
    as it was."""
    first = {**site(4, MIB, 1.0), "rank": 0}
    p = write_sites(tmp_path / "stage" / "sites.csv", [first, spoil({**first, "rank": 1})])
    before = p.read_bytes()
    for read in (site_rows, footprint, lambda q: sitegroups.load_groups(q, 2),
                 lambda q: reserve.read_sizes(Stage(q.parent), {first["callstack_raw"]})):
        with pytest.raises(SitesFormatError, match=why) as e:
            read(p)
        assert str(e.value).startswith(f"{p}: ") and "\n" not in str(e.value)
    assert p.read_bytes() == before
