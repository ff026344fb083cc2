"""collect/: libhmtrace.so + finalize on real programs (tests/programs/)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest
from tracemodel import KIND, PROGRAMS, ROOT, check, load, marker_line, trace, ubsan_preload

SRC = ROOT / "tests" / "programs"


def _site_has(t, call, src: Path, name: str) -> bool:
    return marker_line(src, name) in t.fileline[call.site]


@pytest.mark.parametrize("prog", ["allfamily", "allfamily-nopie"])
def test_every_malloc_family_call(tmp_path: Path, prog: str) -> None:
    r = trace(tmp_path, str(PROGRAMS / prog), extra=("--small-sample", "off"))
    assert r.returncode == 0 and r.stdout == b"ok\n"
    prv = tmp_path / "trace.prv"
    assert check(prv) == []
    t = load(prv)
    src = SRC / "allfamily.c"
    expect = {"malloc": (110000, "malloc"), "calloc": (100000, "calloc"),
              "realloc": (240000, "realloc"), "reallocarray": (150000, "reallocarray"),
              "posix_memalign": (160000, "posix_memalign"),
              "aligned_alloc": (172032, "aligned_alloc"), "memalign": (180000, "memalign"),
              "valloc": (190000, "valloc"), "pvalloc": (200000, "pvalloc")}
    for kind, (size, marker) in expect.items():
        c = t.one(size)
        assert c.kind == KIND[kind], kind
        assert c.ptr_out != 0
        assert _site_has(t, c, src, marker), (kind, t.fileline[c.site])
        # module+offset chain: innermost frame is in the program itself
        assert t.raw[c.site].split(" > ")[0].startswith(str(PROGRAMS / prog) + "+0x")
    for kind in ("posix_memalign", "aligned_alloc", "memalign"):
        assert t.one(expect[kind][0]).align == 4096
    # frees of traced blocks are recorded and point at traced pointers
    outs = {c.ptr_out for c in t.allocs()}
    frees = [c for c in t.calls if c.kind == KIND["free"]]
    assert len(frees) >= 9 and all(f.ptr_in in outs for f in frees)
    # below the 4 KiB threshold nothing is traced (small-call sampling is off)
    assert all(c.size >= 4096 or c.kind in (3, 10) for c in t.allocs())
    assert not t.allocs(16) and not t.allocs(1000) and not t.allocs(4000)
    assert not any(c.sampled for c in t.calls)


def _small_line(src: Path, name: str) -> str:
    """`file:line` of the line carrying `SMALL:name` (allfamily.c's small calls)."""
    lines = src.read_text().splitlines()
    return next(f"{src}:{i}" for i, line in enumerate(lines, 1) if f"SMALL:{name} " in line)


def test_small_call_sampling_one_in_one(tmp_path: Path) -> None:
    """--small-sample 1 traces every call below the threshold, each standing for 1, and
    the frees of those blocks (recognized by their marks, not their size)."""
    r = trace(tmp_path, str(PROGRAMS / "allfamily"), extra=("--small-sample", "1"))
    assert r.returncode == 0 and r.stdout == b"ok\n"
    prv = tmp_path / "trace.prv"
    assert check(prv) == []
    t = load(prv)
    src = SRC / "allfamily.c"
    small = {16: ("malloc", "malloc16"), 1000: ("malloc", "malloc1000"),
             100: ("calloc", "calloc100"), 4000: ("malloc", "malloc4000"),
             3000: ("realloc", "realloc3000")}
    mine = {}
    for size, (kind, marker) in small.items():
        calls = [c for c in t.allocs(size) if _small_line(src, marker) in t.fileline[c.site]]
        assert len(calls) == 1, (size, calls)
        c = calls[0]
        assert c.kind == KIND[kind] and c.sampled == 1 and c.ptr_out
        mine[size] = c
    assert mine[3000].ptr_in == mine[4000].ptr_out       # the realloc of a traced small block
    # every call below the threshold is marked as sampled; calls above it never are
    assert all(c.sampled == 1 for c in t.allocs() if c.size < 4096 and c.kind not in (3, 10))
    assert not any(c.sampled for c in t.allocs() if c.size >= 4096)
    frees = {c.ptr_in for c in t.calls if c.kind == KIND["free"]}
    assert {mine[s].ptr_out for s in (16, 1000, 100, 3000)} <= frees
    summary = json.loads((tmp_path / "trace.summary.json").read_text())
    assert summary["small_weight"] == 1
    assert summary["small_sampled"] == sum(1 for c in t.allocs() if c.sampled)


def test_min_size_and_depth_options(tmp_path: Path) -> None:
    r = trace(tmp_path, str(PROGRAMS / "allfamily"), extra=("--min-size", "150K", "--depth", "2"))
    assert r.returncode == 0
    t = load(tmp_path / "trace.prv")
    assert {c.size for c in t.allocs()} >= {160000, 172032, 180000, 190000, 200000, 240000}
    # calls below --min-size are not traced, except the 1 in 32 (at random) of small-call
    # sampling, which are marked with their weight
    assert all(c.sampled == 32 for c in [*t.allocs(110000), *t.allocs(100000)])
    assert all(len(t.raw[c.site].split(" > ")) <= 2 for c in t.allocs())


def test_pthreads_one_paraver_thread_each(tmp_path: Path) -> None:
    r = trace(tmp_path, str(PROGRAMS / "threads"))
    assert r.returncode == 0
    t = load(tmp_path / "trace.prv")
    assert check(tmp_path / "trace.prv") == []
    threads_by_size = {}
    for i in range(4):
        calls = t.allocs((i + 1) * 100000)
        assert len(calls) == 3
        assert len({c.thread for c in calls}) == 1
        threads_by_size[i] = calls[0].thread
    assert len(set(threads_by_size.values())) == 4
    assert t.nthreads == [len(t.tids)]
    assert len(set(t.tids.values())) == len(t.tids)       # distinct OS threads


def test_openmp_threads(tmp_path: Path) -> None:
    r = trace(tmp_path, str(PROGRAMS / "omp"))
    assert r.returncode == 0
    t = load(tmp_path / "trace.prv")
    threads = {t.one(s).thread for s in (200000, 400000, 600000, 800000)}
    assert len(threads) == 4
    for s in (200000, 400000, 600000, 800000):
        assert _site_has(t, t.one(s), SRC / "omp.c", "omp")


def test_fork_child_gets_its_own_stream(tmp_path: Path) -> None:
    r = trace(tmp_path, str(PROGRAMS / "forker"))
    assert r.returncode == 0
    assert r.stdout == b"child ok\nparent ok\n"
    t = load(tmp_path / "trace.prv")
    assert check(tmp_path / "trace.prv") == []
    assert t.ntasks == 2
    parent, child = t.one(300000).task, t.one(400000).task
    assert parent != child
    assert t.one(500000).task == parent
    assert t.ppid[child] == t.pid[parent]
    assert all(c.task == parent for c in t.calls if c.size in (300000, 500000))


def test_dlopen_dlclose_frames(tmp_path: Path) -> None:
    r = trace(tmp_path, str(PROGRAMS / "dlopen_main"))
    assert r.returncode == 0
    t = load(tmp_path / "trace.prv")
    first, second = t.one(600000), t.one(700000)
    lib = str(PROGRAMS / "libdlalloc.so")
    f1, f2 = t.raw[first.site].split(" > "), t.raw[second.site].split(" > ")
    # the library was loaded at two different bases; the module+offset frame is the same
    assert f1[0] == f2[0] and f1[0].startswith(lib + "+0x")
    assert _site_has(t, first, SRC / "dlopen_lib.c", "dl_alloc")
    assert f"{SRC / 'dlopen_main.c'}:" in t.fileline[first.site]
    assert first.site != second.site     # called from two different lines


def test_realloc_chain_follows_realloc_sites(tmp_path: Path) -> None:
    r = trace(tmp_path, str(PROGRAMS / "realloc_chain"))
    assert r.returncode == 0
    t = load(tmp_path / "trace.prv")
    src = SRC / "realloc_chain.c"
    a, b, c = t.one(100000), t.one(200000), t.one(400000)
    assert (a.kind, b.kind, c.kind) == (1, 3, 3)
    assert b.ptr_in == a.ptr_out and c.ptr_in == b.ptr_out
    assert _site_has(t, a, src, "chain_a") and _site_has(t, b, src, "chain_b")
    assert _site_has(t, c, src, "chain_c")
    n = t.one(250000)           # realloc(NULL, n): gcc may emit it as malloc(n)
    assert n.kind in (1, 3) and n.ptr_in == 0 and _site_has(t, n, src, "realloc_null")


def test_cxx_new_and_vector(tmp_path: Path) -> None:
    r = trace(tmp_path, str(PROGRAMS / "cxx_new"))
    assert r.returncode == 0
    t = load(tmp_path / "trace.prv")
    src = SRC / "cxx_new.cpp"
    assert _site_has(t, t.one(400000), src, "new_array")
    assert _site_has(t, t.one(640000), src, "vector")
    assert "operator new" in t.funcs[t.one(400000).site]


def test_fortran_allocate(tmp_path: Path) -> None:
    r = trace(tmp_path, str(PROGRAMS / "fortran_alloc"))
    assert r.returncode == 0
    t = load(tmp_path / "trace.prv")
    src = SRC / "fortran_alloc.f90"
    assert _site_has(t, t.one(240000), src, "real8")
    assert _site_has(t, t.one(360000), src, "int4")


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="Open MPI not installed")
def test_mpi_one_task_per_rank(tmp_path: Path) -> None:
    mpirun = "mpirun --allow-run-as-root --oversubscribe -np 4"
    r = trace(tmp_path, str(PROGRAMS / "mpi_alloc"), extra=("--mpirun", mpirun))
    assert r.returncode == 0, r.stderr
    prv = tmp_path / "trace.prv"
    assert check(prv) == []
    t = load(prv)
    assert t.ntasks == 4
    assert [t.rank[k] for k in range(1, 5)] == [0, 1, 2, 3]
    src = SRC / "mpi_alloc.c"
    for rank in range(4):
        mine = [c for c in t.allocs((rank + 1) * 1048576) if _site_has(t, c, src, "rank")]
        assert len(mine) == 1 and mine[0].task == rank + 1


