"""`make bench-advise`: time and quality of the exact placement strategies on seeded
random instances shaped like HPC heaps, against the targets of the advise issue.

Instances: sizes log-uniform from 4 KiB to 4 GiB (not page-aligned), weights
heavy-tailed (lognormal, loosely growing with size), a per-site load/store mix;
limited tiers hold a fraction of the total size (3 %, 10 % or 30 % for the fast
tier, by seed). The lifetime instances spread
100,000 allocations over sites and ranks: long-lived arrays plus temporaries that
come and go in phases, with a heavy-tailed number of allocations per site.

The split instances have 10,000 sites of 128-512 MiB objects, each with weight in
every 2 MiB of it: hmtune/advisor/split.py cuts each into at most 64 ranges, and the cut is
timed with the solve.

Each instance is solved `--runs` times; the median wall time and the (identical)
value, bound and proven gap are printed with PASS/FAIL per target."""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hmtune.advisor.model import Placement, Problem  # noqa: E402
from hmtune.advisor.strategies import solve  # noqa: E402
from hmtune.core.units import KIB  # noqa: E402
from hmtune.machine.tiers import Tier  # noqa: E402

PAGE = 4 * KIB
HBM = ("hbm", 1.0, 1.1)
DDR = ("ddr", 1.6, 1.9)
CXL = ("cxl", 3.0, 4.0)
# (fast tier, middle tier) capacity as a fraction of all sites' size, by seed.
CAPACITY_MIX = ((0.03, 0.15), (0.10, 0.25), (0.30, 0.30))


@dataclass
class Target:
    name: str
    strategy: str
    max_seconds: float
    max_gap: float           # proven relative gap the answer must reach
    gap_target: float        # what the solver is asked for


def tiers(specs: list[tuple[str, float, float]], caps: list[int | None]) -> list[Tier]:
    return [Tier(name, cap, "default", lc, sc, page_size=PAGE)
            for (name, lc, sc), cap in zip(specs, caps, strict=True)]


