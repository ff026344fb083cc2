"""`make bench-callcost`: what libhmalloc adds per allocation on a real code, the figure
the advisor's cost model takes as `alloc_cost_ns` (hmtune/advisor/model.py
DEFAULT_ALLOC_COST_NS, and predict.py's UNMATCHED_SHARE for every site fast).

The code is bench-apps' BWA-MEM (its inputs: a seeded 64 Mbp genome and 25,000 reads,
bench/bench_apps.py), run directly (`bwa mem -t 2`), traced and analyzed once by the
real pipeline. Its many small allocations (about 0.8 M a run) come from a few hundred
call paths of stripped code, the case that made the model's call cost 2 us. Every round
runs, in an order rotated round by round:
  bare     no libhmalloc
  big      libhmalloc, the sites whose largest request is at least 1 MiB placed (its
           index), size window from that request up: the small calls are never looked up
  lookup   the same sites placed, the size window from 0: every small call is looked up
           and matches nothing
  placed   every site placed and matched (size window from 0): the small calls placed
  all      every request placed without call-site matching (HMTUNE_BASELINE=all, what
           hmtune compare's all-fast runs)
Figures per round, from the process's CPU time (user + system, rusage) and the
libhmalloc statistics of the run (placed blocks, calls in the size window that matched
nothing):
  lookup cost   (lookup - big) / the calls looked up that matched nothing
  placing cost  (placed - big) / the blocks placed beyond big's
  baseline cost (all - big) / the blocks placed beyond big's, and (all - placed) / all's
                blocks: what placing without matching costs over matching, paired
each the median over the rounds with a distribution-free 95 % interval (order
statistics); the rounds' figures in bench/work/callcost/rounds.json. The differences
include what the placement does to the code's own time (cache and TLB behaviour of the
small objects in 2 MiB pages), which is what the model's per-call cost stands for.
Needs hugepages: as root the script reserves them for its runs and puts nr_hugepages
back. Never part of make test."""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench_apps import bwa_inputs
from bench_split import median_interval
from benchlib import HMALLOC, HMTUNE, ROOT, require

sys.path.insert(0, str(ROOT))
from hmtune.core.placement import TierLine, write_placement  # noqa: E402
from hmtune.core.units import MIB  # noqa: E402
from hmtune.workflows import sitegroups  # noqa: E402
from hmtune.workflows.hugepages import reserved  # noqa: E402

NAME = "bench-callcost"
WORK = ROOT / "bench" / "work" / "callcost"
BIG = MIB                       # sites with a request this large or larger: "big"
VARIANTS = ("bare", "big", "lookup", "placed", "all")
BWA = ["bwa", "mem", "-t", "2", "-K", "10000000", "-o", "out.sam", "ref.fa", "reads.fq"]


def say(msg: str) -> None:
    print(f"{NAME}: {msg}", file=sys.stderr, flush=True)


def stage(work: Path) -> Path:
    """The traced and analyzed stage of BWA-MEM (kept while its sites.csv exists)."""
    st = work / "stage"
    if (st / "sites.csv").exists():
        return st
    say("tracing BWA-MEM once (hmtune trace + hmtune analyze)")
    for cmd in ([str(HMTUNE), "trace", "-q", "-o", str(st), "--", *BWA],
                [str(HMTUNE), "analyze", str(st)]):
        r = subprocess.run(cmd, cwd=work, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"{NAME}: {' '.join(cmd[:2])} failed (rc {r.returncode}): "
                     f"{r.stderr.strip()[-300:]}")
    return st


def placements(st: Path, work: Path) -> tuple[dict[str, Path], int]:
    """The placements of big, lookup, placed and all, and the hugepages they need."""
    groups, _ = sitegroups.load_groups(st / "sites.csv", 1 << 30)
    big = [i for i, g in enumerate(groups) if g.max_size >= BIG]
    if not big or len(big) == len(groups):
        sys.exit(f"{NAME}: the trace has {len(big)} of {len(groups)} sites with a request "
                 f"of 1 MiB or more: no small calls to measure")
    room = sitegroups.room_for_all(groups)
    fast = TierLine("huge", "hugetlb", room)
    slow = TierLine("rest", "default", None)
    everything = (1 << len(groups)) - 1
    only_big = sum(1 << i for i in big)
    smallest_big = min(groups[i].max_size for i in big)
    files: dict[str, Path] = {}
    for name, mask, lo in (("big", only_big, smallest_big), ("lookup", only_big, 0),
                           ("placed", everything, 0), ("all", everything, 0)):
        pf = sitegroups.placement_for(mask, groups, fast, slow, f"bench-callcost ({name})")
        pf.size_window = (lo, pf.size_window[1])
        files[name] = work / f"placement.{name}.txt"
        write_placement(files[name], pf)
    return files, room // sitegroups.PAGE