def test_output_and_exit_code_unchanged(tmp_path: Path) -> None:
    app = str(PROGRAMS / "echo_io")
    plain = subprocess.run([app], capture_output=True)
    assert plain.returncode == 7
    env = dict(os.environ, LD_PRELOAD=str(ROOT / "build/lib/libhmtrace.so"),
               HMTUNE_OUT=str(tmp_path))
    pre = subprocess.run([app], capture_output=True, env=env)
    assert (pre.returncode, pre.stdout, pre.stderr) == (7, plain.stdout, plain.stderr)
    cli = trace(tmp_path / "cli", app)
    assert (cli.returncode, cli.stdout, cli.stderr) == (7, plain.stdout, plain.stderr)
    assert len(load(tmp_path / "cli" / "trace.prv").allocs()) >= 3


@pytest.mark.parametrize("mode,sig", [("segv", signal.SIGSEGV), ("abort", signal.SIGABRT)])
def test_crash_keeps_the_trace(tmp_path: Path, mode: str, sig: int) -> None:
    app = str(PROGRAMS / "crash")
    plain = subprocess.run([app, mode], capture_output=True)
    assert plain.returncode == -sig
    r = trace(tmp_path, app, mode)
    assert r.returncode == -sig              # the CLI dies of the same signal
    prv = tmp_path / "trace.prv"
    assert check(prv) == []
    t = load(prv)
    assert t.one(100000) and t.one(200000)
    s = json.loads((tmp_path / "trace.summary.json").read_text())
    assert s["processes"][0]["end"] == "signal" and s["processes"][0]["signal"] == sig


