"""`hmtune advise`: sites.csv + tiers → placement.txt, report.txt, capacity curve.

Exit status: 0 done; 1 bad input (sites.csv, allocs.csv or a machine file that cannot
be used, an output that cannot be written, a strategy that refuses the problem);
2 usage (bad option values, neither --mem nor --machine, strategies not installed, a
placement FlexMalloc cannot express, a sites.csv made from another trace than the one
next to it: run hmtune analyze again). Nothing is written unless everything succeeded,
and every file is written under a temporary name and renamed, placement.txt last, so a
failed run leaves an earlier placement.txt as it was.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hmtune.advisor.notes import (
    estimate_notes,
    first_touch_notes,
    partial_trace_notes,
    too_large,
    too_large_notes,
)
from hmtune.core.errors import Failure
from hmtune.core.units import fraction, human

if TYPE_CHECKING:                   # pandas loads only when advise runs
    import pandas as pd

    from hmtune.advisor.inputs import Sites
    from hmtune.advisor.model import Placement, Problem
    from hmtune.advisor.tiers import Machine

STRATEGIES = ("ilp", "ilp-lifetime", "misses", "density")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "advise",
        help="choose which allocation sites go to the fast memory tier(s)",
        description="Read SITES.csv (or DIR/sites.csv) and a tier description, choose the "
                    "sites for each fast tier, and write placement.txt, report.txt and the "
                    "capacity curve (capacity_curve.csv/.png) next to it.",
        epilog="examples: hmtune advise hmtune-out/app --mem 256M; "
               "hmtune advise out/sites.csv --machine configs/machines/vm-hugetlb.toml",
    )
    p.add_argument("sites", nargs="?", default=".", metavar="SITES.csv|DIR",
                   help="sites.csv from hmtune analyze, or its directory (default: .)")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--mem", metavar="SIZE",
                      help="fast memory per process (e.g. 256M, 1GiB); alone it means this "
                           "host's fastest tier (HBM or MCDRAM, else DRAM in front of "
                           "CXL/NVM, else 2 MiB hugepages, or THP when no hugepage can be "
                           "had: see hmtune machine) of that size and the default allocator "
                           "as fallback; with --machine it resizes the machine's fastest "
                           "tier")
    size.add_argument("--fraction", type=fraction, default=None, metavar="F",
                      help="as --mem, sized F of the traced footprint (the sum of the sites' "
                           "peak live bytes) in whole 2 MiB pages, as hmtune compare "
                           "--fraction sizes it; above 0, at most 1")
    p.add_argument("--machine", metavar="FILE.toml",
                   help="tier description (configs/machines/*.toml)")
    p.add_argument("--strategy", choices=STRATEGIES, default=None,
                   help="ilp-lifetime (default with allocs.csv): sites whose blocks are "
                        "never live together share capacity, as the interposer shares it; "
                        "ilp (default without allocs.csv): exact knapsack of the sites' "
                        "peaks; misses: the "
                        "sites above --threshold percent of the weight, largest first; "
                        "density: weight per byte, greedily")
    p.add_argument("--threshold", type=float, default=1.0, metavar="PCT",
                   help="misses strategy: least share of the weight, in percent (default 1)")
    p.add_argument("--solver", choices=("auto", "cbc", "highs"), default=None,
                   help="ilp strategies: the MIP solver to use first (default: "
                        "HMTUNE_SOLVER, else auto: CBC, bundled with PuLP, then HiGHS, "
                        "through highspy); one that cannot run gives a warning and the "
                        "other")
    p.add_argument("--time-limit", type=float, default=30.0, metavar="S",
                   help="solver time limit in seconds (default 30)")
    p.add_argument("--gap", type=float, default=None, metavar="PCT",
                   help="ilp strategies: stop once the solution is proven within PCT percent "
                        "of the optimum (default 0.01 for ilp, 0.1 for ilp-lifetime)")
    p.add_argument("--allocs", metavar="FILE",
                   help="allocs.csv (default: next to sites.csv); ilp-lifetime needs it, "
                        "and it gives the size window and the process count")
    p.add_argument("-o", "--output", metavar="placement.txt", default=None,
                   help="placement file (default: placement.txt next to sites.csv); the "
                        "report and curve go to the same directory")
    p.add_argument("--format", choices=("hmtune", "flexmalloc"), default="hmtune",
                   help="flexmalloc: also write flexmalloc-definitions.txt and "
                        "flexmalloc-locations.txt for FlexMalloc")
    p.add_argument("--whole-objects", action="store_true",
                   help="place whole objects only (default: a site whose objects span two "
                        "or more 2 MiB ranges may have only its hot ranges placed, from "
                        "profile.csv next to sites.csv)")
    p.set_defaults(func=run)


# Proven-gap targets: the lifetime model has a constraint per moment the live set
# changes and is much harder to close (bench/bench_advise.py).
DEFAULT_GAP_PCT = 0.01
DEFAULT_GAP_PCT_LIFETIME = 0.1


@dataclass
class Options:
    mem: int | None
    strategy: str | None  # None: default_strategy once allocs.csv is known
    threshold: float
    time_limit: float
    gap: float | None     # fraction, not percent; None: the strategy's default


def default_strategy(has_allocs: bool) -> str:
    """ilp-lifetime where allocs.csv gives the blocks' lifetimes: libhmalloc checks the
    capacity at each allocation, so sites live at different times share the tier;
    ilp (each site's peak held all run) without it."""
    return "ilp-lifetime" if has_allocs else "ilp"


def default_gap(strategy: str) -> float:
    """The proven gap the exact strategies stop at by default (a fraction)."""
    return (DEFAULT_GAP_PCT_LIFETIME if strategy == "ilp-lifetime" else DEFAULT_GAP_PCT) / 100


def _options(args: argparse.Namespace) -> Options:
    from hmtune.core.units import parse_capacity

    if args.mem is None and args.machine is None and args.fraction is None:
        raise Failure("give --mem SIZE (e.g. --mem 256M), --fraction F or --machine "
                      "FILE.toml", 2)
    mem = None
    if args.mem is not None:
        try:
            mem = parse_capacity(args.mem)
        except ValueError as e:
            raise Failure(f"--mem: {e}", 2) from None
    if not 0 <= args.threshold <= 100:
        raise Failure("--threshold is a percentage, 0 to 100", 2)
    if not args.time_limit > 0:
        raise Failure("--time-limit must be > 0 seconds", 2)
    if args.gap is not None and not 0 <= args.gap < 100:
        raise Failure("--gap is a percentage, 0 to less than 100", 2)
    return Options(mem, args.strategy, args.threshold, args.time_limit,
                   None if args.gap is None else args.gap / 100.0)


def _fraction_bytes(sites_path: Path, frac: float) -> int:
    """--fraction F: F of the footprint of sites.csv, in whole 2 MiB pages."""
    from hmtune.core.sitesfile import fast_tier_bytes

    try:
        mem = fast_tier_bytes(sites_path, frac)
    except FileNotFoundError:
        raise Failure(f"{sites_path}: no such file (run hmtune analyze first)", 1) from None
    except (OSError, ValueError, KeyError) as e:
        raise Failure(f"--fraction: cannot read the footprint of {sites_path}: {e}",
                      1) from None
    if mem <= 0:
        raise Failure(f"--fraction: {sites_path} has no site with live bytes: the fast "
                      "tier would be empty", 1)
    print(f"hmtune advise: fast tier {human(mem)} per process ({frac:g} of the traced "
          "footprint)")
    return mem


def _node_processes(sites_path: Path, meta: dict[str, str]) -> tuple[int | None, int]:
    """The processes on the fullest node and the number of nodes, from the task-to-node
    map of the trace next to sites.csv (a per-node tier is shared by one node's ranks,
    not by every rank of a job on several nodes); (None, 1) without a readable trace."""
    from collections import Counter

    from hmtune.analyze.prv_tables import task_nodes
    from hmtune.analyze.traceid import trace_next_to

    trace = trace_next_to(sites_path.parent, meta.get("trace"))
    nodes = task_nodes(trace) if trace is not None else {}
    if not nodes:
        return None, 1
    per = Counter(nodes.values())
    return max(per.values()), len(per)


def _host_machine(mem: int) -> Machine:
    """`--mem SIZE` alone: this host's fastest tier (hmtune machine), SIZE per process.
    Says which tier it is on stdout."""
    from hmtune.advisor.host import HostError, detect, env_root
    from hmtune.advisor.machinefile import choose
    from hmtune.advisor.tiers import with_fast_capacity

    try:
        choice = choose(detect(env_root()))
    except HostError as e:
        raise Failure(f"--mem: {e}", 1) from None
    print(f"hmtune advise: {choice.why} (this host; --machine FILE.toml advises for "
          "another)")
    m = with_fast_capacity(choice.machine, mem)
    m.notes = [n for n in m.notes if not n.startswith("--mem sets")]
    return m


def _tier_warnings(machine: Machine) -> list[str]:
    """A note for each fast tier of a machine file that cannot place anything on this
    host, naming the one that can (a machine file for another host is legal: a note, not
    an error). memkind is asked only about the kinds the tiers name."""
    from hmtune.advisor.host import HostError, detect, env_root
    from hmtune.advisor.hostcheck import backend_problem, fast_tier_here

    try:
        host = detect(env_root(), probe=False)
    except HostError:
        return []
    out: list[str] = []
    here = ""                           # what can: from memkind's answers too, asked once
    for t in machine.tiers[:-1]:
        why = backend_problem(host, t.backend)
        if why:
            here = here or fast_tier_here(detect(env_root()))
            out.append(f"tier '{t.name}' ({t.backend}) cannot place anything on this host "
                       f"({why}); what can: {here} (hmtune advise --mem SIZE without "
                       "--machine uses it; see hmtune machine)")
    return out


def _forecast(sites_path: Path, meta: dict[str, str], problem: Problem,
              placement: Placement, notes: list[str]) -> list[str]:
    """The predicted speedups' lines (hmtune/advisor/predict.py), calibrated by the
    calibration.json next to sites.csv when it holds for this trace and machine."""
    from hmtune.advisor import predict
    from hmtune.analyze.traceid import FIELD as TRACE_ID

    if problem.n == 0:
        return []
    cal, path = None, sites_path.parent / "calibration.json"
    if path.is_file():
        try:
            got = predict.read_calibration(path)
        except (OSError, ValueError) as e:
            notes.append(f"{path} not used: {e}")
        else:
            why = predict.matches(got, meta.get(TRACE_ID, ""), meta.get("sampler", "?"),
                                  problem.tiers)
            if why:
                notes.append(f"{path} not used: {why}")
            else:
                cal = got
    mine = predict.predict(problem, placement.tier_of, cal)
    every = predict.predict(predict.as_run_all_fast(problem), predict.all_fast(problem), cal)
    return predict.lines(mine, every, cal, problem.tiers[0].name)


def _solver_warnings(strategy: str) -> list[str]:
    """Before the exact strategies run: a warning when the MIP solver asked for
    (--solver, HMTUNE_SOLVER) cannot run, saying why and what runs instead."""
    from hmtune.advisor import mip

    if strategy not in ("ilp", "ilp-lifetime"):
        return []
    try:
        want = mip.asked()
        names = mip.available_solvers()
    except ValueError as e:
        raise Failure(str(e), 2) from None
    if want is None or (names and names[0] == want):
        return []
    instead = (f"{mip.TITLES[names[0]]} is used instead" if names
               else "no MIP solver can run: the density placement is used instead")
    source = f"{mip.asked_where()}={want}"
    return [f"{mip.TITLES[want]} was asked for ({source}) but cannot be used: "
            f"{mip.unusable(want)}; {instead}"]


def _solver_said(placement: Placement) -> str | None:
    """After an exact strategy: the MIP solver it used (with PuLP's version), that it
    needed none, or why none could run."""
    from hmtune.advisor import mip

    if placement.strategy not in ("ilp", "ilp-lifetime"):
        return None
    used = [n for n in mip.PREFERENCE if n in placement.solver.replace("+", " ").split()]
    if used:
        return (f"hmtune advise: MIP solver: {mip.TITLES[used[-1]]} (PuLP "
                f"{mip.pulp_version()})")
    if placement.solver == "density-fallback":
        why = "; ".join(f"{mip.TITLES[n]}: {mip.unusable(n) or 'failed'}"
                        for n in mip.PREFERENCE)
        return f"hmtune advise: MIP solver: none could run ({why})"
    return f"hmtune advise: MIP solver: none needed ({placement.solver or '?'})"


def _command(args: argparse.Namespace) -> str:
    parts = ["hmtune", "advise", args.sites]
    for flag, value in (("--mem", args.mem), ("--fraction", args.fraction),
                        ("--machine", args.machine),
                        ("--strategy", args.strategy), ("--threshold", args.threshold),
                        ("--solver", args.solver),
                        ("--allocs", args.allocs), ("-o", args.output),
                        ("--format", args.format)):
        if value is not None:
            parts += [flag, str(value)]
    if args.whole_objects:
        parts.append("--whole-objects")
    return " ".join(shlex.quote(p) for p in parts)


def _trace_check(sites_path: Path, meta: dict[str, str],
                 allocs: pd.DataFrame | None) -> list[str]:
    """Refuse inputs made from another trace than the one next to them (exit 2): a
    sites.csv whose trace id is not that trace's, an allocs.csv of another trace than
    sites.csv. A sites.csv without an id (an older hmtune) gives a note."""
    from hmtune.analyze.traceid import FIELD, trace_id, trace_next_to

    where = sites_path.parent
    redo = f"run hmtune analyze {where} first"
    tid = meta.get(FIELD)
    a_tid = allocs.attrs.get("meta", {}).get(FIELD) if allocs is not None else None
    if tid and a_tid and tid != a_tid:
        raise Failure(f"{sites_path.name} and allocs.csv were made from different traces: "
                      f"{redo}", 2)
    if not tid:
        return [f"{sites_path.name} does not say which trace it was made from (an older "
                f"hmtune analyze): it is not checked against the trace; {redo} to record it"]
    trace = trace_next_to(where, meta.get("trace"))
    now = trace_id(trace) if trace is not None else None
    if now is not None and now != tid:
        raise Failure(f"{sites_path.name} was made from another trace than {trace}: {redo}",
                      2)
    return []


def with_trace_id(placement_text: str, meta: dict[str, str]) -> str:
    """placement.txt with a comment naming the trace its sites.csv was made from, after
    the version and `generated by` lines (readers skip comments; hmtune trace uses it
    to tell outputs of an earlier trace)."""
    from hmtune.analyze.traceid import FIELD

    tid = meta.get(FIELD)
    if not tid:
        return placement_text
    lines = placement_text.split("\n")
    at = 1 + sum(1 for line in lines[1:3] if line.startswith("# generated by"))
    lines.insert(at, f"# {FIELD}={tid} (the trace sites.csv was made from)")
    return "\n".join(lines)


def _split(problem: Problem, sites: Sites, sites_path: Path,
           notes: list[str]) -> tuple[Problem, Sites]:
    """The problem with its splittable sites cut into ranges (hmtune/advisor/split.py) by
    profile.csv next to sites.csv; as it is without one (an older hmtune analyze)."""
    import numpy as np

    from hmtune.advisor import split
    from hmtune.advisor.inputs import renamed

    path = sites_path.parent / "profile.csv"
    if not path.is_file():
        if too_large(problem, np.full(problem.n, len(problem.tiers) - 1)):
            notes.append(f"no {path.name} next to {sites_path.name} (an older hmtune "
                         "analyze): objects are placed whole; run hmtune analyze again to "
                         "place the hot ranges of objects over the capacity")
        return problem, sites
    from hmtune.analyze.profile import read_profile
    from hmtune.analyze.traceid import FIELD

    try:
        prof = read_profile(path)
    except (OSError, ValueError) as e:
        raise Failure(f"{e}", 1) from None
    tid = sites.meta.get(FIELD)
    if tid and prof.trace_id and tid != prof.trace_id:
        raise Failure(f"{path} and {sites_path.name} were made from different traces: run "
                      f"hmtune analyze {sites_path.parent} first", 2)
    ex = split.expand(problem, sites, renamed(prof.df, sites.merged), prof.granularity)
    notes += ex.notes
    return ex.problem, ex.sites


def run(args: argparse.Namespace) -> int:
    """hmtune advise. Raises Failure (hmtune/workflows/cli.py main prints it)."""
    import numpy as np

    from hmtune.advisor.inputs import InputError, build_problem, load_allocs, load_sites, resolve
    from hmtune.advisor.model import Placement
    from hmtune.advisor.tiers import (
        TierFileError,
        load_machine,
        per_process,
        with_fast_capacity,
    )
    opts = _options(args)
    try:
        from hmtune.advisor import mip, strategies
    except ImportError as e:
        raise Failure(f"the placement strategies (hmtune/advisor/strategies.py) are not "
                      f"available: {e}", 2) from None
    mip.ask(args.solver)
    t0 = time.monotonic()
    sites_path = resolve(args.sites)
    if not sites_path.exists() and args.output and (Path(args.output) / "sites.csv").is_file():
        # -o is where placement.txt goes (hmtune trace/compare's -o is the stage)
        raise Failure(f"{sites_path}: no such file; -o names where to write placement.txt, "
                      f"and {args.output} holds a sites.csv: to advise on it, give it as the "
                      f"argument (hmtune advise {shlex.quote(args.output)} ...)", 2)
    if args.fraction is not None:
        opts.mem = _fraction_bytes(sites_path, args.fraction)
    allocs_path = Path(args.allocs) if args.allocs else sites_path.parent / "allocs.csv"
    if opts.strategy is None:
        opts.strategy = default_strategy(bool(args.allocs) or allocs_path.exists())
    if opts.gap is None:
        opts.gap = default_gap(opts.strategy)
    lifetime = opts.strategy == "ilp-lifetime"
    try:
        if args.machine:
            machine = load_machine(args.machine)
            if opts.mem is not None:
                machine = with_fast_capacity(machine, opts.mem)
        else:
            assert opts.mem is not None
            machine = _host_machine(opts.mem)
        sites = load_sites(sites_path)
        allocs = None
        if args.allocs or allocs_path.exists():
            # every strategy: the blocks give each site's exact size in a tier
            allocs = load_allocs(allocs_path, set(sites.table["site_id"]), full=True,
                                 merged=sites.merged)
        elif lifetime:
            raise InputError(f"{allocs_path}: no such file (--strategy ilp-lifetime needs "
                             "allocs.csv; give --allocs FILE)")
    except (InputError, TierFileError) as e:
        raise Failure(str(e), 1) from None
    # --mem alone took this host's own tier: only a machine file's tiers need checking
    notes = [*machine.notes, *(_tier_warnings(machine) if args.machine else []),
             *sites.notes, *_trace_check(sites_path, sites.meta, allocs),
             *partial_trace_notes(sites_path)]
    nprocs = allocs.attrs.get("nprocs") if allocs is not None else None
    node_procs, nnodes = _node_processes(sites_path, sites.meta)
    tiers, tier_notes = per_process(machine, nprocs, node_procs, nnodes)
    notes += tier_notes
    table = sites.table
    problem = build_problem(sites, tiers, allocs, lifetime)
    notes += first_touch_notes(sites, tiers, problem.faults, problem.ns_weight)
    whole = None
    if not args.whole_objects:
        whole, whole_sites = problem, sites
        problem, sites = _split(problem, sites, sites_path, notes)
        table = sites.table
        if problem is whole:
            whole = None
    for w in _solver_warnings(opts.strategy) if problem.n else []:
        print(f"hmtune advise: warning: {w}", file=sys.stderr)
    if problem.n == 0:
        placement = Placement(np.zeros(0, np.int64), opts.strategy, 0.0, 0.0, "none",
                              ["no placeable site in the input: nothing to place"])
    else:
        try:
            kw = {"threshold_pct": opts.threshold, "time_limit_s": opts.time_limit,
                  "gap_target": opts.gap}
            if whole is None:
                placement = strategies.solve(problem, opts.strategy, **kw)
            else:
                placement, uncut = strategies.solve_split(problem, whole, opts.strategy, **kw)
                if uncut:
                    notes.append("the sites' ranges are worth less than the whole objects at "
                                 "this capacity: objects are placed whole")
                    problem, sites, table, whole = whole, whole_sites, whole_sites.table, None
        except ValueError as e:
            raise Failure(f"{sites_path}: {e}", 1) from None
        from hmtune.advisor import window
        from hmtune.advisor.split import complete, flat_first

        placement = complete(problem, table, flat_first(problem, table, placement))
        placement, dropped = window.trim(problem, table, placement, allocs)
        if dropped:
            notes.append(dropped)
        said = _solver_said(placement)
        if said:
            print(said)
    from hmtune.advisor import outputs

    out = Path(args.output) if args.output else sites_path.parent / "placement.txt"
    if out.is_dir():
        out = out / "placement.txt"
    if sites.total_weight <= 0:
        notes.append("the trace has no sampled weight: no site gains from fast memory "
                     "(trace again with a sampler, e.g. hmtune trace --sampler soft)")
    notes += estimate_notes(table, placement.tier_of, len(problem.tiers) - 1)
    notes += too_large_notes(problem, placement.tier_of)
    forecast = _forecast(sites_path, sites.meta, problem, placement, notes)
    files = outputs.render(args, sites, machine, problem, placement, allocs, notes,
                           _command(args), out, strategies, forecast, whole)
    files.placement_text = with_trace_id(files.placement_text, sites.meta)
    outputs.write_all(files)
    print(outputs.summary(files))
    for note in files.notes:
        print(f"hmtune advise: note: {note}", file=sys.stderr)
    print(f"hmtune advise: done in {time.monotonic() - t0:.1f} s", file=sys.stderr)
    return 0
