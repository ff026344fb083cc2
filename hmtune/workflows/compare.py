"""`hmtune compare`: the same application and fast-tier capacity under each placement
worth comparing — all-slow (no interposer), first-come-first-served into the fast tier
(what `numactl --preferred` does), a size window like memkind's autohbw (>= 1 MiB until
full), the advisor's strategies, and all-fast (every allocation in the fast tier with
room for all, no call-site matching, HMTUNE_BASELINE=all: the upper bound) — in
interleaved rounds (hmtune/workflows/measure.py), a fixed number or until every
speedup's 95 % interval is narrow enough or the time budget is spent, with every run's
figure of merit (FOM), exit status and resources kept in DIR/compare/runs.csv as it
comes (a re-invocation skips the runs already there; --force redoes them) and a
summary: each variant's speedup over all-slow with its interval and verdict
(hmtune/workflows/stats.py), its share of the gain all-fast achieves, bytes in the fast
tier, FOM gained per MiB, and the medians of the runs' resources."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import math
import sys
from pathlib import Path

from hmtune.core.errors import Failure
from hmtune.core.files import write_atomic
from hmtune.core.stage import PLACEMENT, Stage
from hmtune.core.units import human
from hmtune.workflows import harness, measure, tables
from hmtune.workflows.harness import REFERENCE, STRATEGIES, UPPER, WHOLE, Refused
from hmtune.workflows.measure import Variant, write_csv

BASELINES = {"first-come": "first-come", "size-window": "size-window:1M"}


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare",
        help="run an application under all-slow, first-come, size-window, the advisor's "
             "placements and all-fast, interleaved, and compare their figures of merit "
             "with 95 %% intervals",
        description="Run the application under all-slow, first-come, size-window, each "
                    "advisor strategy's placement and all-fast (every allocation in the "
                    "fast tier, room for all: the upper bound), in interleaved rounds "
                    "(resumable), and print each speedup over all-slow with its 95 % "
                    "interval and verdict, its share of all-fast's gain, dFOM/MiB and the "
                    "runs' resources (time, page faults, RSS, hugepages). Results in "
                    "DIR/compare/ (docs/formats.md §7).",
        epilog="example: hmtune compare --machine "
               "configs/machines/vm-hugetlb.toml --fom 'kernel_time_s=([0-9.]+)' "
               "--budget 10m -- ./build/examples/latency -s 256",
    )
    harness.add_run_options(p, "compare")
    p.add_argument("--strategies", default="ilp,ilp-lifetime,misses,density", metavar="LIST",
                   help="advisor strategies to compare (default all four; ilp-lifetime "
                        "only when DIR has allocs.csv); NAME-whole is NAME with "
                        "hmtune advise --whole-objects (no split objects)")
    p.add_argument("app", nargs=argparse.REMAINDER, help="-- APP [ARGS...]")
    p.set_defaults(func=run)


def print_table(summary: list[tables.Summary]) -> None:
    w = max(14, *(len(s.name) for s in summary))
    print(f"{'variant':<{w}} {'runs':>4} {'median FOM':>11}  {'speedup [95 % interval]':<24}"
          f"{'share of gain':<19}{'fast MiB':>8} {'dFOM/MiB':>10}  verdict")
    for s in summary:
        g = "-" if math.isnan(s.gain_per_mib) else f"{s.gain_per_mib:.3g}"
        print(f"{s.name:<{w}} {s.runs:>4} {s.median_fom:>11.6g}  "
              f"{tables.fmt_speedup(s.est):<24}{tables.fmt_share(s.est):<19}"
              f"{s.fast_bytes / 2**20:>8.1f} {g:>10}  {s.est.verdict}")


def table_notes(summary: list[tables.Summary]) -> list[str]:
    """What the tables show that needs a word: shares whose interval says nothing, and
    max RSS of runs whose fast tier was hugetlb pages (not counted in RSS)."""
    out = []
    wide = [s.name for s in summary if tables.fmt_share(s.est).endswith("[too wide]")]
    if wide:
        out.append(f"share of gain [too wide] ({', '.join(wide)}): its 95 % interval spans "
                   "more than 200 points, because all-fast's own gain is not resolved from "
                   "the noise: it says nothing yet (more rounds narrow it)")
    if any(s.resources.get("hugepages", 0) > 0 for s in summary):
        out.append("max RSS does not count hugetlb pages (the kernel leaves them out of RSS; "
                   "THP pages are in it): the hugepages column has them")
    return out


def versus_json(vs: tables.Versus | None, mem: int | None) -> dict[str, object] | None:
    """result.json's advisor_over_baseline (one capacity's), None without a strategy."""
    if vs is None:
        return None
    return {**({"mem": mem} if mem is not None else {}),
            "strategy": vs.mine, "baseline": vs.other, **_paired_json(vs)}


def _paired_json(vs: tables.Versus) -> dict[str, object]:
    """A paired comparison's speedup, interval and verdict in result.json."""
    return {"speedup": round(vs.est.speedup, 4),
            "lo": None if vs.est.lo is None else round(vs.est.lo, 4),
            "hi": None if vs.est.hi is None else round(vs.est.hi, 4),
            "verdict": vs.word}


