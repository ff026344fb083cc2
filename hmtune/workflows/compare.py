"""`hmtune compare`: the same application and fast-tier capacity under each placement
worth comparing — all-slow (no interposer), first-come-first-served into the fast tier
(what `numactl --preferred` does), a size window like memkind's autohbw (>= 1 MiB until
full), the advisor's strategies, and all-fast (every site in the fast tier with room
for all: the upper bound) — in interleaved rounds (hmtune/workflows/measure.py), a fixed number
or until every speedup's 95 % interval is narrow enough or the time budget is spent,
with every run's figure of merit (FOM), exit status and resources kept in
DIR/compare/runs.csv as it comes (a re-invocation skips the runs already there; --force
redoes them) and a summary: each variant's speedup over all-slow with its interval
and verdict (hmtune/workflows/stats.py), its share of the gain all-fast achieves, bytes in
the fast tier, FOM gained per MiB, and the medians of the runs' resources."""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hmtune.core import paths
from hmtune.core.errors import Failure
from hmtune.core.files import write_atomic
from hmtune.core.sitesfile import SitesFormatError, read_rows
from hmtune.core.units import fraction, human, parse_size
from hmtune.workflows import hugepages, launch, measure, sitegroups, tables
from hmtune.workflows.measure import Variant, write_csv

if TYPE_CHECKING:   # hmtune.advisor.tiers imports pandas: not at every CLI start
    from hmtune.advisor.tiers import Tier

STRATEGIES = ("ilp", "ilp-lifetime", "misses", "density")
BASELINES = {"first-come": "first-come", "size-window": "size-window:1M"}
REFERENCE = "all-slow"
UPPER = "all-fast"
footprint = sitegroups.footprint          # one definition for compare and explore


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare",
        help="run an application under all-slow, first-come, size-window, the advisor's "
             "placements and all-fast, interleaved, and compare their figures of merit "
             "with 95 %% intervals",
        description="Run the application under all-slow, first-come, size-window, each "
                    "advisor strategy's placement and all-fast (every site in the fast "
                    "tier, room for all: the upper bound), in interleaved rounds "
                    "(resumable), and print each speedup over all-slow with its 95 % "
                    "interval and verdict, its share of all-fast's gain, dFOM/MiB and the "
                    "runs' resources (time, page faults, RSS, hugepages). Results in "
                    "DIR/compare/ (docs/formats.md §7).",
        epilog="example: hmtune compare --machine "
               "configs/machines/vm-hugetlb.toml --fom 'kernel_time_s=([0-9.]+)' "
               "--budget 10m -- ./build/examples/latency -s 256",
    )
    add_run_options(p, "compare")
    p.add_argument("--strategies", default="ilp,ilp-lifetime,misses,density", metavar="LIST",
                   help="advisor strategies to compare (default all four; ilp-lifetime "
                        "only when DIR has allocs.csv); NAME-whole is NAME with "
                        "hmtune advise --whole-objects (no split objects)")
    p.add_argument("app", nargs=argparse.REMAINDER, help="-- APP [ARGS...]")
    p.set_defaults(func=run)


