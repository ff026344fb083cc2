"""`hmtune check-trace FILE.prv|DIR [--quiet] [--extrae]`: validate a Paraver trace.

Checks the contract of DESIGN.md §3 (and what Paraver itself needs) in one
streaming pass: memory is bounded by the number of threads, event types and site
ids, never by the trace length. The rules and their ids are in
hmtune.analyze.check_result.RULES. With `--extrae`, or automatically when the `.pcf` has no
41000010 (module+0xoffset) table, the hmtune-only rules are not applied.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from hmtune.analyze.check_result import HMTUNE_ONLY, RULES, CheckResult, Problem
from hmtune.analyze.prv import (
    Comm,
    Event,
    Pcf,
    PrvHeader,
    Record,
    TraceFormatError,
    fuse_events,
    open_text,
    parse_header,
    parse_pcf,
    parse_record,
    parse_row,
)
from hmtune.core import events as ev
from hmtune.core.stage import TRACE

__all__ = ["RULES", "CheckResult", "Problem", "check_trace", "companion_paths", "main"]

EV_CALL, EV_SIZE, EV_RET = ev.HM_EV_CALL, ev.HM_EV_SIZE, ev.HM_EV_OUT_PTR
EV_SITE, EV_SAMPLE_OBJECT, EV_RAW_SITE = ev.HM_EV_SITE, ev.HM_EV_SAMPLE_OBJECT, ev.HM_EV_SITE_RAW
EV_FAULT_OBJECT = ev.HM_EV_FAULT_OBJECT      # object of a sampled page fault: ids as 32000007
OBJECT_TYPES = frozenset({EV_SITE, EV_SAMPLE_OBJECT, EV_FAULT_OBJECT, ev.HM_EV_AHEAD_OBJECT})
REQUIRED_TYPES = frozenset({EV_SITE, EV_SAMPLE_OBJECT, EV_RAW_SITE, ev.HM_EV_SITE_FUNC})
SIZED_KINDS = frozenset({ev.HM_CALL_MALLOC, ev.HM_CALL_REALLOC, ev.HM_CALL_CALLOC,
                         ev.HM_CALL_POSIX_MEMALIGN})
RESERVED_SITES = (ev.HM_SITE_UNKNOWN_DYNAMIC, ev.HM_SITE_UNKNOWN_STATIC)
COUNTER_TYPES = range(ev.HM_EV_HWC_PRESET, 43000000)     # Extrae's 42xxxxxx counter deltas
# the enumerated types whose values are all in trace_values.tsv (the site and function
# tables grow with each trace's own labels; 41000036 is a sum of bits)
OPEN_TABLES = frozenset({*OBJECT_TYPES, EV_RAW_SITE, ev.HM_EV_SITE_FUNC, ev.HM_EV_SITE_LEVELS,
                         ev.HM_EV_SAMPLE_FUNC, ev.HM_EV_SAMPLE_LINE, ev.HM_EV_ACCESS_INSN})
ENUMS = {t: frozenset(labels) for t, labels in ev.VALUES.items() if t not in OPEN_TABLES}
ENUMS[ev.HM_EV_ACCESS_INSN] = frozenset(range(sum(ev.HM_ACCESS_INSN_LABELS) + 1))
# check_values' kinds of the counter types and of 41999999 (compared by identity), and of
# the types it checks nothing of
COUNTED, SET, ANY = frozenset({-1}), frozenset({-2}), frozenset[int]()
U64 = 1 << 64


def companion_paths(prv: Path) -> tuple[Path, Path]:
    """NAME.pcf and NAME.row for NAME.prv or NAME.prv.gz."""
    name = prv.name
    for suffix in (".prv.gz", ".prv"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return prv.with_name(name + ".pcf"), prv.with_name(name + ".row")


def _where(event: Event) -> str:
    return f"thread {event.app}.{event.task}.{event.thread} at {event.time}"


class _Checker:
    def __init__(self, prv: Path, extrae: bool) -> None:
        self.prv = str(prv)
        self.result = CheckResult(self.prv, extrae)
        self.header: PrvHeader | None = None
        self.pcf: Pcf | None = None
        self.kinds: dict[int, frozenset[int]] = {}     # type seen -> what to check of it
        self.seen_sites: set[int] = set()
        self.open_calls: dict[tuple[int, int, int], tuple[int, int]] = {}  # -> (kind, line)
        self.counting: set[tuple[int, int, int]] = set()     # threads with a counter set
        self.unknown_values: set[tuple[int, int]] = set()    # (type, value) reported

    def report(self, line: int, rule: str, message: str, file: str | None = None) -> None:
        if self.result.extrae and rule in HMTUNE_ONLY:
            return
        self.result.add(file or self.prv, line, rule, message)

    # -- companions -------------------------------------------------------------------

    def load_pcf(self, path: Path) -> None:
        if not path.is_file():
            self.report(1, "pcf-missing", f"no {path.name} next to the trace")
            return
        try:
            self.pcf = parse_pcf(path)
        except TraceFormatError as err:
            self.report(err.lineno, "pcf-syntax", err.message, err.path)
        except (OSError, EOFError) as err:
            self.report(1, "read-error", f"cannot read {path}: {err}")
        pcf = self.pcf
        if pcf is None:
            return
        if EV_RAW_SITE not in pcf.values:
            self.result.extrae = True          # no module+0xoffset table: an Extrae trace
        table = pcf.values.get(EV_SITE)
        missing = [site for site in RESERVED_SITES if table is not None and site not in table]
        if missing:
            self.report(pcf.event_types[EV_SITE].lineno, "site-reserved", f"{EV_SITE} table"
                        f" lacks reserved id(s) {missing} (1: unknown dynamic, 2: unknown"
                        " static)", pcf.path)

    def check_row(self, path: Path) -> None:
        if not path.is_file():
            self.report(1, "row-missing", f"no {path.name} next to the trace")
            return
        try:
            row = parse_row(path)
        except TraceFormatError as err:
            self.report(err.lineno, "row-syntax", err.message, err.path)
            return
        except (OSError, EOFError) as err:
            self.report(1, "read-error", f"cannot read {path}: {err}")
            return
        for level in row.levels.values():
            if level.size != len(level.names):
                self.report(level.lineno, "row-syntax", f"LEVEL {level.name} declares SIZE"
                            f" {level.size} but lists {len(level.names)} names", row.path)
        if self.header is None:
            return
        expected = (("THREAD", "row-threads", self.header.nthreads, "threads"),
                    ("CPU", "row-cpus", self.header.ncpus, "cpus"),
                    ("NODE", "row-nodes", len(self.header.nodes), "nodes"))
        for level_name, rule, count, what in expected:
            level = row.levels.get(level_name)
            if level is None:
                self.report(1, rule, f"no LEVEL {level_name} (the header has {count} {what})",
                            row.path)
            elif len(level.names) != count:
                self.report(level.lineno, rule, f"LEVEL {level_name} lists {len(level.names)}"
                            f" names; the header has {count} {what}", row.path)

    # -- per record ---------------------------------------------------------------------

    def ids_ok(self, line: int, cpu: int, app: int, task: int, thread: int) -> bool:
        header = self.header
        if header is None:
            return True
        ok = True
        if not 1 <= cpu <= header.ncpus:
            self.report(line, "cpu-id", f"cpu {cpu} not in 1..{header.ncpus}")
            ok = False
        if not 1 <= app <= len(header.apps):
            self.report(line, "app-id", f"application {app} not in 1..{len(header.apps)}")
            return False
        tasks = header.apps[app - 1]
        if not 1 <= task <= len(tasks):
            self.report(line, "task-id", f"task {task} not in 1..{len(tasks)} (app {app})")
            return False
        nthreads = tasks[task - 1][0]
        if not 1 <= thread <= nthreads:
            self.report(line, "thread-id", f"thread {thread} not in 1..{nthreads}"
                        f" (task {app}.{task})")
            return False
        return ok

    def type_kind(self, line: int, type_: int) -> frozenset[int]:
        """What check_values checks of type_'s values, on its first use: the values
        trace_values.tsv defines, COUNTED (a counter's), SET (41999999) or ANY (nothing);
        an undeclared type is reported here, once."""
        pcf = self.pcf
        if pcf is not None and type_ not in pcf.event_types:
            rule = "pcf-type-required" if type_ in REQUIRED_TYPES else \
                "pcf-counter" if type_ in COUNTER_TYPES else "pcf-type"
            self.report(line, rule, f"event type {type_} is not in the .pcf (reported once)")
        kind = ENUMS.get(type_) or (COUNTED if type_ in COUNTER_TYPES else
                                    SET if type_ == ev.HM_EV_HWC_SET else ANY)
        self.kinds[type_] = kind
        return kind

    def check_values(self, event: Event) -> None:
        kinds = self.kinds
        counted = has_set = False
        for type_, value in event.events:
            if type_ <= 0:
                self.report(event.lineno, "event-type", f"event type {type_} is not positive")
                continue
            if not 0 <= value < U64:
                self.report(event.lineno, "event-value", f"value {value} of type {type_}"
                            " is not an unsigned 64-bit integer")
                continue
            kind = kinds.get(type_)
            if kind is None:
                kind = self.type_kind(event.lineno, type_)
            if kind:
                if kind is COUNTED:
                    counted = True
                elif kind is SET:
                    has_set = True
                elif value not in kind:
                    self.report_unknown(event.lineno, type_, value)
            if type_ in OBJECT_TYPES and value:
                if value not in self.seen_sites:
                    self.seen_sites.add(value)
                    self.check_site_labels(event.lineno, type_, value)
        if counted or has_set:
            self.check_counter_set(event, has_set)

    def report_unknown(self, line: int, type_: int, value: int) -> None:
        if (type_, value) not in self.unknown_values:
            self.unknown_values.add((type_, value))
            self.report(line, "value-unknown", f"value {value} of type {type_} is none of"
                        " those trace_values.tsv defines (reported once per value)")

    def check_counter_set(self, event: Event, has_set: bool) -> None:
        """Counter values on a thread follow its active set (hmtune, as Extrae, writes
        41999999 with a thread's first reading; deltas before it have no set)."""
        key = (event.app, event.task, event.thread)
        if has_set:
            self.counting.add(key)
        elif key not in self.counting:
            self.counting.add(key)                      # reported once per thread
            self.report(event.lineno, "counter-set", f"counter values on {_where(event)}"
                        f" before any {ev.HM_EV_HWC_SET} (active counter set) event on that"
                        " thread (reported once per thread)")

    def check_site_labels(self, line: int, type_: int, site: int) -> None:
        if self.pcf is None:
            return
        if self.pcf.label(EV_SITE, site) is None:
            self.report(line, "site-label", f"site id {site} (type {type_}) has no label in"
                        f" the .pcf {EV_SITE} table (reported once per id)")
        if self.pcf.label(EV_RAW_SITE, site) is None:
            self.report(line, "site-raw-label", f"site id {site} (type {type_}) has no label"
                        f" in the .pcf {EV_RAW_SITE} table (reported once per id)")

    def records(self, fh: IO[str]) -> Iterator[Record]:
        """Parse and check record lines; yield those whose ids are valid."""
        result = self.result
        header = self.header
        end_time = header.end_time if header is not None else None
        # Fast path of the id checks (ids_ok() finds and reports what is wrong).
        ncpus = header.ncpus if header is not None else 0
        limits = {} if header is None else {(app, task): nthreads
                                            for app, tasks in enumerate(header.apps, 1)
                                            for task, (nthreads, _) in enumerate(tasks, 1)}
        prev_time: int | None = None
        late_line, late_count, late_time = 0, 0, 0
        for lineno, line in enumerate(fh, 2):
            try:
                record = parse_record(line, lineno, self.prv)
            except TraceFormatError as err:
                self.report(lineno, err.kind, err.message)
                continue
            if record is None:
                continue
            result.records += 1
            if type(record) is Comm:
                result.comms += 1
                time = record.lsend
                times = (record.lsend, record.psend, record.lrecv, record.precv)
                last, lowest = max(times), min(times)
                send_ok = self.ids_ok(lineno, *record[1:5])      # sender cpu, app, task, thread
                ok = self.ids_ok(lineno, *record[7:11]) and send_ok   # receiver
            else:
                if type(record) is Event:
                    result.events += 1
                    time = last = lowest = record.time
                    self.check_values(record)
                else:
                    result.states += 1
                    time, last = record.begin, record.end
                    lowest = min(time, last)
                    if time > last:
                        self.report(lineno, "state-interval", f"state begins at {time} after"
                                    f" its end {last}")
                _, cpu, app, task, thread = record[:5]
                ok = (0 < thread <= limits.get((app, task), 0) and 0 < cpu <= ncpus
                      or self.ids_ok(lineno, cpu, app, task, thread))
            if lowest < 0:
                self.report(lineno, "time-negative", "negative time")
            if prev_time is not None and time < prev_time:
                self.report(lineno, "time-order", f"record time {time} is before the"
                            f" previous record's {prev_time}")
            prev_time = time
            if last > result.max_time:
                result.max_time = last
            if end_time is not None and last >= end_time:
                late_count += 1
                if not late_line:
                    late_line, late_time = lineno, last
            if ok:
                yield record
        if late_count:
            self.report(late_line, "end-time", f"header end time {end_time} is not greater"
                        f" than this record's time {late_time} ({late_count} record(s) reach"
                        f" or pass it; latest {result.max_time}); Paramedir drops them")

    # -- per fused event: call structure -----------------------------------------------

    def check_calls(self, event: Event) -> None:
        types = dict(event.events)      # type -> last value; a C-level build
        if EV_CALL not in types:
            if EV_RET in types:
                self.report(event.lineno, "ret-ptr", f"returned pointer ({EV_RET}) outside a"
                            " call end")
            return
        key = (event.app, event.task, event.thread)
        has_end = False
        for type_, kind in event.events:
            if type_ != EV_CALL:
                continue
            if kind == ev.HM_CALL_END:
                has_end = True
                if self.open_calls.pop(key, None) is None:
                    self.report(event.lineno, "call-unmatched-end", f"call end on"
                                f" {_where(event)} without an open call")
                continue
            held = self.open_calls.get(key)
            if held is not None:
                self.report(event.lineno, "call-nested", f"call kind {kind} on {_where(event)}"
                            f" while kind {held[0]} from line {held[1]} has not ended")
            self.open_calls[key] = (kind, event.lineno)
            if kind in SIZED_KINDS:
                self.check_alloc_entry(event, types, kind)
        if EV_RET in types and not has_end:
            self.report(event.lineno, "ret-ptr", f"returned pointer ({EV_RET}) on"
                        f" {_where(event)} at a call entry, not at its end")

    def check_alloc_entry(self, event: Event, types: dict[int, int], kind: int) -> None:
        if EV_SIZE not in types:
            self.report(event.lineno, "call-size", f"call kind {kind} on {_where(event)} has"
                        f" no requested size ({EV_SIZE})")
        site = event.value(EV_SITE)
        if site is None:
            self.report(event.lineno, "call-site", f"call kind {kind} on {_where(event)} has"
                        f" no site id ({EV_SITE})")
        elif site == 0 or (site == ev.HM_SITE_UNKNOWN_STATIC and not self.result.extrae):
            self.report(event.lineno, "site-id", f"call kind {kind} on {_where(event)} has"
                        f" site id {site}; ids start at 1 and 2 is the unknown static object")

    def run(self) -> CheckResult:
        prv = Path(self.prv)
        pcf_path, row_path = companion_paths(prv)
        self.load_pcf(pcf_path)
        try:
            with open_text(prv) as fh:
                first = fh.readline()
                try:
                    self.header = parse_header(first, prv)
                except TraceFormatError as err:
                    self.report(1, "header", err.message)
                if self.header is not None:
                    self.result.tasks = self.header.ntasks
                    self.result.threads = self.header.nthreads
                self.check_row(row_path)
                for record in fuse_events(self.records(fh)):
                    if type(record) is Event:
                        self.check_calls(record)
        except (OSError, EOFError) as err:
            self.report(1, "read-error", f"cannot read the trace: {err}")
        if self.header is not None and self.result.records == 0 \
                and "read-error" not in self.result.rules():
            self.report(1, "records", "no record after the header: an empty trace")
        for key, (kind, line) in self.open_calls.items():
            self.report(line, "call-unterminated", f"call kind {kind} on thread"
                        f" {key[0]}.{key[1]}.{key[2]} never ends")
        return self.result


def trace_path(arg: str | Path) -> Path:
    """The trace a command-line argument names: a directory means DIR/trace.prv (what
    hmtune trace writes), as for hmtune analyze."""
    p = Path(arg)
    return p / TRACE if p.is_dir() else p


def check_trace(prv_path: Path, extrae: bool = False) -> CheckResult:
    """Validate `prv_path` (`.prv` or `.prv.gz`; a directory means DIR/trace.prv) with
    its `.pcf` and `.row`.

    Raises FileNotFoundError if the trace itself does not exist; everything else
    wrong is returned as problems.
    """
    prv_path = trace_path(prv_path)
    if not prv_path.is_file():
        raise FileNotFoundError(f"{prv_path}: no such file")
    return _Checker(prv_path, extrae).run()


USAGE = "usage: hmtune check-trace FILE.prv|DIR [--quiet] [--extrae]"
HELP = f"""{USAGE}
Validate a Paraver trace (.prv or .prv.gz, with .pcf and .row next to it; a
directory means DIR/trace.prv).
Prints one problem per line as FILE:LINE: [rule] message, then a summary line.
  --extrae  apply Extrae's rules (auto when the .pcf has no {EV_RAW_SITE} table)
  --quiet   print only the summary line
Exit status: 0 valid (warnings allowed), 1 problems found, 2 usage error."""


def main(argv: list[str]) -> int:
    quiet = extrae = False
    files: list[str] = []
    for arg in argv:
        if arg in ("-h", "--help"):
            print(HELP)
            return 0
        if arg in ("-q", "--quiet"):
            quiet = True
        elif arg == "--extrae":
            extrae = True
        elif arg.startswith("-") and arg != "-":
            print(f"hmtune check-trace: unknown option {arg} ({USAGE})", file=sys.stderr)
            return 2
        else:
            files.append(arg)
    if len(files) != 1:
        print(f"hmtune check-trace: expected one trace file ({USAGE})", file=sys.stderr)
        return 2
    try:
        result = check_trace(Path(files[0]), extrae=extrae)
    except FileNotFoundError:
        where = trace_path(files[0])
        what = (f"{files[0]} has no trace.prv (run hmtune trace -o {files[0]} first, or give "
                "the .prv file)" if where != Path(files[0]) else f"{files[0]}: no such file")
        print(f"hmtune check-trace: {what}", file=sys.stderr)
        return 2
    if not quiet:
        for problem in result.problems:
            print(problem)
        for rule, count in sorted(result.suppressed.items()):
            print(f"{result.prv}: [{rule}] {count} more problem(s) not shown")
    print(result.summary())
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
