"""Streaming reader of Paraver text traces (DESIGN.md §3): header, records, fusion.

Works on `.prv` and `.prv.gz`, for hmtune's traces and Extrae's alike. Records are
read one line at a time, so memory does not grow with the trace. The `.pcf` and
`.row` companions are read by `hmtune.analyze.prv_tables` (re-exported here).

Record layouts (ids 1-based, times in the header's unit, values unsigned 64-bit):
    1:cpu:app:task:thread:begin:end:state
    2:cpu:app:task:thread:time:type:value[:type:value...]
    3:cpu:app:task:thread:lsend:psend:cpu:app:task:thread:lrecv:precv:size:tag
Lines starting with `#` (comments) and `c:` (communicator definitions, which follow
the header when it declares communicators) are skipped.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import NamedTuple

from hmtune.analyze.prv_io import PathLike, TraceFormatError, open_text
from hmtune.analyze.prv_tables import EventType, Pcf, Row, RowLevel, parse_pcf, parse_row

__all__ = [
    "Comm", "Event", "EventType", "Pcf", "PrvHeader", "Record", "Row", "RowLevel", "State",
    "TraceFormatError", "fuse_events", "iter_records", "open_text", "parse_header",
    "parse_pcf", "parse_record", "parse_row", "read_header", "task_nodes",
]


@dataclass
class PrvHeader:
    """The `#Paraver (...)` first line of a `.prv`."""

    date: str                              # text inside the parentheses, e.g. "22/11/2026 at 05:16"
    end_time: int                          # trace end; records must lie strictly before it
    nodes: list[int]                       # cpus per node
    apps: list[list[tuple[int, int]]]      # per app, per task: (nthreads, node)
    ncomms: int                            # communicators declared (all apps)
    time_unit: str = "ns"                  # "ns" for `<end>_ns`, "us" when no suffix

    @property
    def ncpus(self) -> int:
        return sum(self.nodes)

    @property
    def ntasks(self) -> int:
        return sum(len(tasks) for tasks in self.apps)

    @property
    def nthreads(self) -> int:
        return sum(nthreads for tasks in self.apps for nthreads, _ in tasks)


class State(NamedTuple):
    lineno: int
    cpu: int
    app: int
    task: int
    thread: int
    begin: int
    end: int
    state: int

    @property
    def time(self) -> int:
        """The record's sort key: a state is placed at its begin time."""
        return self.begin


class Event(NamedTuple):
    lineno: int                            # first line of the record (of a fused group)
    cpu: int
    app: int
    task: int
    thread: int
    time: int
    events: list[tuple[int, int]]          # (type, value) in file order

    def value(self, type_: int) -> int | None:
        """Value of the first event of `type_` in this record, or None."""
        for t, v in self.events:
            if t == type_:
                return v
        return None


class Comm(NamedTuple):
    lineno: int
    cpu_send: int
    app_send: int
    task_send: int
    thread_send: int
    lsend: int
    psend: int
    cpu_recv: int
    app_recv: int
    task_recv: int
    thread_recv: int
    lrecv: int
    precv: int
    size: int
    tag: int

    @property
    def time(self) -> int:
        """The record's sort key: the logical send time."""
        return self.lsend


Record = State | Event | Comm


class _Scanner:
    """Cursor over the header text after the date; every error names the header."""

    def __init__(self, text: str, path: PathLike) -> None:
        self.text = text
        self.pos = 0
        self.path = path

    def error(self, message: str) -> TraceFormatError:
        return TraceFormatError(self.path, 1, f"bad header: {message}", "header")

    def peek(self) -> str:
        return self.text[self.pos:self.pos + 1]

    def expect(self, ch: str, what: str) -> None:
        if self.peek() != ch:
            got = self.text[self.pos:self.pos + 12] or "end of line"
            raise self.error(f"expected '{ch}' {what}, got {got!r}")
        self.pos += 1

    def integer(self, what: str) -> int:
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos] in "0123456789":
            self.pos += 1
        if start == self.pos:
            got = self.text[start:start + 12] or "end of line"
            raise self.error(f"expected {what} (an integer), got {got!r}")
        return int(self.text[start:self.pos])

    def int_list(self, count: int, what: str) -> list[int]:
        self.expect("(", f"before the {what} list")
        values = [self.integer(what)]
        while self.peek() == ",":
            self.pos += 1
            values.append(self.integer(what))
        self.expect(")", f"after the {what} list")
        if len(values) != count:
            raise self.error(f"{count} {what} entries declared, {len(values)} listed")
        return values