def add_run_options(p: argparse.ArgumentParser, what: str) -> None:
    """The options compare and explore share: stage, capacity, tiers, runs, FOM."""
    p.add_argument("-o", "--out", metavar="DIR", default=None,
                   help="stage directory with sites.csv (and allocs.csv) from hmtune trace "
                        "and hmtune analyze (default hmtune-out/<app name>/); results go to "
                        f"DIR/{what}/")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--mem", metavar="SIZE", help="fast-tier capacity per process")
    size.add_argument("--fraction", type=fraction, default=0.4, metavar="F",
                      help="fast-tier capacity as a fraction of the traced footprint (the sum "
                           "of the sites' peak live bytes, each site's largest of any rank; "
                           "above 0, at most 1; default 0.4)")
    p.add_argument("--machine", metavar="FILE.toml", default=None,
                   help="tiers (default: configs/machines/vm-hugetlb.toml when 2 MiB "
                        "hugepages are free or --reserve-hugepages can reserve them, else "
                        "vm-thp.toml)")
    measure.add_options(p, REFERENCE if what == "compare" else "the placement with nothing "
                                                               "in the fast tier")
    p.add_argument("--fom", metavar="REGEX", default=None,
                   help="figure of merit: the first group of REGEX in the application's "
                        "stdout (default: the run's wall-clock seconds)")
    p.add_argument("--higher-is-better", action="store_true",
                   help="the FOM is a rate (default: a time, lower is better); speedups "
                        "are how many times faster either way")
    p.add_argument("--force", action="store_true", help="redo runs already in runs.csv")
    p.add_argument("--reserve-hugepages", action="store_true",
                   help="when the fast tier is hugetlb and its pool is short, reserve the "
                        "hugepages it needs for the length of the runs (root), and put "
                        "nr_hugepages back afterwards")


@dataclass
class Setup:
    """What compare and explore need before their first run."""
    app: list[str]
    stage: Path
    work: Path                      # stage/compare or stage/explore
    fom_re: re.Pattern | None
    machine: Path
    tiers: list[Tier]               # the machine file's, loaded once
    mem: int                        # fast-tier bytes per process, whole 2 MiB pages
    config: dict[str, object]
    plan: measure.Plan
    procs: int                      # processes that place (MPI ranks), 1 without --mpirun


def prepare(args: argparse.Namespace, what: str) -> Setup:
    """Check the arguments and the stage directory, size the fast tier and open
    DIR/<what>/ (config.json; runs.csv is kept only for the same configuration or
    dropped with --force); the Setup. Raises Failure (one line: what is wrong)."""
    who = f"hmtune {what}"
    app = launch.app_command(args.app)
    if not app:
        raise Failure(f"no application given: {who} [options] -- ./app args", 2)
    stage = Path(args.out) if args.out else paths.default_out(app[0])
    sites = stage / "sites.csv"
    if not sites.is_file():
        raise Failure(f"{sites}: not found (run hmtune trace and hmtune analyze "
                      "first)", 2)
    try:                # its version checked before anything runs or is written
        read_rows(sites, "sites")
    except SitesFormatError as e:
        raise Failure(str(e), 2) from None
    plan = measure.plan_from(args)
    if isinstance(plan, str):
        raise Failure(plan, 2)
    exe = launch.check_program(app[0], f"it cannot be {what}d")
    if not paths.hmalloc_lib().exists():
        raise Failure(paths.not_built(paths.hmalloc_lib()), 2)
    try:
        fom_re = re.compile(args.fom) if args.fom else None
    except re.error as e:
        raise Failure(f"--fom: not a regular expression: {e}", 2) from None
    machine = Path(args.machine) if args.machine else default_machine(args.reserve_hugepages)
    if not machine.is_file():
        raise Failure(f"--machine {machine}: no such file", 2)
    from hmtune.advisor.tiers import load_machine

    try:
        tiers = load_machine(machine).tiers
    except ValueError as e:
        raise Failure(f"--machine: {e}", 2) from None
    try:
        mem = parse_size(args.mem) if args.mem else int(footprint(sites) * args.fraction)
    except (ValueError, KeyError) as e:
        raise Failure(f"cannot size the fast tier: {e}", 2) from None
    mem = (mem + (2 << 20) - 1) // (2 << 20) * (2 << 20)       # whole 2 MiB pages
    if mem <= 0:
        raise Failure("the fast tier would be empty (--mem, or a trace with no "
                      "sites)", 2)
    work = stage / what
    try:
        work.mkdir(parents=True, exist_ok=True)
        probe = work / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise Failure(f"cannot write to {work}: {e.strerror}", 2) from None
    from hmtune.workflows.run import launcher_processes

    procs = (launcher_processes(plan.launcher) if plan.launcher else 1) or 1
    config: dict[str, object] = {
        "app": [str(exe.resolve()), *app[1:]], "machine": str(machine.resolve()),
        "mem": mem, "fom": args.fom, "higher_is_better": args.higher_is_better,
        "sites_sha256": hashlib.sha256(sites.read_bytes()).hexdigest(),
        "runs_format": measure.RUNS_FORMAT, "mpirun": plan.launcher,
        "pin": sorted(plan.pin) if plan.pin else None}
    return Setup(app, stage, work, fom_re, machine, tiers, mem, config, plan, procs)


