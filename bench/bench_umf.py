"""`make bench-umf`: the table of issue 20 (docs/formats.md §6), per tier backend:

1. the cost a matched, placed malloc+free of a 4 KiB site adds over the same program
   without libhmalloc.so, at 1 and 2 threads (thread-CPU ns per pair, medians of
   interleaved rounds; bench_interpose.py's program, site and runner), and of a 3 MB
   site at 1 thread (over 1 MiB: a block of its own, or UMF's provider);
2. the share of a 64 MiB tier (1 GiB for 1 GiB objects) usable before a request is
   refused, for single sizes and a mix, and the 2 MiB hugepages the process took by
   then (build/bench/tiershare on the interposer's core);
3. UMF's pools side by side on one 64 MiB region through the fixed provider: the
   disjoint pool as umf:hugetlb configures it and oneTBB's scalable pool (when
   libtbbmalloc.so.2 is installed: `apt-get install libtbbmalloc2`), thread-CPU ns per
   malloc+free called directly and the share usable (build/bench/umfpools);
4. the exit-time matrix: tests/c/exit_app's modes with every request of 16 bytes or more
   placed (HMTUNE_BASELINE=size-window:16), stdout (and the unclosed file) compared
   byte for byte with a run without libhmalloc.so.

Backends: hugetlb (the hand-built small-object arena on hugepages), memkind's hugepage
kind and MEMKIND_HBW (MEMKIND_HBW_NODES=0), numa:0, umf:numa:0 and umf:hugetlb (the same
arena up to 1 MiB over UMF's providers, UMF's pool above).
Hugepages are reserved for the run and the pool put back (root). Timings need a quiet
machine: the script says so when the load average is high. Never part of make test."""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_interpose import BENCH, SIZE, Case, placement, run, trace_chain
from benchlib import BUILD, HMALLOC, ROOT, number, require

sys.path.insert(0, str(ROOT))
from hmtune.core.units import GIB, MIB  # noqa: E402
from hmtune.workflows.hugepages import reserved  # noqa: E402

NAME = "bench-umf"
SHARE = BUILD / "bench" / "tiershare"
POOLS = BUILD / "bench" / "umfpools"
EXIT_APP = BUILD / "tests" / "c" / "exit_app"
EXIT_PLUGIN = BUILD / "tests" / "c" / "libexit_plugin.so"
BACKENDS = ["hugetlb", "memkind:MEMKIND_HUGETLB", "memkind:MEMKIND_HBW", "numa:0",
            "umf:numa:0", "umf:hugetlb"]
# single sizes: powers of two, and odd ones between the arena's classes, UMF's buckets
# and 4 KiB or 2 MiB pages (24 and 100 bytes are bound by malloc's 16-byte alignment)
SIZES = [16, 24, 64, 100, 4096, 5000, 20000, 100000, 300000, MIB, 3_000_000, 64 * MIB, GIB]
MIX = [16, 24, 64, 100, 256, 1000, 4096, 5000, 20000, 100000, MIB]
EXIT_MODES = {"stdout": 0, "setvbuf": 0, "file": 0, "atexit": 0, "cxx": 0, "needed": 0,
              "plugin": 0, "thread": 7, "fork": 0}
BIG = 3_000_000          # an object over the arena's 1 MiB, not a multiple of 2 MiB
HUGE_NEED = 1200 * MIB  # a 1 GiB tier of 1 GiB objects, or the arena's chunks beside it


def env_for(backend: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "MEMKIND_HBW_NODES")}
    if backend == "memkind:MEMKIND_HBW":
        env["MEMKIND_HBW_NODES"] = "0"
    return env


# ---- 1. cost ----

def costs(work: Path, rounds: int, pairs: int) -> dict[tuple[str, int], float]:
    """(backend, threads) -> median ns a matched pair adds over no preload."""
    chain = trace_chain(work)
    files = {b: placement(work / f"p-{i}.txt", b, chain, SIZE, SIZE,
                          capacity=256 * MIB if "HUGETLB" in b.upper() else GIB)
             for i, b in enumerate(BACKENDS)}
    cases: dict[str, Case] = {}
    for t in (1, 2):
        cases[f"plain/{t}"] = Case("malloc", t, pairs, SIZE)
        cases[f"own/{t}"] = Case("locks:8", t, pairs, SIZE)   # thread-private work only
        for b in BACKENDS:
            cases[f"{b}/{t}"] = Case("malloc", t, pairs, SIZE, b,
                                     hbw=b == "memkind:MEMKIND_HBW", expect="placed")
    got: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(rounds):
        for key, case in cases.items():         # interleaved: the VM drifts over seconds
            got[key].append(run(case, files, work)[1])
    out = {}
    for t in (1, 2):
        base = statistics.median(got[f"plain/{t}"])
        for b in BACKENDS:
            out[(b, t)] = statistics.median(got[f"{b}/{t}"]) - base
    out[("plain", 1)] = statistics.median(got["plain/1"])
    out[("plain", 2)] = statistics.median(got["plain/2"])
    out[("own", 1)] = statistics.median(got["own/1"])
    out[("own", 2)] = statistics.median(got["own/2"])
    return out


