"""collect/ samplers on real programs: the software sampler's accuracy, the choice
of sampler and its fallback, allocation-only traces without a sampler."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from tracemodel import PROGRAMS, ROOT, check, load, marker_line, trace

SRC = ROOT / "tests" / "programs" / "four_arrays.c"
PROBE = ROOT / "build" / "bin" / "hmtune-probe"
ARRAYS = ("big_random", "big_stream", "mid_random", "small_hot")


def site_weights(t, loads_only: bool = True) -> dict[str, float]:
    """Sampled weight per array of four_arrays (load samples only: the arrays are
    initialized with stores, and the timed loops only load)."""
    by_site = {}
    for name in ARRAYS:
        line = marker_line(SRC, name)
        (site,) = (c.site for c in t.allocs() if line in t.fileline[c.site])
        by_site[site] = name
    w = dict.fromkeys(ARRAYS, 0.0)
    for s in t.samples:
        if s.obj in by_site and not (loads_only and s.store):
            w[by_site[s.obj]] += s.weight
    return w


def test_soft_sampler_shares_match_time_shares(tmp_path: Path) -> None:
    r = trace(tmp_path, str(PROGRAMS / "four_arrays"), "separate", "0.6",
              extra=("--sampler", "soft"))
    assert r.returncode == 0, r.stderr
    cpu = {k.removeprefix("cpu_"): float(v) for k, v in
           (line.split("=") for line in r.stdout.decode().split()) if k.startswith("cpu_")}
    t = load(tmp_path / "trace.prv")
    assert check(tmp_path / "trace.prv") == []
    w = site_weights(t)
    total_w, total_t = sum(w.values()), sum(cpu.values())
    assert total_w > 0
    for name in ARRAYS:
        share_w, share_t = 100 * w[name] / total_w, 100 * cpu[name] / total_t
        assert abs(share_w - share_t) <= 5, (name, round(share_w, 1), round(share_t, 1), w, cpu)
    # the weight is the sampled CPU time in ns: the loops' weight is close to their time
    assert 0.7 * total_t * 1e9 <= total_w <= 1.3 * total_t * 1e9


def test_soft_sampler_ranks_random_arrays_first(tmp_path: Path) -> None:
    r = trace(tmp_path, str(PROGRAMS / "four_arrays"), "mixed", "0.6",
              extra=("--sampler", "soft"))
    assert r.returncode == 0, r.stderr
    w = site_weights(load(tmp_path / "trace.prv"))
    ranked = sorted(w, key=w.get, reverse=True)
    assert set(ranked[:2]) == {"big_random", "mid_random"}, w


def test_samples_on_every_thread(tmp_path: Path) -> None:
    r = trace(tmp_path, str(PROGRAMS / "four_arrays"), "threads", "0.3", "64",
              extra=("--sampler", "soft"))
    assert r.returncode == 0
    t = load(tmp_path / "trace.prv")
    assert check(tmp_path / "trace.prv") == []
    assert t.nthreads == [4]                               # main + 3 workers
    workers = {s.thread for s in t.samples} - {1}
    assert len(workers) == 3
    for w in workers:                                      # each worker reads the arrays
        assert sum(1 for s in t.samples if s.thread == w and s.cls == 1) >= 20
    assert all(s.func != "??" for s in t.samples if s.cls == 1)


def test_no_sampler_gives_an_allocation_only_trace(tmp_path: Path) -> None:
    r = trace(tmp_path, str(PROGRAMS / "allfamily"), extra=("--sampler", "none"))
    assert r.returncode == 0 and r.stdout == b"ok\n"
    t = load(tmp_path / "trace.prv")
    assert check(tmp_path / "trace.prv") == []
    assert t.samples == [] and t.one(110000)


def probe(arg: str, **env: str) -> tuple[int, dict[str, str]]:
    r = subprocess.run([str(PROBE), arg], capture_output=True, text=True,
                       env=dict(os.environ, **env))
    return r.returncode, dict(line.split("=", 1) for line in r.stdout.splitlines())


def fake_sysfs(root: Path, vendor: str) -> Path:
    dev = root / "bus" / "event_source" / "devices"
    if vendor == "intel":
        cpu = dev / "cpu"
        (cpu / "events").mkdir(parents=True)
        (cpu / "format").mkdir()
        (cpu / "type").write_text("4\n")
        (cpu / "events" / "mem-loads").write_text("event=0xcd,umask=0x1,ldlat=3\n")
        (cpu / "events" / "mem-stores").write_text("event=0xd0,umask=0x82\n")
        for name, spec in (("event", "config:0-7"), ("umask", "config:8-15"),
                           ("ldlat", "config1:0-15")):
            (cpu / "format" / name).write_text(spec + "\n")
    elif vendor == "amd":
        ibs = dev / "ibs_op"
        (ibs / "format").mkdir(parents=True)
        (ibs / "type").write_text("11\n")
        (ibs / "format" / "cnt_ctl").write_text("config:19\n")
        (ibs / "format" / "l3missonly").write_text("config:16\n")
    else:
        dev.mkdir(parents=True)
    return root


def test_probe_here_falls_back_to_soft() -> None:
    rc, out = probe("auto")
    assert rc == 0 and out["sampler"] == "soft"
    assert "PEBS" in out["why"] and "IBS" in out["why"]
    assert probe("pebs")[0] == 3 and probe("ibs")[0] == 3
    assert probe("none") == (0, {"sampler": "none", "why": probe("none")[1]["why"]})


@pytest.mark.parametrize("vendor", ["intel", "amd"])
def test_probe_pmu_that_looks_present_but_cannot_open(tmp_path: Path, vendor: str) -> None:
    """Detection finds the PMU in a (fake) sysfs; opening it fails here (no PMU in
    this VM), so auto falls back to the software sampler and says why."""
    root = fake_sysfs(tmp_path / "sys", vendor)
    rc, out = probe("auto", HMTUNE_SYSFS_ROOT=str(root))
    assert rc == 0 and out["sampler"] == "soft"
    assert "perf_event_open failed" in out["why"]
    kind = "pebs" if vendor == "intel" else "ibs"
    assert probe(kind, HMTUNE_SYSFS_ROOT=str(root))[0] == 3


def test_trace_refuses_an_unavailable_sampler(tmp_path: Path) -> None:
    r = trace(tmp_path, str(PROGRAMS / "allfamily"), extra=("--sampler", "pebs"))
    assert r.returncode == 2 and r.stdout == b"" and r.stderr.count(b"\n") == 1


@pytest.mark.parametrize("args", [["--rate", "0"], ["--period", "0"],
                                  ["--rate", "10", "--period", "10"], ["--sampler", "magic"]])
def test_bad_sampler_options(tmp_path: Path, args: list[str]) -> None:
    r = trace(tmp_path, str(PROGRAMS / "allfamily"), extra=tuple(args))
    assert r.returncode == 2 and r.stdout == b""


def test_library_rejects_malformed_sampler_env(tmp_path: Path) -> None:
    env = dict(os.environ, LD_PRELOAD=str(ROOT / "build/lib/libhmtrace.so"),
               HMTUNE_OUT=str(tmp_path), HMTUNE_SAMPLER="turbo")
    r = subprocess.run([str(PROGRAMS / "allfamily")], capture_output=True, env=env)
    assert r.returncode == 0 and r.stdout == b"ok\n" and r.stderr.count(b"\n") == 1
