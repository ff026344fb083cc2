"""`make bench-split`: what placing only part of an object costs per allocation (issue
19's target: at most 50 us added per GiB of object, the mapping calls), against the
same object placed whole in the same tier, measured interleaved in one invocation.

The placed site is hmallocbench's call site in its `untouched` mode (malloc + free, the
block never written), found by the real pipeline (`hmtune trace` + `hmtune analyze`, as
bench-interpose does). For each backend (hugetlb, thp,
numa:0) and object size (16 MiB to 1 GiB), every round runs hmallocbench's malloc+free
pairs of that size under:
  none   no preload (glibc), for reference
  whole  the site placed whole in the tier (a `site` line)
  split  the site split: the middle quarter of each object (2 MiB aligned, at least
         2 MiB) in the tier, the rest in ordinary pages (a `split` line)
  whole-fresh, split-fresh  the same with HMTUNE_KEEP_FREED=0: every free unmaps the
         block and every malloc maps a new one. By default the interposer keeps a freed
         block for the next request of the same shape (interpose/hmi_keep.c), so in a
         loop of malloc+free pairs only the first pair maps anything; the -fresh
         variants measure what a mapping costs when no kept block fits.
The objects are not touched: the figures are what mapping and unmapping cost (and the
interposer's bookkeeping), not page faults, whose cost depends on the page size. Figures
are thread-CPU microseconds per pair (system time included). The added cost is the
median over rounds of split - whole (what splitting adds to placing) and of split - none
(what a split allocation adds to glibc's), each with a distribution-free 95 % interval
for that median (order statistics); per GiB it is divided by the object's size. The
hugetlb cases need 1.1 x the largest object in free hugepages: as root the script
reserves them for the run and puts nr_hugepages back (hmtune.workflows.hugepages).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_interpose import BENCH, DEPTH, trace_chain
from bench_interpose import placement as one_site
from benchlib import HMALLOC, HMTUNE, ROOT, number, require

sys.path.insert(0, str(ROOT))
from hmtune.core.units import GIB, MIB, parse_size  # noqa: E402
from hmtune.workflows.hugepages import reserved  # noqa: E402

NAME = "bench-split"
HUGE = 2 * MIB
BACKENDS = ("hugetlb", "thp", "numa:0")
SIZES = (16 * MIB, 64 * MIB, 256 * MIB, GIB)
VARIANTS = ("none", "whole", "split", "whole-fresh", "split-fresh")
FRESH = "-fresh"
TARGET_US_PER_GIB = 50.0


def window(size: int) -> tuple[int, int]:
    """The split case's range: the middle quarter of the object, 2 MiB aligned."""
    start = (size * 3 // 8) // HUGE * HUGE
    length = max(HUGE, (size // 4) // HUGE * HUGE)
    return start, min(size, start + length)


def placement(path: Path, backend: str, chain: str, size: int, split: bool) -> Path:
    """A one-site placement of chain for requests of exactly size: the site whole, or
    its middle quarter."""
    return one_site(path, backend, chain, size, size, 4 * size,
                    (window(size),) if split else ())


def check_stats(stats: Path, split: bool, pairs: int, what: str) -> None:
    """Exit unless every pair's object was placed the way the case says."""
    try:
        js = json.loads(stats.read_text())
    except (OSError, ValueError):
        sys.exit(f"{NAME}: {what}: no HMTUNE_STATS file written")
    site, tier = js["sites"][0], js["tiers"][0]
    placed = tier.get("split_placed", 0) if split else site["placed"]
    if placed < pairs:
        sys.exit(f"{NAME}: {what}: only {placed} of {pairs} objects placed "
                 f"({'split' if split else 'whole'}); tier stats: {json.dumps(tier)}")


def run(backend: str, size: int, variant: str, pairs: int, files: dict[str, Path],
        work: Path) -> float:
    """Thread-CPU microseconds per malloc+free pair of one run."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    stats = work / "stats.json"
    what = f"{backend} {size // MIB} MiB {variant}"
    env.pop("HMTUNE_KEEP_FREED", None)
    base = variant.removesuffix(FRESH)
    if variant != "none":
        stats.unlink(missing_ok=True)
        env.update(LD_PRELOAD=str(HMALLOC),
                   HMTUNE_PLACEMENT=str(files[f"{backend}/{size}/{base}"]),
                   HMTUNE_SUMMARY="0", HMTUNE_STATS=str(stats))
    if variant.endswith(FRESH):
        env["HMTUNE_KEEP_FREED"] = "0"
    cmd = [str(BENCH), "untouched", "1", str(pairs), str(size), str(DEPTH)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"{NAME}: {what}: {' '.join(cmd)} failed ({p.returncode}): "
                 f"{p.stderr.strip()}")
    if variant != "none":
        check_stats(stats, base == "split", pairs, what)
    return number(NAME, p.stdout, "cpu_ns_per_pair") / 1000.0


def median_interval(xs: list[float], level: float = 0.95) -> tuple[float, float, float]:
    """The median of xs and a distribution-free interval for it: the order statistics
    k and n + 1 - k with the largest k whose binomial tail stays within (1 - level) / 2."""
    s = sorted(xs)
    n = len(s)
    tail, k = 0.0, 0
    while k < n // 2:
        p = math.comb(n, k) / 2.0 ** n
        if tail + p > (1.0 - level) / 2.0:
            break
        tail += p
        k += 1
    if k == 0:
        return statistics.median(s), s[0], s[-1]
    return statistics.median(s), s[k - 1], s[n - k]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=11, help="interleaved rounds (>= 5)")
    ap.add_argument("--pairs", type=int, default=400, help="malloc+free pairs per run")
    ap.add_argument("--backends", default=",".join(BACKENDS),
                    help="comma-separated: hugetlb, thp, numa:0")
    ap.add_argument("--max-size", default="1G", help="largest object (default 1G)")
    args = ap.parse_args()
    if args.rounds < 5:
        sys.exit(f"{NAME}: --rounds must be >= 5")
    if args.pairs < 10:
        sys.exit(f"{NAME}: --pairs must be >= 10")
    backends = [b for b in args.backends.split(",") if b]
    bad = [b for b in backends if b not in BACKENDS]
    if bad or not backends:
        sys.exit(f"{NAME}: --backends: {','.join(bad) or 'none given'}: choose from "
                 f"{', '.join(BACKENDS)}")
    try:
        max_size = parse_size(args.max_size)
    except ValueError as e:
        sys.exit(f"{NAME}: --max-size: {e}")
    sizes = [s for s in SIZES if s <= max_size]
    if not sizes:
        sys.exit(f"{NAME}: --max-size {args.max_size} is below the smallest case "
                 f"({SIZES[0] // MIB} MiB)")
    require(NAME, HMALLOC, BENCH, HMTUNE)
    work = Path(tempfile.mkdtemp(prefix="hmtune-bench-split-"))
    try:
        chain = trace_chain(work, "untouched")
        files = {f"{b}/{s}/{v}": placement(work / f"{b.replace(':', '')}-{s}-{v}.txt", b,
                                           chain, s, v == "split")
                 for b in backends for s in sizes for v in ("whole", "split")}
        cases = [(b, s) for b in backends for s in sizes]
        need = 0 if "hugetlb" not in backends else max(sizes) * 11 // 10 + 8 * HUGE
        with reserved(need, NAME) if need else contextlib.nullcontext("") as short:
            if short:
                sys.exit(f"{NAME}: the hugetlb cases need {need // HUGE} free 2 MiB "
                         f"hugepages: {short}; or --backends thp,numa:0")
            res: dict[str, list[float]] = {}
            for r in range(args.rounds):
                print(f"{NAME}: round {r + 1}/{args.rounds}", file=sys.stderr, flush=True)
                for b, s in cases:
                    order = VARIANTS if r % 2 == 0 else VARIANTS[::-1]
                    for v in order:
                        res.setdefault(f"{b}/{s}/{v}", []).append(
                            run(b, s, v, args.pairs, files, work))
        report(args.rounds, args.pairs, cases, res)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def verdict(lo: float, hi: float, gib: float) -> str:
    """The target's verdict from an interval of added microseconds per pair."""
    if hi / gib <= TARGET_US_PER_GIB:
        return "met"
    return "missed" if lo / gib > TARGET_US_PER_GIB else "undecided"


def report(rounds: int, pairs: int, cases: list[tuple[str, int]],
           res: dict[str, list[float]]) -> None:
    print(f"# {NAME}: thread-CPU us per malloc+free pair, medians of {rounds} interleaved "
          f"rounds of {pairs} pairs; added: split - whole and split - none per round, "
          f"median [95 % interval], and per GiB of object; target <= "
          f"{TARGET_US_PER_GIB:g} us/GiB")
    for suffix, title in (("", "freed blocks kept for the next request (the default)"),
                          (FRESH, "a new mapping for every object (HMTUNE_KEEP_FREED=0)")):
        print(f"\n## {title}")
        print(f"{'backend':8s} {'object':>8s} {'range':>8s} {'none':>7s} {'whole':>7s} "
              f"{'split':>7s} | {'added over whole':>24s} {'us/GiB':>7s} {'verdict':9s} | "
              f"{'added over none':>24s} {'us/GiB':>7s} verdict")
        for b, s in cases:
            split = res[f"{b}/{s}/split{suffix}"]
            gib = s / GIB
            lo_r, hi_r = window(s)
            cols = []
            for ref in (res[f"{b}/{s}/whole{suffix}"], res[f"{b}/{s}/none"]):
                added = [x - y for x, y in zip(split, ref, strict=True)]
                m, lo, hi = median_interval(added)
                cols.append(f"{m:7.1f} [{lo:7.1f},{hi:7.1f}] {m / gib:7.1f} "
                            f"{verdict(lo, hi, gib):9s}")
            print(f"{b:8s} {s // MIB:>4d} MiB {(hi_r - lo_r) // MIB:>4d} MiB "
                  f"{statistics.median(res[f'{b}/{s}/none']):7.1f} "
                  f"{statistics.median(res[f'{b}/{s}/whole{suffix}']):7.1f} "
                  f"{statistics.median(split):7.1f} | {cols[0]} | {cols[1]}")
    print("met: the interval's upper end is within the target; missed: its lower end is "
          "above it; undecided: the interval straddles it. none is glibc's malloc, which "
          "reuses heap memory for objects below its mmap threshold (up to 32 MiB). Kept "
          "blocks: at most HMTUNE_KEEP_FREED bytes per tier (256 MiB), so the 1 GiB "
          "objects are mapped afresh either way.")


if __name__ == "__main__":
    raise SystemExit(main())