def one_run(variant: str, files: dict[str, Path], work: Path) -> dict[str, float]:
    """CPU seconds (user + system) of one run, and its libhmalloc counts."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env.pop("HMTUNE_BASELINE", None)
    stats = work / "stats.json"
    stats.unlink(missing_ok=True)
    if variant != "bare":
        env.update(LD_PRELOAD=str(HMALLOC), HMTUNE_SUMMARY="0", HMTUNE_STATS=str(stats),
                   HMTUNE_PLACEMENT=str(files[variant]))
        if variant == "all":
            env["HMTUNE_BASELINE"] = "all"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    r = subprocess.run(BWA, cwd=work, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        sys.exit(f"{NAME}: {variant}: bwa mem failed (rc {r.returncode}): "
                 f"{r.stderr.strip()[-300:]}")
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    got = {"cpu": cpu, "wall": wall, "placed": 0.0, "unmatched": 0.0}
    if variant != "bare":
        doc = json.loads(stats.read_text())
        got["placed"] = float(sum(t["placed_blocks"] for t in doc["tiers"]))
        got["unmatched"] = float(doc.get("unmatched_in_window", 0))
        if sum(t["not_fitting"] + t["map_failed"] for t in doc["tiers"]):
            sys.exit(f"{NAME}: {variant}: the tier refused requests ({stats}): the hugepage "
                     "pool is short")
    return got


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=30, help="interleaved rounds (default 30)")
    args = ap.parse_args()
    if args.rounds < 6:
        sys.exit(f"{NAME}: --rounds {args.rounds}: give at least 6 (an interval needs them)")
    require(NAME, HMTUNE, HMALLOC)
    if shutil.which("bwa") is None:
        sys.exit(f"{NAME}: bwa not installed: run bash bench/apps/deps.sh (as root) or "
                 "make bench-apps once")
    WORK.mkdir(parents=True, exist_ok=True)
    bwa_inputs(64_000_000, 25_000)(WORK)
    st = stage(WORK)
    files, pages = placements(st, WORK)
    rows: list[dict[str, dict[str, float]]] = []
    with reserved((pages + 8) * sitegroups.PAGE, NAME) as missing:
        if missing:
            sys.exit(f"{NAME}: {missing}")
        for r in range(args.rounds):
            order = VARIANTS[r % len(VARIANTS):] + VARIANTS[:r % len(VARIANTS)]
            rows.append({v: one_run(v, files, WORK) for v in order})
            b = rows[-1]
            say(f"round {r + 1}/{args.rounds}: CPU s " + ", ".join(
                f"{v} {b[v]['cpu']:.2f}" for v in VARIANTS))
    (WORK / "rounds.json").write_text(json.dumps(rows, indent=0) + "\n")
    report(rows)
    return 0


def report(rows: list[dict[str, dict[str, float]]]) -> None:
    def mid(v: str, key: str) -> float:
        return sorted(b[v][key] for b in rows)[len(rows) // 2]

    def per_call(v: str, count: str, ref: str, beyond_ref: bool) -> list[float]:
        """ns of CPU per call: (v - ref) over v's count, less ref's when beyond_ref."""
        out = []
        for b in rows:
            n = b[v][count] - (b[ref][count] if beyond_ref else 0.0)
            if n > 0:
                out.append((b[v]["cpu"] - b[ref]["cpu"]) / n * 1e9)
        return out

    print(f"# {NAME}: libhmalloc's cost per call on BWA-MEM (25,000 reads, 2 threads), "
          f"{len(rows)} interleaved rounds, CPU time (user + system)")
    print(f"{'variant':8} {'CPU s':>8} {'wall s':>8} {'placed blocks':>14} "
          f"{'looked up, unmatched':>21}")
    for v in VARIANTS:
        print(f"{v:8} {mid(v, 'cpu'):8.2f} {mid(v, 'wall'):8.2f} {mid(v, 'placed'):14.0f} "
              f"{mid(v, 'unmatched'):21.0f}")
    print("per call, ns: median over rounds [95 % interval]")
    for label, v, count, ref, beyond in (
            ("lookup (unmatched call in the size window)", "lookup", "unmatched", "big",
             False),
            ("placing (matched, in the fast tier)", "placed", "placed", "big", True),
            ("baseline all (placed without matching)", "all", "placed", "big", True),
            ("baseline all over placing, paired", "all", "placed", "placed", False)):
        xs = per_call(v, count, ref, beyond)
        if len(xs) < 6:
            print(f"  {label}: not enough rounds with calls")
            continue
        med, lo, hi = median_interval(xs)
        print(f"  {label:45} {med:8.0f} [{lo:.0f}, {hi:.0f}]")

if __name__ == "__main__":
    sys.exit(main())