def open_runs(setup: Setup, what: str, force: bool) -> measure.Rows:
    """The runs of DIR/<what>/runs.csv when they are of this configuration ({} with
    --force, which drops them). Raises Failure saying why they cannot go on."""
    cfg_path, runs_path = setup.work / "config.json", setup.work / "runs.csv"
    if cfg_path.exists() and runs_path.exists() and not force:
        try:
            old = json.loads(cfg_path.read_text())
        except ValueError:
            old = None
        if isinstance(old, dict) and "runs_format" not in old:
            raise Failure(f"{runs_path} was written by an earlier hmtune: its "
                          "runs lack the exit status and resource columns and "
                          "ran the placements through 'hmtune run', so they are "
                          "not comparable with new ones; add --force to measure "
                          "again", 2)
        if old != setup.config:
            raise Failure(f"{runs_path} holds runs of another configuration "
                          f"({old}); add --force to start over", 2)
    if force:
        runs_path.unlink(missing_ok=True)
        for old in [*work_files(setup.work, "run.*.log"), *work_files(setup.work, "stats.*.json"),
                    *work_files(setup.work, "rusage.*.txt")]:
            old.unlink(missing_ok=True)
    try:
        rows = measure.read_runs(runs_path)
    except measure.RunsFormatError as e:
        raise Failure(f"{e}; add --force to measure again", 2) from None
    except (OSError, ValueError, KeyError) as e:
        raise Failure(f"{runs_path} cannot be read ({e}); add --force to measure "
                      "again", 2) from None
    cfg_path.write_text(json.dumps(setup.config, indent=1) + "\n")
    return rows


def work_files(work: Path, pattern: str) -> list[Path]:
    """The files of the runs in the variants' directories (work/VARIANT/pattern)."""
    return [f for d in work.iterdir() if d.is_dir() for f in d.glob(pattern)]


def default_machine(reserve: bool) -> Path:
    """vm-hugetlb.toml when hugepages are free (or can be reserved), else vm-thp.toml."""
    can = reserve and os.geteuid() == 0 and os.access(hugepages.NR_HUGEPAGES, os.W_OK)
    name = "vm-hugetlb.toml" if hugepages.free_pages() > 0 or can else "vm-thp.toml"
    return paths.configs_dir() / "machines" / name


@contextlib.contextmanager
def fast_tier_pool(fast: Tier, nbytes: int, reserve: bool, who: str) -> Iterator[None]:
    """With reserve and a hugetlb fast tier: nbytes of hugepages free while the block
    runs (hugepages.reserved); a one-line note when they cannot be had."""
    if not reserve or fast.backend != "hugetlb":
        yield
        return
    with hugepages.reserved(nbytes, who) as note:
        if note:
            print(f"{who}: note: {note}; running anyway: what does not fit stays in "
                  "ordinary memory", file=sys.stderr)
        yield


class Refused(Exception):
    """A tier cannot place anything here: nothing is measured."""


def cannot_place(placements: list[Path], procs: int) -> str | None:
    """The first tier with sites in these placements that cannot place anything on this
    host now (`hmtune run`'s check, hmtune/workflows/run.py), as one line, or None."""
    from hmtune.advisor.placement import read_placement
    from hmtune.workflows.run import unplaceable

    for p in placements:
        dead = unplaceable(read_placement(p), dict(os.environ), procs)
        if dead:
            return dead[0]
    return None


