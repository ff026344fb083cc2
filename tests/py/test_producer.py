"""The software sampler's producer-load rule (issue 43): a sample whose instruction has
no memory operand gets the address of the load whose result that instruction
consumed — on hand-made streams (finalize's counts and events, analyze's scan) and
on a real program whose time is divisions by values loaded from one hot array
(tests/programs/consume_hot.c)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import rawstream as rs
from tracemodel import PROGRAMS, ROOT, check, load, marker_line, trace

from hmtune.analyze.prv import parse_pcf
from hmtune.core import events as hev

FIN = ROOT / "build" / "bin" / "hmtune-finalize"
HMTUNE = ROOT / "bin" / "hmtune"
SCAN = ROOT / "build" / "bin" / "hmtune-prvscan"
APP = PROGRAMS / "consume_hot"
SRC = ROOT / "tests" / "programs" / "consume_hot.c"
BASE = 0x555555554000
P = 0x7F0000100000
# enum hms_why and enum hms_behind (collect/hmc_stream.h, docs/formats.md §2)
INT, VEC = 1, 2
OK, WRITTEN, NO_LOAD = 1, 4, 6


def behind(code: int, dist: int = 0) -> int:
    """iclass bits 8..15: the producer-load rule's outcome and distance."""
    return code << 8 | dist << 12


def test_finalize_counts_producer_samples(tmp_path: Path) -> None:
    s = rs.Stream(1).thread(1000, 100).stack(1, [(1, 0x1100)])
    s.call(1, 1, 1100, 1110, 65536, P)
    smp = rs.Stream(1 | rs.SAMPLE_STREAM).thread(1000, 100, (0x7FFF0000, 0x7FFF8000))
    ip = BASE + 0x1150
    smp.sample(1200, ip, P + 8, flags=rs.ADDR_OK | rs.why(INT), iclass=behind(OK, 3))
    smp.sample(1210, ip, P + 16, flags=rs.ADDR_OK | rs.why(VEC),
               iclass=rs.VECTOR | behind(OK, 1))
    smp.sample(1220, ip, 0, flags=rs.NO_MEMOP | rs.why(INT), iclass=behind(NO_LOAD))
    smp.sample(1230, ip, 0, flags=rs.NO_MEMOP | rs.why(INT), iclass=behind(WRITTEN))
    # the rule refused, the look ahead found the next access: not a producer sample
    smp.sample(1240, ip, P + 24, flags=rs.ADDR_OK | rs.AHEAD | rs.why(INT) | rs.look(1),
               iclass=behind(NO_LOAD))
    smp.sample(1250, ip, P + 32)                                            # direct
    raw = tmp_path / "raw"
    raw.mkdir()
    rs.write(raw / "h.100.0.hmr", [rs.proc_record(100, 1000), rs.module_record(
        1, str(APP), BASE, BASE, BASE + 0x5000), rs.sampler_record(3, "soft 250 Hz producer"),
        rs.end_record(10_000)], [s, smp])
    r = subprocess.run([str(FIN), str(raw), "-o", str(tmp_path / "t"), "--summary",
                        str(tmp_path / "s.json")], capture_output=True)
    assert r.returncode == 0, r.stderr
    assert check(tmp_path / "t.prv") == []
    t = load(tmp_path / "t.prv")
    site = t.allocs()[0].site
    x = t.samples
    assert [s.producer for s in x] == [3, 1, None, None, None, None]
    assert [s.ahead for s in x] == [None] * 4 + [1, None]
    assert [s.obj for s in x] == [site, site, 0, 0, site, site]
    # the class bits stay those of the load; a producer sample is a memory access
    assert x[1].insn == rs.VECTOR and x[0].insn == 0
    assert [s.kind for s in x[2:4]] == [4, 4] and x[0].kind in (1, 2)
    rec = json.loads((tmp_path / "s.json").read_text())["address_recovery"]
    assert rec["producer"] == {"heap": 2} and rec["direct"] == {"heap": 1}
    assert rec["producer_distance"] == [0, 1, 0, 1]
    assert rec["producer_refused"] == {"register_written": 1, "no_load": 1}
    assert rec["before"] == {"no_memop_int": 4, "no_memop_vector": 1}
    assert rec["after"] == {"no_memop_int": 2}
    pcf = parse_pcf(tmp_path / "t.pcf")
    assert pcf.values[hev.HM_EV_SAMPLE_RECOVERED][hev.HM_SAMPLE_RECOVERED_PRODUCER]
    assert str(hev.HM_EV_SAMPLE_PRODUCER) in (tmp_path / "t.pcf").read_text().split()
    # the scanner attributes them like direct samples (the look-ahead one only with
    # --lookahead), and counts them
    scan = scan_json(tmp_path / "t.prv", tmp_path / "scan")
    assert scan["producer_samples"] == 2 and scan["lookahead_samples"] == 1
    assert scan["classes"][str(hev.HM_SAMPLE_CLASS_HEAP)] == 3


def scan_json(prv: Path, out: Path) -> dict:
    r = subprocess.run([str(SCAN), str(prv), "-o", str(out)], capture_output=True)
    assert r.returncode == 0, r.stderr
    return json.loads((out / "scan.json").read_text())


