"""`counters.csv`: the hardware counters of a trace over its samples, threads and phases
(docs/formats.md §4), its reader, and the figures the summary and the advisor take
from it.

    # hmtune counters v1 trace=out/app/trace.prv trace-id=3f2a9c0d5e7b1a46 phases=20 end_ns=15544
    scope,rank,thread,site_id,kind,start_ns,end_ns,readings,samples,ns,PAPI_TOT_CYC,PAPI_TOT_INS
    site,0,,3,streaming,,,,83,331941000,995823000,1327764000
    thread,0,1,,,,,378,377,1536090311,4608270933,6144361244
    phase,0,,,,0,77721418,15,,57183911,171551733,228735644

Written by hmtune-prvscan (analyze/prvscan/ps_counters.c) with the counters' event
types as column names; `hmtune analyze` installs it with the trace id and the
counters' names from the trace's .pcf (install_counters). A trace without counters
gets no counters.csv.

- read_counters(path) -> CountersData; CountersFormatError (a SitesFormatError, so a
  ValueError) with `FILE:LINE: why`.
- counters_next_to(sites_csv) -> CountersData | None: that of an analyze output
  directory, None when there is none; refuses one of another trace.
- site_figures(data) -> {site_id: Figures}: a site's counts over its samples, summed
  over ranks and access kinds, with IPC, misses per sample, the share of cycles
  stalled on memory and the miss traffic per second where the counters allow.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from hmtune.core.files import write_atomic
from hmtune.core.sitesfile import (
    COUNTERS_VERSION,
    SitesFormatError,
    parse_version_line,
    version_line,
)
from hmtune.core.stage import COUNTERS, another_trace, beside_sites

COLUMNS = ("scope", "rank", "thread", "site_id", "kind", "start_ns", "end_ns", "readings",
           "samples", "ns")
SCOPES = ("site", "thread", "phase")
KINDS = ("none", "streaming", "scattered", "sync", "compute")
LINE_BYTES = 64                      # a last-level miss moves one cache line

# The counters the figures use, by the names PAPI gives them (presets first, then the
# perf_event component's generic names and Intel's native stall counters).
CYCLES = ("PAPI_TOT_CYC", "perf::CYCLES", "perf::PERF_COUNT_HW_CPU_CYCLES")
INSTRUCTIONS = ("PAPI_TOT_INS", "perf::INSTRUCTIONS", "perf::PERF_COUNT_HW_INSTRUCTIONS")
MISSES = ("PAPI_L3_TCM", "PAPI_L3_LDM", "perf::LLC-LOAD-MISSES", "perf::CACHE-MISSES",
          "perf::PERF_COUNT_HW_CACHE_MISSES")
STALLS = ("PAPI_MEM_SCY", "CYCLE_ACTIVITY:STALLS_MEM_ANY", "CYCLE_ACTIVITY:STALLS_L3_MISS")

_NAME = re.compile(r"\(([^()\s]+)\)\s*$")


class CountersFormatError(SitesFormatError):
    """counters.csv cannot be read: `FILE:LINE: why`."""


def counter_name(etype: int, label: str | None) -> str:
    """A counter's column name: the NAME of its .pcf label `description (NAME)` (as
    hmtune and Extrae write PAPI's), else `hwc_TYPE`."""
    m = _NAME.search(label or "")
    return m[1] if m else f"hwc_{etype}"


def counters_line(trace: str, trace_id: str | None, phases: int, end_ns: int) -> str:
    fields: dict[str, object] = {"trace": trace}
    if trace_id:
        fields["trace-id"] = trace_id
    fields.update(phases=phases, end_ns=end_ns)
    return version_line("counters", COUNTERS_VERSION, **fields)


def install_counters(scanned: Path, path: Path, trace_id: str | None,
                     labels: Mapping[int, str]) -> bool:
    """Put the scanner's counters.csv at `path` (atomically) with the trace id, the
    release and the counters' names; when the trace has no counters remove any
    counters.csv at `path` instead. Returns whether one was written."""
    lines = scanned.read_text().splitlines()
    meta = parse_version_line(lines[0], "counters", COUNTERS_VERSION, scanned)
    header = lines[1].split(",")
    if len(header) == len(COLUMNS):
        path.unlink(missing_ok=True)
        return False
    names = [counter_name(int(t), labels.get(int(t))) for t in header[len(COLUMNS):]]
    first = counters_line(meta["trace"], trace_id, int(meta["phases"]), int(meta["end_ns"]))
    body = "\n".join([first, ",".join([*COLUMNS, *names]), *lines[2:]]) + "\n"
    write_atomic(path, body)
    return True