def _parse_app(sc: _Scanner, app: int, nnodes: int) -> list[tuple[int, int]]:
    ntasks = sc.integer(f"task count of application {app}")
    sc.expect("(", f"after the task count of application {app}")
    tasks: list[tuple[int, int]] = []
    while True:
        nthreads = sc.integer(f"thread count of task {len(tasks) + 1}")
        sc.expect(":", "between a task's thread count and its node")
        node = sc.integer(f"node of task {len(tasks) + 1}")
        if nnodes and not 1 <= node <= nnodes:
            raise sc.error(f"task {len(tasks) + 1} of application {app} is on node {node};"
                           f" the header declares {nnodes} node(s)")
        tasks.append((nthreads, node))
        if sc.peek() != ",":
            break
        sc.pos += 1
    sc.expect(")", f"after the task list of application {app}")
    if len(tasks) != ntasks:
        raise sc.error(f"application {app} declares {ntasks} task(s) but lists {len(tasks)}")
    return tasks


def parse_header(line: str, path: PathLike = "<header>") -> PrvHeader:
    """Parse `#Paraver (date):end[_ns]:nnodes(cpus,...):napps:app[:app...]`.

    An app is `ntasks(nthreads:node,...)` optionally followed by `,ncomms`. Both the
    Extrae form (`,ncomms` after each app, apps joined by `:`) and the Dimemas form
    (apps joined by `,`, one total `,ncomms` at the end) are accepted.
    """
    text = line.rstrip()
    if not text.startswith("#Paraver"):
        raise TraceFormatError(path, 1, "bad header: does not start with '#Paraver'", "header")
    open_at = text.find("(")
    close_at = text.find(")", open_at + 1) if open_at >= 0 else -1
    if open_at < 0 or close_at < 0:   # the date holds ':', so it must be skipped whole
        raise TraceFormatError(path, 1, "bad header: no '(date)' after '#Paraver'", "header")
    date = text[open_at + 1:close_at]
    sc = _Scanner(text[close_at + 1:], path)
    sc.expect(":", "after the date")
    end_time = sc.integer("end time")
    unit = "us"
    if sc.peek() == "_":
        sep = sc.text.find(":", sc.pos)
        suffix = sc.text[sc.pos:sep if sep >= 0 else len(sc.text)]
        if suffix != "_ns":
            raise sc.error(f"unknown time unit {suffix!r} (only '_ns' or none)")
        unit = "ns"
        sc.pos += len(suffix)
    sc.expect(":", "after the end time")
    nnodes = sc.integer("node count")
    nodes: list[int] = []
    if sc.peek() == "(" or nnodes:    # "0" alone: no node information
        nodes = sc.int_list(nnodes, "cpus-per-node")
    sc.expect(":", "after the node list")
    napps = sc.integer("application count")
    sc.expect(":", "after the application count")
    apps: list[list[tuple[int, int]]] = []
    ncomms = 0
    while len(apps) < napps:
        apps.append(_parse_app(sc, len(apps) + 1, nnodes))
        if sc.peek() == ",":
            sc.pos += 1
            mark = sc.pos
            value = sc.integer("communicator count")
            if sc.peek() == "(":          # Dimemas form: that was the next app's task count
                sc.pos = mark
                continue
            ncomms += value
        if len(apps) < napps:
            sc.expect(":", "between applications")
    if sc.pos != len(sc.text):
        raise sc.error(f"unexpected text after the application list: {sc.text[sc.pos:]!r}")
    return PrvHeader(date, end_time, nodes, apps, ncomms, unit)


def read_header(path: PathLike) -> PrvHeader:
    """Parse the header line of the `.prv` or `.prv.gz` at `path`."""
    with open_text(path) as fh:
        first = fh.readline()
    if not first:
        raise TraceFormatError(path, 1, "empty file: no '#Paraver' header", "header")
    return parse_header(first, path)


_RECORD_FIELDS = {"1": 8, "3": 15}


def _integers(parts: list[str], path: PathLike, lineno: int) -> list[int]:
    """Slow path of parse_record: all fields as ints, or an error naming the bad one.

    Only plain decimal, optionally negative, is accepted (int() would also take
    '+1', ' 1', '1_000' and non-ASCII digits). The record-type field becomes 0.
    """
    for index, field in enumerate(parts[1:], 2):
        body = field[1:] if field.startswith("-") else field
        if not (body.isascii() and body.isdigit()):
            raise TraceFormatError(path, lineno, f"field {index} ({field!r}) is not an integer",
                                   "integer")
    return [0, *map(int, parts[1:])]