WHOLE = "-whole"        # a strategy name's suffix: hmtune advise --whole-objects


def known_strategy(name: str) -> bool:
    return name.removesuffix(WHOLE) in STRATEGIES


def advise(stage: Path, out: Path, machine: Path, mem: int, strategy: str) -> str | None:
    """placement.txt for one strategy (NAME-whole: with --whole-objects) in out/; None
    when written, else the reason."""
    out.mkdir(parents=True, exist_ok=True)
    whole = strategy.endswith(WHOLE)
    cmd = [str(paths.cli()), "advise", str(stage), "--machine", str(machine),
           "--mem", str(mem), "--strategy", strategy.removesuffix(WHOLE),
           "-o", str(out / "placement.txt"), *(["--whole-objects"] if whole else [])]
    r = subprocess.run(cmd, capture_output=True, text=True)
    (out / "advise.log").write_text(r.stdout + r.stderr)
    if r.returncode != 0:
        return (r.stderr.strip().splitlines() or ["failed"])[-1]
    return None


def tiers_only(placement: Path, dst: Path) -> None:
    """The tiers of placement with no site: what the baselines run with."""
    lines = [ln for ln in placement.read_text().splitlines()
             if ln.startswith(("# hmtune placement", "tier "))]
    dst.write_text("\n".join(lines) + "\ndepth 1\nsize-window 0 0\n")


def all_fast(setup: Setup, out: Path) -> int | None:
    """out/placement.txt with every site of sites.csv that has a chain in the machine's
    first tier, sized so that all fit at once (the upper bound); the capacity it needs
    per process, or None when no site can be placed."""
    from hmtune.advisor.placement import TierLine, write_placement

    groups, _ = sitegroups.load_groups(setup.stage / "sites.csv", 0)
    if not groups:
        return None
    room = sitegroups.room_for_all(groups)
    first, last = setup.tiers[0], setup.tiers[-1]
    out.mkdir(parents=True, exist_ok=True)
    write_placement(out / "placement.txt", sitegroups.placement_for(
        1, groups, TierLine(first.name, first.backend, room),
        TierLine(last.name, last.backend, last.capacity), "compare (all-fast)"))
    return room


def print_table(summary: list[tables.Summary]) -> None:
    w = max(14, *(len(s.name) for s in summary))
    print(f"{'variant':<{w}} {'runs':>4} {'median FOM':>11}  {'speedup [95 % interval]':<24}"
          f"{'share of gain':<19}{'fast MiB':>8} {'dFOM/MiB':>10}  verdict")
    for s in summary:
        g = "-" if math.isnan(s.gain_per_mib) else f"{s.gain_per_mib:.3g}"
        print(f"{s.name:<{w}} {s.runs:>4} {s.median_fom:>11.6g}  "
              f"{tables.fmt_speedup(s.est):<24}{tables.fmt_share(s.est):<19}"
              f"{s.fast_bytes / 2**20:>8.1f} {g:>10}  {s.est.verdict}")


