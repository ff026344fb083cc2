"""The tracer's signals against the application's (issue 13): handlers installed in
main after the tracer's start-up (gfortran's default -fbacktrace, an application's
own for SIGTRAP, SIGSEGV, SIGPROF and the sampler's timer signal) and those signals
blocked in main and in threads. The software sampler keeps sampling (breakpoints
included), the application's handlers see exactly its own signals, its output and
exit status are a bare run's, and the trace is complete."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from tracemodel import (
    PROGRAMS,
    ROOT,
    Sample,
    Trace,
    check,
    load,
    marker_line,
    trace,
    ubsan_preload,
)

SRC = ROOT / "tests" / "programs"
SOFT = ("--sampler", "soft")


def bare(*app: str) -> subprocess.CompletedProcess:
    return subprocess.run(list(app), capture_output=True, timeout=300)


def process(d: Path) -> dict[str, Any]:
    return json.loads((d / "trace.summary.json").read_text())["processes"][0]


def chase_samples(t: Trace, src: Path) -> list[Sample]:
    """Samples whose address fell in the program's chased array (site `chase`)."""
    line = marker_line(src, "chase")
    sites = {c.site for c in t.allocs() if line in t.fileline[c.site]}
    assert len(sites) == 1, sites
    return [s for s in t.samples if s.obj in sites]


def traced_like_bare(d: Path, *app: str) -> Trace:
    """Trace app with the software sampler: same exit status 0 and stdout as a bare
    run, a clean trace that ended normally."""
    plain = bare(*app)
    assert plain.returncode == 0 and plain.stdout.endswith(b"ok\n"), plain.stdout
    r = trace(d, *app, extra=SOFT)
    assert (r.returncode, r.stdout) == (0, plain.stdout), r.stderr.decode(errors="replace")
    assert check(d / "trace.prv") == []
    assert process(d)["end"] == "exit"
    return load(d / "trace.prv")


def test_gfortran_default_flags(tmp_path: Path) -> None:
    """libgfortran's -fbacktrace handlers for SIGTRAP, SIGSEGV, ... are installed
    after the tracer's: the breakpoints still come to the sampler."""
    t = traced_like_bare(tmp_path, str(PROGRAMS / "fortran_chase"))
    chase = chase_samples(t, SRC / "fortran_chase.f90")
    assert len(chase) >= 20
    assert sum(s.breakpoint for s in chase) >= 10


def test_gfortran_crash_through_its_handler_keeps_the_trace(tmp_path: Path) -> None:
    """CALL ABORT: libgfortran's handler prints its backtrace and re-raises with the
    default action; the trace is written before the process dies of SIGABRT."""
    app = (str(PROGRAMS / "fortran_chase"), "abort")
    plain = bare(*app)
    assert plain.returncode == -signal.SIGABRT
    r = trace(tmp_path, *app, extra=SOFT)
    assert (r.returncode, r.stdout) == (plain.returncode, plain.stdout)
    assert b"Backtrace" in plain.stderr and b"Backtrace" in r.stderr   # its handler ran
    assert check(tmp_path / "trace.prv") == []
    p = process(tmp_path)
    assert p["end"] == "signal" and p["signal"] == signal.SIGABRT
    assert load(tmp_path / "trace.prv").one(4194304 * 8)


def test_application_handlers_installed_in_main(tmp_path: Path) -> None:
    """sig_handlers checks its own handlers (two traps, two recovered faults, one
    queued timer signal with SA_RESETHAND, SIGPROF ticks) and prints what sigaction
    reports for each: identical to the bare run's while the sampler samples."""
    t = traced_like_bare(tmp_path, str(PROGRAMS / "sig_handlers"))
    chase = chase_samples(t, SRC / "sig_handlers.c")
    assert len(chase) >= 20
    assert sum(s.breakpoint for s in chase) >= 10


def test_signals_blocked_in_main_and_threads(tmp_path: Path) -> None:
    """SIGTRAP, SIGPROF and the timer signal blocked in main, inherited by one thread
    (which then blocks everything) and set by pthread_attr_setsigmask_np for another:
    every thread is still sampled, and every mask query and sigpending shows what the
    application set (sig_blocked checks and prints them)."""
    t = traced_like_bare(tmp_path, str(PROGRAMS / "sig_blocked"))
    assert t.nthreads == [3]
    chase = chase_samples(t, SRC / "sig_blocked.c")
    for thread in (1, 2, 3):
        mine = [s for s in chase if s.thread == thread]
        assert len(mine) >= 10, (thread, len(mine))
        assert any(s.breakpoint for s in mine), thread


def test_int3_with_sigtrap_blocked_dies_as_without_the_tracer(tmp_path: Path) -> None:
    """The kernel cannot hold a synchronous trap: the process dies of SIGTRAP either
    way, and the trace is written first."""
    app = (str(PROGRAMS / "sig_blocked"), "int3")
    plain = bare(*app)
    assert plain.returncode == -signal.SIGTRAP
    r = trace(tmp_path, *app, extra=SOFT)
    assert (r.returncode, r.stdout) == (plain.returncode, plain.stdout)
    assert check(tmp_path / "trace.prv") == []
    p = process(tmp_path)
    assert p["end"] == "signal" and p["signal"] == signal.SIGTRAP


@pytest.mark.parametrize("prog", ["sig_handlers", "sig_blocked", "fortran_chase"])
def test_signal_emulation_under_ubsan(tmp_path: Path, prog: str) -> None:
    """The same programs with the library built with -fsanitize=undefined."""
    preload = ubsan_preload()
    app = str(PROGRAMS / prog)
    plain = bare(app)
    env = dict(os.environ, LD_PRELOAD=preload, HMTUNE_OUT=str(tmp_path),
               HMTUNE_SAMPLER="soft")
    r = subprocess.run([app], capture_output=True, env=env, timeout=300)
    assert (r.returncode, r.stdout) == (0, plain.stdout), r.stderr.decode(errors="replace")
    fin = subprocess.run([str(ROOT / "build/bin/hmtune-finalize"), str(tmp_path), "-o",
                          str(tmp_path / "t")], capture_output=True)
    assert fin.returncode == 0 and check(tmp_path / "t.prv") == []
    assert sum(s.breakpoint for s in load(tmp_path / "t.prv").samples) >= 10
