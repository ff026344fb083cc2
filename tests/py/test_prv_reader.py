"""hmtune.analyze.prv on the real Extrae fixture and on small hand-written traces."""

import gzip
import shutil
from pathlib import Path

import pytest

from hmtune.analyze.prv import (
    Comm,
    Event,
    State,
    TraceFormatError,
    fuse_events,
    iter_records,
    parse_header,
    parse_pcf,
    parse_record,
    parse_row,
    read_header,
)

FIXTURE = Path(__file__).parent / "data" / "extrae-malloc-trace"
PRV = FIXTURE / "malloc_test.prv"

# The ground-truth table of the fixture's README:
# (kind, requested size, out pointer, object id, alloc t, free t).
GROUND_TRUTH = [
    (1, 8388608, 0x7F97A7D41010, 3, 205435, 181630986),
    (4, 33554432, 0x7F97A5D40010, 4, 4785956, 179996730),
    (5, 67108864, 0x7F97A1D3F040, 5, 4826877, 172597945),
    (1, 16777216, 0x7F97A0D3E010, 6, 39334660, 171505112),
]


def reconstruct_allocations(path):
    """Blocks from 40000040/41/42/43 + 32000009, with the entry time as the call time."""
    open_calls = {}
    blocks = {}
    for rec in fuse_events(iter_records(path)):
        if not isinstance(rec, Event) or rec.value(40000040) is None:
            continue
        thread = (rec.app, rec.task, rec.thread)
        kind = rec.value(40000040)
        if kind == 2:
            blocks[rec.value(40000042)][5] = rec.time
        if kind:
            open_calls[thread] = (kind, rec.time, rec.value(40000041), rec.value(32000009))
            continue
        kind, t_entry, size, site = open_calls.pop(thread)
        if kind != 2:
            ptr = rec.value(40000043)
            blocks[ptr] = [kind, size, ptr, site, t_entry, None]
    assert not open_calls
    return sorted((tuple(b) for b in blocks.values()), key=lambda b: b[4])


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


# -- header -----------------------------------------------------------------------------

def test_fixture_header():
    header = read_header(PRV)
    assert header.date == "22/11/2026 at 05:16"
    assert header.end_time == 182253711
    assert header.time_unit == "ns"
    assert header.nodes == [1]
    assert header.apps == [[(1, 1)]]
    assert header.ncomms == 0
    assert (header.ncpus, header.ntasks, header.nthreads) == (1, 1, 1)


@pytest.mark.parametrize("line", [
    "#Paraver (01/02/2026 at 10:11):5000_ns:2(4,2):2:2(2:1,1:2),0:1(3:1),1",  # Extrae form
    "#Paraver (01/02/2026 at 10:11):5000_ns:2(4,2):2:2(2:1,1:2),1(3:1),1",    # Dimemas form
])
def test_header_multi_app(line):
    header = parse_header(line + "\n")
    assert header.end_time == 5000
    assert header.nodes == [4, 2]
    assert header.apps == [[(2, 1), (1, 2)], [(3, 1)]]
    assert header.ncomms == 1
    assert (header.ncpus, header.ntasks, header.nthreads) == (6, 3, 6)


def test_header_without_unit_is_microseconds():
    header = parse_header("#Paraver (01/02/26 at 10:11):77:1(1):1:1(1:1),0")
    assert (header.end_time, header.time_unit) == (77, "us")


@pytest.mark.parametrize("line", [
    "Paraver (x):1_ns:1(1):1:1(1:1),0",          # no '#Paraver'
    "#Paraver 01/02/26 at 10:11:1_ns:1(1):1:1(1:1),0",  # no (date)
    "#Paraver (x):1_ms:1(1):1:1(1:1),0",         # unknown unit
    "#Paraver (x):1_ns:2(1):1:1(1:1),0",         # 2 nodes declared, 1 listed
    "#Paraver (x):1_ns:1(1):1:2(1:1),0",         # 2 tasks declared, 1 listed
    "#Paraver (x):1_ns:1(1):1:1(1:2),0",         # task on node 2 of 1
    "#Paraver (x):1_ns:1(1):2:1(1:1),0",         # 2 apps declared, 1 listed
    "#Paraver (x):1_ns:1(1):1:1(1:1),0:junk",    # trailing text
    "#Paraver (x):abc_ns:1(1):1:1(1:1),0",       # end time not an integer
])
def test_bad_header(line):
    with pytest.raises(TraceFormatError) as info:
        parse_header(line, "t.prv")
    assert (info.value.path, info.value.lineno, info.value.kind) == ("t.prv", 1, "header")
    assert str(info.value).startswith("t.prv:1: ")


