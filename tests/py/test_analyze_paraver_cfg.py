"""configs/paraver/*.cfg: structure as Paraver parses it (Paraver itself is not
installed here), event types that both trace kinds declare (counters: as hmtune's
finalize labels them), and the counter histograms' semantics, computed the way
paraver-kernel computes them, against hmtune analyze's counters.csv."""

from __future__ import annotations

import re
import struct
import subprocess
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pytest
import rawstream as rs

from hmtune.analyze.counters import read_counters
from hmtune.analyze.prv_tables import parse_pcf

ROOT = Path(__file__).resolve().parents[2]
CFG_DIR = ROOT / "configs" / "paraver"
EXTRAE_PCF = Path(__file__).resolve().parent / "data" / "extrae-malloc-trace" / "malloc_test.pcf"
CFGS = sorted(CFG_DIR.glob("*.cfg"))

WINDOW_KEYS = ["window_name", "window_type", "window_id", "window_level", "window_object",
               "window_compose_functions"]
COMPOSED_KEYS = ["window_factors", "window_operation", "window_identifiers"]
OPERATIONS: dict[str, Callable[[float, float], float]] = {   # paraver-kernel's derived ones
    "divide": lambda a, b: a / b if b else 0.0, "product": lambda a, b: a * b,
    "add": lambda a, b: a + b, "substract": lambda a, b: a - b, "maximum": max, "minimum": min}
ANALYZER_KEYS = ["Analyzer2D.Name:", "Analyzer2D.ControlWindow:", "Analyzer2D.DataWindow:",
                 "Analyzer2D.Statistic:", "Analyzer2D.Minimum:", "Analyzer2D.Maximum:",
                 "Analyzer2D.Delta:"]
STATISTICS = {"# Bursts", "Maximum", "Sum bursts", "Time", "Average value", "Integral"}


def parse_cfg(path: Path) -> tuple[dict[str, str], list[dict[str, str]], list[dict[str, str]]]:
    """(header, windows, analyzers); each section as {key: rest of line}."""
    lines = path.read_text().splitlines()
    assert lines[0] == "#ParaverCFG"
    header: dict[str, str] = {}
    windows: list[dict[str, str]] = []
    analyzers: list[dict[str, str]] = []
    current: dict[str, str] | None = None
    for line in lines[1:]:
        if line.startswith("< NEW DISPLAYING WINDOW ") and line.endswith(" >"):
            current = {"title": line[24:-2]}
            windows.append(current)
        elif line == "< NEW ANALYZER2D >":
            current = {}
            analyzers.append(current)
        elif not line.strip() or line.startswith("#"):
            continue
        elif current is None:
            key, _, value = line.partition(" ")
            header[key] = value
        elif line.startswith("Analyzer2D."):
            key, _, value = line.partition(" ")
            current[key] = value
        else:
            m = re.match(r"^(window_filter_module evt_type(?:_label)? \d+|\S+) ?(.*)$", line)
            assert m, line
            current[m[1]] = m[2]
    return header, windows, analyzers


def test_there_are_configs() -> None:
    names = {p.name for p in CFGS}
    assert {"sampled_refs_per_object.cfg", "max_size_per_site.cfg", "object_timeline.cfg",
            "ipc_per_object.cfg", "misses_per_object.cfg"} <= names
    assert (CFG_DIR / "README.md").exists()


@pytest.mark.parametrize("cfg", CFGS, ids=lambda p: p.name)
def test_cfg_structure(cfg: Path) -> None:
    header, windows, analyzers = parse_cfg(cfg)
    assert header["ConfigFile.Version:"] == "3.4"
    assert int(header["ConfigFile.NumWindows:"]) == len(windows) >= 1
    ids = [int(w["window_id"]) for w in windows]
    assert ids == list(range(1, len(windows) + 1))
    for w in windows:
        for key in WINDOW_KEYS:
            assert key in w, (cfg.name, w["title"], key)
        assert w["window_name"] == w["title"] and w["window_level"] == "thread"
        assert w["window_compose_functions"].startswith("{ 9, {")
        if w["window_type"] == "composed":
            check_composed(cfg, w)
            continue
        assert w["window_type"] == "single"
        functions = w["window_selected_functions"]
        assert functions.startswith("{ 14, {") and functions.count("{") == functions.count("}")
        assert thread_function(w)
        filter_types(w)
    for a in analyzers:
        for key in ANALYZER_KEYS:
            assert key in a, (cfg.name, key)
        assert int(a["Analyzer2D.ControlWindow:"]) in ids
        assert int(a["Analyzer2D.DataWindow:"]) in ids
        assert a["Analyzer2D.Statistic:"] in STATISTICS
        assert len(a["Analyzer2D.Parameters:"].split()) == 5
        assert float(a["Analyzer2D.Minimum:"]) < float(a["Analyzer2D.Maximum:"])


