"""Test helper: rebuild the traced calls of an hmtune trace from its events, with
the site labels from its .pcf, so tests can assert on data (not on log text)."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

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
        return [c for c in self.calls if c.kind != 2 and (size is None or c.size == size)]

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
    t.fileline = dict(pcf.values[32000009])
    t.raw = dict(pcf.values[41000010])
    t.funcs = dict(pcf.values[41000011])
    funcs = pcf.values.get(30000000, {})
    lines = pcf.values.get(30000100, {})
    open_calls: dict[tuple[int, int], Call] = {}
    for rec in _split_repeats(fuse_events(iter_records(prv))):
        ev = dict(rec.events)
        key = (rec.task, rec.thread)
        if 41000002 in ev:
            t.tids[key] = ev[41000002]
        if 40000036 in ev:
            t.pid[rec.task] = ev[40000036]
            t.ppid[rec.task] = ev.get(40000037, 0)
        if 41000003 in ev:
            t.rank[rec.task] = ev[41000003]
        if 41000025 in ev:
            t.lost_samples += ev[41000025]
        if 41000034 in ev:
            t.lost_faults += ev[41000034]
        if 41000031 in ev:
            t.faults.append(Fault(rec.task, rec.thread, rec.time, ev.get(41000030),
                                  ev.get(41000032, 0), ev[41000031], ev.get(41000033, 0)))
        if 41000023 in ev:
            addr = ev.get(32000000, ev.get(32000001))
            t.samples.append(Sample(rec.task, rec.thread, rec.time, addr, 32000001 in ev,
                                    ev.get(32000007, 0), ev[41000023], ev.get(41000020, 0),
                                    funcs.get(ev.get(30000000, 0), "??"),
                                    lines.get(ev.get(30000100, 0), "??"),
                                    ev.get(41000024) == 1,
                                    ev.get(41000027) if ev.get(41000024) == 2 else None,
                                    ev.get(41000026, 0), ev.get(41000028, 0),
                                    ev.get(41000041, 0)))
        kind = ev.get(41000000)
        if kind:
            assert key not in open_calls, f"nested call at line {rec.lineno}"
            c = Call(rec.task, rec.thread, kind, rec.time, ev.get(40000041, 0),
                     ev.get(32000009, 0), ev.get(40000042, 0), 0, ev.get(41000001, 0),
                     sampled=ev.get(41000040, 0))
            open_calls[key] = c
        elif kind == 0:
            c = open_calls.pop(key)
            c.ptr_out = ev.get(40000043, 0)
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


def check(prv: Path) -> list:
    """Problems check-trace finds (errors only)."""
    from hmtune.analyze.check_trace import check_trace

    res = check_trace(prv)
    return [p for p in res.problems if getattr(p, "severity", "error") == "error"]
