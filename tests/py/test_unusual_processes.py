"""Processes that are rough on a preload library (issue 42): a daemon's start that closes
every descriptor (tests/programs/closefds.c), a child of the raw clone system call, which
runs no fork handler (rawclone.c), and a program built with AddressSanitizer, whose
runtime wants to come first (asan_app.c). The application's exit status, output and
descriptor numbers are those of a run without hmtune, and the trace is complete."""

from __future__ import annotations

import json
import os
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from tracemodel import HMTUNE, PROGRAMS, ROOT, UBSAN_TRACER, check, load, trace, ubsan_preload

from hmtune.analyze.sites_io import read_allocs, read_sites
from hmtune.core.placement import PlacementFile, SiteLine, TierLine, frames, write_placement
from hmtune.workflows import launch

CLOSEFDS = str(PROGRAMS / "closefds")
# open() gave the program's file number 0, and no number below 512 is anyone else's
CLOSEFDS_OUT = b"fd 0\nopen below 512: 0\nok\n"
ASAN_APP = PROGRAMS / "asan_app"
ASAN_OUT = b"sum 900\nok\n"
needs_asan = pytest.mark.skipif(not ASAN_APP.exists(),
                                reason="asan_app is not built (the compiler has no libasan.so)")
HMALLOC = ROOT / "build" / "lib" / "libhmalloc.so"


def bare(*app: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(list(app), capture_output=True, timeout=120, env=env)


def end_of(d: Path) -> str:
    return json.loads((d / "trace.summary.json").read_text())["processes"][0]["end"]


def analyzed(d: Path) -> tuple[Counter[int], dict[int, str]]:
    """`hmtune analyze d`: blocks per requested size, and each size's site chain."""
    a = subprocess.run([str(HMTUNE), "analyze", str(d)], capture_output=True, text=True,
                       timeout=300)
    assert a.returncode == 0, a.stderr
    allocs = read_allocs(d / "allocs.csv")
    sites = read_sites(d / "sites.csv")
    raw = dict(zip(sites["site_id"], sites["callstack_raw"], strict=True))
    chains = {int(size): raw[sid] for sid, size in zip(allocs["site_id"], allocs["size"],
                                                        strict=True)}
    return Counter(int(s) for s in allocs["size"]), chains


def without_asan_options() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "ASAN_OPTIONS"}


def placed(d: Path, chain: str, window: tuple[int, int], app: list[str],
           env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess, int]:
    """`hmtune run -o d` with the site `chain` in a thp tier and the size window: the
    run, and the blocks the tier placed."""
    pf = PlacementFile(tiers=[TierLine("fast", "thp", 1 << 30), TierLine("slow", "default", None)],
                       depth=len(frames(chain)), size_window=window,
                       sites=[SiteLine("fast", chain, "the test's site")])
    write_placement(d / "placement.txt", pf)
    r = subprocess.run([str(HMTUNE), "run", "-q", "-o", str(d), "--", *app],
                       capture_output=True, timeout=120, env=env)
    if r.returncode != 0:
        return r, 0
    stats = json.loads((d / "run-stats.json").read_text())
    return r, next(t for t in stats["tiers"] if t["name"] == "fast")["placed_blocks"]


# ---- a daemon's start: every descriptor closed ----

@pytest.mark.parametrize("mode", ["close", "range", "dup2", "raw"])
def test_daemon_closing_every_descriptor(tmp_path: Path, mode: str) -> None:
    """close(0..1023), close_range + closefrom, dup2 onto every number it did not open,
    or the raw close_range system call: the program's first open() still gets 0, no
    number below 512 is the tracer's, and the trace holds every allocation, those made
    after the closes included (2000 of them: the stream is written during the run)."""
    plain_out = tmp_path / "bare.txt"
    plain = bare(CLOSEFDS, str(plain_out), mode)
    assert plain.returncode == 0 and plain_out.read_bytes() == CLOSEFDS_OUT
    out, d = tmp_path / "traced.txt", tmp_path / "trace"
    r = trace(d, CLOSEFDS, str(out), mode)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    assert out.read_bytes() == CLOSEFDS_OUT
    assert check(d / "trace.prv") == []
    assert end_of(d) == "exit"
    sizes, _ = analyzed(d)
    assert (sizes[310000], sizes[320000], sizes[330000]) == (1, 1, 2000)


@pytest.mark.skipif(not HMALLOC.exists(), reason="libhmalloc.so is not built (make)")
@pytest.mark.parametrize("mode", ["close", "range", "dup2", "raw"])
def test_daemon_closing_every_descriptor_is_placed(tmp_path: Path, mode: str) -> None:
    """hmtune run, its size window over the program's calls: libunwind's pipe, which
    libhmalloc's unwinds use, never takes the program's 0 and 1, and the loop's 2000
    blocks are placed."""
    d = tmp_path / "stage"
    assert trace(d, CLOSEFDS, str(tmp_path / "traced.txt"), mode).returncode == 0
    _, chains = analyzed(d)
    out = tmp_path / "run.txt"
    r, n = placed(d, chains[330000], (300000, 340000), [CLOSEFDS, str(out), mode])
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    assert out.read_bytes() == CLOSEFDS_OUT
    assert n == 2000


# ---- a child of the raw clone system call ----

