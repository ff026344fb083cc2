"""`hmtune advise`: sites.csv + tiers → placement.txt, report.txt, capacity curve.

Exit status: 0 done; 1 bad input (sites.csv, allocs.csv or a machine file that cannot
be used, an output that cannot be written, a strategy that refuses the problem);
2 usage (bad option values, neither --mem nor --machine, strategies not installed, a
placement FlexMalloc cannot express, a sites.csv made from another trace than the one
next to it: run hmtune analyze again). Nothing is written unless everything succeeded,
and every file is written under a temporary name and renamed, placement.txt last, so a
failed run leaves an earlier placement.txt as it was.

The work is advise() (hmtune/advisor/advise.py); here the options become its values,
and its files are written and what it says printed.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path

from hmtune.advisor.advise import (
    DEFAULT_THRESHOLD,
    DEFAULT_TIME_LIMIT,
    NO_CAPACITY,
    advise,
    command_line,
    done,
    misplaced_output,
    show,
    write,
)
from hmtune.core.errors import Failure
from hmtune.core.units import fraction, human

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
    p.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD, metavar="PCT",
                   help="misses strategy: least share of the weight, in percent (default 1)")
    p.add_argument("--solver", choices=("auto", "cbc", "highs"), default=None,
                   help="ilp strategies: the MIP solver to use first (default: "
                        "HMTUNE_SOLVER, else auto: CBC, bundled with PuLP, then HiGHS, "
                        "through highspy); one that cannot run gives a warning and the "
                        "other")
    p.add_argument("--time-limit", type=float, default=DEFAULT_TIME_LIMIT, metavar="S",
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


@dataclass
class Options:
    mem: int | None
    threshold: float
    time_limit: float
    gap: float | None     # fraction, not percent; None: the strategy's default


def _options(args: argparse.Namespace) -> Options:
    from hmtune.core.units import parse_capacity

    if args.mem is None and args.machine is None and args.fraction is None:
        raise Failure(NO_CAPACITY, 2)
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
    return Options(mem, args.threshold, args.time_limit,
                   None if args.gap is None else args.gap / 100.0)


def _fraction_bytes(sites_path: Path, frac: float) -> int:
    """--fraction F: F of the footprint of sites.csv, in whole 2 MiB pages."""
    from hmtune.core.stage import fast_tier_bytes

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


def _command(args: argparse.Namespace) -> str:
    """The command placement.txt says generated it: the options as given."""
    return command_line(args.sites, mem=args.mem, fraction=args.fraction,
                        machine=args.machine, strategy=args.strategy,
                        threshold=args.threshold, solver=args.solver, allocs=args.allocs,
                        output=args.output, fmt=args.format,
                        whole_objects=args.whole_objects)


def run(args: argparse.Namespace) -> int:
    """hmtune advise: the options as values, advise(), its files written and what it
    says printed. Raises Failure (hmtune/workflows/cli.py main prints it)."""
    from hmtune.advisor.inputs import resolve

    opts = _options(args)
    started = time.monotonic()
    mem = opts.mem
    if args.fraction is not None:
        sites_path = resolve(args.sites)
        misplaced_output(sites_path, args.output)
        mem = _fraction_bytes(sites_path, args.fraction)
    advice = advise(args.sites, args.machine, mem, strategy=args.strategy,
                    threshold=opts.threshold, time_limit=opts.time_limit, gap=opts.gap,
                    allocs_csv=args.allocs, whole_objects=args.whole_objects,
                    output=args.output, fmt=args.format, solver=args.solver,
                    command=_command(args), say=show)
    for line in [*write(advice), done(started)]:
        show(line)
    return 0
