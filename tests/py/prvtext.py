"""Test helper: write small Paraver traces (.prv/.pcf/.row) by hand, run
`hmtune analyze` on them as a user does, and read back sites.csv / allocs.csv.

Only the CLI and its output files are used (no analyze.* imports), so the tests that
use this stay valid whichever layer computes the numbers.
"""

from __future__ import annotations

import csv
import gzip
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hmtune.core.events as hev

ROOT = Path(__file__).resolve().parents[2]
HMTUNE = ROOT / "bin" / "hmtune"
BUILD = Path(os.environ.get("HMTUNE_BUILD", ROOT / "build"))
PRVSCAN = BUILD / "bin" / "hmtune-prvscan"
GENTRACE = BUILD / "bin" / "hmtune-gentrace"

# event types (docs/formats.md §3)
CALL, SIZE, PTR_IN, PTR_OUT = hev.HM_EV_CALL, hev.HM_EV_SIZE, hev.HM_EV_IN_PTR, hev.HM_EV_OUT_PTR
SITE, OBJECT = hev.HM_EV_SITE, hev.HM_EV_SAMPLE_OBJECT
LOAD, STORE = hev.HM_EV_SAMPLE_LOAD, hev.HM_EV_SAMPLE_STORE
HIT, LATENCY = hev.HM_EV_SAMPLE_HIT, hev.HM_EV_SAMPLE_LATENCY
WEIGHT = hev.HM_EV_SAMPLE_WEIGHT
# values of 40000040 (common/trace_values.tsv)
MALLOC, FREE, REALLOC, CALLOC = hev.HM_CALL_MALLOC, hev.HM_CALL_FREE, hev.HM_CALL_REALLOC, \
    hev.HM_CALL_CALLOC
MEMALIGN, END = hev.HM_CALL_POSIX_MEMALIGN, hev.HM_CALL_END


@dataclass
class PrvText:
    """Records of a trace, kept sorted by time (stable) when written.

    Tasks and threads are 1-based as in Paraver; `nthreads` threads per task. Each
    call is two event lines: the entry at t and the end at t + `dur` (the call's own
    `dur`, else the trace's).
    """

    ntasks: int = 1
    nthreads: int = 1
    end: int | None = None                 # header end time; default last time + 1
    records: list[tuple[int, str]] = field(default_factory=list)
    dur: int = 10                          # default duration of a call

    def _cpu(self, task: int, thread: int) -> int:
        return (task - 1) * self.nthreads + thread

    def _end(self, t: int, dur: int | None) -> int:
        """When a call entered at t ends."""
        return t + (self.dur if dur is None else dur)

    def event(self, t: int, *pairs: int, task: int = 1, thread: int = 1) -> None:
        """One event line at t; `pairs` is type, value, type, value, ..."""
        assert pairs and len(pairs) % 2 == 0
        body = ":".join(str(v) for v in pairs)
        self.records.append((t, f"2:{self._cpu(task, thread)}:1:{task}:{thread}:{t}:{body}"))

    def state(self, t0: int, t1: int, state: int, task: int = 1, thread: int = 1) -> None:
        self.records.append((t0, f"1:{self._cpu(task, thread)}:1:{task}:{thread}:{t0}:{t1}:"
                                 f"{state}"))

    def alloc(self, t: int, size: int, site: int, ptr: int, kind: int = MALLOC,
              task: int = 1, thread: int = 1, dur: int | None = None) -> None:
        self.event(t, CALL, kind, SIZE, size, SITE, site, task=task, thread=thread)
        self.event(self._end(t, dur), CALL, END, PTR_OUT, ptr, task=task, thread=thread)

    def free(self, t: int, ptr: int, task: int = 1, thread: int = 1,
             dur: int | None = None) -> None:
        self.event(t, CALL, FREE, PTR_IN, ptr, task=task, thread=thread)
        self.event(self._end(t, dur), CALL, END, task=task, thread=thread)

    def realloc(self, t: int, ptr_in: int, size: int, site: int, ptr_out: int,
                task: int = 1, thread: int = 1, dur: int | None = None) -> None:
        self.event(t, CALL, REALLOC, SIZE, size, SITE, site, PTR_IN, ptr_in,
                   task=task, thread=thread)
        self.event(self._end(t, dur), CALL, END, PTR_OUT, ptr_out, task=task, thread=thread)

    def sample(self, t: int, addr: int, weight: int = 1, store: bool = False,
               obj: int | None = None, task: int = 1, thread: int = 1,
               hit: int | None = None) -> None:
        """hit: 1 hit, 2 miss (event 32000003), None for a sampler that cannot tell."""
        pairs = [STORE if store else LOAD, addr]
        if hit is not None:
            pairs += [HIT, hit]
        if obj is not None:
            pairs += [OBJECT, obj]
        self.event(t, *pairs, WEIGHT, weight, task=task, thread=thread)

    def last_time(self) -> int:
        return max((t for t, _ in self.records), default=0)

    def header(self) -> str:
        end = self.end if self.end is not None else self.last_time() + 1
        tasks = ",".join(f"{self.nthreads}:1" for _ in range(self.ntasks))
        return (f"#Paraver (01/01/2026 at 00:00):{end}_ns:1({self.ntasks * self.nthreads}):1:"
                f"{self.ntasks}({tasks}),0")

    def lines(self) -> list[str]:
        """Header, then the records in time order (file order kept at equal times)."""
        return [self.header()] + [line for _, line in sorted(self.records, key=lambda r: r[0])]

    def text(self) -> str:
        return "\n".join(self.lines()) + "\n"

    def write(self, d: Path, name: str = "trace", pcf: str | None = None,
              lines: list[str] | None = None, gz: bool = False) -> Path:
        """Write NAME.prv (or .prv.gz), NAME.pcf (unless pcf is None) and NAME.row."""
        d.mkdir(parents=True, exist_ok=True)
        text = self.text() if lines is None else "\n".join(lines) + "\n"
        prv = d / (name + (".prv.gz" if gz else ".prv"))
        if gz:
            prv.write_bytes(gzip.compress(text.encode()))
        else:
            prv.write_text(text)
        if pcf is not None:
            (d / f"{name}.pcf").write_text(pcf)
        n = self.ntasks * self.nthreads
        threads = "\n".join(f"THREAD 1.{t}.{k}" for t in range(1, self.ntasks + 1)
                            for k in range(1, self.nthreads + 1))
        cpus = "\n".join(f"{i}.node" for i in range(1, n + 1))
        (d / f"{name}.row").write_text(f"LEVEL CPU SIZE {n}\n{cpus}\n\nLEVEL NODE SIZE 1\n"
                                       f"node\n\nLEVEL THREAD SIZE {n}\n{threads}\n")
        return prv


