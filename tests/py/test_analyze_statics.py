"""`hmtune analyze` on hand-written traces with static variables: their rows (kind
static, the size the trace's label gives, one object per process, live for the whole
run) across ranks and per rank; the labels of hmtune (sized, unsized, an older
hmtune's) and Extrae's (a bare symbol name); and the split of the sampled weight by
address class in sites.csv's version line when the trace has no 41000023 (Extrae):
statics' samples counted as statics, addresses in no object as unknown memory."""

from __future__ import annotations

from pathlib import Path

import pytest
from prvtext import WEIGHT, PrvText, analyze, pcf_text, read_csv, sites

from hmtune.analyze.sites_io import read_sites, split_from_meta

P, Q = 0x7F0000010000, 0x7F0000020000
APP = "/opt/app"
LABELS = {3: "app.c:3", 9: "table [static, app]", 10: "buf [static, app]",
          11: "buf [static, app]"}
RAW = {3: f"{APP}+0x1188", 9: f"{APP}+0x4000 [static 8192]", 10: f"{APP}+0x6000 [static 4096]",
       11: f"{APP}+0x7000 [static 4096]"}


def trace(tmp: Path, pcf: str, *args: str) -> Path:
    t = PrvText(ntasks=2)
    for task in (1, 2):
        t.alloc(100, 4096, 3, P, task=task)
        t.sample(200, P + 8, weight=10, task=task)            # in site 3's block
        t.sample(210, Q + 8, weight=5 * task, obj=9, task=task)   # the static table
        t.sample(220, Q + 64, weight=1, obj=10, task=task)
        t.sample(230, Q + 128, weight=2, obj=11, task=task)
        t.sample(240, 0x1234, weight=7, task=task)            # an address in nothing
        t.event(250, WEIGHT, 3, task=task)                    # a sample without address
    prv = t.write(tmp / "trace", pcf=pcf)
    out = tmp / "out"
    r = analyze(prv, out, *args)
    assert r.returncode == 0, r.stderr
    return out


def test_static_rows_across_ranks(tmp_path: Path) -> None:
    out = trace(tmp_path, pcf_text(LABELS, RAW))
    got = sites(out)
    assert sorted(got) == [3, 9, 10, 11]
    t = got[9]
    assert (t["kind"], t["n_allocs"], t["max_size"], t["peak_live_bytes"],
            t["total_bytes"]) == ("static", 1, 8192, 8192, 8192)
    assert (t["samples"], t["weight"]) == (2, 15.0)          # both ranks' samples
    assert t["first_alloc_ns"] == 0 and t["live_ns"] == t["last_free_ns"] > 250
    assert t["callstack"] == "table [static, app]" and t["callstack_raw"] == RAW[9]
    assert got[3]["kind"] == "heap" and got[3]["n_allocs"] == 2
    # two file-local statics of one name are told apart by where they are
    assert got[10]["label"] != got[11]["label"]
    assert got[10]["label"] == "buf [static, app] @ app+0x6000"


def test_statics_under_a_page_are_one_row(tmp_path: Path) -> None:
    """No tier can take a static under a page (tiers move whole pages): such statics
    are one row, site id 2, that counts them and sums their samples, with no call stack
    a placement could carry; per rank, one such row per rank."""
    raw = {**RAW, 10: f"{APP}+0x6000 [static 64]", 11: f"{APP}+0x7010 [static 4095]"}
    got = sites(trace(tmp_path, pcf_text(LABELS, raw)))
    assert sorted(got) == [2, 3, 9]
    f = got[2]
    assert (f["kind"], f["n_allocs"], f["max_size"], f["peak_live_bytes"]) == \
        ("static", 2, 4095, 64 + 4095)
    assert (f["samples"], f["weight"]) == (4, 6.0)          # 1 + 2 in each rank
    assert f["callstack_raw"] == "" and "2 static variable(s)" in f["callstack"]
    assert got[9]["weight"] == 15.0                          # a static of 2 pages stays
    (tmp_path / "r").mkdir()
    out = trace(tmp_path / "r", pcf_text(LABELS, raw), "--per-rank")
    rows = [r for r in read_csv(out / "sites.csv") if r["site_id"] == "2"]
    assert sorted((r["rank"], r["weight"]) for r in rows) == [("0", "3"), ("1", "3")]


def test_static_rows_per_rank(tmp_path: Path) -> None:
    out = trace(tmp_path, pcf_text(LABELS, RAW), "--per-rank")
    rows = [r for r in read_csv(out / "sites.csv") if r["site_id"] == "9"]
    assert sorted((r["rank"], r["n_allocs"], float(r["weight"])) for r in rows) == \
        [("0", "1", 5.0), ("1", "1", 10.0)]


def test_split_without_class_events(tmp_path: Path) -> None:
    """No 41000023 (as Extrae writes samples): the scanner's classes, the statics'
    weight moved from objects to statics; the split adds up to all sampled weight."""
    out = trace(tmp_path, pcf_text(LABELS, RAW))
    split = split_from_meta(read_sites(out / "sites.csv").attrs["meta"])
    assert split is not None
    assert split.weight == {"heap": 20.0, "static": 21.0, "stack": 0.0, "unknown": 14.0,
                            "no_address": 6.0}
    assert split.samples == {"heap": 2, "static": 6, "stack": 0, "unknown": 2,
                             "no_address": 2}
    r = sites(out)[3]
    assert split.total == 61.0 and r["weight"] / r["share"] == pytest.approx(61.0)


def test_unsized_and_older_static_labels(tmp_path: Path) -> None:
    """A static without an ELF size (`[static]`) and one of an older hmtune's trace
    (`(static symbol)`): rows of kind static whose size is unknown, so without a
    callstack_raw a placement could carry."""
    raw = {**RAW, 9: f"{APP}+0x4000 [static]", 10: f"{APP}+0x6000 (static buf)"}
    got = sites(trace(tmp_path, pcf_text(LABELS, raw)))
    for sid in (9, 10):
        assert got[sid]["kind"] == "static"
        assert (got[sid]["callstack_raw"], got[sid]["max_size"]) == ("", 0)
    assert got[11]["callstack_raw"] == RAW[11]


def test_extrae_static_labels(tmp_path: Path) -> None:
    """Extrae labels a static object by its symbol name: a row of kind static, size
    unknown; an object id with a call stack label that allocated nothing is no row."""
    labels = {3: "app.c:3 > app.c:40", 9: "table", 10: "app.c:7 > app.c:41",
              11: "abcdefgh..stuvwxyz [abcdefghijklmnopqrstuvwxyz]"}
    got = sites(trace(tmp_path, pcf_text(labels)))
    assert sorted(got) == [3, 9, 11]
    assert got[9]["kind"] == got[11]["kind"] == "static"
    assert got[9]["callstack_raw"] == "" and got[9]["max_size"] == 0
    assert got[3]["kind"] == "heap"
