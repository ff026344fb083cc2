"""`hmtune trace`: run the application with libhmtrace.so preloaded, then finalize
the raw per-process streams into DIR/trace.prv/.pcf/.row and print a summary. The
outputs derived from an earlier trace in DIR (the ones hmtune wrote) move to
DIR/stale/."""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

from hmtune.core import paths
from hmtune.core.errors import Failure
from hmtune.core.stage import Stage
from hmtune.core.units import human, parse_size
from hmtune.workflows import launch

_COUNTER_NAME = re.compile(r"[A-Za-z0-9_:.=+-]{1,63}")
COUNTERS_MAX = 8                    # HMR_MAX_COUNTERS (collect/hmc_stream.h)


def counters_value(text: str) -> str:
    """--counters LIST as HMTUNE_COUNTERS takes it: "default", "none", or up to
    COUNTERS_MAX PAPI event names (1-63 bytes, no spaces) separated by commas. Raises
    Failure (exit 2) saying what is wrong."""
    if text in ("default", "none"):
        return text
    names = text.split(",")
    bad = [n for n in names if not _COUNTER_NAME.fullmatch(n)]
    if bad:
        raise Failure(f"--counters: {bad[0]!r} is not a PAPI event name (e.g. PAPI_TOT_CYC, "
                      "perf::TASK-CLOCK; 'hmtune machine' lists this host's)", 2)
    if len(names) > COUNTERS_MAX:
        raise Failure(f"--counters: {len(names)} counters; a trace records at most "
                      f"{COUNTERS_MAX}", 2)
    return text


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "trace",
        help="run an application under the allocation tracer and write a Paraver trace",
        description="Run APP with libhmtrace.so preloaded and write DIR/trace.prv/.pcf/.row.",
        epilog="example: hmtune trace --mpirun 'mpirun -np 4' -o out -- ./app -n 10",
    )
    p.add_argument("--mpirun", "--launcher", dest="mpirun", metavar="CMD", default="",
                   help="MPI launcher prefix, e.g. 'mpirun -np 4' or 'srun -n 4' (the tracer "
                        "is applied to the ranks, not to the launcher)")
    p.add_argument("--min-size", default="4K", metavar="SIZE",
                   help="smallest request traced (default 4K)")
    p.add_argument("--depth", type=int, default=8, metavar="N",
                   help="call-site frames kept per allocation, 1..32 (default 8)")
    p.add_argument("--small-sample", metavar="N|off", default=None,
                   help="below --min-size, trace 1 in N calls at random, each standing for N "
                        f"(1..{SMALL_MAX}; default {SMALL_DEFAULT}); off: none")
    p.add_argument("-o", "--out", metavar="DIR", default=None,
                   help="output directory (default hmtune-out/<app name>/)")
    p.add_argument("--sampler", choices=["auto", "pebs", "ibs", "soft", "none"], default="auto",
                   help="data-address sampler: auto tries PEBS, then IBS, then the software "
                        "sampler (default auto)")
    rate = p.add_mutually_exclusive_group()
    rate.add_argument("--period", type=int, metavar="N",
                      help="PEBS/IBS: one sample every N events (default: chosen for <= 1%% "
                           "overhead)")
    rate.add_argument("--rate", type=int, metavar="HZ",
                      help="software sampler: samples per second of thread CPU time "
                           "(default 250, the kernel tick here)")
    p.add_argument("--fault-period", type=int, metavar="N",
                   help="sample one minor page fault in N, with its address, alongside the "
                        "access sampler (default 61; 0: no page-fault sampling)")
    p.add_argument("--counters", nargs="?", const="default", metavar="LIST", default=None,
                   help="record each sampled thread's PAPI counters (comma-separated PAPI "
                        "presets or native names) at every sample, as Extrae's counter events; "
                        "without LIST: what the host has of cycles, instructions, last-level "
                        "misses and memory stall cycles, else PAPI's software events "
                        "(hmtune machine lists them)")
    p.add_argument("-q", "--quiet", action="store_true", help="print no summary")
    p.add_argument("app", nargs=argparse.REMAINDER, help="-- APP [ARGS...]")
    p.set_defaults(func=run)


# HMTUNE_SMALL_SAMPLE's range and default (collect/hmc_small.h)
SMALL_DEFAULT = 32
SMALL_MAX = 1 << 20


def small_sample_value(text: str) -> str:
    """--small-sample's value as HMTUNE_SMALL_SAMPLE takes it; ValueError otherwise."""
    t = text.strip()
    if t == "off":
        return t
    if not t.isdigit() or not 1 <= int(t) <= SMALL_MAX:
        raise ValueError(f"must be off or a whole number of calls 1..{SMALL_MAX}, not {text!r}")
    return str(int(t))