def big_costs(work: Path, rounds: int, pairs: int) -> dict[str, float]:
    """backend -> median ns a matched pair of BIG bytes adds over no preload (1 thread;
    the program writes the block's first byte)."""
    chain = trace_chain(work)
    files = {b: placement(work / f"big-{i}.txt", b, chain, BIG, BIG,
                          capacity=256 * MIB if "HUGETLB" in b.upper() else GIB)
             for i, b in enumerate(BACKENDS)}
    cases = {"plain": Case("malloc", 1, pairs, BIG)}
    for b in BACKENDS:
        cases[b] = Case("malloc", 1, pairs, BIG, b, hbw=b == "memkind:MEMKIND_HBW",
                        expect="placed")
    got: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(rounds):
        for key, case in cases.items():
            got[key].append(run(case, files, work)[1])
    base = statistics.median(got["plain"])
    out = {b: statistics.median(got[b]) - base for b in BACKENDS}
    out["plain"] = base
    return out


# ---- 2. usable share ----

def share(backend: str, sizes: list[int], cap: int) -> tuple[float, int] | None:
    """(share of cap placed, hugepages taken), None when the tier cannot open."""
    p = subprocess.run([str(SHARE), backend, str(cap), ",".join(map(str, sizes))],
                       capture_output=True, text=True, env=env_for(backend))
    if p.returncode != 0:
        return None
    return number(NAME, p.stdout, "share"), int(number(NAME, p.stdout, "hugepages"))


def shares(quick: bool) -> dict[tuple[str, str], tuple[float, int] | None]:
    out: dict[tuple[str, str], tuple[float, int] | None] = {}
    for b in BACKENDS:
        for s in SIZES:
            if quick and s > 64 * MIB:
                continue
            out[(b, str(s))] = share(b, [s], max(64 * MIB, s))
        out[(b, "mix")] = share(b, MIX, 64 * MIB)
    return out


# ---- 3. UMF's pools ----

def pools(quick: bool) -> dict[tuple[str, str], str]:
    out = {}
    pairs = 20_000 if quick else 500_000
    for pool in ("disjoint", "scalable"):
        for s in [64, 100, 4096, 5000, 20000, 100000, MIB, "mix"]:
            sizes = ",".join(map(str, MIX)) if s == "mix" else str(s)
            p = subprocess.run([str(POOLS), pool, "64", sizes, str(pairs)],
                               capture_output=True, text=True)
            out[(pool, str(s))] = "n/a" if p.returncode != 0 else (
                f"{100 * number(NAME, p.stdout, 'share'):.1f} %, "
                f"{number(NAME, p.stdout, 'ns_per_pair'):.0f} ns")
    return out


# ---- 4. exit-time matrix ----

def exit_run(mode: str, work: Path, backend: str | None) -> tuple[int, bytes, bytes]:
    f = work / "exit-file.txt"
    f.unlink(missing_ok=True)
    arg = [str(f)] if mode == "file" else [str(EXIT_PLUGIN)] if mode == "plugin" else []
    env = env_for(backend or "")
    if backend:
        pl = work / "exit-placement.txt"
        pl.write_text(f"# hmtune placement v1\ntier fast {backend} {256 * MIB}\n"
                      "tier slow default unlimited\ndepth 1\nsize-window 0 0\n")
        env.update(LD_PRELOAD=str(HMALLOC), HMTUNE_PLACEMENT=str(pl), HMTUNE_SUMMARY="0",
                   HMTUNE_BASELINE="size-window:16")
    try:
        p = subprocess.run([str(EXIT_APP), mode, *arg], capture_output=True, env=env,
                           timeout=60)
    except subprocess.TimeoutExpired:
        return -1, b"", b""
    return p.returncode, p.stdout, f.read_bytes() if f.exists() else b""


def exits(work: Path) -> dict[tuple[str, str], str]:
    out = {}
    for mode, code in EXIT_MODES.items():
        base = exit_run(mode, work, None)
        for b in BACKENDS:
            got = exit_run(mode, work, b)
            out[(b, mode)] = "pass" if got == base and got[0] == code else \
                "hang" if got[0] == -1 else "FAIL"
    return out


# ---- the table ----

def growth(cost: dict[tuple[str, int], float], b: str) -> float:
    """A matched pair's whole cost at 2 threads over 1 thread (each thread's CPU ns)."""
    return (cost[(b, 2)] + cost[("plain", 2)]) / (cost[(b, 1)] + cost[("plain", 1)])


