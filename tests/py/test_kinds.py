"""Access kinds (event 41000035, issue 43): finalize's classifier on hand-made streams,
then end to end on tests/programs/kinds (a streamed array, a chased one, a lock array
hammered by atomics), from the trace to sites.csv's weight_streaming,
weight_scattered and weight_sync columns.

The classifier decides streaming or scattered per (task, thread, object) from the
steps between consecutive sampled addresses (steps under 64 bytes are none):
streaming when |forward - backward| > 2 sqrt(forward + backward) with at least 4
steps, scattered otherwise; with fewer steps the instruction class decides (vector or
string: streaming, else scattered). Atomic or spinning instructions are
synchronization, and samples without an address whose instruction has no memory
operand are compute."""

from __future__ import annotations

import csv
import math
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest
import rawstream as rs
from test_attribution import BASE, P, Q, finalize, main_stream
from tracemodel import HMTUNE, PROGRAMS, ROOT, load, marker_line

import hmtune.core.events as hev
from hmtune.analyze.sites import FOLDED_STATICS
from hmtune.core.sitesfile import parse_version_line

STREAMING, SCATTERED, SYNC, COMPUTE = (hev.HM_ACCESS_KIND_STREAMING, hev.HM_ACCESS_KIND_SCATTERED,
                                       hev.HM_ACCESS_KIND_SYNC, hev.HM_ACCESS_KIND_COMPUTE)
IP = BASE + 0x1150
WHY_NO_MEMOP_INT, WHY_SYSCALL = hev.HM_SAMPLE_WHY_NO_MEMOP_INT, hev.HM_SAMPLE_WHY_SYSCALL


def two_blocks() -> rs.Stream:
    s = main_stream()
    s.call(1, 1, 1100, 1110, 1 << 20, P)
    s.call(1, 2, 1120, 1130, 1 << 20, Q)
    return s


def samples_at(offsets: list[int], base: int = P, iclass: int | None = 0,
               tid: int = 100, sid: int = 1, t0: int = 1200) -> rs.Stream:
    smp = rs.Stream(sid | rs.SAMPLE_STREAM).thread(1000, tid, (0x7FFF0000, 0x7FFF8000))
    for i, off in enumerate(offsets):
        smp.sample(t0 + 10 * i, IP, base + off, iclass=iclass)
    return smp


def kinds(t: object) -> list[int]:
    return [x.kind for x in t.samples]


def test_steps_in_one_direction_are_streaming(tmp_path: Path) -> None:
    fwd = [4096 * i for i in range(12)]
    t = finalize(tmp_path, [two_blocks(), samples_at(fwd)])
    assert kinds(t) == [STREAMING] * 12


def test_steps_backward_are_streaming_too(tmp_path: Path) -> None:
    bwd = [4096 * (12 - i) for i in range(12)]
    t = finalize(tmp_path, [two_blocks(), samples_at(bwd)])
    assert kinds(t) == [STREAMING] * 12


def test_steps_both_ways_are_scattered(tmp_path: Path) -> None:
    # 11 steps: 6 forward, 5 backward: |6 - 5| <= 2 sqrt(11)
    zigzag = [0, 90000, 20000, 70000, 5000, 99000, 30000, 60000, 10000, 80000, 40000, 50000]
    t = finalize(tmp_path, [two_blocks(), samples_at(zigzag)])
    assert kinds(t) == [SCATTERED] * 12


def test_a_fair_coin_margin_is_not_enough(tmp_path: Path) -> None:
    def seq(nfwd: int, nbwd: int) -> list[int]:
        """Addresses whose steps are nfwd forward, with nbwd backward among them."""
        steps = [32768] * nfwd
        for k in range(nbwd):
            steps.insert(3 + 4 * k, -8192)
        out = [0]
        for st in steps:
            out.append(out[-1] + st)
        return out
    # 10 forward, 3 backward: 10 - 3 = 7 > 2 sqrt(13) = 7.21 fails: scattered
    t = finalize(tmp_path, [two_blocks(), samples_at(seq(10, 3))])
    assert set(kinds(t)) == {SCATTERED}
    # 11 forward, 3 backward: 8 > 2 sqrt(14) = 7.48: streaming
    (tmp_path / "b").mkdir()
    t = finalize(tmp_path / "b", [two_blocks(), samples_at(seq(11, 3))])
    assert set(kinds(t)) == {STREAMING}