def parse_record(line: str, lineno: int, path: PathLike = "<prv>") -> Record | None:
    """Parse one record line; None for blank, comment and communicator lines.

    Raises TraceFormatError (kind "fields", "integer" or "record-type") on a
    malformed line. Values are not range-checked here (see hmtune.analyze.check_trace).
    """
    text = line.rstrip("\r\n")
    parts = text.split(":")
    kind = parts[0]
    nfields = len(parts)
    n: list[int] | None = None
    digits = text.replace(":", "")
    if digits.isdigit() and digits.isascii():    # the common case, in two C-level scans
        try:
            n = list(map(int, parts))
        except ValueError:                       # an empty field: _integers() reports it
            pass
    if kind == "2":
        if nfields < 8 or nfields % 2:
            raise TraceFormatError(path, lineno, f"event record has {nfields} fields;"
                                   " expected 6 plus a type:value pair per event", "fields")
        if n is None:
            n = _integers(parts, path, lineno)
        pairs = list(zip(n[6::2], n[7::2], strict=True))
        return Event(lineno, n[1], n[2], n[3], n[4], n[5], pairs)
    expected = _RECORD_FIELDS.get(kind)
    if expected is not None:
        if nfields != expected:
            what = "state" if kind == "1" else "communication"
            raise TraceFormatError(path, lineno, f"{what} record has {nfields} fields;"
                                   f" expected {expected}", "fields")
        if n is None:
            n = _integers(parts, path, lineno)
        return State(lineno, *n[1:]) if kind == "1" else Comm(lineno, *n[1:])
    if not text.strip() or text.startswith("#") or kind == "c":
        return None
    raise TraceFormatError(path, lineno, f"unknown record type {kind[:20]!r}", "record-type")


def iter_records(path: PathLike) -> Iterator[Record]:
    """Stream the records of a `.prv`/`.prv.gz`, validating the header first.

    Events are yielded line by line, as written; wrap in `fuse_events` to merge the
    events of one thread at one time that a writer split over several lines.
    """
    with open_text(path) as fh:
        first = fh.readline()
        if not first:
            raise TraceFormatError(path, 1, "empty file: no '#Paraver' header", "header")
        parse_header(first, path)
        for lineno, line in enumerate(fh, 2):
            record = parse_record(line, lineno, path)
            if record is not None:
                yield record


def fuse_events(records: Iterable[Record]) -> Iterator[Record]:
    """Merge event records of one thread at one time into one `Event`.

    Extrae writes e.g. the size (40000041) and the call (40000040) of one malloc as
    two lines with the same timestamp, sometimes with a state record in between.
    Input must be time-sorted. A group is held until the trace time moves on, so
    memory is bounded by the number of threads; the fused record keeps the first
    line's number and cpu, and its pairs in file order. Other records pass through
    unchanged; within one timestamp they may come before that time's fused events.
    """
    pending: dict[tuple[int, int, int], Event] = {}
    now: int | None = None
    for record in records:
        time = record.time
        if time != now:
            if pending:
                yield from pending.values()
                pending.clear()
            now = time
        if type(record) is Event:
            key = (record.app, record.task, record.thread)
            held = pending.get(key)
            if held is None:
                pending[key] = record
            else:
                pending[key] = held._replace(events=held.events + record.events)
        else:
            yield record
    yield from pending.values()


def task_nodes(trace: PathLike) -> dict[int, str]:
    """Each task's node (1-based task of the first application -> the node's name in
    the .row next to the trace, `node N` where the .row does not name it): where each
    MPI rank ran. {} when the header or the .row cannot be read (older or foreign
    traces: the node is then unknown, not an error)."""
    try:
        header = read_header(trace)
    except (OSError, EOFError, TraceFormatError):
        return {}
    if not header.apps:
        return {}
    text = os.fspath(trace)
    stem = text[:-len(".prv.gz")] if text.endswith(".prv.gz") else \
        text[:-len(".prv")] if text.endswith(".prv") else text
    try:
        names = parse_row(stem + ".row").names("NODE")
    except (OSError, EOFError, TraceFormatError):
        names = []
    return {task: names[node - 1] if 0 < node <= len(names) else f"node {node}"
            for task, (_threads, node) in enumerate(header.apps[0], 1)}