def table(cost: dict[tuple[str, int], float] | None, big: dict[str, float] | None,
          sh: dict[tuple[str, str], tuple[float, int] | None],
          ex: dict[tuple[str, str], str], po: dict[tuple[str, str], str]) -> str:
    cols = [str(s) for s in SIZES if any((b, str(s)) in sh for b in BACKENDS)] + ["mix"]
    head = ["backend", "+ns 1 thr", "+ns 2 thr", "x 2 thr", "+ns 3 MB"] + \
        [f"share {c}" for c in cols]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for b in BACKENDS:
        row = [f"`{b}`"] + [f"{cost[(b, t)]:.0f}" if cost else "-" for t in (1, 2)]
        row.append(f"{growth(cost, b):.2f}" if cost else "-")
        row.append(f"{big[b]:.0f}" if big else "-")
        for c in cols:
            v = sh.get((b, c))
            row.append("n/a" if v is None else f"{100 * v[0]:.1f} % ({v[1]} hp)")
        lines.append("| " + " | ".join(row) + " |")
    if cost:
        lines.append(f"\nwithout libhmalloc.so: {cost[('plain', 1)]:.0f} ns per 4 KiB pair "
                     f"(1 thread), {cost[('plain', 2)]:.0f} ns (2 threads), x "
                     f"{cost[('plain', 2)] / cost[('plain', 1)]:.2f}; x 2 thr: a pair's whole "
                     "cost (glibc's and the interposer's) at 2 threads over 1 thread, each "
                     "thread's CPU time; a backend that adds no per-thread cost grows as "
                     "glibc does; thread-private work (8 uncontended lock/unlock pairs, "
                     "nothing shared) grows x "
                     f"{cost[('own', 2)] / cost[('own', 1)]:.2f} here: what two threads "
                     "running at once cost each other on this machine's CPUs")
    if big:
        lines.append(f"\n+ns 3 MB: what a placed malloc+free of a {BIG}-byte object adds "
                     f"at 1 thread (its first byte written) over glibc's {big['plain']:.0f} ns")
    lines.append("\nshare: bytes of the objects placed before the first refusal / the tier's "
                 "capacity (64 MiB; 1 GiB for 1 GiB objects); hp: 2 MiB hugepages the "
                 "process took from the pool by then")
    cols = sorted({c for _, c in po}, key=lambda c: (c == "mix", int(c) if c != "mix" else 0))
    lines += ["", "| UMF pool (share, ns per pair) | " + " | ".join(cols) + " |",
              "|" + "---|" * (len(cols) + 1)]
    for pool in ("disjoint", "scalable"):
        lines.append(f"| {pool} | " + " | ".join(po[(pool, c)] for c in cols) + " |")
    modes = list(EXIT_MODES)
    lines += ["", "| exit-time | " + " | ".join(modes) + " |", "|" + "---|" * (len(modes) + 1)]
    for b in BACKENDS:
        lines.append(f"| `{b}` | " + " | ".join(ex[(b, m)] for m in modes) + " |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--quick", action="store_true",
                    help="a smoke test: 2 rounds of few pairs, no 1 GiB objects")
    ap.add_argument("--no-cost", action="store_true", help="skip the timings")
    args = ap.parse_args()
    require(NAME, BENCH, SHARE, POOLS, EXIT_APP, EXIT_PLUGIN, HMALLOC)
    load = os.getloadavg()[0]
    if load > 0.5:
        print(f"{NAME}: load average {load:.1f}: the timings are not trustworthy here")
    rounds, pairs = (2, 20_000) if args.quick else (args.rounds, 200_000)
    with tempfile.TemporaryDirectory(prefix="bench-umf-") as d, \
            reserved(HUGE_NEED if not args.quick else 200 * MIB, NAME) as short:
        work = Path(d)
        if short:
            print(f"{NAME}: {short}: the hugepage backends will be unavailable")
        t0 = time.monotonic()
        cost = None if args.no_cost else costs(work, rounds, pairs)
        big = None if args.no_cost else big_costs(work, rounds, max(200, pairs // 100))
        sh = shares(args.quick)
        po = pools(args.quick)
        ex = exits(work)
        text = table(cost, big, sh, ex, po)
    stamp = time.strftime("%Y-%m-%d")
    head = (f"# bench-umf {stamp} on {platform.node()} ({os.cpu_count()} CPUs, load "
            f"{load:.1f}{', --quick' if args.quick else ''}, {time.monotonic() - t0:.0f} s)\n")
    print(head + "\n" + text)
    out = ROOT / "bench" / "results" / f"umf-{stamp}-{platform.node()}.md"
    if not args.quick:
        out.write_text(head + "\n" + text + "\n")
        print(f"\n{NAME}: written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