def test_sigkill_recovers_what_was_flushed(tmp_path: Path) -> None:
    r = trace(tmp_path, str(PROGRAMS / "crash"), "kill")
    assert r.returncode == -signal.SIGKILL
    s = json.loads((tmp_path / "trace.summary.json").read_text())
    p = s["processes"][0]
    assert p["end"] == "missing"
    prv = tmp_path / "trace.prv"
    assert check(prv) == []
    t = load(prv)
    # crash's kill mode makes more records than one buffer holds before SIGKILL:
    # the flushed buffers are all there
    assert len(t.allocs()) == p["allocs"] and p["allocs"] >= 1000


def test_exit_via__exit_is_flushed(tmp_path: Path) -> None:
    r = trace(tmp_path, str(PROGRAMS / "crash"), "_exit")
    assert r.returncode == 5
    t = load(tmp_path / "trace.prv")
    assert t.one(100000) and t.one(200000)


def test_stress_16_threads_1m_pairs(tmp_path: Path) -> None:
    """No deadlock or lost record with 16 threads x 1 M traced malloc/free pairs."""
    env = dict(os.environ, LD_PRELOAD=str(ROOT / "build/lib/libhmtrace.so"),
               HMTUNE_OUT=str(tmp_path))
    r = subprocess.run([str(PROGRAMS / "stress"), "16", "1000000", "65536"],
                       capture_output=True, env=env, timeout=600)
    assert r.returncode == 0 and r.stdout == b"ok\n"
    out = tmp_path / "fin"
    try:
        s = subprocess.run([str(ROOT / "build/bin/hmtune-finalize"), str(tmp_path), "-o",
                            str(out), "--summary", str(out) + ".json", "--summary-only"],
                           capture_output=True)
    finally:
        for raw in tmp_path.glob("*.hmr"):         # ~1.2 GB: do not keep it around
            raw.unlink()
    assert s.returncode == 0, s.stderr
    summary = json.loads(Path(str(out) + ".json").read_text())
    stress = [p for p in summary["processes"] if p["exe"].endswith("/stress")][0]
    assert stress["threads"] in (16, 17)          # + main, which traces its stdout buffer
    # small-call sampling may add a few blocks of the threads' own small allocations
    small = stress["small_sampled"]
    assert 16_000_000 <= stress["allocs"] - small <= 16_000_001
    assert 16_000_000 <= stress["frees"] <= 16_000_001 + small
    assert stress["end"] == "exit" and stress["missing_chunks"] == 0


