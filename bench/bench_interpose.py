"""`make bench-interpose`: what libhmalloc.so adds per malloc+free pair (issue 6's
targets), against baselines measured interleaved in the same invocation (medians of
--rounds; this VM is noisy).

The placed site is made by the real pipeline: `hmtune trace` of a short run of
build/bench/hmallocbench, `hmtune analyze`, the benchmark's row of sites.csv, a
placement.txt written here. The measured runs are the same binary and call site;
only argv differs. Figures are thread-CPU ns per pair (mean of the threads): a VM
whose vCPUs are shared stretches wall time, not CPU time.

Targets: (1) outside the size window, <= 10 ns added over no preload; (2) a matched
site with a cached decision, <= 150 ns added over memkind_malloc + memkind_free called
directly (what a program calling memkind itself pays; libhmalloc's memkind tiers hand out
blocks from their own small-object arena on the kind's nodes); (3) no global lock:
per-thread cost at 2 threads no worse than at 1, i.e. a 2-thread/1-thread ratio no larger
than the baseline's (the VM's own), 10 % allowed for noise.
Then the same for a site of small blocks (small-call sampling, docs/formats.md §2): its
placement's size window reaches down to the power of two below its smallest request, so
every small request in it is looked up: 256-byte pairs matched and unmatched in a
window of 128..4095 bytes, and 64-byte ones outside it. Then where the matched pair's
time goes."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from benchlib import BUILD, HMALLOC, HMTUNE, ROOT, number, require

sys.path.insert(0, str(ROOT))
from hmtune.core.placement import (  # noqa: E402
    PlacementFile,
    SiteLine,
    TierLine,
    write_placement,
)
from hmtune.core.sitekey import frame_parts, frames, join, make_frame  # noqa: E402
from hmtune.core.sitesfile import read_rows  # noqa: E402

NAME = "bench-interpose"
BENCH = BUILD / "bench" / "hmallocbench"
DEPTH = 8               # frames of hmallocbench's own above the malloc call
SMALL = 64              # outside the window
SIZE = 4096             # the placed site's size (memkind: cheap backend)
BIG = 1 << 20           # numa:0, for information
TINY = 256              # a small site's request
TINY_WINDOW = (128, 4095)   # the window a sampled site of 212..2000-byte blocks gets
MK_CAPACITY = 1 << 30
THREAD_SLACK = 1.10     # our 2-thread / 1-thread ratio over the baseline's, still "no worse"
CONCURRENT_SHARE = 0.9  # a 2-thread run counts when each thread had a CPU this much of
                        # its time and the threads' timed loops overlapped as much
CONCURRENT_TRIES = 6
MIN_CONCURRENT = 3      # valid 2-thread rounds needed for a thread verdict
RETRY_SECONDS = 60      # into the rounds, 2-thread runs get 2 tries only (busy VM)


@dataclass(frozen=True)
class Case:
    mode: str               # hmallocbench MODE
    threads: int
    pairs: int
    size: int
    placement: str = ""     # key of a placement file; "": no preload
    hbw: bool = True        # MEMKIND_HBW_NODES=0 (without it MEMKIND_HBW cannot open)
    expect: str = ""        # stats check: "placed", "outside", "unmatched", "off"


def trace_chain(work: Path, mode: str = "malloc") -> str:
    """callstack_raw of hmallocbench's malloc site in MODE (malloc or untouched), from a
    traced short run."""
    out = work / "trace"
    for cmd in ([str(HMTUNE), "trace", "--min-size", str(SIZE), "--sampler", "none", "-q",
                 "-o", str(out), "--", str(BENCH), mode, "1", "2000", str(SIZE),
                 str(DEPTH)],
                [str(HMTUNE), "analyze", str(out)]):
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"{NAME}: {' '.join(cmd)} failed ({p.returncode}): {p.stderr.strip()}")
    rows = [r for r in read_rows(out / "sites.csv", "sites")[1]
            if int(r["max_size"]) == SIZE and r["callstack_raw"].startswith(f"{BENCH}+0x")]
    if len(rows) != 1:
        sys.exit(f"{NAME}: want one {SIZE}-byte site in hmallocbench in {out}/sites.csv, "
                 f"found {len(rows)}")
    return rows[0]["callstack_raw"]


def placement(path: Path, backend: str, chain: str, lo: int, hi: int,
              capacity: int = MK_CAPACITY, ranges: tuple[tuple[int, int], ...] = ()) -> Path:
    """Write a one-site placement with the advisor's writer (the site whole, or only
    ranges of its objects) and return path."""
    write_placement(path, PlacementFile(
        tiers=[TierLine("fast", backend, capacity), TierLine("default", "default", None)],
        depth=len(frames(chain)), size_window=(lo, hi),
        sites=[SiteLine("fast", chain, ranges=ranges)]))
    return path


def missed(chain: str) -> str:
    """The chain with its innermost offset moved by one byte: every module resolves,
    the site table misses, and the (negative) decision is cached as a match would be."""
    parts = frames(chain)
    first = frame_parts(parts[0])
    assert first is not None, chain
    parts[0] = make_frame(first[0], first[1] + 1)
    return join(parts)


def check_stats(case: Case, stats: Path) -> None:
    """Exit unless libhmalloc did what the case is meant to measure."""
    if not case.expect:
        return
    try:
        js = json.loads(stats.read_text())
    except (OSError, ValueError):
        sys.exit(f"{NAME}: {case}: no HMTUNE_STATS file written")
    site = js["sites"][0]
    placed, matches, unmatched = site["placed"], site["matches"], js["unmatched_in_window"]
    ok = {"placed": placed > case.pairs * case.threads and placed == matches,
          "outside": matches == 0 and unmatched < 10,     # stdio's buffer is 4 KiB
          "unmatched": matches == 0 and unmatched >= case.pairs * case.threads,
          "off": not js["tiers"][0]["available"] and matches == 0}[case.expect]
    if not ok:
        sys.exit(f"{NAME}: {case}: libhmalloc did not behave as expected "
                 f"({case.expect}): matches {matches}, placed {placed}, "
                 f"unmatched in window {unmatched}")


def run(case: Case, files: dict[str, Path], work: Path) -> tuple[float, float, bool]:
    """One run: (wall, thread CPU) ns per pair, and whether the threads ran at once
    (each on a CPU CONCURRENT_SHARE of its time, their timed loops overlapping as much)."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env.pop("MEMKIND_HBW_NODES", None)
    if case.hbw:
        env["MEMKIND_HBW_NODES"] = "0"
    stats = work / "stats.json"
    if case.placement:
        stats.unlink(missing_ok=True)
        env.update(LD_PRELOAD=str(HMALLOC), HMTUNE_PLACEMENT=str(files[case.placement]),
                   HMTUNE_SUMMARY="0", HMTUNE_STATS=str(stats))
    cmd = [str(BENCH), case.mode, str(case.threads), str(case.pairs), str(case.size), str(DEPTH)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"{NAME}: {' '.join(cmd)} failed ({p.returncode}): {p.stderr.strip()}")
    if case.placement:
        check_stats(case, stats)
    together = (number(NAME, p.stdout, "min_cpu_share") >= CONCURRENT_SHARE
                and number(NAME, p.stdout, "overlap") >= CONCURRENT_SHARE)
    return (number(NAME, p.stdout, "ns_per_pair"), number(NAME, p.stdout, "cpu_ns_per_pair"),
            together)