def random_sites(n: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    sizes = np.exp(rng.uniform(np.log(4 * KIB), np.log(4 << 30), n)).astype(np.int64)
    weights = np.sqrt(sizes) * rng.lognormal(0.0, 2.0, n)
    accesses = rng.integers(10, 10_000, n)
    stores = (accesses * rng.beta(1, 3, n)).astype(np.int64)
    return sizes, weights, accesses - stores, stores


def static_problem(n: int, n_limited: int, seed: int) -> Problem:
    rng = np.random.default_rng(seed)
    sizes, weights, loads, stores = random_sites(n, rng)
    total = int(sizes.sum())
    # The seed also picks how scarce the fast tiers are.
    fast, mid = CAPACITY_MIX[seed % len(CAPACITY_MIX)]
    if n_limited == 1:
        t = tiers([HBM, DDR], [int(total * fast), None])
    else:
        t = tiers([HBM, DDR, CXL], [int(total * fast), int(total * mid), None])
    return Problem(np.arange(3, 3 + n), sizes, weights, loads, stores, t,
                   total_weight=float(weights.sum()) * 1.1)


def lifetime_problem(n_allocs: int, n_sites: int, ranks: int, n_limited: int,
                     seed: int) -> Problem:
    rng = np.random.default_rng(seed)
    sizes, weights, loads, stores = random_sites(n_sites, rng)
    sizes = np.maximum(sizes // 16, 4 * KIB)      # blocks: a fraction of the big arrays
    # Allocations per site: heavy-tailed, at least one per rank.
    share = rng.pareto(1.0, n_sites) + 1
    per_site = np.maximum(ranks, (share / share.sum() * n_allocs).astype(np.int64))
    per_site[np.argmax(per_site)] += n_allocs - int(per_site.sum())
    span = 1e9
    phase = rng.uniform(0, span, n_sites)          # when the site's temporaries live
    width = span * rng.uniform(0.01, 0.3, n_sites)
    long_lived = rng.random(n_sites) < 0.1
    site = np.repeat(np.arange(n_sites), per_site)
    m = site.size
    rank = rng.integers(0, ranks, m)
    t_alloc = np.where(long_lived[site], rng.uniform(0, span * 0.05, m),
                       phase[site] + rng.uniform(0, 1, m) * width[site])
    life = np.where(long_lived[site], np.inf,
                    rng.exponential(1, m) * width[site] / np.sqrt(per_site[site]))
    t_free = t_alloc + life
    t_free = np.where(np.isfinite(t_free) & (t_free < span), t_free, -1)
    block = (sizes[site] * rng.uniform(0.5, 1.5, m)).astype(np.int64)
    allocs = pd.DataFrame({"site_id": site + 3, "rank": rank, "size": block,
                           "t_alloc": t_alloc.astype(np.int64),
                           "t_free": t_free.astype(np.int64)})
    peak = peak_live(allocs, n_sites)
    busiest = max_total_live(allocs)
    if n_limited == 1:
        t = tiers([HBM, DDR], [int(busiest * 0.25), None])
    else:
        t = tiers([HBM, DDR, CXL], [int(busiest * 0.15), int(busiest * 0.35), None])
    p = Problem(np.arange(3, 3 + n_sites), peak, weights, loads, stores, t,
                total_weight=float(weights.sum()) * 1.1)
    p.allocs = allocs
    return p


def _sweep(allocs: pd.DataFrame) -> pd.DataFrame:
    """Allocations and frees in time order per rank (frees first at equal times)."""
    a = allocs.assign(kind=1, t=allocs["t_alloc"], d=allocs["size"])
    f = allocs[allocs["t_free"] >= 0]
    f = f.assign(kind=0, t=f["t_free"], d=-f["size"])
    ev = pd.concat([a, f], ignore_index=True)
    return ev.sort_values(["rank", "t", "kind"], kind="stable")


def peak_live(allocs: pd.DataFrame, n_sites: int) -> np.ndarray:
    """peak_live_bytes per site: the largest live bytes on any rank."""
    ev = _sweep(allocs)
    ev["live"] = ev.groupby(["site_id", "rank"])["d"].cumsum()
    peak = ev.groupby("site_id")["live"].max()
    out = np.zeros(n_sites, np.int64)
    out[peak.index.to_numpy() - 3] = peak.to_numpy()
    return out


def max_total_live(allocs: pd.DataFrame) -> int:
    ev = _sweep(allocs)
    return int(ev.groupby("rank")["d"].cumsum().max())


@dataclass
class SplitCase:
    """A problem to cut into ranges (hmtune/advisor/split.py) before it is solved: the cut is
    timed with the solve."""
    problem: Problem
    profile: pd.DataFrame


def split_case(n: int, seed: int) -> SplitCase:
    """n sites of one object each, 128-512 MiB (64-256 ranges of 2 MiB, merged to at
    most 64 per site), with weight in every 2 MiB of it (heavy-tailed per range), a
    hugetlb tier holding 10 % of them."""
    from hmtune.core.units import MIB

    rng = np.random.default_rng(seed)
    ids = np.arange(3, 3 + n, dtype=np.int64)
    sizes = rng.integers(64, 257, n).astype(np.int64) * 2 * MIB
    weights = rng.lognormal(0.0, 2.0, n) * 1e6
    blocks = pd.DataFrame({"site_id": ids, "rank": 0, "size": sizes, "t_alloc": 0,
                           "t_free": 100, "scale": 1})
    tier = [Tier("hbm", int(sizes.sum() * 0.1), "hugetlb", 1.0, 1.1, page_size=2 * MIB),
            Tier("ddr", None, "default", 1.6, 1.9)]
    problem = Problem(ids, sizes, weights, np.full(n, 90), np.full(n, 10), tier,
                      total_weight=float(weights.sum()), samples=np.full(n, 1000),
                      max_sizes=sizes.copy(), n_allocs=np.ones(n, np.int64),
                      total_bytes=sizes.copy(), blocks=blocks, statics=np.zeros(n, bool),
                      ns_weight=0.0)
    nb = sizes // (2 * MIB)
    site = np.repeat(ids, nb)
    offset = (np.arange(int(nb.sum())) - np.repeat(np.cumsum(nb) - nb, nb)) * 2 * MIB
    w = rng.pareto(1.5, site.size) * np.repeat(weights / nb, nb)
    profile = pd.DataFrame({"site_id": site, "offset": offset,
                            "weight": np.round(w).astype(np.int64) + 1, "samples": 1})
    return SplitCase(problem, profile)


def run(problem: Problem | SplitCase, target: Target, runs: int) -> tuple[float, Placement]:
    from hmtune.advisor import split
    from hmtune.advisor.inputs import Sites

    times = []
    p: Placement | None = None
    for _ in range(runs):
        t0 = time.perf_counter()
        if isinstance(problem, SplitCase):
            pr = problem.problem
            table = pd.DataFrame({"site_id": pr.site_ids, "label": "x", "kind": "heap",
                                  "callstack_raw": "/a+0x1", "max_size": pr.max_sizes,
                                  "peak_live_bytes": pr.sizes, "weight": pr.weights})
            sites = Sites(Path("sites.csv"), {}, table, table.iloc[0:0], pr.total_weight)
            solved = split.expand(pr, sites, problem.profile, 4096).problem
        else:
            solved = problem
        p = solve(solved, target.strategy, time_limit_s=target.max_seconds,
                  gap_target=target.gap_target)
        times.append(time.perf_counter() - t0)
    assert p is not None
    return statistics.median(times), p


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", type=int, default=3, help="seeded instances per target")
    ap.add_argument("--runs", type=int, default=3, help="timed runs per instance (median)")
    ap.add_argument("--only", default="", help="run targets whose name contains this")
    args = ap.parse_args()
    cases = [
        (Target("ilp 10k sites x 1 fast tier, optimal", "ilp", 5.0, 1e-9, 0.0),
         lambda s: static_problem(10_000, 1, s)),
        (Target("ilp 1k sites x 3 tiers, optimal", "ilp", 2.0, 1e-9, 0.0),
         lambda s: static_problem(1_000, 2, s)),
        (Target("ilp 10k sites x 3 tiers, gap<=0.01%", "ilp", 5.0, 1e-4, 1e-4),
         lambda s: static_problem(10_000, 2, s)),
        (Target("ilp 10k sites x 64 ranges (split), gap<=0.01%", "ilp", 10.0, 1e-4, 1e-4),
         lambda s: split_case(10_000, s)),
        (Target("ilp-lifetime 100k allocs x 2 tiers, gap<=0.1%", "ilp-lifetime", 60.0, 1e-3,
                1e-3), lambda s: lifetime_problem(100_000, 2_000, 4, 1, s)),
        (Target("ilp-lifetime 100k allocs x 3 tiers, gap<=0.1%", "ilp-lifetime", 60.0, 1e-3,
                1e-3), lambda s: lifetime_problem(100_000, 2_000, 4, 2, s)),
    ]
    print(f"# bench-advise: {args.instances} instance(s) per target, median of {args.runs} run(s)")
    failed = 0
    for target, make in cases:
        if args.only and args.only not in target.name:
            continue
        verdicts = []
        for k in range(args.instances):
            problem = make(1 + k)
            secs, p = run(problem, target, args.runs)
            ok = secs <= target.max_seconds and p.gap <= target.max_gap
            verdicts.append(ok)
            print(f"{target.name:48s} seed {1 + k}: {secs:7.2f} s  value {p.value:.6e}  "
                  f"bound {p.bound:.6e}  gap {p.gap:.2e}  {p.solver:28s} "
                  f"{'PASS' if ok else 'FAIL'}")
            for note in p.notes:
                print(f"    note: {note}")
        verdict = "PASS" if all(verdicts) else "FAIL"
        failed += verdict == "FAIL"
        print(f"== {target.name}: {verdict} (target <= {target.max_seconds:g} s, "
              f"gap <= {target.max_gap:.0e})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