def test_unwritable_output_dir(tmp_path: Path) -> None:
    app = str(PROGRAMS / "echo_io")
    plain = subprocess.run([app], capture_output=True)
    r = trace(Path("/proc/hmtune-cannot-write"), app)
    assert r.returncode == 7 and r.stdout == plain.stdout
    assert r.stderr.count(b"\n") == plain.stderr.count(b"\n") + 1   # one line more
    # the library on its own, pointed at a directory it cannot write
    env = dict(os.environ, LD_PRELOAD=str(ROOT / "build/lib/libhmtrace.so"),
               HMTUNE_OUT="/proc/hmtune-cannot-write")
    pre = subprocess.run([app], capture_output=True, env=env)
    assert pre.returncode == 7 and pre.stdout == plain.stdout
    assert pre.stderr.count(b"\n") == plain.stderr.count(b"\n") + 1


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root")
def test_full_disk(tmp_path: Path) -> None:
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=200k", "tmpfs", str(mnt)]).returncode:
        pytest.skip("cannot mount tmpfs here")
    try:
        env = dict(os.environ, LD_PRELOAD=str(ROOT / "build/lib/libhmtrace.so"),
                   HMTUNE_OUT=str(mnt))
        r = subprocess.run([str(PROGRAMS / "stress"), "2", "20000", "65536"],
                           capture_output=True, env=env, timeout=120)
        assert r.returncode == 0 and r.stdout == b"ok\n"
        assert r.stderr.count(b"\n") == 1          # one clear line, once
        # what reached the disk is still readable
        out = tmp_path / "fin"
        s = subprocess.run([str(ROOT / "build/bin/hmtune-finalize"), str(mnt), "-o", str(out),
                            "--summary", str(out) + ".json"], capture_output=True)
        assert s.returncode == 0, s.stderr
        assert check(Path(str(out) + ".prv")) == []
        summary = json.loads(Path(str(out) + ".json").read_text())
        assert summary["allocs"] > 0
    finally:
        subprocess.run(["umount", str(mnt)])


def test_static_binary_is_refused(tmp_path: Path) -> None:
    app = PROGRAMS / "static_app"
    if not app.exists():
        pytest.skip("no static libc to build the static test program")
    r = trace(tmp_path, str(app))
    assert r.returncode == 2
    assert r.stdout == b""                       # the app was not run
    assert not (tmp_path / "trace.prv").exists()


@pytest.mark.parametrize("args", [["--min-size", "lots"], ["--depth", "0"], ["--depth", "99"],
                                  ["--small-sample", "0"], ["--small-sample", "2000000"],
                                  ["--small-sample", "some"], []])
def test_bad_options(tmp_path: Path, args: list[str]) -> None:
    app = [] if not args else [str(PROGRAMS / "echo_io")]
    r = trace(tmp_path, *app, extra=tuple(args))
    assert r.returncode == 2 and r.stdout == b""
    assert r.stderr.count(b"\n") == 1


def test_missing_program(tmp_path: Path) -> None:
    r = trace(tmp_path, str(tmp_path / "nope"))
    assert r.returncode == 127 and r.stderr.count(b"\n") == 1


