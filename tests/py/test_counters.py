"""`hmtune trace --counters`: each sampled thread's PAPI counters at every sample, as
Extrae writes PAPI's (event types 42000000 + a preset's code, 42001000 + a native
event's, 41999999 the active set, .pcf labels "description (NAME)"). On a host
without a PMU the hardware presets are unavailable, said once, and PAPI's software
events are recorded; an application that uses PAPI itself keeps working; a bad list
is refused before anything runs. What `hmtune machine` lists is what a trace
records."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest
from clistage import LATENCY, ROOT, hmtune
from tracemodel import ubsan_preload

from hmtune.analyze.counters import read_counters, site_figures
from hmtune.machine import counters

PAPI_USER = ROOT / "build" / "tests" / "programs" / "papi_user"
HWC_SET = 41999999
PERIOD_NS = 4_000_000                # the software sampler's 250 Hz
_TYPE = re.compile(r"^7\s+(\d{8})\s+(.*)$")


def pcf_counters(pcf: Path) -> dict[int, str]:
    """The counter types of a .pcf (gradient 7) and their labels."""
    return {int(m[1]): m[2] for line in pcf.read_text().splitlines()
            if (m := _TYPE.match(line)) and int(m[1]) >= HWC_SET}


def readings(prv: Path, types: set[int]) -> dict[tuple[int, int], list[dict[int, int]]]:
    """Per (task, thread), the event lines holding counter types, in time order."""
    out: dict[tuple[int, int], list[dict[int, int]]] = defaultdict(list)
    for line in prv.read_text().splitlines():
        if not line.startswith("2:"):
            continue
        f = line.split(":")
        ev = {int(f[i]): int(f[i + 1]) for i in range(6, len(f) - 1, 2)}
        if types & ev.keys() or HWC_SET in ev:
            out[(int(f[3]), int(f[4]))].append(ev)
    return out


@pytest.fixture(scope="module")
def here() -> counters.Counters:
    c = counters.probe()
    if c.error:
        pytest.skip(f"PAPI cannot count here: {c.error}")
    return c


def test_trace_records_the_counters(tmp_path: Path, here: counters.Counters) -> None:
    r = hmtune("trace", "--counters", "-o", str(tmp_path), "--", str(LATENCY))   # ~1 s
    assert r.returncode == 0, r.stderr
    labels = pcf_counters(tmp_path / "trace.pcf")
    want = {c.type: c.name for c in here.recorded}
    assert set(want) <= set(labels) and HWC_SET in labels
    for t, name in want.items():
        assert labels[t].endswith(f"({name})")
    lines = readings(tmp_path / "trace.prv", set(want))
    assert lines, "no counter events in the trace"
    summary = json.loads((tmp_path / "trace.summary.json").read_text())["processes"][0]
    assert summary["counters"]["recorded"] == [c.name for c in here.recorded]
    assert summary["counters"]["readings"] == sum(len(v) for v in lines.values())
    for evs in lines.values():
        assert [HWC_SET in e for e in evs] == [True] + [False] * (len(evs) - 1)
        assert all(set(want) <= e.keys() for e in evs)
    if here.software:                    # the software events: CPU time per tick
        assert "PAPI_TOT_CYC" in here.unavailable and "PAPI_TOT_CYC" in r.stderr
        clock = next(c.type for c in here.recorded if c.name == "perf::TASK-CLOCK")
        for evs in lines.values():
            ticks = [e[clock] for e in evs[1:-1]]
            assert len(ticks) >= 20 and sorted(ticks)[len(ticks) // 2] == pytest.approx(PERIOD_NS,
                                                                              rel=0.25)
    assert hmtune("check-trace", str(tmp_path / "trace.prv")).returncode == 0
    assert hmtune("analyze", str(tmp_path)).returncode == 0
    # the analysis per site: every reading in its thread's row, each sample's in a site row
    data = read_counters(tmp_path / "counters.csv")
    assert data.names == [c.name for c in here.recorded]
    threads = data.scope("thread")
    assert sum(t.readings or 0 for t in threads) == summary["counters"]["readings"]
    sites = data.scope("site")
    assert sum(r.samples or 0 for r in sites) == sum(t.samples or 0 for t in threads) > 20
    for name in data.names:
        assert sum(r.values[name] for r in sites) <= sum(t.values[name] for t in threads)
    heap = {int(r["site_id"]) for r in csv.DictReader(
        (tmp_path / "sites.csv").read_text().splitlines()[1:]) if int(r["samples"]) > 0}
    assert heap & {r.site_id for r in sites}
    if here.software:                    # each sample took its 4 ms of CPU time
        f = site_figures(data)
        ns = sum(x.values["perf::TASK-CLOCK"] for x in f.values())
        assert ns == pytest.approx(sum(x.samples for x in f.values()) * PERIOD_NS, rel=0.25)


def test_no_counters_unless_asked(tmp_path: Path) -> None:
    r = hmtune("trace", "-q", "-o", str(tmp_path), "--", str(LATENCY), "-q")
    assert r.returncode == 0, r.stderr
    assert not pcf_counters(tmp_path / "trace.pcf")
    summary = json.loads((tmp_path / "trace.summary.json").read_text())["processes"][0]
    assert summary["counters"] == {"asked": 0, "recorded": [], "software": 0,
                                   "unavailable": "", "readings": 0}


def test_an_application_using_papi_keeps_working(tmp_path: Path,
                                                 here: counters.Counters) -> None:
    """papi_user's own event sets (two threads) start, count and stop while the tracer
    records its counters from each of the same threads."""
    bare = subprocess.run([str(PAPI_USER)], capture_output=True, text=True,
                                        timeout=120)
    assert bare.returncode == 0 and "papi ok" in bare.stdout, bare.stdout
    r = hmtune("trace", "--counters", "-o", str(tmp_path), "--", str(PAPI_USER))
    assert r.returncode == 0 and "papi ok" in r.stdout, (r.stdout, r.stderr)
    assert r.stdout.count("task-clock over 10 ms") == 2
    lines = readings(tmp_path / "trace.prv", {c.type for c in here.recorded})
    assert len(lines) == 2                # both threads recorded theirs


def test_an_unknown_name_is_said_and_tracing_goes_on(tmp_path: Path,
                                                     here: counters.Counters) -> None:
    r = hmtune("trace", "--counters", "nosuch::EVENT", "-o", str(tmp_path), "--",
               str(LATENCY), "-q")
    assert r.returncode == 0, r.stderr
    summary = json.loads((tmp_path / "trace.summary.json").read_text())["processes"][0]
    assert "nosuch::EVENT" in summary["counters"]["unavailable"]
    assert summary["counters"]["software"] == 1 and summary["counters"]["recorded"]
    assert r.stderr.count("nosuch::EVENT") == 1        # said once


def test_the_list_limit_is_the_tracers() -> None:
    """trace's COUNTERS_MAX is the tracer's record limit (collect/hmc_stream.h): a list
    the option takes fits every reading record."""
    from hmtune.workflows.trace import COUNTERS_MAX

    header = (ROOT / "collect" / "hmc_stream.h").read_text()
    m = re.search(r"^#define HMR_MAX_COUNTERS (\d+)$", header, re.M)
    assert m and int(m.group(1)) == COUNTERS_MAX


@pytest.mark.parametrize(("value", "why"), [
    ("PAPI TOT_CYC", "is not a PAPI event name"),
    ("a,,b", "is not a PAPI event name"),
    (",".join(f"perf::E{i}" for i in range(9)), "at most 8"),
])
def test_a_bad_list_is_refused(tmp_path: Path, value: str, why: str) -> None:
    out = tmp_path / "out"
    r = hmtune("trace", "--counters", value, "-o", str(out), "--", str(LATENCY), "-q")
    assert r.returncode == 2 and why in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert not out.exists()


def test_machine_lists_what_a_trace_records(here: counters.Counters) -> None:
    r = hmtune("machine")
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith("counters:"))
    for c in here.recorded:
        assert f"{c.name} ({c.type})" in line


def test_probe_output_is_parsed() -> None:
    c = counters.parse("counter=PAPI_TOT_CYC\tcode=0x8000003b\ttype=42000059\tdescr=Total "
                       "cycles\nsoftware=0\nunavailable=PAPI_MEM_SCY (Event does not exist)\n")
    assert c.recorded == [counters.Counter("PAPI_TOT_CYC", 0x8000003B, 42000059,
                                           "Total cycles")]
    assert not c.software and c.unavailable.startswith("PAPI_MEM_SCY")
    assert "not available: PAPI_MEM_SCY" in counters.line(c)


@pytest.mark.parametrize("prog", ["papi_user", "threads", "forker", "omp"])
def test_counters_under_ubsan(tmp_path: Path, prog: str, here: counters.Counters) -> None:
    """The tracer built with -fsanitize=undefined records counters on threads, forks
    (the child records none) and an application of its own PAPI; the trace is whole."""
    env = dict(os.environ, LD_PRELOAD=ubsan_preload(), HMTUNE_OUT=str(tmp_path),
               HMTUNE_SAMPLER="soft", HMTUNE_COUNTERS="default")
    r = subprocess.run([str(ROOT / "build" / "tests" / "programs" / prog)],
                       capture_output=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    assert "runtime error" not in r.stderr.decode()
    fin = subprocess.run([str(ROOT / "build/bin/hmtune-finalize"), str(tmp_path), "-o",
                          str(tmp_path / "t"), "--summary", str(tmp_path / "s.json")],
                         capture_output=True)
    assert fin.returncode == 0, fin.stderr.decode()
    assert hmtune("check-trace", str(tmp_path / "t.prv")).returncode == 0
    procs = json.loads((tmp_path / "s.json").read_text())["processes"]
    assert procs[0]["counters"]["readings"] > 0