# -- records ----------------------------------------------------------------------------

def test_fixture_record_counts():
    records = list(iter_records(PRV))
    assert len(records) == 87
    assert sum(isinstance(r, State) for r in records) == 21
    assert sum(isinstance(r, Event) for r in records) == 66
    assert not any(isinstance(r, Comm) for r in records)
    assert records[0].lineno == 2 and records[-1].lineno == 88
    assert records[1] == State(3, 1, 1, 1, 1, 0, 152617, 1)
    last = records[-1]
    assert isinstance(last, Event)
    assert (last.time, last.events) == (182253711, [(40000001, 0), (40000050, 1678471759021)])


def test_fixture_object_ids():
    ids = {v for r in iter_records(PRV) if isinstance(r, Event)
           for t, v in r.events if t == 32000009}
    assert ids == {3, 4, 5, 6}


def test_fixture_ground_truth():
    assert reconstruct_allocations(PRV) == GROUND_TRUTH


def test_fixture_gzip(tmp_path):
    gz = tmp_path / "malloc_test.prv.gz"
    with PRV.open("rb") as src, gzip.open(gz, "wb") as dst:
        shutil.copyfileobj(src, dst)
    assert read_header(gz) == read_header(PRV)
    assert list(iter_records(gz)) == list(iter_records(PRV))
    assert reconstruct_allocations(gz) == GROUND_TRUTH


def test_fixture_fused_split_events():
    fused = [r for r in fuse_events(iter_records(PRV))
             if isinstance(r, Event) and r.value(40000040) is not None]
    assert len(fused) == 16                       # 8 calls, entry + end each
    first = fused[0]
    # lines 9 (40000041) and 11 (40000040 + 32000009), a state line in between
    assert (first.lineno, first.time) == (9, 205435)
    assert first.events[:2] == [(40000041, 8388608), (40000040, 1)]
    assert first.value(32000009) == 3
    end = fused[1]                                # lines 12 (40000043) and 14 (40000040:0)
    assert (end.lineno, end.events[:2]) == (12, [(40000043, 140289332482064), (40000040, 0)])


def test_fuse_events_keeps_threads_apart_and_time_order():
    records = [
        Event(2, 1, 1, 1, 1, 10, [(1, 1)]),
        Event(3, 2, 1, 1, 2, 10, [(5, 5)]),
        State(4, 1, 1, 1, 1, 10, 20, 1),
        Event(5, 1, 1, 1, 1, 10, [(2, 2)]),
        State(6, 2, 1, 1, 2, 15, 20, 1),
        Event(7, 1, 1, 1, 1, 20, [(3, 3)]),
    ]
    out = list(fuse_events(records))
    assert out == [
        State(4, 1, 1, 1, 1, 10, 20, 1),
        Event(2, 1, 1, 1, 1, 10, [(1, 1), (2, 2)]),
        Event(3, 2, 1, 1, 2, 10, [(5, 5)]),
        State(6, 2, 1, 1, 2, 15, 20, 1),
        Event(7, 1, 1, 1, 1, 20, [(3, 3)]),
    ]
    assert records[0].events == [(1, 1)]          # inputs are not modified


def test_parse_record_kinds_and_skips():
    assert parse_record("1:1:1:1:1:0:10:1\n", 2) == State(2, 1, 1, 1, 1, 0, 10, 1)
    big = 2**64 - 1
    assert parse_record(f"2:1:1:1:1:5:7:{big}:8:0\r\n", 3) == Event(3, 1, 1, 1, 1, 5,
                                                                    [(7, big), (8, 0)])
    comm = parse_record("3:1:1:1:1:5:6:2:1:2:1:7:8:64:9", 4)
    assert isinstance(comm, Comm) and (comm.time, comm.precv, comm.tag) == (5, 8, 9)
    assert parse_record("c:1:1:2:1:2\n", 5) is None
    assert parse_record("# comment\n", 6) is None
    assert parse_record("\n", 7) is None
    assert parse_record("1:1:1:1:1:-5:10:1", 8).begin == -5   # range checks: check_trace