def check_composed(cfg: Path, w: dict[str, str]) -> None:
    """A derived window: an operation on two earlier windows, each scaled by a factor; it
    filters nothing itself (its selected functions, when given, are the 5 levels')."""
    for key in COMPOSED_KEYS:
        assert key in w, (cfg.name, w["title"], key)
    assert w["window_operation"] in OPERATIONS
    parents = [int(x) for x in w["window_identifiers"].split()]
    assert len(parents) == 2 and all(1 <= p < int(w["window_id"]) for p in parents)
    factors = [float(x) for x in w["window_factors"].split()]
    assert len(factors) == 2
    assert not any(k.startswith("window_filter_module") for k in w)
    functions = w.get("window_selected_functions", "{ 5, {")
    assert functions.startswith("{ 5, {") and functions.count("{") == functions.count("}")


def thread_function(w: dict[str, str]) -> str:
    """The semantic function of a single window at thread level."""
    m = re.search(r"\{thread, ([^{}]+)\}", w["window_selected_functions"])
    assert m, w["title"]
    return m[1]


def filter_types(w: dict[str, str]) -> list[tuple[int, str]]:
    """A window's filtered event types with their labels (`evt_type N v1 .. vN`)."""
    key = next(k for k in w if k.startswith("window_filter_module evt_type "))
    n = int(key.rsplit(" ", 1)[1])
    types = [int(x) for x in w[key].split()]
    labels = re.findall(r'"([^"]*)"', w[f"window_filter_module evt_type_label {n}"])
    assert len(types) == len(labels) == n
    return list(zip(types, labels, strict=True))


HMTUNE_ONLY = 41000000          # hmtune's own types: in hmtune traces only
# PAPI counters: a preset's type is 42000000 + (code & 0xffff), a native event's 42001000 + it
COUNTERS = range(42000000, 43000000)
# The presets the configurations use: name, PAPI's code and the description PAPI gives
# (its long one, which hmtune's tracer records: collect/hmc_papi.c).
PRESETS = {42000050: ("PAPI_TOT_INS", 0x80000032, "Instructions completed"),
           42000059: ("PAPI_TOT_CYC", 0x8000003B, "Total cycles"),
           42000008: ("PAPI_L3_TCM", 0x80000008, "Level 3 cache misses")}
NEXT_VALUE = {"Next Evt Val", "Avg Next Evt Val"}     # the value of the next event
OBJECT = 32000007


@pytest.mark.parametrize("cfg", CFGS, ids=lambda p: p.name)
def test_cfg_event_types_are_declared(cfg: Path, counted: Counted) -> None:
    """Each type a window filters is declared, with that label, in Extrae's traces, or
    (hmtune's own, 41xxxxxx) in hmtune's .pcf, or (a PAPI counter) in the .pcf that
    hmtune's finalize writes for a trace recording it: "DESCRIPTION (NAME)", the preset
    whose code gives the type."""
    pcf = parse_pcf(EXTRAE_PCF)
    ours = parse_pcf(counted.prv.with_suffix(".pcf"))
    _, windows, _ = parse_cfg(cfg)
    for w in windows:
        if w["window_type"] == "composed":
            continue
        for etype, label in filter_types(w):
            table = ours if etype >= HMTUNE_ONLY else pcf
            assert etype in table.event_types, (cfg.name, etype)
            assert label == table.event_types[etype].description
            if etype in COUNTERS:
                name, code, descr = PRESETS[etype]
                assert etype == COUNTERS.start + (code & 0xFFFF)
                assert label == f"{descr} ({name})"