def run(args: argparse.Namespace) -> int:
    who = "hmtune compare"
    strategies = [s for s in args.strategies.split(",") if s]
    bad = [s for s in strategies if not harness.known_strategy(s)]
    if bad:
        raise Failure(f"--strategies: unknown {', '.join(bad)} (known: {', '.join(STRATEGIES)}, "
                      f"each also as NAME{WHOLE})", 2)
    setup = harness.prepare(args, "compare")
    stage, work, machine, plan = setup.stage, setup.work, setup.machine, setup.plan
    if not Stage(stage).allocs.is_file():
        strategies = [s for s in strategies if s.removesuffix(WHOLE) != "ilp-lifetime"]
    done = harness.open_runs(setup, "compare", args.force)
    rounds = "auto" if plan.repeats is None else str(plan.repeats)
    sizes = ", ".join(human(m) for m in setup.mems)
    print(f"{who}: fast tier {sizes} per process ({machine.name}); rounds: {rounds}, "
          "every variant once a round, interleaved", file=sys.stderr)

    several = len(setup.mems) > 1
    tags = {m: harness.capacity_tag(m) if several else "" for m in setup.mems}
    variants = [Variant(REFERENCE, None)]
    mine: dict[int, list[str]] = {}          # capacity -> its strategies' variant names
    theirs: dict[int, list[str]] = {}        # capacity -> its baselines' variant names
    for mem, tag in tags.items():
        placed = []
        for strategy in strategies:
            name = strategy + tag
            why = harness.advise(stage, work / name, setup.spec, mem, strategy)
            if why:
                print(f"{who}: strategy {name} left out: {why}", file=sys.stderr)
                continue
            placed.append(Variant(name, work / name / PLACEMENT))
        if not placed:
            if several:
                print(f"{who}: no strategy produced a placement at {human(mem)}: that "
                      "capacity is left out", file=sys.stderr)
            continue
        base = work / f"baseline-placement{tag}.txt"
        harness.tiers_only(placed[0].placement or Path(), base)
        variants += [Variant(n + tag, base, b) for n, b in BASELINES.items()] + placed
        mine[mem] = [v.name for v in placed]
        theirs[mem] = [n + tag for n in BASELINES]
    if len(variants) == 1:
        raise Failure("no strategy produced a placement (see DIR/compare/*/advise.log)", 1)
    room = harness.all_fast(setup, work / UPPER)
    if room is None:
        print(f"{who}: note: no site has a call chain to place: no all-fast upper bound",
              file=sys.stderr)
    else:
        variants.append(Variant(UPPER, work / UPPER / PLACEMENT, harness.UPPER_POLICY))
    top = UPPER if room is not None else None
    baselines = {n for names in theirs.values() for n in names}
    placements = [v.placement for v in variants
                  if v.placement is not None and v.name not in baselines]
    need = max(setup.mem, room or 0) * setup.procs
    if args.reserve_hugepages:
        need = harness.pool_need(placements, setup.stage, setup.procs, need,
                                 work / UPPER / PLACEMENT if top else None)
    pools = functools.partial(harness.pools, setup, placements, need,
                              args.reserve_hugepages, who)
    try:
        out = measure.measure(variants, plan, setup.app, work, setup.fom_re, who, done, top,
                              pools)
    except Refused as e:
        raise Failure(str(e), 2) from None
    if out is None:
        return 1
    names = [v.name for v in variants]
    summary = tables.summarize(out.rows, names, top, plan.higher)
    if not summary:
        raise Failure("no complete round to summarize", 1)
    rows = []
    for s in summary:
        c = tables.csv_columns(s)
        c["fast_mib"] = f"{s.fast_bytes / 2**20:.1f}"
        rows.append({"variant": s.name, **c})
    fields = ["variant", *tables.SHARED_COLUMNS[:12], "fast_mib",
              *tables.SHARED_COLUMNS[12:]]
    write_csv(work / "summary.csv", fields, rows)
    from hmtune.workflows.calibrate import calibrate

    ours = {n for names_ in mine.values() for n in names_}
    cal = calibrate(stage, machine, work, summary, UPPER,
                    {v.name: v.placement for v in variants
                     if v.name in ours and v.placement is not None}) \
        if top else None
    vss = {mem: tables.versus(summary, out.rows, mine[mem], theirs[mem], plan.higher)
           for mem in mine}
    splits = {mem: tables.split_over_whole(summary, out.rows, mine[mem], WHOLE,
                                           plan.higher) for mem in mine}
    stop = tables.stop_message(out, plan, summary)
    short = tables.short_of_tier(out.rows, names, ours | ({top} if top else set()))
    write_atomic(work / "result.json", json.dumps({
        "rounds": summary[0].runs, "stopped_by": out.stopped_by, "stop": stop,
        "repeats": rounds, "target": plan.target, "budget_s": plan.budget,
        "min_rounds": plan.min_rounds, "reference": REFERENCE, "upper_bound": top,
        "method": tables.method_note(summary[0].runs), "load_warning": out.load_warning,
        "ran": out.ran, "seconds": round(out.seconds, 1),
        "capacities": [{"mem": m, "tag": tags[m], "variants": theirs[m] + mine[m]}
                       for m in mine],
        "advisor_over_baseline": [versus_json(vss[m], m) for m in mine] if several
        else versus_json(next(iter(vss.values()), None), None),
        "split_over_whole": [{"mem": m, "split": v.mine, "whole": v.other, **_paired_json(v)}
                             for m in mine for v in splits[m]],
        "calibration": str(Stage(stage).calibration) if cal and cal.calibration else None,
        "predicted": {n: [round(p.speedup, 4), round(p.lo, 4), round(p.hi, 4)]
                      for n, p in (cal.predicted if cal else {}).items()},
        "short_of_tier": [dataclasses.asdict(x) for x in short]},
        indent=1) + "\n")
    print_table(summary)
    print()
    print("medians per run:")
    for line in tables.resource_table(summary, max(14, *(len(s.name) for s in summary))):
        print(line)
    print()
    for mem, vs in vss.items():
        at = f" at {human(mem)}" if several else ""
        if vs is not None:
            print(f"best advisor strategy over the best baseline{at}: {vs.line()}.")
        for v in splits[mem]:
            print(f"split objects over whole objects{at}: {v.line()}.")
    print(stop[0].upper() + stop[1:] + ".")
    note = tables.method_note(summary[0].runs)
    if note:
        print(note + ".")
    fom = (f"FOM: {' and '.join(repr(x) for x in args.fom)} in the run's output"
           + (" (their geometric mean)" if len(args.fom) > 1 else "")
           if args.fom else "FOM: the run's wall-clock seconds")
    print(f"speedup: how many times faster than all-slow ({fom}, "
          f"{'higher' if plan.higher else 'lower'} is better); share of gain: "
          f"(speedup - 1) / (all-fast's - 1); dFOM/MiB: FOM gained per MiB in the fast tier.")
    for line in table_notes(summary):
        print(line)
    up = summary[-1] if top else None
    if up is not None and up.est.share is None and summary[0].runs > 1:
        print(f"no share of gain: {UPPER} itself is {up.est.verdict} "
              f"({tables.fmt_speedup(up.est)}), so there is no gain to share.")
    beyond = tables.beyond_bound(summary, UPPER)
    if beyond:
        print(f"note: {beyond}.")
    for x in short:
        print(f"note: {x.line()}.")
    if cal and cal.calibration:
        k = cal.calibration
        print(f"calibration ({Stage(stage).calibration}, for hmtune advise), fitted on "
              f"{', '.join(p.variant for p in k.points)}: the placements gain k = {k.k:.2f} "
              f"[{k.k_lo:.2f}-{k.k_hi:.2f}] of what the sampled weight predicts, their calls "
              f"cost m = {k.call_scale:.2f} [{k.call_scale_lo:.2f}-{k.call_scale_hi:.2f}] "
              "of the model's"
              + "".join(f", {n} gains k = {x:.2f} [{lo:.2f}-{hi:.2f}]"
                        for n, x, lo, hi in k.kind_k)
              + "; each placement predicted from the others' measurements, beside its own:")
        for n, p in cal.predicted.items():
            print(f"  {n:<14} predicted {p.text():<24} measured "
                  f"{tables.fmt_speedup(next(s.est for s in summary if s.name == n))}")
    for note in cal.notes if cal else []:
        print(f"note: {note}.")
    if out.load_warning:
        print(f"warning: the machine was busy ({out.load_warning}).")
    print(f"{who}: runs in {work / 'runs.csv'}, table in {work / 'summary.csv'}",
          file=sys.stderr)
    return 0