def test_malformed_env_falls_back(tmp_path: Path) -> None:
    app = str(PROGRAMS / "allfamily")
    env = dict(os.environ, LD_PRELOAD=str(ROOT / "build/lib/libhmtrace.so"),
               HMTUNE_OUT=str(tmp_path), HMTUNE_MIN_SIZE="huge", HMTUNE_DEPTH="0")
    r = subprocess.run([app], capture_output=True, env=env)
    assert r.returncode == 0 and r.stdout == b"ok\n" and r.stderr.count(b"\n") == 2
    fin = subprocess.run([str(ROOT / "build/bin/hmtune-finalize"), str(tmp_path), "-o",
                          str(tmp_path / "t")], capture_output=True)
    assert fin.returncode == 0
    t = load(tmp_path / "t.prv")
    assert t.one(110000)                       # default 4K threshold and depth 8 applied
    assert not [c for c in t.allocs(1000) if not c.sampled]   # only small-call sampling's


@pytest.mark.parametrize("value", ["0", "1048577", "99999999999999999999999", "lots", "-3",
                                   "32x", " 8"])
def test_bad_small_sample_falls_back(tmp_path: Path, value: str) -> None:
    """A bad HMTUNE_SMALL_SAMPLE gives one warning line and the default, 1 in 32."""
    app = [str(PROGRAMS / "sparse_rows"), "4000", "0"]     # 8000 small mallocs
    plain = subprocess.run(app, capture_output=True)
    env = dict(os.environ, LD_PRELOAD=str(ROOT / "build/lib/libhmtrace.so"),
               HMTUNE_OUT=str(tmp_path), HMTUNE_SMALL_SAMPLE=value)
    r = subprocess.run(app, capture_output=True, env=env)
    assert r.returncode == 0 and r.stdout == plain.stdout
    assert r.stderr.count(b"\n") == 1
    fin = subprocess.run([str(ROOT / "build/bin/hmtune-finalize"), str(tmp_path), "-o",
                          str(tmp_path / "t")], capture_output=True)
    assert fin.returncode == 0
    sampled = [c for c in load(tmp_path / "t.prv").allocs() if c.sampled]
    assert {c.sampled for c in sampled} == {32}
    assert 100 < len(sampled) < 500             # about 8000 / 32 (5 standard deviations)


def test_finalize_bad_input(tmp_path: Path) -> None:
    fin = str(ROOT / "build/bin/hmtune-finalize")
    empty = tmp_path / "empty"
    empty.mkdir()
    r = subprocess.run([fin, str(empty), "-o", str(tmp_path / "x")], capture_output=True)
    assert r.returncode == 1 and r.stderr.count(b"\n") == 1
    r = subprocess.run([fin, str(tmp_path / "missing"), "-o", str(tmp_path / "x")],
                       capture_output=True)
    assert r.returncode == 1 and r.stderr.count(b"\n") == 1
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    (garbage / "a.1.0.hmr").write_bytes(os.urandom(5000))
    r = subprocess.run([fin, str(garbage), "-o", str(tmp_path / "x")], capture_output=True)
    assert r.returncode == 1                       # nothing usable: said, not crashed
    # a good stream next to a garbage one: the good one is kept
    good = tmp_path / "good"
    assert trace(good, str(PROGRAMS / "allfamily")).returncode == 0
    shutil.copy(garbage / "a.1.0.hmr", good / "raw" / "zz.1.0.hmr")
    r = subprocess.run([fin, str(good / "raw"), "-o", str(tmp_path / "y")], capture_output=True)
    assert r.returncode == 0
    assert load(tmp_path / "y.prv").one(110000)


@pytest.mark.parametrize("prog,args,small", [
    ("allfamily", [], ""), ("threads", [], ""), ("omp", [], ""), ("forker", [], ""),
    ("dlopen_main", [], ""), ("cxx_new", [], ""), ("realloc_chain", [], ""),
    ("stress", ["4", "20000", "65536"], ""),
    # small-call sampling: every small call traced, marks set and cleared across threads
    ("allfamily", [], "1"), ("stress", ["4", "20000", "64"], "1"),
    ("sparse_rows", ["4000", "2"], "1")])
def test_preload_library_under_ubsan(tmp_path: Path, prog: str, args: list[str],
                                     small: str) -> None:
    """The shim and core, built with -fsanitize=undefined, on real programs."""
    env = dict(os.environ, LD_PRELOAD=ubsan_preload(), HMTUNE_OUT=str(tmp_path))
    if small:
        env["HMTUNE_SMALL_SAMPLE"] = small
    r = subprocess.run([str(PROGRAMS / prog), *args], capture_output=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr.decode()
    fin = subprocess.run([str(ROOT / "build/bin/hmtune-finalize"), str(tmp_path), "-o",
                          str(tmp_path / "t")], capture_output=True)
    assert fin.returncode == 0 and check(tmp_path / "t.prv") == []