@pytest.mark.parametrize("cfg", CFGS, ids=lambda p: p.name)
def test_counter_windows_take_the_next_reading(cfg: Path) -> None:
    """A reading holds the counts since its thread's previous one, and the sample its
    interval goes to comes just after it: a window of counters (counters only) takes
    the next event's value, itself or averaged over the interval, and so does the
    object window next to it; never the last event's."""
    _, windows, _ = parse_cfg(cfg)
    single = [w for w in windows if w["window_type"] == "single"]
    counted = [w for w in single if any(t in COUNTERS for t, _ in filter_types(w))]
    for w in counted:
        assert thread_function(w) in NEXT_VALUE, (cfg.name, w["title"])
        assert all(t in COUNTERS for t, _ in filter_types(w)), (cfg.name, w["title"])
    if counted:
        objects = [w for w in single if [t for t, _ in filter_types(w)] == [OBJECT]]
        assert objects and {thread_function(w) for w in objects} == {"Next Evt Val"}


class Counted(NamedTuple):
    prv: Path
    sites: list[int]              # the sites of its allocations A, B and C


# The hand-made trace with counters: one thread, a sample every PERIOD ns, each GAP ns
# after a reading as the software sampler takes them (scaled down from ~400 ns in 4 ms),
# in the object SAMPLED gives (None: an address outside any object); per reading (the
# last one at thread end) the instructions and L3 misses since the previous one, at 2
# cycles per ns.
PERIOD, GAP = 1000, 1
SAMPLED = ["A", "B", "B", None, "C", "B", "C"]
DELTAS = [(500, 2), (3000, 40), (2500, 35), (800, 7), (1200, 11), (2000, 30), (900, 9), (400, 3)]


def cntdef(index: int, etype: int) -> bytes:
    """A CNTDEF record (docs/formats.md §2), which rawstream.py has no helper for."""
    name, code, descr = PRESETS[etype]
    return rs._rec(13, index, code, f"{name}\0{descr}\0".encode())


def counters(s: rs.Stream, t: int, when: int, values: list[int]) -> None:
    """A COUNTERS record: when 0 thread start, 1 a timer tick, 2 thread end."""
    s.recs.append(rs._rec(14, len(values), when, struct.pack(f"<{len(values) + 1}Q", t,
                                                             *values)))


