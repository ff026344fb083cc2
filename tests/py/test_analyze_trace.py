"""`hmtune analyze` end to end on Paraver traces: the real Extrae fixture against its
README's ground truth, and small hand-written traces with known answers (address
attribution, realloc, 32000007 objects, label forms, ranks). Only the CLI and the
CSV files it writes are used. Bad input and progress: test_analyze_trace_input.py."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path
from typing import Any

import pytest
from prvtext import (
    HIT,
    LATENCY,
    LOAD,
    OBJECT,
    WEIGHT,
    PrvText,
    alloc_tuples,
    analyze,
    pcf_text,
    read_csv,
    sites,
)

HERE = Path(__file__).resolve().parent
FIXTURE = HERE / "data" / "extrae-malloc-trace"
P, Q, R = 0x7F0000010000, 0x7F0000020000, 0x7F0000030000
LABELS = pcf_text({3: "app.c:3", 4: "app.c:4", 5: "app.c:5", 9: "table [static, app]"})


def run(t: PrvText, tmp_path: Path, *args: str, pcf: str | None = LABELS) -> Path:
    """Write the trace, analyze it, return the output directory (asserts success)."""
    prv = t.write(tmp_path / "trace", pcf=pcf)
    out = tmp_path / "out"
    r = analyze(prv, out, *args)
    assert r.returncode == 0, r.stderr
    return out


def sums(out: Path) -> tuple[int, float]:
    """Samples and weight over all rows of sites.csv."""
    rows = sites(out).values()
    return sum(r["samples"] for r in rows), sum(r["weight"] for r in rows)


def check_share(row: dict[str, Any], total_weight: float) -> None:
    assert row["share"] == pytest.approx(row["weight"] / total_weight)


# ------------------------------------------------------------ the Extrae fixture

# README.md of the fixture: (site, size, pointer, alloc t, free t, innermost frames)
EXTRAE_TRUTH = [
    (3, 8388608, "0x7f97a7d41010", 205435, 181630986, "malloc_test.c:56"),
    (4, 33554432, "0x7f97a5d40010", 4785956, 179996730, "malloc_test.c:59"),
    (5, 67108864, "0x7f97a1d3f040", 4826877, 172597945, "malloc_test.c:62"),
    (6, 16777216, "0x7f97a0d3e010", 39334660, 171505112,
     "malloc_test.c:41 > /home/demo/src/malloc_test.c:66"),
]
LIBC = " > ./csu/../sysdeps/x86/libc-start.c:74 > ./csu/../csu/libc-start.c:128"


@pytest.mark.parametrize("gz", [False, True], ids=["prv", "prv.gz"])
def test_extrae_fixture_ground_truth(tmp_path: Path, gz: bool) -> None:
    d = tmp_path / "extrae"
    d.mkdir()
    shutil.copy(FIXTURE / "malloc_test.pcf", d)
    src = (FIXTURE / "malloc_test.prv").read_bytes()
    prv = d / ("malloc_test.prv.gz" if gz else "malloc_test.prv")
    prv.write_bytes(gzip.compress(src) if gz else src)
    r = analyze(prv, tmp_path / "out")
    assert r.returncode == 0, r.stderr
    out = tmp_path / "out"

    rows = read_csv(out / "allocs.csv")
    assert list(rows[0]) == ["site_id", "rank", "thread", "ptr", "size", "t_alloc", "t_free",
                             "scale"]
    assert [tuple(row.values()) for row in rows] == [
        (str(s), "0", "1", ptr, str(size), str(t0), str(t1), "1")
        for s, size, ptr, t0, t1, _ in EXTRAE_TRUTH]

    got = sites(out)
    assert sorted(got) == [3, 4, 5, 6]
    for s, size, _, t0, t1, frames in EXTRAE_TRUTH:
        row = got[s]
        assert (row["n_allocs"], row["max_size"], row["peak_live_bytes"],
                row["total_bytes"]) == (1, size, size, size)
        assert (row["first_alloc_ns"], row["last_free_ns"], row["live_ns"]) == (t0, t1, t1 - t0)
        assert row["callstack"] == f"/home/demo/src/{frames}{LIBC}"
        assert row["callstack_raw"] == ""            # translated labels: no module offsets
        # the timer samples carry no data address: nothing to attribute
        assert (row["samples"], row["weight"], row["share"]) == (0, 0.0, 0.0)
    first = (out / "sites.csv").read_text().splitlines()[0]
    assert "label_form=file:line" in first.split()


# ------------------------------------------------------------ attribution


def test_block_is_half_open(tmp_path: Path) -> None:
    t = PrvText()
    t.alloc(100, 4096, 3, P)
    t.alloc(120, 64, 4, P + 8192)
    t.sample(200, P, weight=1)                   # first byte: in
    t.sample(210, P + 4095, weight=2)            # last byte: in
    t.sample(220, P + 4096, weight=4)            # one past the end: nowhere
    t.sample(230, P - 1, weight=8)               # one before: nowhere
    t.sample(240, P + 8192 + 63, weight=16)      # last byte of the small block
    t.sample(250, P + 8192 + 64, weight=32)      # one past it
    got = sites(run(t, tmp_path))
    assert (got[3]["samples"], got[3]["weight"]) == (2, 3.0)
    assert (got[4]["samples"], got[4]["weight"]) == (1, 16.0)
    check_share(got[3], 63)
    check_share(got[4], 63)


def test_reused_address_goes_to_the_live_object(tmp_path: Path) -> None:
    t = PrvText()
    t.alloc(100, 4096, 3, P)
    t.sample(200, P + 8, weight=1)
    t.free(300, P)
    t.sample(400, P + 8, weight=2)               # freed, not reused yet: unattributed
    t.alloc(500, 1024, 4, P)                     # another site reuses the address
    t.sample(600, P + 8, weight=4)
    t.sample(610, P + 2048, weight=8)            # in the old block's range, not the new
    t.free(700, P)
    t.alloc(800, 2048, 3, P)                     # and the first site again
    t.sample(900, P + 2040, weight=16)
    out = run(t, tmp_path)
    got = sites(out)
    assert (got[3]["samples"], got[3]["weight"], got[3]["n_allocs"]) == (2, 17.0, 2)
    assert (got[4]["samples"], got[4]["weight"], got[4]["n_allocs"]) == (1, 4.0, 1)
    assert sums(out) == (3, 21.0)                # 2 and 8 are in no site...
    check_share(got[3], 31)                      # ...but in the denominator
    check_share(got[4], 31)
    ptr = hex(P)
    assert alloc_tuples(out) == [(3, 0, ptr, 4096, 100, 300), (4, 0, ptr, 1024, 500, 700),
                                 (3, 0, ptr, 2048, 800, -1)]


def test_tasks_have_their_own_address_spaces(tmp_path: Path) -> None:
    t = PrvText(ntasks=2)
    t.alloc(100, 4096, 3, P, task=1)
    t.alloc(110, 4096, 4, P, task=2)             # same address, other process
    t.alloc(120, 512, 5, Q, task=1)
    t.sample(200, P + 16, weight=1, task=1)
    t.sample(210, P + 16, weight=2, task=2)
    t.sample(220, Q + 16, weight=4, task=2)      # Q is live in task 1 only
    t.free(300, P, task=1)
    t.sample(400, P + 16, weight=8, task=2)      # task 1's free does not end task 2's block
    got = sites(run(t, tmp_path))
    assert (got[3]["samples"], got[3]["weight"]) == (1, 1.0)
    assert (got[4]["samples"], got[4]["weight"]) == (2, 10.0)
    assert (got[5]["samples"], got[5]["weight"]) == (0, 0.0)
    assert got[3]["last_free_ns"] == 300 and got[4]["last_free_ns"] == 401   # 401: trace end


def test_realloc_moved(tmp_path: Path) -> None:
    t = PrvText()
    t.alloc(100, 1000, 3, P)
    t.sample(150, P + 8, weight=1)
    t.realloc(200, P, 3000, 4, Q)
    t.sample(300, Q + 2500, weight=2)            # new block: the realloc's site
    t.sample(310, P + 8, weight=4)               # old block is gone
    out = run(t, tmp_path)
    got = sites(out)
    assert (got[3]["samples"], got[3]["weight"], got[3]["last_free_ns"]) == (1, 1.0, 200)
    assert (got[4]["samples"], got[4]["weight"], got[4]["max_size"]) == (1, 2.0, 3000)
    assert alloc_tuples(out) == [(3, 0, hex(P), 1000, 100, 200), (4, 0, hex(Q), 3000, 200, -1)]


def test_realloc_in_place(tmp_path: Path) -> None:
    t = PrvText()
    t.alloc(100, 1000, 3, P)
    t.realloc(200, P, 3000, 4, P)
    t.sample(300, P + 8, weight=1)               # same address, now the realloc's block
    t.sample(310, P + 2500, weight=2)            # beyond the old size
    t.free(400, P)
    out = run(t, tmp_path)
    got = sites(out)
    assert (got[3]["samples"], got[4]["samples"], got[4]["weight"]) == (0, 2, 3.0)
    assert (got[3]["peak_live_bytes"], got[4]["peak_live_bytes"]) == (1000, 3000)
    assert alloc_tuples(out) == [(3, 0, hex(P), 1000, 100, 200), (4, 0, hex(P), 3000, 200, 400)]


@pytest.mark.parametrize("order", ["same-thread", "other-thread-free-first",
                                   "other-thread-sample-first"])
def test_sample_at_the_free_time_is_outside_the_block(tmp_path: Path, order: str) -> None:
    # the block lives on [t_alloc, t_free) (t_free: the free's entry), so a sample taken
    # at t_free is not in it, whichever thread took it and whichever line comes first
    t = PrvText(nthreads=2)
    t.alloc(100, 4096, 3, P)
    t.sample(200, P + 8, weight=1)
    if order == "other-thread-sample-first":
        t.sample(300, P + 16, weight=2, thread=2)
    t.free(300, P)
    if order != "other-thread-sample-first":
        t.sample(300, P + 16, weight=2, thread=1 if order == "same-thread" else 2)
    out = run(t, tmp_path)
    row = sites(out)[3]
    assert (row["samples"], row["weight"], row["last_free_ns"]) == (1, 1.0, 300)
    check_share(row, 3)


@pytest.mark.parametrize("order", ["same-thread", "other-thread-sample-first"])
def test_sample_when_the_allocation_returns_is_inside(tmp_path: Path, order: str) -> None:
    # the block is live from its call's entry: at the return, its pointer is known
    t = PrvText(nthreads=2)
    if order == "other-thread-sample-first":          # its line before the return's
        t.sample(110, P + 8, weight=2, thread=2)
    t.alloc(100, 4096, 3, P, dur=10)             # returns at 110
    if order == "same-thread":
        t.sample(110, P + 8, weight=2)
    row = sites(run(t, tmp_path))[3]
    assert (row["samples"], row["weight"], row["first_alloc_ns"]) == (1, 2.0, 100)


def test_realloc_in_place_at_the_same_site_counts_once(tmp_path: Path) -> None:
    t = PrvText()
    t.alloc(100, 1000, 3, P)
    t.realloc(200, P, 3000, 3, P)                # the old block ends as the new one starts
    t.realloc(300, P, 2000, 3, P)
    out = run(t, tmp_path)
    row = sites(out)[3]
    assert (row["n_allocs"], row["max_size"], row["peak_live_bytes"]) == (3, 3000, 3000)
    assert (row["total_bytes"], row["live_ns"]) == (6000, 311 - 100)


def test_realloc_chain(tmp_path: Path) -> None:
    t = PrvText()
    t.alloc(100, 64, 3, P)                       # A
    t.sample(150, P + 60, weight=1)
    t.realloc(200, P, 128, 4, Q)                 # A -> B
    t.sample(250, Q + 100, weight=2)
    t.realloc(300, Q, 256, 5, R)                 # B -> C
    t.sample(350, R + 200, weight=4)
    t.sample(360, Q + 100, weight=8)             # B is gone
    t.free(400, R)
    t.sample(450, R + 200, weight=16)            # C is gone
    out = run(t, tmp_path)
    got = sites(out)
    assert [(got[s]["samples"], got[s]["weight"]) for s in (3, 4, 5)] == \
        [(1, 1.0), (1, 2.0), (1, 4.0)]
    assert [(got[s]["first_alloc_ns"], got[s]["last_free_ns"]) for s in (3, 4, 5)] == \
        [(100, 200), (200, 300), (300, 400)]
    assert alloc_tuples(out) == [(3, 0, hex(P), 64, 100, 200), (4, 0, hex(Q), 128, 200, 300),
                                 (5, 0, hex(R), 256, 300, 400)]


def test_realloc_null_is_malloc_and_free_null_is_nothing(tmp_path: Path) -> None:
    t = PrvText()
    t.alloc(100, 100, 3, P)
    t.realloc(200, 0, 500, 4, Q)                 # realloc(NULL, 500)
    t.free(300, 0)                               # free(NULL)
    t.sample(400, Q + 499, weight=1)
    t.sample(410, P + 99, weight=2)
    out = run(t, tmp_path)
    got = sites(out)
    assert (got[4]["n_allocs"], got[4]["samples"], got[3]["samples"]) == (1, 1, 1)
    assert alloc_tuples(out) == [(3, 0, hex(P), 100, 100, -1), (4, 0, hex(Q), 500, 200, -1)]


def test_realloc_to_zero_frees_and_failed_realloc_keeps(tmp_path: Path) -> None:
    t = PrvText()
    t.alloc(100, 100, 3, P)
    t.alloc(110, 200, 3, Q)
    t.realloc(200, P, 0, 4, 0)                   # realloc(P, 0) -> NULL: frees P
    t.realloc(300, Q, 1 << 40, 5, 0)             # failed: Q stays, at its old site
    t.sample(400, P + 8, weight=1)
    t.sample(410, Q + 8, weight=2)
    out = run(t, tmp_path)
    got = sites(out)
    assert sorted(got) == [3]                    # sites 4 and 5 made no block
    assert (got[3]["samples"], got[3]["weight"], got[3]["n_allocs"]) == (1, 2.0, 2)
    assert alloc_tuples(out) == [(3, 0, hex(P), 100, 100, 200), (3, 0, hex(Q), 200, 110, -1)]


def test_realloc_to_zero_returning_a_block(tmp_path: Path) -> None:
    # realloc(p, 0) may also free p and return a minimal block (C17 lets it): then the
    # new block is an allocation of 0 bytes at the realloc's site
    t = PrvText()
    t.alloc(100, 100, 3, P)
    t.realloc(200, P, 0, 4, Q)
    t.sample(300, P + 8, weight=1)               # P is gone
    t.sample(310, Q, weight=2)                   # [Q, Q) holds no byte
    out = run(t, tmp_path)
    got = sites(out)
    assert (got[4]["n_allocs"], got[4]["max_size"], got[4]["peak_live_bytes"]) == (1, 0, 0)
    assert (got[3]["samples"], got[4]["samples"], got[4]["density"]) == (0, 0, 0.0)
    assert alloc_tuples(out) == [(3, 0, hex(P), 100, 100, 200), (4, 0, hex(Q), 0, 200, -1)]


def test_never_freed_lives_to_the_trace_end(tmp_path: Path) -> None:
    t = PrvText(end=5000)
    t.alloc(100, 100, 3, P)
    t.alloc(200, 300, 4, Q)
    t.free(400, P)
    out = run(t, tmp_path)
    got = sites(out)
    assert (got[4]["last_free_ns"], got[4]["live_ns"]) == (5000, 4800)
    assert (got[3]["last_free_ns"], got[3]["live_ns"]) == (400, 300)
    assert [a[5] for a in alloc_tuples(out)] == [400, -1]


def test_overlapping_block_ends_the_unfreed_one(tmp_path: Path) -> None:
    # a free the trace does not show (below the threshold, lost): the new block that
    # overlaps the old one proves it ended
    t = PrvText()
    t.alloc(100, 4096, 3, P)
    t.alloc(200, 64, 4, P + 1024)
    t.sample(300, P + 8, weight=1)               # not the old block any more
    t.sample(310, P + 1030, weight=2)
    out = run(t, tmp_path)
    got = sites(out)
    assert (got[3]["samples"], got[4]["samples"], got[3]["last_free_ns"]) == (0, 1, 200)
    assert [a[5] for a in alloc_tuples(out)] == [200, -1]


# ------------------------------------------------------------ 32000007 object events


def test_object_event_wins_over_the_address(tmp_path: Path) -> None:
    t = PrvText()
    t.alloc(100, 4096, 3, P)
    t.alloc(110, 4096, 4, Q)
    t.sample(200, P + 8, weight=1, obj=4)        # address in 3, event says 4
    t.sample(210, R + 8, weight=2, obj=3)        # address in no block, event says 3
    t.sample(220, Q + 8, weight=4, obj=9)        # a static variable: a row of its own
    t.sample(230, P + 16, weight=8)              # no event: by address
    t.event(240, LOAD, Q + 8, task=1)            # the event on the next line, same time
    t.event(240, OBJECT, 3, WEIGHT, 16)
    got = sites(run(t, tmp_path))
    assert sorted(got) == [3, 4, 9]
    assert (got[9]["kind"], got[9]["n_allocs"], got[9]["weight"]) == ("static", 1, 4.0)
    assert (got[3]["samples"], got[3]["weight"]) == (3, 26.0)
    assert (got[4]["samples"], got[4]["weight"]) == (1, 1.0)
    check_share(got[3], 31)


def test_sample_attributes_before_the_address(tmp_path: Path) -> None:
    """A sample's attributes may precede its address on the line; two fused samples
    of one thread at one time stay two samples."""
    t = PrvText()
    t.alloc(100, 4096, 3, P)
    t.alloc(110, 4096, 4, Q)
    t.event(200, OBJECT, 4, WEIGHT, 5, LOAD, P + 8)            # event says 4
    t.event(210, WEIGHT, 7, LOAD, Q + 8, WEIGHT, 11, LOAD, P + 8)   # 7 → Q (4), 11 → P (3)
    got = sites(run(t, tmp_path))
    assert (got[4]["samples"], got[4]["weight"]) == (2, 12.0)
    assert (got[3]["samples"], got[3]["weight"]) == (1, 11.0)


def test_pebs_latency_weight_and_misses(tmp_path: Path) -> None:
    t = PrvText()
    t.alloc(100, 4096, 3, P)
    t.event(200, LOAD, P + 8, HIT, 2, LATENCY, 300, OBJECT, 3)       # weight = latency
    t.event(210, LOAD, P + 8, HIT, 1, LATENCY, 40, OBJECT, 3)
    t.event(220, LOAD, P + 8, HIT, 2, LATENCY, 500, WEIGHT, 7)       # 41000020 wins
    t.sample(230, P + 8, weight=3, store=True, obj=3)
    got = sites(run(t, tmp_path))[3]
    assert (got["samples"], got["loads"], got["stores"], got["misses"]) == (4, 3, 1, 2)
    assert got["weight"] == 350.0
    assert got["density"] == pytest.approx(350.0 / (4096 / (1 << 20)))


# ------------------------------------------------------------ label forms

FORMS = {
    "module+0xoffset": (
        pcf_text({3: "app.c:10 > libc-start.c:58"},
                 raw={3: "/opt/app+0x1294 > /lib/libc.so.6+0x2724a"}),
        "app.c:10 > libc-start.c:58", "/opt/app+0x1294 > /lib/libc.so.6+0x2724a"),
    "extrae5-untranslated": (
        pcf_text({3: "/opt/app+0x1294 > /lib/libc.so.6+0x2724a"}),
        "/opt/app+0x1294 > /lib/libc.so.6+0x2724a", "/opt/app+0x1294 > /lib/libc.so.6+0x2724a"),
    "module!hexoffset": (
        pcf_text({3: "/opt/app!1A94 > /lib/libc.so.6!2724a"}),
        "/opt/app+0x1a94 > /lib/libc.so.6+0x2724a", "/opt/app+0x1a94 > /lib/libc.so.6+0x2724a"),
    "file:line": (
        pcf_text({3: "/src/app.c:10 > /src/main.c:5"}), "/src/app.c:10 > /src/main.c:5", ""),
}
FORM_NAMES = {"module+0xoffset": "module+0xoffset", "extrae5-untranslated": "module+0xoffset",
              "module!hexoffset": "module!hexoffset", "file:line": "file:line"}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_label_forms(tmp_path: Path, form: str) -> None:
    pcf, callstack, raw = FORMS[form]
    t = PrvText()
    t.alloc(100, 64, 3, P)
    out = run(t, tmp_path, pcf=pcf)
    row = sites(out)[3]
    assert (row["callstack"], row["callstack_raw"]) == (callstack, raw)
    first = (out / "sites.csv").read_text().splitlines()[0]
    assert f"label_form={FORM_NAMES[form]}" in first.split()


# ------------------------------------------------------------ ranks


def two_rank_trace() -> PrvText:
    t = PrvText(ntasks=2)
    t.alloc(100, 1000, 3, P, task=1)
    t.alloc(110, 3000, 3, Q, task=1)             # rank 0: 4000 live at once
    t.alloc(120, 2500, 3, P, task=2)             # rank 1: 2500 + 2500 at once
    t.alloc(130, 2500, 3, Q, task=2)
    t.alloc(140, 50, 4, R, task=2)
    t.free(200, P, task=1)
    t.free(210, Q, task=2)
    t.sample(300, Q + 8, weight=5, task=1)
    t.sample(310, P + 8, weight=7, task=2)
    t.sample(320, R + 8, weight=11, task=2)
    t.free(400, Q, task=1)
    t.free(410, P, task=2)
    return t


def test_per_rank_rows(tmp_path: Path) -> None:
    out = run(two_rank_trace(), tmp_path, "--per-rank")
    rows = {(int(r["site_id"]), int(r["rank"])): r for r in read_csv(out / "sites.csv")}
    assert sorted(rows) == [(3, 0), (3, 1), (4, 1)]
    fields = ("n_allocs", "max_size", "peak_live_bytes", "total_bytes", "first_alloc_ns",
              "last_free_ns", "samples")
    got = {k: tuple(int(r[f]) for f in fields) for k, r in rows.items()}
    assert got[(3, 0)] == (2, 3000, 4000, 4000, 100, 400, 1)
    assert got[(3, 1)] == (2, 2500, 5000, 5000, 120, 410, 1)
    assert got[(4, 1)] == (1, 50, 50, 50, 140, 421, 1)    # never freed: trace end
    assert [float(rows[k]["weight"]) for k in sorted(rows)] == [5.0, 7.0, 11.0]
    assert [a[1] for a in alloc_tuples(out)] == [0, 0, 1, 1, 1]


def test_ranks_summed_sizes_max(tmp_path: Path) -> None:
    out = run(two_rank_trace(), tmp_path)
    got = sites(out)
    assert sorted(got) == [3, 4]
    r3 = got[3]
    assert (r3["n_allocs"], r3["total_bytes"], r3["samples"], r3["weight"]) == (4, 9000, 2, 12.0)
    assert (r3["max_size"], r3["peak_live_bytes"]) == (3000, 5000)   # max over ranks
    assert (r3["first_alloc_ns"], r3["last_free_ns"]) == (100, 410)
    check_share(r3, 23)
    assert "rank" not in read_csv(out / "sites.csv")[0]