def groups(quick: bool) -> dict[str, dict[str, Case]]:
    """The cases, in groups run back to back within a round: what one figure compares
    sits in one group, so the VM's speed, which drifts over seconds, is the same on
    both sides. A group's keys are "GROUP.CASE"."""
    k = 4 if quick else 1
    small, mid, big = 6_000_000 // k, 200_000 // k, 5_000 // k
    c = {
        "plain64": Case("malloc", 1, small, SMALL),
        "out64": Case("malloc", 1, small, SMALL, "mk", expect="outside"),
        "off64": Case("malloc", 1, small, SMALL, "mk", hbw=False, expect="off"),
        "plain4k": Case("malloc", 1, mid, SIZE),
        "mk4k": Case("memkind", 1, mid, SIZE),
        "match4k": Case("malloc", 1, mid, SIZE, "mk", expect="placed"),
        "miss4k": Case("malloc", 1, mid, SIZE, "mk-miss", expect="unmatched"),
        "match4k-d1": Case("malloc", 1, mid, SIZE, "mk-d1", expect="placed"),
        "miss4k-d1": Case("malloc", 1, mid, SIZE, "mk-d1-miss", expect="unmatched"),
        "locks2": Case("locks:2", 1, mid, SIZE),
        "unwind12": Case(f"unwind:{DEPTH + 4}", 1, mid, SIZE),
        "unwind5": Case("unwind:5", 1, mid, SIZE),
        "atomics9": Case("atomics:9", 1, 10 * mid, SIZE),
        "numa1m": Case("malloc", 1, big, BIG, "numa", expect="placed"),
        "plain256": Case("malloc", 1, mid, TINY),
        "mk256": Case("memkind", 1, mid, TINY),
        "match256": Case("malloc", 1, mid, TINY, "mk-small", expect="placed"),
        "miss256": Case("malloc", 1, mid, TINY, "mk-small-miss", expect="unmatched"),
        "out64s": Case("malloc", 1, small, SMALL, "mk-small", expect="outside"),
        "plain1m": Case("malloc", 1, big, BIG),
    }
    for key in ("plain64", "out64", "plain4k", "mk4k", "match4k", "miss4k", "atomics9"):
        one = c[key]
        c[key + "-t2"] = Case(one.mode, 2, one.pairs, one.size, one.placement, one.hbw,
                              one.expect)
    layout = {
        "out": ["plain64", "out64", "off64", "plain64-t2", "out64-t2"],
        "match": ["mk4k", "match4k", "mk4k-t2", "match4k-t2", "match4k-d1"],
        "miss": ["plain4k", "miss4k", "plain4k-t2", "miss4k-t2"],
        "why": ["plain4k", "miss4k", "mk4k", "match4k", "miss4k-d1", "match4k-d1",
                "locks2", "unwind12", "unwind5", "atomics9", "atomics9-t2"],
        "numa": ["numa1m", "plain1m"],
        "small": ["plain256", "mk256", "match256", "miss256", "plain64", "out64s"],
    }
    return {g: {f"{g}.{key}": c[key] for key in keys} for g, keys in layout.items()}