@pytest.mark.parametrize(("line", "kind"), [
    ("2:1:1:1:1:205435:40000041", "fields"),                   # truncated: no value
    ("2:1:1:1:1:205435", "fields"),
    ("1:1:1:1:1:0:10", "fields"),
    ("3:1:1:1:1:5:6:2:1:2:1:7:8:64", "fields"),
    ("2:1:1:1:1:5:7:0x10", "integer"),
    ("2:1:1:1:1:5:7:1_000", "integer"),                          # int() would accept it
    ("2:1:1:1:1:5:7: 10", "integer"),
    ("2:1:1::1:5:7:10", "integer"),
    ("1:1:1:1:1:0:10:1 ", "integer"),
    ("9:1:1:1:1:5", "record-type"),
    ("hello", "record-type"),
])
def test_malformed_record(line, kind):
    with pytest.raises(TraceFormatError) as info:
        parse_record(line + "\n", 42, "t.prv")
    assert (info.value.kind, info.value.lineno, info.value.path) == (kind, 42, "t.prv")
    assert str(info.value).startswith("t.prv:42: ")


def test_iter_records_names_file_and_line(tmp_path):
    prv = write(tmp_path / "t.prv", "#Paraver (x):100_ns:1(1):1:1(1:1),0\n"
                "1:1:1:1:1:0:10:1\n2:1:1:1:1:5:7\n")
    records = iter_records(prv)
    assert next(records).lineno == 2
    with pytest.raises(TraceFormatError) as info:
        next(records)
    assert (info.value.path, info.value.lineno, info.value.kind) == (str(prv), 3, "fields")


def test_iter_records_empty_file(tmp_path):
    with pytest.raises(TraceFormatError) as info:
        list(iter_records(write(tmp_path / "t.prv", "")))
    assert info.value.kind == "header"


# -- .pcf and .row ----------------------------------------------------------------------

def test_fixture_pcf():
    pcf = parse_pcf(FIXTURE / "malloc_test.pcf")
    assert pcf.states[1] == "Running"
    assert pcf.states[30] == "Allocating memory"
    assert pcf.states[31] == "Freeing memory"
    assert pcf.event_types[40000041].description == "Requested size in dynamic memory call"
    assert pcf.event_types[40000040].gradient == 6
    assert pcf.values[40000040][4] == "calloc()"
    assert pcf.values[40000040][0] == "End"
    assert 40000041 not in pcf.values             # declared without a VALUES table
    # one VALUES table after a two-type EVENT_TYPE block belongs to both types
    assert pcf.values[32000007] is pcf.values[32000009]
    objects = pcf.values[32000009]
    assert objects[1] == objects[2] == "??"
    assert objects[3].startswith("/home/demo/src/malloc_test.c:56 > ")
    assert objects[6].startswith("/home/demo/src/malloc_test.c:41 > "
                                 "/home/demo/src/malloc_test.c:66 > ")
    assert sorted(objects) == [0, 1, 2, 3, 4, 5, 6]
    assert pcf.label(32000007, 5) == objects[5]
    assert pcf.label(70000005, 7) == "alloc_buffer"
    assert pcf.label(40000041, 1) is None
    assert pcf.label(41000010, 3) is None


def test_pcf_values_without_event_type(tmp_path):
    with pytest.raises(TraceFormatError) as info:
        parse_pcf(write(tmp_path / "t.pcf", "STATES\n1 Running\n\nVALUES\n1 x\n"))
    assert (info.value.kind, info.value.lineno) == ("pcf-syntax", 4)


def test_pcf_bad_type(tmp_path):
    with pytest.raises(TraceFormatError) as info:
        parse_pcf(write(tmp_path / "t.pcf", "EVENT_TYPE\n0 4x0 Something\n"))
    assert (info.value.kind, info.value.lineno) == ("pcf-syntax", 2)


def test_fixture_row():
    row = parse_row(FIXTURE / "malloc_test.row")
    assert set(row.levels) == {"CPU", "NODE", "THREAD"}
    assert row.names("cpu") == ["1.vm"]
    assert row.names("NODE") == ["vm"]
    assert row.names("THREAD") == ["THREAD 1.1.1"]
    assert row.levels["THREAD"].size == 1
    assert row.names("TASK") == []


def test_row_other_levels(tmp_path):
    row = parse_row(write(tmp_path / "t.row", "LEVEL TASK SIZE 2\nrank 0\nrank 1\n\n"
                          "LEVEL THREAD SIZE 2\nT 1.1.1\nT 1.2.1"))
    assert row.names("TASK") == ["rank 0", "rank 1"]
    assert row.names("THREAD") == ["T 1.1.1", "T 1.2.1"]
    with pytest.raises(TraceFormatError) as info:
        parse_row(write(tmp_path / "u.row", "LEVEL CPU 1\n1.vm\n"))
    assert (info.value.kind, info.value.lineno) == ("row-syntax", 1)