def _writable_dir(d: Path) -> str | None:
    """Create d/raw; None if usable, else the reason."""
    try:
        (d / "raw").mkdir(parents=True, exist_ok=True)
        probe = d / "raw" / ".probe"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        return e.strerror or str(e)
    return None


def choose_sampler(requested: str, quiet: bool) -> tuple[str, str]:
    """Ask hmtune-probe (the library's own detection code) which sampler this machine
    offers; returns (name, why). Raises Failure when the requested one is not
    available."""
    r = subprocess.run([str(paths.probe_bin()), requested], capture_output=True, text=True)
    fields = dict(line.split("=", 1) for line in r.stdout.splitlines() if "=" in line)
    name, why = fields.get("sampler", "none"), fields.get("why", "")
    if r.returncode != 0:
        raise Failure(f"--sampler {requested} is not available here: {why}", 2)
    if not quiet:
        print(f"hmtune: sampler {name}: {why}", file=sys.stderr)
    return name, why


def finalize(out: Path, quiet: bool) -> dict | None:
    """raw/ → trace.*; returns the summary dict (None if nothing could be written)."""
    summary = out / "trace.summary.json"
    cmd = [str(paths.finalize_bin()), str(out / "raw"), "-o", str(out / "trace"),
           "--summary", str(summary)]
    if quiet:
        cmd.append("--quiet")
    r = subprocess.run(cmd)
    if r.returncode != 0:
        return None
    return json.loads(summary.read_text())


def print_summary(s: dict, out: Path, wall_s: float) -> None:
    prv = Stage(out).trace
    tracer_s = s["tracer_ns"] / 1e9
    share = 100.0 * tracer_s / (wall_s * max(1, s["threads"])) if wall_s > 0 else 0.0
    print(f"hmtune: traced {s['allocs']} allocations and {s['frees']} frees at {s['sites']} "
          f"sites in {s['tasks']} process(es), "
          f"{s['threads']} thread(s)", file=sys.stderr)
    if s.get("small_sampled"):
        print(f"hmtune: {s['small_sampled']} of them below the tracing threshold, traced 1 in "
              f"{s['small_weight']} (small-call sampling): their sites' figures are estimates",
              file=sys.stderr)
    n = s.get("samples", {})
    total = sum(n.values())
    if total:
        ahead = sum(s.get("address_recovery", {}).get("lookahead", {}).values())
        print(f"hmtune: {total} samples ({s['sampler']}): {n['heap']} in traced objects, "
              f"{n['static']} static, {n['stack']} stack, {n['unknown']} unknown, "
              f"{n['no_address']} without a data address; {s['lost_samples']} lost"
              + (f"; {ahead} addresses from the look ahead (hmtune analyze counts them only "
                 "with --lookahead)" if ahead else ""), file=sys.stderr)
    f = s.get("faults", {})
    if sum(f.values()):
        print(f"hmtune: ~{sum(f.values())} minor page faults ({s['fault_sampler']}): "
              f"{f['heap']} in traced objects, {f['static']} static, {f['stack']} stack, "
              f"{f['unknown']} elsewhere; {s['lost_fault_samples']} samples lost",
              file=sys.stderr)
    print(f"hmtune: trace {prv} ({human(prv.stat().st_size)}); time in the tracer "
          f"{tracer_s * 1e3:.1f} ms ({share:.2f}% of the run's thread time)", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    app = launch.app_command(args.app)
    if not app:
        raise Failure("no application given: hmtune trace [options] -- ./app args", 2)
    try:
        min_size = parse_size(args.min_size)
    except ValueError as e:
        raise Failure(f"--min-size: {e}", 2) from None
    if not 1 <= args.depth <= 32:
        raise Failure("--depth must be between 1 and 32", 2)
    small = None
    if args.small_sample is not None:
        try:
            small = small_sample_value(args.small_sample)
        except ValueError as e:
            raise Failure(f"--small-sample {e}", 2) from None
    if args.period is not None and args.period < 1:
        raise Failure("--period must be a positive number of events", 2)
    if args.rate is not None and not 1 <= args.rate <= 100000:
        raise Failure("--rate must be between 1 and 100000 Hz", 2)
    if args.fault_period is not None and not 0 <= args.fault_period <= 0xFFFFFFFF:
        raise Failure("--fault-period must be a number of page faults per sample "
                      "(0: no page-fault sampling)", 2)
    counters = None if args.counters is None else counters_value(args.counters)
    lib, fin = paths.tracer_lib(), paths.finalize_bin()
    if not lib.exists() or not fin.exists() or not paths.probe_bin().exists():
        raise Failure(paths.not_built(lib), 2)
    exe = launch.check_program(app[0], "it cannot be traced")
    out = Path(args.out) if args.out else paths.default_out(app[0])
    launcher = shlex.split(args.mpirun) if args.mpirun else []
    why = _writable_dir(out)
    if why is not None:
        launch.say("trace", f"cannot write to {out} ({why}); running the application "
                            "without tracing")
        return launch.exit_like(launch.run_foreground(launcher + app, dict(os.environ), "trace"))
    for old in (out / "raw").glob("*.hmr"):
        old.unlink()
    chosen = choose_sampler(args.sampler, args.quiet)
    tracer_env = {"LD_PRELOAD": launch.preload_with(lib),
                  "HMTUNE_OUT": str((out / "raw").resolve()),
                  "HMTUNE_MIN_SIZE": str(min_size), "HMTUNE_DEPTH": str(args.depth),
                  "HMTUNE_SAMPLER": chosen[0]}
    tracer_env.update(launch.asan_env("trace", exe, lib, dict(os.environ)))
    if small is not None:
        tracer_env["HMTUNE_SMALL_SAMPLE"] = small
    if args.period is not None:
        tracer_env["HMTUNE_SAMPLE_PERIOD"] = str(args.period)
    if args.rate is not None:
        tracer_env["HMTUNE_SAMPLE_RATE"] = str(args.rate)
    if args.fault_period is not None:
        tracer_env["HMTUNE_FAULT_PERIOD"] = str(args.fault_period)
    if counters is not None:
        if chosen[0] == "none":
            launch.say("trace", "no sampler runs, so no counters are read (they are read "
                                "at the sampler's samples)")
        tracer_env["HMTUNE_COUNTERS"] = counters
    # The launcher itself runs untraced; the tracer is applied to each rank.
    cmd, env = launch.command(launcher, app, tracer_env)
    t0 = time.monotonic()
    rc = launch.run_foreground(cmd, env, "trace")
    wall = time.monotonic() - t0
    summary = finalize(out, args.quiet)
    if summary is None:
        print(f"hmtune trace: no trace written in {out} (see the message above)", file=sys.stderr)
    else:
        end = record_end(out / "trace.summary.json", summary, rc)
        set_aside_stale(out)
        if not args.quiet:
            print_summary(summary, out, wall)
        if end["partial"]:
            print(f"hmtune trace: the application {end['how']}: the trace is partial (up to "
                  "where it stopped); hmtune advise will say so", file=sys.stderr)
    return launch.exit_like(rc)


# Signals by which a user or a batch system stops a run (the rest: a crash)
_STOPS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGKILL, signal.SIGQUIT)