def run_hot(tmp: Path, producer: bool, verify: bool = False) -> tuple[object, dict, range]:
    env = dict(os.environ)
    env["HMTUNE_SAMPLE_PRODUCER"] = "1" if producer else "0"
    if verify:
        env["HMTUNE_SAMPLE_VERIFY"] = "1"
    r = trace(tmp, str(APP), "0.6", extra=("--sampler", "soft"), env=env)
    assert r.returncode == 0, r.stderr
    m = re.search(rb"hot=0x([0-9a-f]+) size=(\d+)", r.stdout)
    assert m, r.stdout
    lo = int(m[1], 16)
    assert check(tmp / "trace.prv") == []
    return (load(tmp / "trace.prv"), json.loads((tmp / "trace.summary.json").read_text()),
            range(lo, lo + int(m[2])))


def addressed(t) -> int:
    return sum(s.addr is not None for s in t.samples)


def test_producer_load_recovers_the_hot_array(tmp_path: Path) -> None:
    off, s_off, hot_off = run_hot(tmp_path / "off", False)
    on, s_on, hot = run_hot(tmp_path / "on", True)
    assert "producer" not in s_off["sampler"] and "producer" in s_on["sampler"]
    assert all(s.producer is None for s in off.samples)
    n_off, n_on = len(off.samples), len(on.samples)
    assert n_off >= 50 and n_on >= 50, (n_off, n_on)
    # the loop's time is divisions (and what consumes their result): without the rule
    # almost no sample has an address, the look ahead meeting the loop's branch first
    assert addressed(off) <= 0.2 * n_off, (addressed(off), n_off)
    assert sum(s.addr in hot_off for s in off.samples) <= 0.1 * n_off
    # with it, the samples after the division (the instruction that read the loaded
    # register) get the load's address: in the array, from the loop's load, 3
    # instructions before the division
    recovered = [s for s in on.samples if s.producer is not None]
    assert len(recovered) >= 0.25 * n_on, (len(recovered), n_on)
    assert all(s.addr in hot and s.cls == 1 and not s.store for s in recovered)
    line = marker_line(SRC, "hot")
    (site,) = (c.site for c in on.allocs() if line in on.fileline[c.site])
    assert all(s.obj == site for s in recovered)
    assert all(s.producer == 3 and SRC.name in s.line for s in recovered)
    assert sum(s.addr in hot for s in on.samples) >= \
        sum(s.addr in hot_off for s in off.samples) + 0.25 * n_on
    # the summary's counts add up: before = after + recovered; what stays without an
    # address is compute (the division's result consumed), said by reason
    rec, n = s_on["address_recovery"], s_on["samples"]
    assert sum(rec["producer"].values()) == len(recovered) == sum(rec["producer_distance"])
    assert sum(rec["after"].values()) == n["no_address"]
    gained = sum(sum(rec[k].values()) for k in ("producer", "lookahead", "breakpoint", "string"))
    assert sum(rec["before"].values()) == sum(rec["after"].values()) + gained
    refused = rec["producer_refused"]
    assert refused.get("no_load", 0) >= 0.8 * sum(refused.values()), refused
    # the scanner counts them, and tells compute apart from memory: what has no
    # address is the instructions without memory operand, nearly all of it
    scan = scan_json(tmp_path / "on" / "trace.prv", tmp_path / "scan")
    assert scan["producer_samples"] == len(recovered)
    assert scan["classes"][str(hev.HM_SAMPLE_CLASS_HEAP)] >= len(recovered)
    compute = scan["kind_samples"][str(hev.HM_ACCESS_KIND_COMPUTE)]
    assert 0.8 * n["no_address"] <= compute <= n["no_address"], (compute, n)
    # and analyze writes it: samples_compute on sites.csv's first line
    out = tmp_path / "an"
    a = subprocess.run([str(HMTUNE), "analyze", str(tmp_path / "on"), "-o", str(out),
                        "--top", "0"], capture_output=True, text=True)
    assert a.returncode == 0, a.stderr
    first = (out / "sites.csv").read_text().splitlines()[0]
    assert f"samples_compute={compute}" in first.split(), first


def test_producer_addresses_are_the_executed_ones(tmp_path: Path) -> None:
    """HMTUNE_SAMPLE_VERIFY=1: at the producer load's next execution a breakpoint gives
    the address it computes, and a second one at the sample's rip applies the rule
    there: it must name that load and that address."""
    t, s, hot = run_hot(tmp_path, True, verify=True)
    v = s["address_recovery"]["producer_verified"]
    assert v["different"] == 0 and v["same"] >= 20, v
    checked = [x for x in t.samples if x.verified and x.producer is not None]
    assert checked and all(x.verified in (1, 3) for x in checked)
    assert sum(x.verified == 1 for x in checked) == v["same"]
    assert all(x.addr in hot for x in checked)
    # and the look-ahead ones are still counted apart
    assert "producer_verified" not in run_hot(tmp_path / "plain", True)[1]["address_recovery"]