class Budget:
    """A deadline for repeating 2-thread runs (bounds the bench's time on a busy VM)."""

    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds

    def left(self) -> bool:
        return time.monotonic() < self.end


def measure(case: Case, files: dict[str, Path], work: Path,
            budget: Budget) -> tuple[float, float, bool]:
    """(wall, CPU, concurrent): a run of several threads is repeated (up to CONCURRENT_TRIES
    times, while the budget lasts) until its threads ran at once, as they must to
    contend; concurrent says whether one did."""
    tries = CONCURRENT_TRIES if case.threads > 1 else 1
    for k in range(tries):
        wall, cpu, together = run(case, files, work)
        if case.threads == 1 or together:
            return wall, cpu, True
        if k > 0 and not budget.left():
            break
    return wall, cpu, False


class Rounds:
    """Per-round figures of every case; comparisons are medians of per-round
    differences or ratios, over the rounds where the runs compared are valid (a
    multi-thread run is not when its threads did not run at the same time)."""

    def __init__(self) -> None:
        self.cpu: dict[str, list[float]] = {}
        self.wall: dict[str, list[float]] = {}
        self.ok: dict[str, list[bool]] = {}

    def add(self, key: str, wall: float, cpu: float, concurrent: bool) -> None:
        self.wall.setdefault(key, []).append(wall)
        self.cpu.setdefault(key, []).append(cpu)
        self.ok.setdefault(key, []).append(concurrent)

    def rounds(self, *keys: str) -> list[int]:
        """Rounds where every key's run is valid (all rounds when there is none)."""
        n = len(self.cpu[keys[0]])
        good = [i for i in range(n) if all(self.ok[k][i] for k in keys)]
        return good or list(range(n))

    def valid(self, *keys: str) -> int:
        n = len(self.cpu[keys[0]])
        return sum(all(self.ok[k][i] for k in keys) for i in range(n))

    def med(self, key: str, wall: bool = False) -> float:
        d = self.wall if wall else self.cpu
        return statistics.median(d[key][i] for i in self.rounds(key))

    def diff(self, a: str, b: str, wall: bool = False) -> float:
        d = self.wall if wall else self.cpu
        return statistics.median(d[a][i] - d[b][i] for i in self.rounds(a, b))

    def ratio(self, a: str, b: str, wall: bool = False) -> float:
        d = self.wall if wall else self.cpu
        return statistics.median(d[a][i] / d[b][i] for i in self.rounds(a, b))

    def ratio_of_ratios(self, a2: str, a1: str, b2: str, b1: str) -> float:
        """Median over rounds of (a2 / a1) / (b2 / b1)."""
        d = self.cpu
        return statistics.median((d[a2][i] / d[a1][i]) / (d[b2][i] / d[b1][i])
                                 for i in self.rounds(a2, a1, b2, b1))

    def combo(self, weights: dict[str, float]) -> float:
        """Median over rounds of sum(weight * CPU figure)."""
        return statistics.median(sum(w * self.cpu[k][i] for k, w in weights.items())
                                 for i in self.rounds(*weights))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15, help="interleaved rounds (>= 5)")
    ap.add_argument("--quick", action="store_true", help="a quarter of the pairs per run")
    ap.add_argument("--raw", action="store_true", help="also print every run's figure")
    args = ap.parse_args()
    if args.rounds < 5:
        sys.exit(f"{NAME}: --rounds must be >= 5")
    require(NAME, HMALLOC, BENCH, HMTUNE)
    work = Path(tempfile.mkdtemp(prefix="hmtune-bench-"))
    try:
        chain = trace_chain(work)
        first = frames(chain)[0]
        files = {
            "mk": placement(work / "mk.txt", "memkind:MEMKIND_HBW", chain, SIZE, SIZE),
            "mk-miss": placement(work / "mk-miss.txt", "memkind:MEMKIND_HBW", missed(chain),
                                 SIZE, SIZE),
            "mk-d1": placement(work / "mk-d1.txt", "memkind:MEMKIND_HBW", first, SIZE, SIZE),
            "mk-d1-miss": placement(work / "mk-d1-miss.txt", "memkind:MEMKIND_HBW",
                                    missed(first), SIZE, SIZE),
            "numa": placement(work / "numa.txt", "numa:0", chain, BIG, BIG),
            "mk-small": placement(work / "mk-small.txt", "memkind:MEMKIND_HBW", chain,
                                  *TINY_WINDOW),
            "mk-small-miss": placement(work / "mk-small-miss.txt", "memkind:MEMKIND_HBW",
                                       missed(chain), *TINY_WINDOW),
        }
        res = Rounds()
        budget = Budget(RETRY_SECONDS)
        for r in range(args.rounds):
            for g in groups(args.quick).values():
                keys = list(g) if r % 2 == 0 else list(g)[::-1]     # alternate the order
                for key in keys:
                    res.add(key, *measure(g[key], files, work, budget))
        report(args.rounds, chain, res)
        if args.raw:
            for key, v in res.cpu.items():
                print(f"raw {key:20s} cpu " + " ".join(
                    f"{x:7.1f}{'' if ok else '*'}" for x, ok in zip(v, res.ok[key], strict=True))
                    + "  wall " + " ".join(f"{x:7.1f}" for x in res.wall[key]))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def report(rounds: int, chain: str, r: Rounds) -> None:
    """Print the targets, then the breakdown of a matched pair's added time."""
    m, d, x = r.med, r.diff, r.ratio
    nframes = len(frames(chain))
    print(f"# {NAME}: libhmalloc.so vs baseline, {rounds} interleaved rounds; thread-CPU ns "
          "per malloc+free pair, medians (added: median of the per-round differences; "
          "wall clock in [])")
    print(f"# placed site: {frames(chain)[0]} > ... ({nframes} frames; from hmtune trace "
          f"--min-size {SIZE} and hmtune analyze of a short run)")

    a1 = d("out.out64", "out.plain64")
    print(f"1. outside the size window ({SMALL} B; window {SIZE}-{SIZE}, memkind tier open): "
          f"no preload {m('out.plain64'):.1f}  ours {m('out.out64'):.1f}  added {a1:+.1f} ns "
          f"[{d('out.out64', 'out.plain64', True):+.1f}]  (target <= 10)  {verdict(a1 <= 10)}")
    print(f"   no placement tier open (MEMKIND_HBW without MEMKIND_HBW_NODES): ours "
          f"{m('out.off64'):.1f}  added {d('out.off64', 'out.plain64'):+.1f} ns  (info)")

    a2 = d("match.match4k", "match.mk4k")
    print(f"2. matched site, cached decision ({SIZE} B, memkind:MEMKIND_HBW, depth {nframes}): "
          f"memkind_malloc+memkind_free direct {m('match.mk4k'):.1f}  ours "
          f"{m('match.match4k'):.1f}  added {a2:+.1f} ns "
          f"[{d('match.match4k', 'match.mk4k', True):+.1f}]  (target <= 150)  "
          f"{verdict(a2 <= 150)}")
    print(f"   the same site placed at depth 1 (info): ours {m('match.match4k-d1'):.1f}  added "
          f"{d('match.match4k-d1', 'match.mk4k'):+.1f} ns")
    print(f"   numa:0 at 1 MiB (info): ours {m('numa.numa1m'):.0f} ns per pair (mmap, mbind, "
          f"munmap and a page fault per pair); glibc at 1 MiB, no preload: "
          f"{m('numa.plain1m'):.0f} ns")
    print(f"   unmatched in window (info; unwinds, matches no site, {SIZE} B go to glibc): "
          f"no preload {m('miss.plain4k'):.1f}  ours {m('miss.miss4k'):.1f}  added "
          f"{d('miss.miss4k', 'miss.plain4k'):+.1f} ns")
    a4 = d("small.match256", "small.mk256")
    a5 = d("small.out64s", "small.plain64")
    print(f"2b. a site of small blocks ({TINY} B, window {TINY_WINDOW[0]}-{TINY_WINDOW[1]}, "
          f"memkind:MEMKIND_HBW): matched: memkind direct {m('small.mk256'):.1f}  ours "
          f"{m('small.match256'):.1f}  added {a4:+.1f} ns  (target <= 150)  {verdict(a4 <= 150)}")
    print(f"    unmatched in the window (info): no preload {m('small.plain256'):.1f}  ours "
          f"{m('small.miss256'):.1f}  added {d('small.miss256', 'small.plain256'):+.1f} ns; "
          f"below it ({SMALL} B): added {a5:+.1f} ns  (target <= 10)  {verdict(a5 <= 10)}")

    print("3. threads: per-thread cost at 2 threads / at 1, ours over the baseline's (the "
          f"VM's own; median of per-round quotients) (target: no worse, x{THREAD_SLACK:.2f} "
          "allowed for noise)")
    for label, g, ours, base, target in (("outside window", "out", "out64", "plain64", True),
                                         ("matched site  ", "match", "match4k", "mk4k", True),
                                         ("unmatched     ", "miss", "miss4k", "plain4k", False)):
        o1, o2, b1, b2 = f"{g}.{ours}", f"{g}.{ours}-t2", f"{g}.{base}", f"{g}.{base}-t2"
        q, qb = x(o2, o1), x(b2, b1)
        rel = r.ratio_of_ratios(o2, o1, b2, b1)
        n = r.valid(o2, b2)
        tail = verdict(rel <= THREAD_SLACK) if target else "(info)"
        if n < MIN_CONCURRENT:
            tail = f"INCONCLUSIVE ({n} rounds with both threads running at once)"
        print(f"   {label}: 1 thread {m(o1):6.1f}  2 threads {m(o2):6.1f}  x{q:.2f}, "
              f"baseline x{qb:.2f}, ours/baseline x{rel:.2f}  (added {d(o1, b1):.1f} -> "
              f"{d(o2, b2):.1f} ns; {n} rounds)  {tail}")
    t2 = [k for k in r.cpu if k.endswith("-t2")]
    serial = sum(len(r.ok[k]) - r.valid(k) for k in t2)
    print(f"   2-thread runs left out, their threads not running at once ({CONCURRENT_SHARE:.0%}) "
          f"in up to {CONCURRENT_TRIES} tries (the VM was busy): {serial} of "
          f"{sum(len(r.ok[k]) for k in t2)}")
    print("   reference: FlexMalloc, when it unwinds, 1-2 us per pair, about doubling with "
          "2 threads (measured earlier on this machine; not re-run here)")

    def c(weights: dict[str, float]) -> float:
        return r.combo({f"why.{k}": w for k, w in weights.items()})

    total = d("why.match4k", "why.mk4k")
    total1 = d("why.match4k-d1", "why.mk4k")
    find = d("why.miss4k", "why.plain4k")
    find1 = d("why.miss4k-d1", "why.plain4k")
    unw, unw1 = m("why.unwind12"), m("why.unwind5")
    extra = nframes + 4 - 5
    per_frame = c({"unwind12": 1, "unwind5": -1}) / extra
    rest = c({"miss4k": 1, "plain4k": -1, "unwind12": -1})
    rest1 = c({"miss4k-d1": 1, "plain4k": -1, "unwind5": -1})
    place = c({"match4k": 1, "miss4k": -1, "mk4k": -1, "plain4k": 1})
    place1 = c({"match4k-d1": 1, "miss4k-d1": -1, "mk4k": -1, "plain4k": 1})
    locks, atom = m("why.locks2"), m("why.atomics9")
    other = c({"match4k": 1, "miss4k": -1, "mk4k": -1, "plain4k": 1, "locks2": -1,
               "atomics9": -2 / 9})
    print(f"where a matched pair's added time goes (1 thread; its own runs, so totals differ "
          f"a little from 2.; every figure a median of per-round sums): depth {nframes} "
          f"{total:.0f} ns, depth 1 {total1:.0f} ns")
    print(f"   finding the site (unmatched in window - no preload): {find:.0f} ns at depth "
          f"{nframes}, {find1:.0f} ns at depth 1 (a repeated call is decided from its stack "
          "fingerprint: the chain's return addresses read back from the stack, no unwind)")
    print(f"     what a fingerprint miss adds, unw_backtrace alone (same stack and cache "
          f"policy): {unw:.0f} ns for {nframes + 4} frames, {unw1:.0f} ns for 5 "
          f"({per_frame:.1f} ns per frame); fingerprint path minus a full unwind: {rest:.0f} ns "
          f"at depth {nframes}, {rest1:.0f} ns at depth 1")
    print(f"   placing on the tier and freeing from it, beyond memkind's own cost ((matched - "
          f"unmatched) - (memkind - glibc)): {place:.0f} ns at depth {nframes}, {place1:.0f} "
          "ns at depth 1")
    print(f"     libhmalloc per placed pair: its stripe's arena shard locked twice (hand out, "
          f"take back) {locks:.0f} ns; 2 read-modify-writes of its stripe's capacity credit "
          f"{atom * 2 / 9:.0f} ns (2/9 of 9 on one line: {atom:.0f} ns), plain adds on its "
          f"counter stripe; the rest {other:.0f} ns (page-map lookup, size class, calls; "
          "memkind's own cost is subtracted, so this can be below 0)")
    if r.valid("why.atomics9-t2"):
        print(f"   with 2 threads running at once, 9 read-modify-writes on a line both threads "
              f"write cost {m('why.atomics9-t2'):.0f} ns per thread "
              f"(x{x('why.atomics9-t2', 'why.atomics9'):.1f}; {r.valid('why.atomics9-t2')} "
              "rounds)")
    else:
        print("   9 read-modify-writes on a line 2 threads write: n/a (the threads never ran "
              "at once)")


if __name__ == "__main__":
    sys.exit(main())