def test_small_steps_are_no_steps(tmp_path: Path) -> None:
    # |delta| < 64 bytes: no step at all, so the instruction class decides
    near = [8 * i for i in range(8)]
    t = finalize(tmp_path, [two_blocks(), samples_at(near, iclass=0)])
    assert kinds(t) == [SCATTERED] * 8
    (tmp_path / "v").mkdir()
    t = finalize(tmp_path / "v", [two_blocks(), samples_at(near, iclass=rs.VECTOR)])
    assert kinds(t) == [STREAMING] * 8
    assert {x.insn for x in t.samples} == {rs.VECTOR}


def test_strided_instructions_stream_whatever_the_steps(tmp_path: Path) -> None:
    """Passes shorter than two sampling periods: consecutive samples fall in different
    passes and step both ways; a strided instruction (its address register stepped by
    a constant in its loop) still streams, a scalar one does not, nor a vector one."""
    zigzag = [0, 90000, 20000, 70000, 5000, 99000, 30000, 60000, 10000, 80000, 40000, 50000]
    t = finalize(tmp_path, [two_blocks(), samples_at(zigzag, iclass=rs.STRIDE)])
    assert kinds(t) == [STREAMING] * 12
    assert {x.insn for x in t.samples} == {rs.STRIDE}
    for i, iclass in enumerate((0, rs.VECTOR)):
        (tmp_path / str(i)).mkdir()
        t = finalize(tmp_path / str(i), [two_blocks(), samples_at(zigzag, iclass=iclass)])
        assert kinds(t) == [SCATTERED] * 12


@pytest.mark.parametrize(("iclass", "want"), [(rs.VECTOR, STREAMING), (rs.STRING, STREAMING),
                                              (rs.STRIDE, STREAMING),
                                              (rs.CHASE, SCATTERED), (0, SCATTERED)])
def test_few_steps_go_by_the_instruction(tmp_path: Path, iclass: int, want: int) -> None:
    t = finalize(tmp_path, [two_blocks(), samples_at([0, 4096, 8192], iclass=iclass)])
    assert kinds(t) == [want] * 3
    assert [x.insn for x in t.samples] == [iclass] * 3


def test_atomic_and_spin_are_synchronization_whatever_the_object(tmp_path: Path) -> None:
    smp = rs.Stream(1 | rs.SAMPLE_STREAM).thread(1000, 100, (0x7FFF0000, 0x7FFF8000))
    for i in range(12):                            # a streaming sequence in P ...
        cls = rs.ATOMIC if i == 5 else rs.SPIN | rs.ATOMIC if i == 7 else 0
        smp.sample(1200 + 10 * i, IP, P + 4096 * i, iclass=cls)
    t = finalize(tmp_path, [two_blocks(), smp])
    want = [STREAMING] * 12
    want[5] = want[7] = SYNC                       # ... but its atomic samples
    assert kinds(t) == want
    assert t.samples[7].insn == rs.SPIN | rs.ATOMIC


def test_pebs_locked_access_is_synchronization(tmp_path: Path) -> None:
    smp = rs.Stream(1 | rs.SAMPLE_STREAM).thread(1000, 100, (0x7FFF0000, 0x7FFF8000))
    locked = 2 << 24                               # data_src mem_lock: PERF_MEM_LOCK_LOCKED
    smp.sample(1200, IP, P + 64, src=1, data_src=locked)
    smp.sample(1210, IP, P + 128, src=1, data_src=1 << 24)   # PERF_MEM_LOCK_NA
    t = finalize(tmp_path, [two_blocks(), smp])
    assert kinds(t) == [SYNC, SCATTERED]
    assert [x.insn for x in t.samples] == [rs.ATOMIC, 0]


def test_no_address_is_compute_only_without_a_memory_operand(tmp_path: Path) -> None:
    smp = rs.Stream(1 | rs.SAMPLE_STREAM).thread(1000, 100, (0x7FFF0000, 0x7FFF8000))
    smp.sample(1200, IP, 0, flags=rs.NO_MEMOP | rs.why(WHY_NO_MEMOP_INT), iclass=0)
    smp.sample(1210, IP, 0, flags=rs.NO_MEMOP | rs.why(WHY_SYSCALL), iclass=0)
    smp.sample(1220, IP, 0, flags=rs.NO_MEMOP | rs.why(hev.HM_SAMPLE_WHY_HINT), iclass=rs.SPIN)
    t = finalize(tmp_path, [two_blocks(), smp])
    assert kinds(t) == [COMPUTE, 0, SYNC]