@dataclass
class Row:
    scope: str
    rank: int
    thread: int | None
    site_id: int | None
    kind: str | None
    start_ns: int | None
    end_ns: int | None
    readings: int | None
    samples: int | None
    ns: float
    values: dict[str, float]


@dataclass
class CountersData:
    path: Path
    meta: dict[str, str]
    names: list[str]
    rows: list[Row] = field(default_factory=list)

    @property
    def trace_id(self) -> str | None:
        return self.meta.get("trace-id")

    def scope(self, scope: str) -> list[Row]:
        return [r for r in self.rows if r.scope == scope]


def _fail(path: Path, line: int, why: str) -> CountersFormatError:
    return CountersFormatError(f"{path}:{line}: {why}")


def _int(text: str, path: Path, line: int, column: str, required: bool) -> int | None:
    if text == "" and not required:
        return None
    if not text.isdigit():
        raise _fail(path, line, f"{column} {text!r} is not a count")
    return int(text)


def _number(text: str, path: Path, line: int, column: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise _fail(path, line, f"{column} {text!r} is not a number") from None
    if not math.isfinite(v) or v < 0:
        raise _fail(path, line, f"{column} {text!r} is not a count")
    return v


def read_counters(path: str | Path) -> CountersData:
    """counters.csv's rows, checked: version, header, scopes, kinds, counts."""
    p = Path(path)
    try:
        text = p.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise _fail(p, 0, f"cannot read: {getattr(e, 'strerror', None) or e}") from None
    lines = text.splitlines()
    if not lines:
        raise _fail(p, 1, "empty file: not an hmtune counters.csv")
    try:
        meta = parse_version_line(lines[0], "counters", COUNTERS_VERSION, f"{p}:1")
    except SitesFormatError as e:
        raise CountersFormatError(str(e)) from None
    if len(lines) < 2 or tuple(lines[1].split(",")[:len(COLUMNS)]) != COLUMNS:
        raise _fail(p, 2, f"the header must start with {','.join(COLUMNS)}")
    names = lines[1].split(",")[len(COLUMNS):]
    data = CountersData(p, meta, names)
    for n, rec in enumerate(csv.reader(io.StringIO("\n".join(lines[2:]))), start=3):
        if len(rec) != len(COLUMNS) + len(names):
            raise _fail(p, n, f"{len(rec)} fields, the header has {len(COLUMNS) + len(names)}")
        scope, kind = rec[0], rec[4] or None
        if scope not in SCOPES:
            raise _fail(p, n, f"scope {scope!r} is not one of {', '.join(SCOPES)}")
        if scope == "site" and kind not in KINDS:
            raise _fail(p, n, f"kind {kind!r} is not one of {', '.join(KINDS)}")
        ints = {c: _int(rec[i], p, n, c, required=(c == "rank"
                                                   or (c == "site_id" and scope == "site")))
                for i, c in enumerate(COLUMNS) if c not in ("scope", "kind", "ns")}
        data.rows.append(Row(scope, ints["rank"] or 0, ints["thread"], ints["site_id"], kind,
                             ints["start_ns"], ints["end_ns"], ints["readings"],
                             ints["samples"], _number(rec[9], p, n, "ns"),
                             {name: _number(v, p, n, name)
                              for name, v in zip(names, rec[len(COLUMNS):], strict=True)}))
    return data


def counters_next_to(sites_csv: str | Path) -> CountersData | None:
    """The counters.csv next to `sites_csv` (or in it, a directory); None when there is
    none. One whose trace-id is not that of the sites.csv next to it is refused."""
    path, sites = beside_sites(sites_csv, COUNTERS)
    if not path.exists():
        return None
    data = read_counters(path)
    if (why := another_trace(path, data.trace_id, sites)) is not None:
        raise CountersFormatError(why)
    return data


def _first(names: Mapping[str, float], wanted: tuple[str, ...]) -> float | None:
    return next((names[n] for n in wanted if n in names), None)


@dataclass
class Figures:
    """Counts over some samples (a site's, a thread's), and what follows from them."""

    samples: int = 0
    ns: float = 0.0
    values: dict[str, float] = field(default_factory=dict)

    def add(self, row: Row | Figures) -> None:
        self.samples += row.samples or 0
        self.ns += row.ns
        for k, v in row.values.items():
            self.values[k] = self.values.get(k, 0.0) + v

    @property
    def ipc(self) -> float | None:
        ins, cyc = _first(self.values, INSTRUCTIONS), _first(self.values, CYCLES)
        return ins / cyc if ins is not None and cyc else None

    @property
    def misses(self) -> float | None:
        return _first(self.values, MISSES)

    @property
    def misses_per_sample(self) -> float | None:
        m = self.misses
        return m / self.samples if m is not None and self.samples else None

    @property
    def stall_share(self) -> float | None:
        """The share of the cycles stalled waiting on memory (0..1)."""
        st, cyc = _first(self.values, STALLS), _first(self.values, CYCLES)
        return min(1.0, st / cyc) if st is not None and cyc else None

    @property
    def miss_bytes_per_s(self) -> float | None:
        """Last-level misses' traffic per second of the intervals' wall time."""
        m = self.misses
        return m * LINE_BYTES / self.ns * 1e9 if m is not None and self.ns > 0 else None


def site_figures(data: CountersData,
                 merged: Mapping[int, int] | None = None) -> dict[int, Figures]:
    """Per site id (0: outside every site), its rows summed over ranks and kinds; with
    `merged` (site id -> the id it joined: the advisor's shared chains) under that id."""
    out: dict[int, Figures] = {}
    for r in data.scope("site"):
        sid = r.site_id or 0
        out.setdefault((merged or {}).get(sid, sid), Figures()).add(r)
    return out


def total_figures(data: CountersData) -> Figures:
    """The threads' rows summed: every reading of the trace."""
    f = Figures()
    for r in data.scope("thread"):
        f.add(r)
    return f


def _range(values: list[float]) -> str:
    return f"{min(values):.2f}" if max(values) - min(values) < 0.005 else \
        f"from {min(values):.2f} to {max(values):.2f}"


def summary_lines(data: CountersData, labels: Mapping[int, str]) -> list[str]:
    """What `hmtune analyze` says of counters.csv: the counters and readings, the share
    of the counted time its samples took into sites, IPC over the run, its threads and
    phases, and the sites with the most last-level misses (labels: site id -> label)."""
    threads = data.scope("thread")
    total = total_figures(data)
    readings = sum(r.readings or 0 for r in threads)
    out = [f"counters ({data.path.name}): {', '.join(data.names)}; {readings} readings in "
           f"{len(threads)} thread(s), {total.samples} of them taken by samples"]
    sites = site_figures(data)
    in_sites = sum(f.ns for sid, f in sites.items() if sid)
    if total.ns > 0:
        out.append(f"{100.0 * in_sites / total.ns:.1f}% of the counted time went to samples "
                   "in allocation sites and static variables (counters.csv's site rows)")
    if total.ipc is not None:
        per = [f.ipc for r in threads if (f := _one(r)).ipc is not None]
        phases = [f.ipc for r in data.scope("phase") if (f := _one(r)).ipc is not None]
        out.append(f"IPC {total.ipc:.2f} over the run; per thread {_range(per)}"
                   + (f", per phase {_range(phases)}" if phases else ""))
    if total.misses:
        ranked = sorted(((f.misses or 0.0, sid) for sid, f in sites.items() if sid),
                        reverse=True)[:3]
        parts = []
        for m, sid in ranked:
            if m <= 0:
                continue
            f = sites[sid]
            extra = [f"{f.misses_per_sample:.1f} per sample"] if f.misses_per_sample else []
            extra += [f"IPC {f.ipc:.2f}"] if f.ipc is not None else []
            extra += ([f"{100 * f.stall_share:.0f}% of cycles stalled on memory"]
                      if f.stall_share is not None else [])
            parts.append(f"{labels.get(sid, f'site {sid}')} ({100 * m / total.misses:.0f}%, "
                         f"{', '.join(extra)})")
        if parts:
            out.append("most last-level misses: " + "; ".join(parts))
    return out


def _one(row: Row) -> Figures:
    f = Figures()
    f.add(row)
    return f