def test_raw_clone_child_is_left_untraced(tmp_path: Path) -> None:
    """The child inherits the tracer's state without any fork handler (its page-fault
    ring is not mapped there): it runs untraced, as without the tracer, under the
    default sampler and fault period; the parent's trace is valid and has only the
    parent's blocks."""
    app = str(PROGRAMS / "rawclone")
    plain = bare(app)
    assert (plain.returncode, plain.stdout) == (0, b"child exited 7\nok\n")
    r = trace(tmp_path, app)
    assert (r.returncode, r.stdout) == (plain.returncode, plain.stdout), \
        r.stderr.decode(errors="replace")
    prv = tmp_path / "trace.prv"
    assert check(prv) == []
    assert end_of(tmp_path) == "exit"
    t = load(prv)
    assert t.ntasks == 1
    assert t.one(1048576) and t.one(2097152)       # the parent's, before and after
    assert not t.allocs(8388608)                   # the child's


@pytest.mark.parametrize("app", [["closefds", "OUT", "close"], ["closefds", "OUT", "raw"],
                                 ["rawclone"]])
def test_under_ubsan(tmp_path: Path, app: list[str]) -> None:
    """The tracer built with -fsanitize=undefined (libhmtrace-ubsan.so), with the
    software sampler and the page-fault sampler on: the same output as the bare run and
    a valid trace (UBSan's exit code 98 would say it found something)."""
    if not UBSAN_TRACER.exists():
        pytest.skip("libhmtrace-ubsan.so missing")
    preload = ubsan_preload()
    argv = [str(PROGRAMS / app[0]), *[str(tmp_path / "out.txt") if a == "OUT" else a
                                      for a in app[1:]]]
    plain = bare(*argv)
    want = plain.stdout, (tmp_path / "out.txt").read_bytes() if len(app) > 1 else b""
    raw = tmp_path / "raw"
    raw.mkdir()
    env = dict(os.environ, LD_PRELOAD=preload, HMTUNE_OUT=str(raw),
               HMTUNE_SAMPLER="soft", UBSAN_OPTIONS="exitcode=98:print_stacktrace=1")
    r = subprocess.run(argv, capture_output=True, env=env, timeout=120)
    assert r.returncode == plain.returncode, r.stderr.decode(errors="replace")
    assert (r.stdout, (tmp_path / "out.txt").read_bytes() if len(app) > 1 else b"") == want
    fin = subprocess.run([str(ROOT / "build/bin/hmtune-finalize"), str(raw), "-o",
                          str(tmp_path / "t")], capture_output=True)
    assert fin.returncode == 0 and check(tmp_path / "t.prv") == []


# ---- a program built with AddressSanitizer ----

def test_asan_runtime_is_found_in_the_dynamic_section() -> None:
    """What hmtune trace and run add to the environment: verify_asan_link_order=0 for a
    program that names the ASan runtime (after the user's own options), nothing for
    another program or when the user set the option."""
    lib = Path("libhmtrace.so")
    plain = PROGRAMS / "closefds"
    assert launch.asan_env("trace", plain, lib, {}) == {}
    if not ASAN_APP.exists():
        pytest.skip("asan_app is not built")
    assert launch.asan_env("trace", ASAN_APP, lib, {}) == \
        {"ASAN_OPTIONS": "verify_asan_link_order=0"}
    assert launch.asan_env("trace", ASAN_APP, lib, {"ASAN_OPTIONS": "detect_leaks=0"}) == \
        {"ASAN_OPTIONS": "detect_leaks=0:verify_asan_link_order=0"}
    assert launch.asan_env("trace", ASAN_APP, lib,
                           {"ASAN_OPTIONS": "verify_asan_link_order=1"}) == {}


@needs_asan
def test_asan_program_is_traced(tmp_path: Path) -> None:
    """hmtune trace sets verify_asan_link_order=0 itself: the program runs as alone
    (exit 0, its output, no leak report of the tracer's blocks changing its status),
    and its block is in a valid trace."""
    env = without_asan_options()
    plain = bare(str(ASAN_APP), env=env)
    assert (plain.returncode, plain.stdout) == (0, ASAN_OUT)
    r = trace(tmp_path, str(ASAN_APP), env=env)
    assert (r.returncode, r.stdout) == (0, ASAN_OUT), r.stderr.decode(errors="replace")
    assert check(tmp_path / "trace.prv") == []
    assert load(tmp_path / "trace.prv").one(300000)


@needs_asan
def test_asan_program_is_placed(tmp_path: Path) -> None:
    """hmtune run: the same program with its block placed in a thp tier runs as alone
    and its block is placed."""
    if not HMALLOC.exists():
        pytest.skip("libhmalloc.so is not built (make)")
    env = without_asan_options()
    d = tmp_path / "stage"
    assert trace(d, str(ASAN_APP), env=env).returncode == 0
    _, chains = analyzed(d)
    r, n = placed(d, chains[300000], (300000, 300000), [str(ASAN_APP)], env=env)
    assert (r.returncode, r.stdout) == (0, ASAN_OUT), r.stderr.decode(errors="replace")
    assert n == 1


@needs_asan
def test_asan_link_order_check_the_user_asked_for_is_kept(tmp_path: Path) -> None:
    """ASAN_OPTIONS=verify_asan_link_order=1 given by the user is left as it is: the
    runtime refuses to start (its exit status 1, nothing on stdout), hmtune exits with
    that status and (one line) says what to change."""
    env = dict(without_asan_options(), ASAN_OPTIONS="verify_asan_link_order=1")
    r = trace(tmp_path, str(ASAN_APP), env=env)
    assert (r.returncode, r.stdout) == (1, b"")