def app_end(rc: int) -> dict[str, object]:
    """How the traced command ended (Popen's status: -SIG for a signal; a launcher such
    as mpirun reports its ranks' SIGINT as 128 + 2): its status, the signal's name, and
    whether the trace is partial (stopped or killed by a signal)."""
    sig = -rc if rc < 0 else rc - 128 if 128 < rc <= 128 + 64 else 0
    try:
        name = signal.Signals(sig).name if sig else None
    except ValueError:
        name = None
    if name is None:
        return {"status": rc, "signal": None, "partial": False, "how": f"exited with {rc}"}
    stopped = sig in _STOPS
    how = (f"was interrupted ({name})" if stopped else f"was killed by {name}") + \
        ("" if rc < 0 else f" (status {rc})")
    return {"status": rc, "signal": name, "partial": True, "how": how}


def record_end(path: Path, summary: dict, rc: int) -> dict[str, object]:
    """Add how the application ended to trace.summary.json (`app_end`)."""
    from hmtune.core.files import write_atomic

    end = app_end(rc)
    summary["app_end"] = end
    try:
        write_atomic(path, json.dumps(summary, indent=1) + "\n")
    except OSError as e:
        print(f"hmtune trace: warning: cannot record how the application ended in {path}: "
              f"{e.strerror or e}", file=sys.stderr)
    return end


def set_aside_stale(out: Path) -> None:
    """The new trace makes the outputs derived from the one before it stale: move those
    hmtune wrote (sites.csv, allocs.csv, placement.txt, report.txt, capacity_curve.*)
    to out/stale/, so that no later command reads them as this trace's."""
    from hmtune.analyze.traceid import STALE_DIR, move_aside, stale_outputs, trace_id

    moved, left = move_aside(stale_outputs(out, trace_id(Stage(out).trace)), out)
    if moved:
        print(f"hmtune trace: moved the outputs of the previous trace "
              f"({', '.join(p.name for p in moved)}) to {out / STALE_DIR}/", file=sys.stderr)
    if left:
        print(f"hmtune trace: warning: {', '.join(p.name for p in left)} in {out} came from "
              f"the previous trace and could not be moved to {out / STALE_DIR}/: run "
              "hmtune analyze and hmtune advise again before using them", file=sys.stderr)