def pcf_text(sites: dict[int, str], raw: dict[int, str] | None = None) -> str:
    """A .pcf with the 32000009/32000007 table and, when given, hmtune's 41000010 table."""
    out = ["DEFAULT_OPTIONS", "", "LEVEL               THREAD", "UNITS               NANOSEC",
           "", "STATES", "0    Idle", "1    Running", "30    Allocating memory", "",
           "EVENT_TYPE", "0    40000040    Dynamic memory calls",
           "0    40000041    Requested size", "0    40000042    In pointer",
           "0    40000043    Out pointer", "0    32000000    Sampled load address",
           "0    32000001    Sampled store address", "0    41000020    hmtune sample weight",
           "", "EVENT_TYPE", "0    32000009    Allocation object",
           "0    32000007    Memory object referenced by sampled address", "VALUES",
           "1    ??", "2    ??"]
    out += [f"{k}    {v}" for k, v in sorted(sites.items())]
    if raw is not None:
        out += ["", "EVENT_TYPE", "0    41000010    hmtune allocation site (module+offset)",
                "VALUES"]
        out += [f"{k}    {v}" for k, v in sorted(raw.items())]
    return "\n".join(out) + "\n"


def analyze(prv: Path, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS="200")
    return subprocess.run([str(HMTUNE), "analyze", str(prv), "-o", str(out), "--top", "0",
                           *args], capture_output=True, text=True, timeout=120, env=env)


def read_csv(path: Path) -> list[dict[str, str]]:
    """Rows of an hmtune CSV (its first line is the `# hmtune ...` version line)."""
    with path.open(newline="") as fh:
        first = fh.readline()
        assert first.startswith("# hmtune "), first
        return list(csv.DictReader(fh))


INT_COLUMNS = {"site_id", "rank", "thread", "size", "t_alloc", "t_free", "n_allocs",
               "max_size", "peak_live_bytes", "total_bytes", "first_alloc_ns",
               "last_free_ns", "live_ns", "samples", "loads", "stores", "misses"}


def typed(row: dict[str, str]) -> dict[str, Any]:
    """Integers for the integer columns, floats for weight/share/density."""
    out: dict[str, Any] = {}
    for k, v in row.items():
        if k in INT_COLUMNS:
            out[k] = int(v)
        elif k in ("weight", "share", "density"):
            out[k] = float(v)
        else:
            out[k] = v
    return out


def sites(out: Path) -> dict[int, dict[str, Any]]:
    """sites.csv by site id (one row per site; see sites_per_rank for --per-rank)."""
    rows = [typed(r) for r in read_csv(out / "sites.csv")]
    by_id = {r["site_id"]: r for r in rows}
    assert len(by_id) == len(rows), "one row per site expected"
    return by_id


def allocs(out: Path) -> list[dict[str, Any]]:
    return [typed(r) for r in read_csv(out / "allocs.csv")]


def alloc_tuples(out: Path) -> list[tuple[int, int, str, int, int, int]]:
    """(site_id, rank, ptr, size, t_alloc, t_free) per allocs.csv row, in file order."""
    return [(r["site_id"], r["rank"], r["ptr"], r["size"], r["t_alloc"], r["t_free"])
            for r in allocs(out)]
