"""Test helper: rebuild the traced calls of an hmtune trace from its events, with
the site labels from its .pcf, so tests can assert on data (not on log text)."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import hmtune.core.events as hev
from hmtune.analyze.prv import Event, fuse_events, iter_records, parse_pcf, read_header

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build"
PROGRAMS = BUILD / "tests" / "programs"
HMTUNE = ROOT / "bin" / "hmtune"

KIND = {"malloc": 1, "free": 2, "realloc": 3, "calloc": 4, "posix_memalign": 5,
        "aligned_alloc": 6, "memalign": 7, "valloc": 8, "pvalloc": 9, "reallocarray": 10}


@dataclass
class Call:
    task: int
    thread: int
    kind: int
    t0: int
    size: int = 0
    site: int = 0
    ptr_in: int = 0
    ptr_out: int = 0
    align: int = 0
    t1: int = -1
    sampled: int = 0        # 41000040: calls a call of small-call sampling stands for


@dataclass
class Sample:
    task: int
    thread: int
    time: int
    addr: int | None        # None: no data address
    store: bool
    obj: int                # 32000007, 0 when none
    cls: int                # 41000023: 1 heap, 2 static, 3 stack, 4 unknown, 5 no address
    weight: int
    func: str
    line: str
    breakpoint: bool        # 41000024 = 1: address from an execute breakpoint
    ahead: int | None = None  # 41000027: look-ahead distance (41000024 = 2), else None
    why: int = 0            # 41000026: why the sampled instruction gave no address
    verified: int = 0       # 41000028: 1 same, 2 different, 3 not reached
    scale: int = 0          # 41000041: blocks the object stands for (small-call sampling)
    kind: int = 0           # 41000035: access kind (1 streaming ... 4 compute), 0 none
    insn: int = 0           # 41000036: the accessing instruction's class bits
    producer: int | None = None  # 41000029: producer-load distance (41000024 = 4), else None


@dataclass
class Fault:
    """A sampled minor page fault (41000030-41000033)."""
    task: int
    thread: int
    time: int
    addr: int | None        # None: no address
    obj: int                # 41000032, 0 when none
    faults: int             # 41000031: the faults the sample stands for
    cls: int                # 41000033: as Sample.cls


@dataclass
class Trace:
    calls: list[Call] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    lost_samples: int = 0
    faults: list[Fault] = field(default_factory=list)
    lost_faults: int = 0
    fileline: dict[int, str] = field(default_factory=dict)
    raw: dict[int, str] = field(default_factory=dict)
    funcs: dict[int, str] = field(default_factory=dict)
    tids: dict[tuple[int, int], int] = field(default_factory=dict)
    pid: dict[int, int] = field(default_factory=dict)
    ppid: dict[int, int] = field(default_factory=dict)
    rank: dict[int, int] = field(default_factory=dict)
    ntasks: int = 0
    nthreads: list[int] = field(default_factory=list)

    def allocs(self, size: int | None = None) -> list[Call]:
        return [c for c in self.calls
                if c.kind != hev.HM_CALL_KIND_FREE and (size is None or c.size == size)]

    def one(self, size: int) -> Call:
        found = self.allocs(size)
        assert len(found) == 1, f"expected one allocation of {size} bytes, got {len(found)}"
        return found[0]


def _split_repeats(records: Iterable[object]) -> Iterator[Event]:
    """Event records, a fused group split where an event type repeats.

    A call's begin and end (or two calls) of one thread can share a timestamp when the
    call is faster than the clock's step; `fuse_events` then yields one group holding
    both, in file order. A repeated type starts the next logical event.
    """
    for rec in records:
        if not isinstance(rec, Event):
            continue
        part: list[tuple[int, int]] = []
        seen: set[int] = set()
        for type_, value in rec.events:
            if type_ in seen:
                yield rec._replace(events=part)
                part, seen = [], set()
            part.append((type_, value))
            seen.add(type_)
        yield rec._replace(events=part)


def load(prv: Path) -> Trace:
    t = Trace()
    h = read_header(prv)
    t.ntasks = h.ntasks
    t.nthreads = [n for n, _ in h.apps[0]]
    pcf = parse_pcf(prv.with_suffix(".pcf"))
    t.fileline = dict(pcf.values[hev.HM_EV_SITE])
    t.raw = dict(pcf.values[hev.HM_EV_SITE_RAW])
    t.funcs = dict(pcf.values[hev.HM_EV_SITE_FUNC])
    funcs = pcf.values.get(hev.HM_EV_SAMPLE_FUNC, {})
    lines = pcf.values.get(hev.HM_EV_SAMPLE_LINE, {})
    open_calls: dict[tuple[int, int], Call] = {}
    for rec in _split_repeats(fuse_events(iter_records(prv))):
        ev = dict(rec.events)
        key = (rec.task, rec.thread)
        if hev.HM_EV_TID in ev:
            t.tids[key] = ev[hev.HM_EV_TID]
        if hev.HM_EV_PID in ev:
            t.pid[rec.task] = ev[hev.HM_EV_PID]
            t.ppid[rec.task] = ev.get(hev.HM_EV_PPID, 0)
        if hev.HM_EV_RANK in ev:
            t.rank[rec.task] = ev[hev.HM_EV_RANK]
        if hev.HM_EV_LOST_SAMPLES in ev:
            t.lost_samples += ev[hev.HM_EV_LOST_SAMPLES]
        if hev.HM_EV_LOST_FAULTS in ev:
            t.lost_faults += ev[hev.HM_EV_LOST_FAULTS]
        if hev.HM_EV_FAULT_COUNT in ev:
            t.faults.append(Fault(rec.task, rec.thread, rec.time, ev.get(hev.HM_EV_FAULT_ADDR),
                                  ev.get(hev.HM_EV_FAULT_OBJECT, 0), ev[hev.HM_EV_FAULT_COUNT],
                                  ev.get(hev.HM_EV_FAULT_CLASS, 0)))
        if hev.HM_EV_SAMPLE_CLASS in ev:
            addr = ev.get(hev.HM_EV_SAMPLE_LOAD, ev.get(hev.HM_EV_SAMPLE_STORE))
            t.samples.append(Sample(rec.task, rec.thread, rec.time, addr,
                                    hev.HM_EV_SAMPLE_STORE in ev,
                                    ev.get(hev.HM_EV_SAMPLE_OBJECT,
                                           ev.get(hev.HM_EV_AHEAD_OBJECT, 0)),
                                    ev[hev.HM_EV_SAMPLE_CLASS],
                                    ev.get(hev.HM_EV_SAMPLE_WEIGHT, 0),
                                    funcs.get(ev.get(hev.HM_EV_SAMPLE_FUNC, 0), "??"),
                                    lines.get(ev.get(hev.HM_EV_SAMPLE_LINE, 0), "??"),
                                    ev.get(hev.HM_EV_SAMPLE_RECOVERED)
                                    == hev.HM_SAMPLE_RECOVERED_BREAKPOINT,
                                    ev.get(hev.HM_EV_SAMPLE_LOOKAHEAD)
                                    if ev.get(hev.HM_EV_SAMPLE_RECOVERED)
                                    == hev.HM_SAMPLE_RECOVERED_LOOKAHEAD else None,
                                    ev.get(hev.HM_EV_SAMPLE_WHY, 0),
                                    ev.get(hev.HM_EV_SAMPLE_VERIFIED, 0),
                                    ev.get(hev.HM_EV_SAMPLE_SCALE, 0),
                                    ev.get(hev.HM_EV_ACCESS_KIND, 0),
                                    ev.get(hev.HM_EV_ACCESS_INSN, 0),
                                    ev.get(hev.HM_EV_SAMPLE_PRODUCER)
                                    if ev.get(hev.HM_EV_SAMPLE_RECOVERED)
                                    == hev.HM_SAMPLE_RECOVERED_PRODUCER else None))
        kind = ev.get(hev.HM_EV_CALL_KIND)
        if kind:
            assert key not in open_calls, f"nested call at line {rec.lineno}"
            c = Call(rec.task, rec.thread, kind, rec.time, ev.get(hev.HM_EV_SIZE, 0),
                     ev.get(hev.HM_EV_SITE, 0), ev.get(hev.HM_EV_IN_PTR, 0), 0,
                     ev.get(hev.HM_EV_ALIGN, 0),
                     sampled=ev.get(hev.HM_EV_CALL_SCALE, 0))
            open_calls[key] = c
        elif kind == hev.HM_CALL_KIND_END:
            c = open_calls.pop(key)
            c.ptr_out = ev.get(hev.HM_EV_OUT_PTR, 0)
            c.t1 = rec.time
            t.calls.append(c)
    assert not open_calls, "calls without an end"
    return t


def marker_line(src: Path, name: str) -> str:
    """`file:line` of the line carrying `SITE:name` in a test program."""
    for i, line in enumerate(src.read_text().splitlines(), 1):
        if re.search(rf"SITE:{re.escape(name)}\b", line):
            return f"{src}:{i}"
    raise AssertionError(f"no SITE:{name} in {src}")


def trace(tmp: Path, *app: str, extra: tuple[str, ...] = (),
          **kw: object) -> subprocess.CompletedProcess:
    """Run `hmtune trace -q -o tmp -- app...`, capturing the app's output."""
    cmd = [str(HMTUNE), "trace", "-q", "-o", str(tmp), *extra, "--", *app]
    return subprocess.run(cmd, capture_output=True, timeout=kw.pop("timeout", 300), **kw)


UBSAN_TRACER = BUILD / "lib" / "libhmtrace-ubsan.so"


def ubsan_preload() -> str:
    """LD_PRELOAD for the tracer built with -fsanitize=undefined: gcc's libubsan.so, then
    UBSAN_TRACER; the test is skipped where libubsan.so is not installed."""
    import pytest

    ubsan = subprocess.run(["gcc", "-print-file-name=libubsan.so"], capture_output=True,
                           text=True).stdout.strip()
    if not Path(ubsan).exists():
        pytest.skip("libubsan.so not installed")
    return f"{ubsan} {UBSAN_TRACER}"


def check(prv: Path) -> list:
    """Problems check-trace finds (errors only)."""
    from hmtune.analyze.check_trace import check_trace

    res = check_trace(prv)
    return [p for p in res.problems if getattr(p, "severity", "error") == "error"]