def test_each_thread_and_object_is_decided_alone(tmp_path: Path) -> None:
    # two threads stream through P in turn and one of them jumps to Q between its
    # samples: mixed together the addresses go back and forth, apart each streams
    s = two_blocks()
    a = rs.Stream(1 | rs.SAMPLE_STREAM).thread(1000, 100, (0x7FFF0000, 0x7FFF8000))
    b = rs.Stream(2 | rs.SAMPLE_STREAM).thread(1000, 101, (0x7FFE0000, 0x7FFE8000))
    s2 = rs.Stream(2).thread(1000, 101)
    for i in range(12):
        a.sample(1200 + 20 * i, IP, P + 4096 * i, iclass=0)
        a.sample(1205 + 20 * i, IP, Q + 500000 - 4096 * i, iclass=0)
        b.sample(1210 + 20 * i, IP, P + 900000 - 4096 * i, iclass=0)
    t = finalize(tmp_path, [s, s2, a, b])
    assert len(t.samples) == 36
    assert set(kinds(t)) == {STREAMING}


def test_records_without_a_class_are_read(tmp_path: Path) -> None:
    # the older, shorter sample record: class 0, kind from the addresses
    t = finalize(tmp_path, [two_blocks(), samples_at([4096 * i for i in range(8)], iclass=None)])
    assert kinds(t) == [STREAMING] * 8
    assert {x.insn for x in t.samples} == {0}


# ---- end to end --------------------------------------------------------------------

APP = PROGRAMS / "kinds"
SRC = ROOT / "tests" / "programs" / "kinds.c"
Z = 3.0                  # standard deviations of a sample count a bound allows
MIN_SAMPLES = 30         # per site: fewer tell nothing
COLUMN = {STREAMING: "weight_streaming", SCATTERED: "weight_scattered", SYNC: "weight_sync"}


def soft_sampler_runs() -> bool:
    return subprocess.run([str(ROOT / "build" / "bin" / "hmtune-probe"), "soft"],
                          capture_output=True).returncode == 0


def read_sites(d: Path) -> tuple[dict[str, str], list[dict[str, str]]]:
    with (d / "sites.csv").open(newline="") as f:
        meta = parse_version_line(f.readline(), "sites", 2, d / "sites.csv")
        return meta, list(csv.DictReader(f))


@pytest.mark.skipif(not soft_sampler_runs(), reason="the software sampler cannot run here")
def test_each_site_has_the_kind_of_its_accesses(tmp_path: Path) -> None:
    d = tmp_path / "out"
    r = subprocess.run([str(HMTUNE), "trace", "-q", "--sampler", "soft", "-o", str(d), "--",
                        str(APP)], capture_output=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode().split()[-1] == "ok"
    a = subprocess.run([str(HMTUNE), "analyze", str(d)], capture_output=True, timeout=600)
    assert a.returncode == 0, a.stderr
    meta, rows = read_sites(d)
    t = load(d / "trace.prv")

    # The trace's own kinds, per object, of the samples sites.csv counts (by default
    # look-ahead addresses are not attributed to objects).
    by_obj: dict[int, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    count: dict[int, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    for x in t.samples:
        if x.ahead is None and x.obj:
            by_obj[x.obj][x.kind] += x.weight
            count[x.obj][x.kind] += 1
    assert int(meta["samples_compute"]) == sum(1 for x in t.samples if x.kind == COMPUTE)

    sites = {}
    for name in ("streamed", "chased", "locks"):
        where = marker_line(SRC, name).rsplit("/", 1)[-1]
        found = [s for s in rows if s["callstack"].split(" > ")[0].endswith(where)]
        assert len(found) == 1, (name, where)
        sites[name] = found[0]
    # sites.csv agrees with the trace per site; its row of statics under a page (site
    # id 2) with the sum over the objects it folds, those that have no row of their own
    folded = set(by_obj) - {int(s["site_id"]) for s in rows}
    for s in rows:
        sid = int(s["site_id"])
        objs = folded if sid == FOLDED_STATICS else {sid}
        for kind, col in COLUMN.items():
            assert int(s[col]) == sum(by_obj[o][kind] for o in objs), (s["label"], col)

    for name, kind in (("streamed", STREAMING), ("chased", SCATTERED), ("locks", SYNC)):
        n = count[int(sites[name]["site_id"])]
        total = sum(n.values())
        assert total >= MIN_SAMPLES, (name, dict(n))
        # a majority beyond the noise of the counts: the sign test at Z
        rest = total - n[kind]
        assert n[kind] - rest > Z * math.sqrt(total), (name, dict(n))
        w = sites[name]
        assert int(w[COLUMN[kind]]) * 2 > int(w["weight"]), (name, w)
    lock_obj = int(sites["locks"]["site_id"])
    atomic = [x for x in t.samples if x.obj == lock_obj and x.insn & rs.ATOMIC]
    assert len(atomic) >= count[lock_obj][SYNC] // 2      # they were seen as atomic
