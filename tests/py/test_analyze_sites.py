"""analyze: per-site metrics from the scanner's per-(task, site) table on hand-written
traces with known answers (aggregation over ranks, share/density, per-rank rows,
labels), the scanner's output files and their readers, the writers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scantrace import Trace, run_scan

from hmtune.analyze.labels import FORM_NONE, FORM_RAW, SiteLabels
from hmtune.analyze.scan_io import (
    SITES_TSV_COLUMNS,
    SITES_TSV_VERSION,
    Scan,
    ScanOutputError,
    read_scan,
)
from hmtune.analyze.sites import SiteTable, site_table
from hmtune.analyze.sites_io import (
    ACCESS_KIND_COLUMNS,
    ALLOCS_WRITTEN,
    SITES_COLUMNS,
    SITES_WRITTEN,
    SitesFormatError,
    read_allocs,
    read_sites,
    version_line,
)
from hmtune.analyze.writer import install_allocs, write_sites
from hmtune.core.sitesfile import release_field
from hmtune.core.units import MIB
from hmtune.core.version import version

KB = 0x1000
NOLABELS = SiteLabels(FORM_NONE)
STACK = 0x7FFD0000


def two_ranks() -> Trace:
    """Site 3 in both ranks (peaks 300 and 500), site 4 in rank 1 only (2 MiB, never
    freed); 400 of weight each, and 200 outside every site."""
    tr = Trace(ntasks=2, end=1000)
    tr.malloc(0, 100, 3, 16 * KB)                 # rank 0: [0,50) and [20,80)
    tr.malloc(20, 200, 3, 32 * KB)
    tr.free(50, 16 * KB)
    tr.free(80, 32 * KB)
    tr.sample(25, 16 * KB + 8, 50, miss=True)
    tr.sample(26, 32 * KB, 30, store=True)
    tr.sample(27, STACK, 20, obj=3)               # finalize's object event wins
    tr.sample(200, STACK, 200)                    # unattributed
    tr.malloc(0, 2 * MIB, 4, 0x1000000, task=2)   # rank 1: [10,30) and [40,60)
    tr.malloc(10, 500, 3, 16 * KB, task=2)
    tr.free(30, 16 * KB, task=2)
    tr.malloc(40, 100, 3, 32 * KB, task=2)
    tr.free(60, 32 * KB, task=2)
    tr.sample(15, 16 * KB + 499, 300, miss=True, task=2)
    tr.sample(100, 0x1000000 + MIB, 400, task=2)
    return tr


def row(table: SiteTable, site: int, **where: int) -> dict:
    (r,) = (r for r in table.rows if r["site_id"] == site
            and all(r[k] == v for k, v in where.items()))
    return r


def test_two_ranks_summed_and_max(tmp_path: Path) -> None:
    scan = run_scan(two_ranks(), tmp_path)
    s = site_table(scan, NOLABELS)
    assert s.columns == SITES_WRITTEN and list(s.rows[0]) == SITES_WRITTEN
    r3 = row(s, 3)
    assert r3["n_allocs"] == 4 and r3["total_bytes"] == 900             # summed
    assert r3["max_size"] == 500 and r3["peak_live_bytes"] == 500       # max over ranks
    assert (r3["samples"], r3["loads"], r3["stores"], r3["misses"], r3["weight"]) == \
        (4, 3, 1, 2, 400)
    assert r3["first_alloc_ns"] == 0 and r3["last_free_ns"] == 80
    assert r3["live_ns"] == 80                    # max over ranks (rank 1: 20 + 20)
    assert s.column("site_id") == [3, 4]          # weight 400 each: then site id


def test_share_and_density_with_unattributed_weight(tmp_path: Path) -> None:
    scan = run_scan(two_ranks(), tmp_path)
    s = site_table(scan, NOLABELS)
    assert scan.total_weight == 1000
    assert row(s, 3)["share"] == pytest.approx(0.4)    # 400 of 1000, site 0 included
    assert row(s, 4)["share"] == pytest.approx(0.4)
    assert row(s, 4)["density"] == pytest.approx(400 / 2)   # per MiB of 2 MiB peak
    assert row(s, 3)["density"] == pytest.approx(400 / (500 / MIB))
    assert 0 not in s.column("site_id")               # no row for unattributed samples
    assert [(r["task"], r["weight"]) for r in scan.sites if r["site_id"] == 0] == [(1, 200)]


def test_zero_peak_and_no_weight(tmp_path: Path) -> None:
    tr = Trace(nthreads=2)                # site 3's block is overlapped at its start
    tr.malloc(10, 100, 3, 16 * KB, dur=10)
    tr.malloc(10, 64, 9, 16 * KB, thread=2, dur=20)
    s = site_table(run_scan(tr, tmp_path), NOLABELS)
    r = row(s, 3)
    assert r["peak_live_bytes"] == 0
    assert r["density"] == 0 and r["share"] == 0 and r["weight"] == 0


def test_per_rank_rows(tmp_path: Path) -> None:
    s = site_table(run_scan(two_ranks(), tmp_path), NOLABELS, per_rank=True,
                   nodes={1: "n1", 2: "n2"})
    assert s.columns == SITES_WRITTEN[:1] + ["rank", "node"] + SITES_WRITTEN[1:]
    assert [(r["site_id"], r["rank"], r["node"]) for r in s.rows] == \
        [(4, 1, "n2"), (3, 1, "n2"), (3, 0, "n1")]
    unknown = site_table(run_scan(two_ranks(), tmp_path / "u"), NOLABELS, per_rank=True)
    assert {r["node"] for r in unknown.rows} == {""}
    assert row(s, 3, rank=0)["peak_live_bytes"] == 300
    assert row(s, 3, rank=1)["peak_live_bytes"] == 500
    assert row(s, 3, rank=0)["weight"] == 100 and row(s, 3, rank=1)["share"] == 0.3


def test_labels_fill_callstacks(tmp_path: Path) -> None:
    labels = SiteLabels(FORM_RAW, callstack={3: "a.c:1 > b.c:2"},
                        callstack_raw={3: "/bin/a+0x10 > /bin/a+0x20"})
    s = site_table(run_scan(two_ranks(), tmp_path), labels)
    assert row(s, 3)["callstack"] == "a.c:1 > b.c:2"
    assert row(s, 3)["callstack_raw"] == "/bin/a+0x10 > /bin/a+0x20"
    assert row(s, 4)["callstack"] == "site 4" and row(s, 4)["callstack_raw"] == ""


# ---- scanner output files ----

SHEAD = SITES_TSV_VERSION + "\n" + "\t".join(SITES_TSV_COLUMNS) + "\n"
AHEAD = "# hmtune allocs v1 trace=t.prv\n" + ",".join(ALLOCS_WRITTEN) + "\n"


def write_scan_files(d: Path, sites: str, meta: dict, allocs: str = AHEAD) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    (d / "sites.tsv").write_text(sites)
    (d / "allocs.csv").write_text(allocs)
    (d / "scan.json").write_text(json.dumps(meta))
    return d


def test_read_scan(tmp_path: Path) -> None:
    d = write_scan_files(tmp_path, SHEAD + "1\t3\t1\t100\t100\t100\t5\t99\t94\t2\t2\t0\t0\t50"
                         "\t3\t183\t0\t30\t20\t0\n"
                         "1\t0\t0\t0\t0\t0\t0\t0\t0\t1\t1\t0\t0\t5.0\t1\t61\t0\t0\t0\t5\n",
                         {"end_time_ns": 99, "total_weight": 55, "sampler": 3, "alloc_rows": 1,
                          "faults": 244})
    scan = read_scan(d)
    assert scan.sites[0]["live_ns"] == 94 and scan.sites[1]["weight"] == 5
    assert isinstance(scan.sites[1]["weight"], int) and scan.sampler == "soft"
    assert scan.total_weight == 55 and scan.alloc_rows == 1
    assert scan.sites[0]["faults"] == 183 and scan.sites[1]["fault_samples"] == 1
    assert scan.faults == 244
    assert scan.allocs_csv == d / "allocs.csv"
    assert [r["weight_streaming"] for r in scan.sites] == [30, 0]
    assert [r["weight_sync"] for r in scan.sites] == [0, 5]


def test_read_scan_without_kind_columns(tmp_path: Path) -> None:
    # a scanner from before the access kinds: its rows read with the kinds' weights 0
    old = [c for c in SITES_TSV_COLUMNS if c not in ACCESS_KIND_COLUMNS]
    d = write_scan_files(tmp_path, SITES_TSV_VERSION + "\n" + "\t".join(old) + "\n"
                         "1\t3\t1\t100\t100\t100\t5\t99\t94\t2\t2\t0\t0\t50\t3\t183\t0\n",
                         {"total_weight": 50, "alloc_rows": 1})
    scan = read_scan(d)
    assert scan.sites[0]["weight"] == 50
    assert all(scan.sites[0][c] == 0 for c in ACCESS_KIND_COLUMNS)
    assert scan.kind_samples(4) is None


def test_read_scan_errors(tmp_path: Path) -> None:
    meta = {"total_weight": 0, "alloc_rows": 0}
    d = write_scan_files(tmp_path / "a", SITES_TSV_VERSION + "\ntask site_id\n", meta)
    with pytest.raises(ScanOutputError, match="sites.tsv: header"):
        read_scan(d)
    d = write_scan_files(tmp_path / "b", SHEAD + "1\t2\n", meta)
    with pytest.raises(ScanOutputError, match="sites.tsv:3: 2 fields"):
        read_scan(d)
    d = write_scan_files(tmp_path / "c", SHEAD, {"records": 1})
    with pytest.raises(ScanOutputError, match="total_weight, alloc_rows"):
        read_scan(d)
    d = write_scan_files(tmp_path / "d", SHEAD, meta, allocs="site_id,rank\n")
    with pytest.raises(ScanOutputError, match="allocs.csv: not the allocs.csv"):
        read_scan(d)
    with pytest.raises(ScanOutputError, match="missing"):
        read_scan(tmp_path / "nothing")


def test_read_scan_refuses_sites_tsv_version(tmp_path: Path) -> None:
    """sites.tsv without its version line, or with one this hmtune does not read."""
    meta = {"total_weight": 0, "alloc_rows": 0}
    body = "\t".join(SITES_TSV_COLUMNS) + "\n"
    d = write_scan_files(tmp_path / "none", body, meta)
    with pytest.raises(ScanOutputError, match=r"sites.tsv: no version line \(expected "
                       "'# hmtune prvscan sites v1'\\): written by an older"):
        read_scan(d)
    d = write_scan_files(tmp_path / "v9", "# hmtune prvscan sites v9\n" + body, meta)
    with pytest.raises(ScanOutputError, match="sites.tsv: version 'v9' is not one this "
                       "hmtune reads"):
        read_scan(d)
    d = write_scan_files(tmp_path / "empty", "", meta)
    with pytest.raises(ScanOutputError, match="sites.tsv: no version line"):
        read_scan(d)


# ---- writers and readers ----

def test_sites_roundtrip_and_version_line(tmp_path: Path) -> None:
    labels = SiteLabels(FORM_RAW, callstack={3: "a b.c:1 > x,y.c:2", 4: 'q"uote.c:1'},
                        callstack_raw={3: "/p q/a+0x10"})
    s = site_table(run_scan(two_ranks(), tmp_path), labels)
    path = tmp_path / "sites.csv"
    write_sites(path, s, "out dir/trace.prv", "soft 250 Hz", FORM_RAW)
    first = path.read_text().splitlines()[0]
    assert first == ("# hmtune sites v2 trace=out%20dir/trace.prv sampler=soft_250_Hz "
                     f"label_form=module+0xoffset {release_field()}")
    back = read_sites(path)
    assert back.attrs["meta"] == {"version": "2", "trace": "out dir/trace.prv",
                                  "sampler": "soft_250_Hz", "label_form": FORM_RAW,
                                  "hmtune": version()}
    assert list(back.columns) == SITES_WRITTEN
    assert back.loc[back["site_id"] == 3, "callstack"].item() == "a b.c:1 > x,y.c:2"
    assert back.loc[back["site_id"] == 4, "callstack"].item() == 'q"uote.c:1'
    assert back.loc[back["site_id"] == 4, "callstack_raw"].item() == ""
    assert back.to_dict("records") == s.rows         # floats round-trip exactly


def test_allocs_csv_from_the_scanner(tmp_path: Path) -> None:
    tr = Trace(ntasks=2, nthreads=3)
    tr.malloc(5, 100, 3, 0x800000000000, task=2)
    tr.malloc(6, 7, 4, 0x1000, thread=3)
    tr.free(9, 0x1000, thread=3)
    scan = run_scan(tr, tmp_path / "out dir,é+[x]")
    prv = tmp_path / "out dir,é+[x]" / "trace.prv"
    lines = scan.allocs_csv.read_text().splitlines()
    # same encoding; the release is added when the file is put in place
    assert lines[0] == version_line("allocs", 1, trace=str(prv)).removesuffix(
        f" {release_field()}")
    assert lines[1:] == ["site_id,rank,thread,ptr,size,t_alloc,t_free,scale",
                         "3,1,1,0x800000000000,100,5,-1,1", "4,0,3,0x1000,7,6,9,1"]
    install_allocs(scan.allocs_csv, tmp_path / "allocs.csv")
    back = read_allocs(tmp_path / "allocs.csv")
    assert list(back["ptr"]) == ["0x800000000000", "0x1000"]
    assert back.attrs["meta"]["trace"] == str(prv)
    assert back.attrs["meta"]["hmtune"] == version()


def test_readers_refuse_newer_versions(tmp_path: Path) -> None:
    p = tmp_path / "sites.csv"
    p.write_text(version_line("sites", 3, trace="t") + "\n" + ",".join(SITES_COLUMNS) + "\n")
    with pytest.raises(SitesFormatError, match=r"version 3 is newer .* \(up to v2\)"):
        read_sites(p)
    p.write_text("site_id,callstack\n1,a\n")
    with pytest.raises(SitesFormatError, match="not an hmtune sites.csv"):
        read_sites(p)
    p.write_text(version_line("allocs", 1) + "\nsite_id\n")
    with pytest.raises(SitesFormatError, match="not an hmtune sites.csv"):
        read_sites(p)
    p.write_text(version_line("sites", 1) + "\nsite_id,callstack\n")
    with pytest.raises(SitesFormatError, match="missing column"):
        read_sites(p)
    with pytest.raises(SitesFormatError, match="No such file"):
        read_sites(tmp_path / "none.csv")


def test_empty_tables(tmp_path: Path) -> None:
    tr = Trace()
    tr.sample(10, STACK, 30)
    scan = run_scan(tr, tmp_path)
    s = site_table(scan, NOLABELS)
    assert len(s) == 0 and s.columns == SITES_WRITTEN and scan.alloc_rows == 0
    write_sites(tmp_path / "sites.csv", s, "t.prv", "none", FORM_NONE)
    assert read_sites(tmp_path / "sites.csv").empty
    assert len(scan.allocs_csv.read_text().splitlines()) == 2
    assert read_allocs(scan.allocs_csv).empty


def test_site_table_of_rows() -> None:
    """site_table needs only the per-(task, site) rows and scan.json's total weight."""
    base = dict.fromkeys(SITES_TSV_COLUMNS, 0)
    rows = [base | {"task": 1, "site_id": 5, "n_allocs": 1, "peak_live_bytes": MIB, "weight": 7},
            base | {"task": 2, "site_id": 5, "n_allocs": 2, "peak_live_bytes": 2, "weight": 3},
            base | {"task": 2, "site_id": 6, "samples": 9, "weight": 90}]   # no allocation
    s = site_table(Scan(rows, {"total_weight": 100, "alloc_rows": 3}), NOLABELS)
    assert [(r["site_id"], r["n_allocs"], r["weight"], r["peak_live_bytes"]) for r in s.rows] \
        == [(5, 3, 10, MIB)]
    assert s.rows[0]["share"] == 0.1 and s.rows[0]["density"] == 10.0


def test_task_nodes_from_the_header_and_the_row(tmp_path: Path) -> None:
    """Each task's node: the header's node index named by the .row's NODE level; a
    node the .row does not name is `node N`; an unreadable trace gives {}."""
    from hmtune.analyze.prv import task_nodes

    prv = tmp_path / "t.prv"
    prv.write_text("#Paraver (01/01/2026 at 00:00):1000_ns:2(1,1):1:3(1:1,1:2,1:2)\n")
    (tmp_path / "t.row").write_text("LEVEL NODE SIZE 2\nalpha\nbeta\n")
    assert task_nodes(prv) == {1: "alpha", 2: "beta", 3: "beta"}
    (tmp_path / "t.row").write_text("LEVEL NODE SIZE 1\nalpha\n")
    assert task_nodes(prv) == {1: "alpha", 2: "node 2", 3: "node 2"}
    (tmp_path / "t.row").unlink()
    assert task_nodes(prv) == {1: "node 1", 2: "node 2", 3: "node 2"}
    prv.write_text("not a trace\n")
    assert task_nodes(prv) == {}
    assert task_nodes(tmp_path / "missing.prv") == {}