def run(args: argparse.Namespace) -> int:
    who = "hmtune compare"
    strategies = [s for s in args.strategies.split(",") if s]
    bad = [s for s in strategies if not known_strategy(s)]
    if bad:
        raise Failure(f"--strategies: unknown {', '.join(bad)} (known: {', '.join(STRATEGIES)}, "
                      f"each also as NAME{WHOLE})", 2)
    setup = prepare(args, "compare")
    stage, work, machine, mem, plan = setup.stage, setup.work, setup.machine, setup.mem, \
        setup.plan
    if not (stage / "allocs.csv").is_file():
        strategies = [s for s in strategies if s.removesuffix(WHOLE) != "ilp-lifetime"]
    done = open_runs(setup, "compare", args.force)
    rounds = "auto" if plan.repeats is None else str(plan.repeats)
    print(f"{who}: fast tier {human(mem)} per process ({machine.name}); rounds: {rounds}, "
          "every variant once a round, interleaved", file=sys.stderr)

    variants = [Variant(REFERENCE, None)]
    for strategy in strategies:
        why = advise(stage, work / strategy, machine, mem, strategy)
        if why:
            print(f"{who}: strategy {strategy} left out: {why}", file=sys.stderr)
            continue
        variants.append(Variant(strategy, work / strategy / "placement.txt"))
    if len(variants) == 1:
        raise Failure("no strategy produced a placement (see DIR/compare/*/advise.log)", 1)
    tiers_only(variants[1].placement or Path(), work / "baseline-placement.txt")
    variants[1:1] = [Variant(n, work / "baseline-placement.txt", b) for n, b in BASELINES.items()]
    room = all_fast(setup, work / UPPER)
    if room is None:
        print(f"{who}: note: no site has a call chain to place: no all-fast upper bound",
              file=sys.stderr)
    else:
        variants.append(Variant(UPPER, work / UPPER / "placement.txt"))
    top = UPPER if room is not None else None
    need = max(mem, room or 0) * setup.procs
    checked = [v.placement for v in variants
               if v.placement is not None and v.name not in BASELINES]

    @contextlib.contextmanager
    def pools() -> Iterator[None]:
        with fast_tier_pool(setup.tiers[0], need, args.reserve_hugepages, who):
            dead = cannot_place([p for p in checked if p is not None], setup.procs)
            if dead:
                raise Refused(f"{dead}; nothing measured")
            yield

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

    cal = calibrate(stage, machine, work, summary, UPPER,
                    {v.name: v.placement for v in variants
                     if v.name in strategies and v.placement is not None}) \
        if top else None
    stop = tables.stop_message(out, plan, summary)
    write_atomic(work / "result.json", json.dumps({
        "rounds": summary[0].runs, "stopped_by": out.stopped_by, "stop": stop,
        "repeats": rounds, "target": plan.target, "budget_s": plan.budget,
        "min_rounds": plan.min_rounds, "reference": REFERENCE, "upper_bound": top,
        "method": tables.method_note(summary[0].runs), "load_warning": out.load_warning,
        "ran": out.ran, "seconds": round(out.seconds, 1),
        "calibration": str(stage / "calibration.json") if cal and cal.calibration else None,
        "predicted": {n: [round(p.speedup, 4), round(p.lo, 4), round(p.hi, 4)]
                      for n, p in (cal.predicted if cal else {}).items()}},
        indent=1) + "\n")
    print_table(summary)
    print()
    print("medians per run:")
    for line in tables.resource_table(summary):
        print(line)
    print()
    print(stop[0].upper() + stop[1:] + ".")
    note = tables.method_note(summary[0].runs)
    if note:
        print(note + ".")
    fom = "FOM" if args.fom else "wall-clock seconds"
    print(f"speedup: how many times faster than all-slow ({fom}, "
          f"{'higher' if plan.higher else 'lower'} is better); share of gain: "
          f"(speedup - 1) / (all-fast's - 1); dFOM/MiB: FOM gained per MiB in the fast tier.")
    up = summary[-1] if top else None
    if up is not None and up.est.share is None and summary[0].runs > 1:
        print(f"no share of gain: {UPPER} itself is {up.est.verdict} "
              f"({tables.fmt_speedup(up.est)}), so there is no gain to share.")
    if cal and cal.calibration:
        k = cal.calibration
        print(f"calibration ({stage / 'calibration.json'}, for hmtune advise): every site "
              f"fast gains k = {k.k:.2f} [{k.k_lo:.2f}-{k.k_hi:.2f}] of what the sampled "
              "weight predicts; with it, predicted vs measured:")
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
