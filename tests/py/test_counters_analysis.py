"""Hardware counters in analyze and advise, on traces written by hand with known PAPI
counts (this VM has no PMU: `hmtune trace --counters` records software events here,
test_counters.py). counters.csv gives each site's counts over its samples (the software
sampler's reading goes to the sample just after it; other samplers' readings are
shared by the samples since the one before), per access kind, thread and phase; the
advisor takes a counted site's memory share and bandwidth-bound verdict from them and
the report says which sites were counted."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from prvtext import HMTUNE, LOAD, OBJECT, WEIGHT, PrvText, analyze, pcf_text, read_csv

import hmtune.core.events as ev
from hmtune.advisor.counted import BANDWIDTH_BOUND
from hmtune.advisor.inputs import build_problem, load_sites
from hmtune.analyze.counters import read_counters, site_figures
from hmtune.core.units import GIB, MIB
from hmtune.machine.machinefile import load_machine, with_fast_capacity

ROOT = Path(__file__).resolve().parents[2]
XEON_MAX = ROOT / "configs" / "machines" / "xeon-max-9468-flat-quadrant.toml"
CYC, INS, L3, MEM = 42000059, 42000050, 42000008, 42000034     # PAPI presets' types
NAMES = {CYC: "Total cycles (PAPI_TOT_CYC)", INS: "Instructions completed (PAPI_TOT_INS)",
         L3: "Level 3 cache misses (PAPI_L3_TCM)",
         MEM: "Cycles Stalled Waiting for memory accesses (PAPI_MEM_SCY)"}
TICK = 4_000_000                      # the software sampler's 250 Hz
A, B, C = 3, 4, 5                     # the streamed, chased and computing arrays' sites
BASE = {A: 0x10000000, B: 0x20000000, C: 0x30000000}
SIZE = 64 * MIB
# per sampled tick of each array: cycles, instructions, L3 misses, memory stall cycles;
# the access kind the sampler gave its samples, which the counters contradict for A, B
PER_TICK = {A: (8_000_000, 4_000_000, 250_000, 6_000_000),      # 4 GB/s, 75 % stalled
            B: (8_000_000, 1_000_000, 20_000, 7_200_000),       # 0.32 GB/s, 90 %
            C: (8_000_000, 16_000_000, 100, 400_000)}           # compute, 5 %
SAMPLER_KIND = {A: ev.HM_ACCESS_KIND_SCATTERED, B: ev.HM_ACCESS_KIND_STREAMING,
                C: ev.HM_ACCESS_KIND_STREAMING}
TICKS = {A: 20, B: 20, C: 10}


def pcf(names: dict[int, str] = NAMES) -> str:
    text = pcf_text({A: "a.c:1 main", B: "b.c:2 main", C: "c.c:3 main"},
                    {A: "app+0x10", B: "app+0x20", C: "app+0x30"})
    text += "\nEVENT_TYPE\n" + "".join(f"7  {t} {d}\n" for t, d in names.items())
    return text + "\nEVENT_TYPE\n7  41999999 Active hardware counter set\nVALUES\n1 Set 1\n"


def reading(tr: PrvText, t: int, counts: tuple[int, int, int, int], first: bool = False,
            thread: int = 1) -> None:
    pairs = [ev.HM_EV_HWC_SET, 1] if first else []
    for etype, v in zip((CYC, INS, L3, MEM), counts, strict=True):
        pairs += [etype, v]
    tr.event(t, *pairs, thread=thread)


def sample(tr: PrvText, t: int, site: int, k: int, thread: int = 1) -> None:
    tr.event(t, LOAD, BASE[site] + 4096 * k, OBJECT, site, WEIGHT, TICK,
             ev.HM_EV_ACCESS_KIND, SAMPLER_KIND[site], thread=thread)


def soft_trace(ticks: dict[int, int] = TICKS) -> PrvText:
    """One thread: three arrays allocated, then 50 ticks of the software sampler, each
    a reading and its sample 400 ns later; a reading at thread start and end."""
    tr = PrvText(dur=1)
    tr.event(1, ev.HM_EV_SAMPLER, ev.HM_SAMPLER_SOFT)
    for i, site in enumerate((A, B, C)):
        tr.alloc(10 + 10 * i, SIZE, site, BASE[site])
    t = 1_000_000
    reading(tr, t, (0, 0, 0, 0), first=True)
    for site in (A, B, C):
        for k in range(ticks[site]):
            t += TICK
            reading(tr, t, PER_TICK[site])
            sample(tr, t + 400, site, k)
    reading(tr, t + TICK // 2, (4_000_000, 1, 1, 1))    # thread end: no sample takes it
    tr.end = t + TICK
    return tr


def counted_table(report_txt: Path) -> tuple[int, list[list[str]]]:
    """report.txt's `sites valued from counters: N` table: N and its rows' fields."""
    report = report_txt.read_text().splitlines()
    start = next(i for i, line in enumerate(report)
                 if line.startswith("sites valued from counters: "))
    count = int(report[start].rsplit(": ", 1)[1])
    return count, [line.split() for line in report[start + 2:start + 2 + count]]


@pytest.fixture(scope="module")
def soft(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("counted")
    prv = soft_trace().write(d, pcf=pcf())
    r = analyze(prv, d)
    assert r.returncode == 0, r.stderr
    return d


def test_counters_csv_has_each_sites_counts_by_kind(soft: Path) -> None:
    data = read_counters(soft / "counters.csv")
    assert data.names == ["PAPI_TOT_CYC", "PAPI_TOT_INS", "PAPI_L3_TCM", "PAPI_MEM_SCY"]
    rows = {(r.site_id, r.kind): r for r in data.scope("site")}
    assert set(rows) == {(A, "scattered"), (B, "streaming"), (C, "streaming")}
    for site in (A, B, C):
        r = rows[(site, next(k for s, k in rows if s == site))]
        n = TICKS[site]
        assert r.samples == n and r.ns == n * TICK
        assert [r.values[x] for x in data.names] == [n * c for c in PER_TICK[site]]


def test_per_site_figures(soft: Path) -> None:
    f = site_figures(read_counters(soft / "counters.csv"))
    assert f[A].ipc == pytest.approx(0.5) and f[B].ipc == pytest.approx(0.125)
    assert f[C].ipc == pytest.approx(2.0)
    assert f[A].misses_per_sample == pytest.approx(250_000)
    assert f[A].stall_share == pytest.approx(0.75) and f[B].stall_share == pytest.approx(0.9)
    assert f[A].miss_bytes_per_s == pytest.approx(4e9)
    assert f[B].miss_bytes_per_s == pytest.approx(0.32e9)
    assert f[A].miss_bytes_per_s > BANDWIDTH_BOUND > f[B].miss_bytes_per_s


def test_thread_and_phase_rows_count_every_reading(soft: Path) -> None:
    data = read_counters(soft / "counters.csv")
    [th] = data.scope("thread")
    assert (th.rank, th.thread, th.readings, th.samples) == (0, 1, 52, 50)
    cycles = sum(TICKS[s] * PER_TICK[s][0] for s in TICKS) + 4_000_000
    assert th.values["PAPI_TOT_CYC"] == cycles
    phases = data.scope("phase")
    assert sum(p.readings or 0 for p in phases) == 52
    assert sum(p.values["PAPI_TOT_CYC"] for p in phases) == cycles
    assert int(data.meta["phases"]) == 20 and len(phases) <= 20
    spans = [(p.start_ns, p.end_ns) for p in phases]
    assert all(a is not None and b is not None and a < b for a, b in spans)
    # the computing array's ticks come last: the last phase's IPC is C's
    last = phases[-1].values
    assert last["PAPI_TOT_INS"] / last["PAPI_TOT_CYC"] > 1.5


def test_advisor_takes_memory_share_and_bound_from_counters(soft: Path) -> None:
    tiers = with_fast_capacity(load_machine(XEON_MAX), GIB).tiers
    p = build_problem(load_sites(soft / "sites.csv"), tiers)
    v = dict(zip(p.site_ids.tolist(), p.access_values()[:, 0].tolist(), strict=True))
    gain = 1 - 1.0 / 5.3                  # HBM's streamed gain on this machine file
    # A: the sampler said scattered, its misses say bandwidth-bound: valued as streamed,
    # for the 75 % of its time stalled on memory
    assert v[A] == pytest.approx(TICKS[A] * TICK * 0.75 * gain)
    assert v[B] == pytest.approx(0.0)     # latency-bound: HBM does not shorten it
    assert v[C] == pytest.approx(0.0)     # below the bound too
    assert p.counted is not None
    assert p.memory_factor is not None
    assert p.memory_factor.tolist() == pytest.approx([0.75, 0.9, 0.05])


def test_the_machine_files_bound_decides_bandwidth_bound(soft: Path, tmp_path: Path) -> None:
    """The fallback tier's bandwidth_bound_gbs moves the line: above A's 4 GB/s it is
    latency-bound and worth nothing in HBM; below B's 0.32 GB/s B is streamed too."""
    text = XEON_MAX.read_text()
    assert "bandwidth_bound_gbs" in text        # the shipped file gives its own
    v = {}
    for gbs in (5.0, 0.3):
        m = tmp_path / f"bound-{gbs}.toml"
        m.write_text("\n".join(line for line in text.splitlines()
                               if not line.startswith("bandwidth_bound_gbs"))
                     + f"\nbandwidth_bound_gbs = {gbs}\n")
        p = build_problem(load_sites(soft / "sites.csv"),
                          with_fast_capacity(load_machine(m), GIB).tiers)
        v[gbs] = dict(zip(p.site_ids.tolist(), p.access_values()[:, 0].tolist(), strict=True))
    gain = 1 - 1.0 / 5.3
    assert v[5.0][A] == pytest.approx(0.0) and v[5.0][B] == pytest.approx(0.0)
    assert v[0.3][A] == pytest.approx(TICKS[A] * TICK * 0.75 * gain)
    assert v[0.3][B] == pytest.approx(TICKS[B] * TICK * 0.9 * gain)
    out = tmp_path / "out" / "placement.txt"
    r = subprocess.run([str(HMTUNE), "advise", str(soft), "--machine",
                        str(tmp_path / "bound-0.3.toml"), "--mem", "100M", "--whole-objects",
                        "-o", str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    count, rows = counted_table(tmp_path / "out" / "report.txt")
    assert count == 3
    assert {int(row[0]): row[4] for row in rows} == {A: "bandwidth", B: "bandwidth",
                                                     C: "latency"}


@pytest.mark.parametrize("case", ["software", "few"])
def test_counters_that_value_no_site_are_said(tmp_path: Path, case: str) -> None:
    """counters.csv without stall or miss counts (PAPI's software events, as on a host
    without a PMU), or with them over too few samples of each site: every site is
    valued from the sampler alone, as without counters.csv, and the report says why."""
    soft_names = {CYC: "Task clock (perf::TASK-CLOCK)", INS: "Page faults (perf::PAGE-FAULTS)",
                  L3: "Context switches (perf::CONTEXT-SWITCHES)",
                  MEM: "CPU migrations (perf::CPU-MIGRATIONS)"}
    few = {A: 9, B: 9, C: 9}
    tr = soft_trace(few if case == "few" else TICKS)
    r = analyze(tr.write(tmp_path, pcf=pcf(soft_names if case == "software" else NAMES)),
                tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "counters.csv").is_file()
    tiers = with_fast_capacity(load_machine(XEON_MAX), GIB).tiers
    p = build_problem(load_sites(tmp_path / "sites.csv"), tiers)
    assert p.counted is None and p.memory_factor is None
    v = dict(zip(p.site_ids.tolist(), p.access_values()[:, 0].tolist(), strict=True))
    assert v[A] == pytest.approx(0.0) and v[B] > 0         # the sampler's kinds decide
    r = subprocess.run([str(HMTUNE), "advise", str(tmp_path), "--machine", str(XEON_MAX),
                        "--mem", "100M", "--whole-objects"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    report = (tmp_path / "report.txt").read_text().splitlines()
    [line] = [x for x in report if x.startswith("counters:")]
    assert "sampler alone" in line
    assert ("perf::TASK-CLOCK" in line) == (case == "software")
    assert not any(x.startswith("sites valued from counters") for x in report)


def test_without_counters_the_sampler_alone_decides(soft: Path, tmp_path: Path) -> None:
    for name in ("sites.csv", "allocs.csv", "profile.csv", "trace.prv", "trace.pcf"):
        (tmp_path / name).write_bytes((soft / name).read_bytes())
    tiers = with_fast_capacity(load_machine(XEON_MAX), GIB).tiers
    p = build_problem(load_sites(tmp_path / "sites.csv"), tiers)
    v = dict(zip(p.site_ids.tolist(), p.access_values()[:, 0].tolist(), strict=True))
    assert p.counted is None and p.memory_factor is None
    assert v[A] == pytest.approx(0.0) and v[B] > 0


def test_advise_places_the_counted_bandwidth_bound_array_and_says_so(soft: Path) -> None:
    r = subprocess.run([str(HMTUNE), "advise", str(soft), "--machine", str(XEON_MAX),
                        "--mem", "100M", "--whole-objects"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    placed = [line for line in (soft / "placement.txt").read_text().splitlines()
              if line and not line.startswith("#")]
    assert any("app+0x10" in line for line in placed)
    assert not any("app+0x20" in line for line in placed)
    count, rows = counted_table(soft / "report.txt")
    assert count == 3
    assert sorted(int(row[0]) for row in rows) == [A, B, C]


def test_a_pebs_reading_is_shared_by_the_samples_before_it(tmp_path: Path) -> None:
    """PEBS/IBS (and Extrae): readings at the sampler's drain, after the samples of the
    interval; each takes a share by count."""
    tr = PrvText(dur=1)
    tr.event(1, ev.HM_EV_SAMPLER, ev.HM_SAMPLER_PEBS)
    tr.alloc(10, SIZE, A, BASE[A])
    tr.alloc(20, SIZE, B, BASE[B])
    reading(tr, 100, (0, 0, 0, 0), first=True)
    for k, (t, site) in enumerate([(200, A), (300, A), (400, B)]):
        sample(tr, t, site, k)
    reading(tr, 1000, (900, 300, 30, 600))
    sample(tr, 1100, B, 9)               # after the last reading: takes nothing
    prv = tr.write(tmp_path, pcf=pcf())
    r = analyze(prv, tmp_path)
    assert r.returncode == 0, r.stderr
    rows = {r.site_id: r for r in read_counters(tmp_path / "counters.csv").scope("site")}
    assert rows[A].samples == 2 and rows[A].values["PAPI_TOT_CYC"] == 600
    assert rows[B].samples == 1 and rows[B].values["PAPI_L3_TCM"] == 10
    assert rows[A].ns == 600 and rows[B].ns == 300


def test_a_trace_without_counters_has_no_counters_csv(tmp_path: Path) -> None:
    tr = PrvText(dur=1)
    tr.alloc(10, SIZE, A, BASE[A])
    sample(tr, 100, A, 0)
    (tmp_path / "counters.csv").write_text("an older one\n")
    r = analyze(tr.write(tmp_path, pcf=pcf()), tmp_path)
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "counters.csv").exists()
    assert read_csv(tmp_path / "sites.csv")


@pytest.mark.parametrize(("line", "why"), [
    ("site,0,,3,sideways,,,,20,1,1,1,1,1", "kind 'sideways'"),
    ("site,0,,3,streaming,,,,x,1,1,1,1,1", "samples 'x' is not a count"),
    ("tree,0,,3,streaming,,,,20,1,1,1,1,1", "scope 'tree'"),
    ("site,0,,3,streaming,,,,20,1,1,1,1", "13 fields"),
])
def test_a_bad_counters_csv_is_refused_in_one_line(soft: Path, tmp_path: Path, line: str,
                                                   why: str) -> None:
    for name in ("sites.csv", "allocs.csv", "profile.csv", "trace.prv", "trace.pcf"):
        (tmp_path / name).write_bytes((soft / name).read_bytes())
    good = (soft / "counters.csv").read_text().splitlines()
    (tmp_path / "counters.csv").write_text("\n".join([*good[:2], line, *good[2:]]) + "\n")
    r = subprocess.run([str(HMTUNE), "advise", str(tmp_path), "--machine", str(XEON_MAX),
                        "--mem", "100M"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 1
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and "counters.csv:3:" in err[0] and why in err[0]
    assert not (tmp_path / "placement.txt").exists()


def test_a_new_trace_moves_an_older_counters_csv_aside(soft: Path) -> None:
    """hmtune trace -o DIR sets an earlier trace's outputs aside in DIR/stale/, its
    counters.csv among them."""
    from hmtune.analyze.traceid import stale_outputs, written_by_hmtune

    assert written_by_hmtune(soft / "counters.csv")
    assert soft / "counters.csv" in stale_outputs(soft, "0000000000000000")


@pytest.mark.parametrize("value", ["0", "1001", "-3", "x"])
def test_a_bad_phase_count_is_refused_before_anything_is_written(tmp_path: Path,
                                                                 value: str) -> None:
    prv = soft_trace().write(tmp_path / "t", pcf=pcf())
    out = tmp_path / "out"
    r = analyze(prv, out, "--phases", value)
    assert r.returncode == 2
    assert "--phases" in r.stderr and len(r.stderr.strip().splitlines()) <= 3
    assert not out.exists() or not any(out.iterdir())


def test_phases_cut_the_run_as_asked(tmp_path: Path) -> None:
    prv = soft_trace().write(tmp_path, pcf=pcf())
    r = analyze(prv, tmp_path, "--phases", "1")
    assert r.returncode == 0, r.stderr
    data = read_counters(tmp_path / "counters.csv")
    [p] = data.scope("phase")
    [th] = data.scope("thread")
    assert p.readings == th.readings and p.values == th.values
    assert (p.start_ns, p.end_ns) == (0, int(data.meta["end_ns"]))


def test_a_counters_csv_of_another_trace_is_refused(soft: Path, tmp_path: Path) -> None:
    from hmtune.analyze.counters import CountersFormatError, counters_next_to

    for name in ("sites.csv", "counters.csv"):
        (tmp_path / name).write_bytes((soft / name).read_bytes())
    text = (tmp_path / "counters.csv").read_text()
    tid = read_counters(tmp_path / "counters.csv").trace_id
    assert tid
    (tmp_path / "counters.csv").write_text(text.replace(tid, "0123456789abcdef", 1))
    with pytest.raises(CountersFormatError, match=r"counters\.csv:1: made from another trace"):
        counters_next_to(tmp_path / "sites.csv")
    assert counters_next_to(soft) is not None