@pytest.fixture(scope="module")
def counted(tmp_path_factory: pytest.TempPathFactory) -> Counted:
    """The trace finalized from the hand-made stream: it records PAPI_TOT_INS,
    PAPI_TOT_CYC and PAPI_L3_TCM (in that index order)."""
    from test_attribution import BASE, P, Q, R, finalize, main_stream
    d = tmp_path_factory.mktemp("counted")
    s = main_stream()
    for sid, ptr in enumerate((P, Q, R), 1):
        s.call(1, sid, 1100 + 20 * sid, 1110 + 20 * sid, 65536, ptr)
    smp = rs.Stream(1 | rs.SAMPLE_STREAM).thread(1000, 100)
    where = {"A": P + 64, "B": Q + 64, "C": R + 64, None: 0x1234}
    ends = [1000 + k * PERIOD - GAP for k in range(1, len(SAMPLED) + 1)]
    ends.append(ends[-1] + PERIOD // 2)
    total, last = [0, 0, 0], 1000
    counters(smp, last, 0, total)
    for k, (t, (ins, l3)) in enumerate(zip(ends, DELTAS, strict=True)):
        total, last = [total[0] + ins, total[1] + 2 * (t - last), total[2] + l3], t
        if k == len(SAMPLED):
            counters(smp, t, 2, total)
        else:
            counters(smp, t, 1, total)
            smp.sample(t + GAP, BASE + 0x1150, where[SAMPLED[k]])
    trace = finalize(d, [s, smp], [cntdef(i, e) for i, e in enumerate(PRESETS)])
    return Counted(d / "t.prv", [c.site for c in trace.allocs()])


# ---- the configurations' semantics against sites.csv ----

def bursts_per_value(prv: Path, types: set[int]) -> dict[int, int]:
    """What a `# Bursts` histogram of a window filtering `types` at thread level with
    `Last Evt Val` counts per column, summed over its rows (threads): one per record
    that carries one of the types, in the column of its value."""
    out: dict[int, int] = {}
    with prv.open() as f:
        for line in f:
            if not line.startswith("2:"):
                continue
            fields = line.rstrip("\n").split(":")
            pairs = fields[6:]
            for k in range(0, len(pairs) - 1, 2):
                if int(pairs[k]) in types:
                    v = int(pairs[k + 1])
                    out[v] = out.get(v, 0) + 1
    return out


@pytest.mark.skipif(not (ROOT / "build" / "examples" / "latency").exists(),
                    reason="examples not built")
@pytest.mark.parametrize(("cfg", "lookahead"), [("sampled_refs_per_object.cfg", False),
                                                ("sampled_refs_per_object_with_lookahead.cfg",
                                                 True)])
def test_sampled_refs_are_sites_csv_samples(tmp_path: Path, cfg: str, lookahead: bool) -> None:
    """A Paraver user sees the numbers sites.csv has: on the latency example traced
    with the software sampler, the configuration's count per object is each heap site's
    `samples` as hmtune analyze counts them (by default; --lookahead for the other)."""
    import csv
    import subprocess

    hm = ROOT / "bin" / "hmtune"
    d = tmp_path / "out"
    r = subprocess.run([str(hm), "trace", "-q", "--sampler", "soft", "-o", str(d), "--",
                        str(ROOT / "build" / "examples" / "latency"), "-q"],
                       capture_output=True, timeout=600)
    assert r.returncode == 0, r.stderr
    a = subprocess.run([str(hm), "analyze", *(["--lookahead"] if lookahead else []), str(d)],
                       capture_output=True, timeout=600)
    assert a.returncode == 0, a.stderr
    _, windows, _ = parse_cfg(CFG_DIR / cfg)
    types = {t for t, _ in filter_types(windows[0])}
    got = bursts_per_value(d / "trace.prv", types)
    with (d / "sites.csv").open(newline="") as f:
        f.readline()
        heap = {int(x["site_id"]): int(x["samples"]) for x in csv.DictReader(f)
                if x["kind"] == "heap"}
    assert sum(heap.values()) > 0
    assert {s: got.get(s, 0) for s in heap} == heap


# ---- the counter histograms as paraver-kernel computes them, against counters.csv ----

Interval = tuple[int, int, float]           # [begin, end) in ns and a window's value
Records = list[tuple[int, int, int]]        # a thread's events: (time, type, value)


def thread_records(prv: Path) -> tuple[int, dict[tuple[int, int, int], Records]]:
    """The trace's end time and, per (appl, task, thread), its events in file order."""
    lines = prv.read_text().splitlines()
    m = re.search(r"\):(\d+)(?:_ns)?:", lines[0])
    assert m, lines[0]
    out: dict[tuple[int, int, int], Records] = defaultdict(list)
    for line in lines[1:]:
        if line.startswith("2:"):
            f = [int(x) for x in line.split(":")]
            out[(f[2], f[3], f[4])] += [(f[5], f[i], f[i + 1]) for i in range(6, len(f) - 1, 2)]
    return int(m[1]), dict(out)


def single_timeline(w: dict[str, str], records: Records, end: int) -> list[Interval]:
    """A single window's intervals (paraver-kernel's IntervalThread and thread functions):
    from the thread's begin record, which has no value, to its first filtered event,
    then from each such event to the next. Last Evt Val is the event's value, Next Evt
    Val the next one's (0 after the last), Avg Next Evt Val that times the function's
    factor over the interval's length in ns."""
    func = thread_function(w)
    assert func in {"Last Evt Val", *NEXT_VALUE}, func
    factor = 1.0
    if func == "Avg Next Evt Val":
        m = re.search(r"\{ 1, \{ 1 ([0-9.]+) \} \}$", w["window_semantic_module"])
        assert m and w["window_semantic_module"].startswith(f"thread {func} ")
        factor = float(m[1])
    types = {t for t, _ in filter_types(w)}
    events = [(t, v) for t, typ, v in records if typ in types]
    out: list[Interval] = [(0, events[0][0] if events else end, 0.0)]
    for i, (b, v) in enumerate(events):
        e, nxt = events[i + 1] if i + 1 < len(events) else (end, None)
        if func == "Last Evt Val":
            value = float(v)
        elif nxt is None:
            value = 0.0
        else:
            value = nxt * (1.0 if func == "Next Evt Val" else factor / (e - b) if e > b else 0)
        out.append((b, e, value))
    return out


def value_at(intervals: list[Interval], t: int) -> float:
    return next((v for b, e, v in intervals if b <= t < e), 0.0)


def timeline(windows: list[dict[str, str]], wid: int, records: Records,
             end: int) -> list[Interval]:
    """Window `wid`'s intervals; a composed one's cut where either parent's are, with the
    operation on its parents' values, each times its factor."""
    w = windows[wid - 1]
    if w["window_type"] == "single":
        return single_timeline(w, records, end)
    a, b = (timeline(windows, int(x), records, end) for x in w["window_identifiers"].split())
    fa, fb = (float(x) for x in w["window_factors"].split())
    op = OPERATIONS[w["window_operation"]]
    cuts = sorted({x for iv in a + b for x in iv[:2]})
    return [(lo, hi, op(fa * value_at(a, lo), fb * value_at(b, lo)))
            for lo, hi in zip(cuts, cuts[1:], strict=False)]


def histogram(control: list[Interval], data: list[Interval], statistic: str, lo: float,
              hi: float) -> dict[int, float]:
    """One row of a 2D histogram (paraver-kernel's KHistogram::calculate): each control
    interval whose value is a column, with each data interval overlapping it, clipped to
    it, given to the statistic (histogramstatistic.cpp): # Bursts counts the pieces, Sum
    bursts adds their values, Integral their values times their lengths, Average value
    is that over the pieces' total length, Maximum the largest value."""
    total: dict[int, float] = defaultdict(float)
    length: dict[int, float] = defaultdict(float)
    for cb, ce, col in control:
        if not lo <= col <= hi:
            continue
        c = int(col)
        for db, de, v in data:
            b, e = max(cb, db), min(ce, de)
            if e <= b:
                continue
            if statistic == "# Bursts":
                total[c] += 1
            elif statistic == "Sum bursts":
                total[c] += v
            elif statistic in ("Integral", "Average value"):
                total[c] += (abs(v) if statistic == "Integral" else v) * (e - b)
                length[c] += e - b
            else:
                assert statistic == "Maximum", statistic
                total[c] = max(total[c], v)
    return {c: x / length[c] if statistic == "Average value" else x for c, x in total.items()}


def cfg_histogram(name: str, records: Records, end: int) -> dict[int, float]:
    _, windows, (a,) = parse_cfg(CFG_DIR / name)
    control, data = (timeline(windows, int(a[f"Analyzer2D.{k}Window:"]), records, end)
                     for k in ("Control", "Data"))
    return histogram(control, data, a["Analyzer2D.Statistic:"], float(a["Analyzer2D.Minimum:"]),
                     float(a["Analyzer2D.Maximum:"]))


def test_counter_histograms_are_counters_csv(tmp_path: Path, counted: Counted) -> None:
    """On the hand-made trace, the two counter histograms computed as paraver-kernel
    computes them give per object what hmtune analyze's counters.csv gives per site:
    B's misses and IPC exactly but for the GAP ns between each reading and its sample;
    C's with those of the sample outside any object (counters.csv's site 0) added, as
    Next Evt Val on 32000007 merges its interval into the next sample's. A, the
    thread's first object, is left out: what Paraver gives the time before a thread's
    first 32000007 depends on the thread's begin record."""
    c = counted
    r = subprocess.run([str(ROOT / "bin" / "hmtune"), "analyze", "--top", "0", "-o",
                        str(tmp_path), str(c.prv)], capture_output=True, timeout=600)
    assert r.returncode == 0, r.stderr
    site = {x.site_id: x.values for x in read_counters(tmp_path / "counters.csv").scope("site")}
    end, threads = thread_records(c.prv)
    (records,) = threads.values()
    misses = cfg_histogram("misses_per_object.cfg", records, end)
    ipc = cfg_histogram("ipc_per_object.cfg", records, end)
    _, b, cc = c.sites
    assert set(site) == {0, *c.sites}
    want = {b: site[b], cc: {k: site[cc][k] + site[0][k] for k in site[0]}}
    assert want[b]["PAPI_L3_TCM"] == sum(d[1] for d, o in zip(DELTAS, SAMPLED, strict=False)
                                          if o == "B")
    for s, v in want.items():
        assert misses[s] == pytest.approx(v["PAPI_L3_TCM"], rel=2e-3)
        assert ipc[s] == pytest.approx(v["PAPI_TOT_INS"] / v["PAPI_TOT_CYC"], rel=2e-3)
