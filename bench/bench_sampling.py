"""`make bench-sampling`: what the samplers cost and deliver, measured interleaved
against runs without them (medians; this VM is noisy).

Prints: the software sampler's added kernel time on the latency example (target
<= 2 %), samples per second per thread, the sampler's own CPU cost per sample, the
time its handlers take per timer signal with and without the look ahead, the
producer-load rule and the PAPI counters (`--counters`: a PAPI_read per sample;
measured in process, interleaved), the kernel time with the counters, and the PEBS/IBS
default periods with their overhead arithmetic (no PMU here)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchlib import BUILD, FIN, LATENCY, LIB, RSSWRAP, number, require

NAME = "bench-sampling"

FOUR = BUILD / "tests" / "programs" / "four_arrays"
HOT = BUILD / "tests" / "programs" / "compute_hot"
CONSUME = BUILD / "tests" / "programs" / "consume_hot"
STREAM = BUILD / "examples" / "stream"


def run(cmd: list[str], sampler: str | None, raw: Path) -> tuple[str, float]:
    """stdout and the process's CPU seconds; sampler None = no tracer at all, "counters"
    the software sampler with HMTUNE_COUNTERS=default."""
    env = dict(os.environ)
    if sampler is not None:
        shutil.rmtree(raw, ignore_errors=True)
        raw.mkdir(parents=True)
        env.update(LD_PRELOAD=str(LIB), HMTUNE_OUT=str(raw),
                   HMTUNE_SAMPLER="soft" if sampler == "counters" else sampler)
        if sampler == "counters":
            env["HMTUNE_COUNTERS"] = "default"
    p = subprocess.run([str(RSSWRAP), *cmd], capture_output=True, env=env)
    if p.returncode != 0:
        sys.exit(f"bench-sampling: {' '.join(cmd)} failed ({p.returncode})")
    return p.stdout.decode(), number(NAME, p.stderr.decode(), "cpu_s")


def handler_cost(cmd: list[str], var: str, value: str, raw: Path) -> tuple[float, int, float]:
    """The software sampler's handler time per timer signal (ns; the summary's
    sampler_cost, timed inside the handlers), the signals, and the share of samples
    with an address, for one traced run with the setting var=value."""
    shutil.rmtree(raw, ignore_errors=True)
    raw.mkdir(parents=True)
    env = dict(os.environ, LD_PRELOAD=str(LIB), HMTUNE_OUT=str(raw), HMTUNE_SAMPLER="soft",
               **{var: value})
    if subprocess.run(cmd, capture_output=True, env=env).returncode != 0:
        sys.exit(f"bench-sampling: {' '.join(cmd)} failed")
    r = subprocess.run([str(FIN), str(raw), "-o", str(raw / "t"), "--summary",
                        str(raw / "s.json"), "--quiet"], capture_output=True)
    if r.returncode != 0:
        sys.exit(f"bench-sampling: finalize failed: {r.stderr.decode()}")
    s = json.loads((raw / "s.json").read_text())
    n = s["samples"]
    total = sum(n.values())
    return (float(s["sampler_cost"]["ns_per_signal"]), s["sampler_cost"]["timer_signals"],
            (total - n["no_address"]) / max(total, 1))


def compare(what: str, var: str, values: tuple[str, str], progs: dict[str, list[str]],
            runs: int, raw: Path) -> None:
    """Handler time per signal with the setting var off and on (values), in rounds that
    alternate which goes first."""
    print(f"# {what}: sampler handler time per timer signal, {runs} interleaved rounds "
          "(in-process timing; the machine may be shared)")
    off, on = values
    for name, cmd in progs.items():
        got: dict[str, list[tuple[float, int, float]]] = {off: [], on: []}
        for i in range(runs):
            for value in ((off, on) if i % 2 == 0 else (on, off)):
                got[value].append(handler_cost(cmd, var, value, raw))
        med = {a: statistics.median(x[0] for x in v) for a, v in got.items()}
        addr = {a: statistics.median(x[2] for x in v) for a, v in got.items()}
        sig = sum(x[1] for v in got.values() for x in v)
        print(f"  {name:11s} off {med[off]:6.0f} ns [{min(x[0] for x in got[off]):.0f}-"
              f"{max(x[0] for x in got[off]):.0f}]  on {med[on]:6.0f} ns "
              f"[{min(x[0] for x in got[on]):.0f}-{max(x[0] for x in got[on]):.0f}]  "
              f"ratio x{med[on] / max(med[off], 1):.2f}; samples with an address "
              f"{100 * addr[off]:.0f} % -> {100 * addr[on]:.0f} % ({sig} signals)")


def handler_costs(runs: int, raw: Path) -> None:
    """The look ahead off (0) and on (the default 4), then the producer-load rule off
    and on (the default), each with the other at its default."""
    compare("look ahead", "HMTUNE_SAMPLE_AHEAD", ("0", "4"),
            {"compute_hot": [str(HOT), "1.0"], "stream": [str(STREAM), "-s", "256", "-n", "10"],
             "latency": [str(LATENCY)]}, runs, raw)
    compare("producer load", "HMTUNE_SAMPLE_PRODUCER", ("0", "1"),
            {"consume_hot": [str(CONSUME), "1.0"], "compute_hot": [str(HOT), "1.0"],
             "latency": [str(LATENCY)]}, runs, raw)
    compare("counters", "HMTUNE_COUNTERS", ("none", "default"),
            {"compute_hot": [str(HOT), "1.0"], "latency": [str(LATENCY)]}, runs, raw)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5, help="interleaved runs per configuration")
    ap.add_argument("--only-lookahead", action="store_true",
                    help="only the handler-time comparisons (look ahead, producer load)")
    args = ap.parse_args()
    require(NAME, LIB, FIN, RSSWRAP, LATENCY, FOUR, HOT, CONSUME, STREAM)
    raw = Path(tempfile.mkdtemp(prefix="hmtune-bench-"))
    try:
        handler_costs(args.runs, raw)
        if args.only_lookahead:
            return 0
        kt: dict[str, list[float]] = {"plain": [], "none": [], "soft": [], "counters": []}
        cpu: dict[str, list[float]] = {m: [] for m in kt}
        for _ in range(args.runs):
            for mode in kt:
                out, c = run([str(LATENCY)], None if mode == "plain" else mode, raw)
                kt[mode].append(number(NAME, out, "kernel_time_s"))
                cpu[mode].append(c)
        med = {m: statistics.median(v) for m, v in kt.items()}
        print(f"# bench-sampling: latency example, medians of {args.runs} interleaved runs")
        for m in kt:
            print(f"  {m:8s} kernel {med[m]:.3f} s [{min(kt[m]):.3f}-{max(kt[m]):.3f}]  "
                  f"process CPU {statistics.median(cpu[m]):.3f} s")
        print(f"software sampler: kernel time x{med['soft'] / med['plain']:.3f} vs untraced "
              f"({100 * (med['soft'] / med['plain'] - 1):+.2f} %), x{med['soft'] / med['none']:.3f}"
              f" vs tracer without sampler (target <= 2 %)")
        print(f"with the counters (a PAPI_read per sample): kernel time "
              f"x{med['counters'] / med['soft']:.3f} vs the software sampler alone, "
              f"x{med['counters'] / med['plain']:.3f} vs untraced")
        # samples per second per thread and the handler's cost, on a 4-thread run
        out, c_soft = run([str(FOUR), "threads", "1.0", "64"], "soft", raw)
        r = subprocess.run([str(FIN), str(raw), "-o", str(raw / "t"), "--summary",
                            str(raw / "s.json"), "--quiet"], capture_output=True)
        if r.returncode != 0:
            sys.exit(f"bench-sampling: finalize failed: {r.stderr.decode()}")
        s = json.loads((raw / "s.json").read_text())
        n = sum(s["samples"].values())
        _, c_none = run([str(FOUR), "threads", "1.0", "64"], "none", raw)
        threads_cpu = 3 * 1.0
        print(f"samples: {n} over {threads_cpu:.1f} s of worker CPU = "
              f"{n / threads_cpu:.0f} per second per thread (timer 250 Hz, the kernel tick); "
              f"{100 * s['samples']['heap'] / max(n, 1):.1f} % in traced objects, "
              f"{100 * s['samples']['no_address'] / max(n, 1):.1f} % without an address")
        print(f"sampler CPU cost: {1e6 * (c_soft - c_none) / max(n, 1):.1f} us per sample "
              f"({100 * (c_soft - c_none) / c_none:+.2f} % of the process CPU time)")
        print("PEBS/IBS (not measurable here, no PMU): defaults in collect/hmc_perf.h, "
              "arithmetic in collect/hmc_perf.c and docs/formats.md: PEBS loads every "
              "100003 loads >= 30 cycles (<= 0.6 %), stores every 1.6 M (<= 0.28 %), "
              "IBS every 1048560 cycles (<= 0.95 % at 4 GHz)")
    finally:
        shutil.rmtree(raw, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
