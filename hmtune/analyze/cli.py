"""`hmtune analyze`: trace → per-site metrics (`sites.csv`), per-block rows
(`allocs.csv`) and where in its blocks each site's sampled weight falls
(`profile.csv`), and for a trace with hardware counters the counters over its sites,
threads and phases (`counters.csv`), written next to the trace unless `-o DIR` says
otherwise.

Exit status: 0 done (also for a trace without allocations: the files are then
written with their header only), 1 bad input (the scanner refused the trace, its .pcf
is there but unreadable or without a site table, or an output could not be written),
2 usage (missing trace, scanner not built, bad option). Nothing is written on failure.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from hmtune.analyze.scanner import ScanFailed, run_scanner, scanner_bin
from hmtune.core import events, paths
from hmtune.core.errors import Failure
from hmtune.core.stage import ALLOCS, COUNTERS, PROFILE, TRACE, Stage
from hmtune.core.units import parse_size

if TYPE_CHECKING:                 # the analyze modules load only when analyze runs
    from hmtune.analyze.scan_io import Scan
    from hmtune.analyze.sites import SiteTable
    from hmtune.analyze.sites_io import Split


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "analyze",
        help="turn a trace into per-allocation-site metrics (sites.csv, allocs.csv, "
             "profile.csv)",
        description="Read TRACE.prv (hmtune's or Extrae's) and write DIR/sites.csv, "
                    "DIR/allocs.csv and DIR/profile.csv, then print the sites with the most "
                    "sampled weight.",
        epilog="example: hmtune analyze hmtune-out/app/trace.prv --top 20",
    )
    p.add_argument("trace", metavar="TRACE.prv",
                   help="Paraver trace (.prv or .prv.gz; its .pcf gives the site labels); "
                        "a directory means DIR/trace.prv")
    p.add_argument("-o", "--out", metavar="DIR", default=None,
                   help="output directory (default: the trace's directory)")
    p.add_argument("--per-rank", action="store_true",
                   help="one row per (site, MPI rank) instead of one per site")
    p.add_argument("--skip-bad", action="store_true",
                   help="skip malformed trace lines instead of stopping at the first")
    p.add_argument("--top", type=int, default=10, metavar="N",
                   help="sites shown on the terminal (default 10; 0 for none)")
    p.add_argument("--lookahead", action="store_true",
                   help="count the software sampler's look-ahead samples (the next access "
                        "after an instruction without one) in the objects they fell in; by "
                        "default they count as samples without an address")
    p.add_argument("--profile-granularity", default="4096", metavar="BYTES",
                   help="profile.csv's bucket size: a power of two from 4096 to 1G (4K, 2M "
                        "and the like also work; default 4096)")
    p.add_argument("--phases", type=int, default=20, metavar="N",
                   help="counters.csv's phases: the run cut into N equal spans of time, 1 to "
                        "1000 (default 20)")
    p.set_defaults(func=run)


def _say(msg: str) -> None:
    print(f"hmtune analyze: {msg}", file=sys.stderr)


def _resolve_trace(arg: str) -> Path | None:
    p = Path(arg)
    if p.is_dir():
        p = p / TRACE
    return p if p.is_file() else None


def run(args: argparse.Namespace) -> int:
    if args.top < 0:
        raise Failure("--top must be 0 or more", 2)
    if not 1 <= args.phases <= 1000:
        raise Failure(f"--phases {args.phases}: give a number from 1 to 1000", 2)
    from hmtune.analyze.profile import granularity_error
    try:
        args.profile_granularity = parse_size(str(args.profile_granularity))
        why = granularity_error(args.profile_granularity)
    except ValueError as e:
        why = str(e)
    if why is not None:
        raise Failure(f"--profile-granularity: {why}", 2)
    trace = _resolve_trace(args.trace)
    if trace is None:
        raise Failure(f"{args.trace}: no such trace file", 2)
    scanner = scanner_bin()
    if not scanner.exists():
        raise Failure(paths.not_built(scanner), 2)
    out = Path(args.out) if args.out else trace.parent
    try:
        out.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=".hmtune-scan-", dir=out))
    except OSError as e:
        raise Failure(f"cannot write to {out}: {e.strerror or e}", 1) from None
    try:
        return _analyze(args, trace, out, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _analyze(args: argparse.Namespace, trace: Path, out: Path, work: Path) -> int:
    """Scan into `work`, then write sites.csv and move allocs.csv and profile.csv to
    `out`."""
    from hmtune.analyze.counters import install_counters
    from hmtune.analyze.labels import load_labels, pcf_path_for
    from hmtune.analyze.report import top_table
    from hmtune.analyze.scan_io import ScanOutputError, read_scan
    from hmtune.analyze.sites import site_table, weight_split
    from hmtune.analyze.traceid import trace_id
    from hmtune.analyze.writer import install_allocs, install_profile, write_sites

    t0 = time.monotonic()
    tid = trace_id(trace)
    try:
        notes = run_scanner(trace, work, skip_bad=args.skip_bad, lookahead=args.lookahead,
                            profile_granularity=args.profile_granularity,
                            phases=args.phases)
        scan = read_scan(work)
    except (ScanFailed, ScanOutputError) as e:
        raise Failure(str(e), 1) from None
    for note in notes:
        print(note, file=sys.stderr)
    labels = load_labels(trace)
    if labels.unusable == "unreadable" or (labels.unusable and scan.sites):
        pcf = pcf_path_for(trace)
        why = ("cannot be read as a Paraver .pcf" if labels.unusable == "unreadable"
               else f"has no allocation-site table ({events.HM_EV_SITE} or {events.HM_EV_SITE_RAW}"
               " VALUES)")
        raise Failure(f"{pcf} {why}, so the sites would lose their call stacks: put the "
                      f"trace's own .pcf next to it (or remove {pcf.name} to analyze with "
                      f"numbered sites); nothing written", 1)
    for warning in labels.warnings:
        _say(f"warning: {warning}")
    from hmtune.analyze.prv import task_nodes

    sites = site_table(scan, labels, per_rank=args.per_rank,
                       nodes=task_nodes(trace) if args.per_rank else None)
    split = weight_split(scan, labels)
    sampler = scan.sampler + ("+lookahead" if args.lookahead and scan.lookahead_samples else "")
    stage = Stage(out)
    sites_csv, allocs_csv, profile_csv = stage.sites, stage.allocs, stage.profile
    try:
        write_sites(sites_csv, sites, str(trace), sampler, labels.form, tid, split,
                    scan.kind_samples(events.HM_ACCESS_KIND_COMPUTE),
                    0 if args.lookahead else scan.lookahead_samples)
        install_allocs(work / ALLOCS, allocs_csv, tid)
        if (work / PROFILE).exists():
            install_profile(work / PROFILE, profile_csv, tid)
        else:               # a scanner built before profiles: no profile of this trace
            profile_csv.unlink(missing_ok=True)
            _say("warning: the scanner wrote no profile.csv (built before profiles? run "
                 "make build); none written")
        has_counters = (work / COUNTERS).exists() and install_counters(
            work / COUNTERS, stage.counters, tid, labels.counters)
        if not has_counters:            # none in this trace: none of an older one stays
            stage.counters.unlink(missing_ok=True)
    except OSError as e:
        raise Failure(f"cannot write to {out}: {e.strerror or e}", 1) from None
    elapsed = time.monotonic() - t0
    if scan.alloc_rows == 0:
        _say(f"no allocations in {trace}: wrote {sites_csv}, {allocs_csv} and {profile_csv} "
             "with their header only")
        return 0
    counted: list[str] = []
    if has_counters:
        from hmtune.analyze.counters import read_counters, summary_lines
        from hmtune.analyze.sites_io import LABEL_COLUMN
        names = {int(r["site_id"]): str(r[LABEL_COLUMN]) for r in sites.rows}
        counted = summary_lines(read_counters(stage.counters), names)
    _print_summary(scan, sites, split, labels.form, sampler, out, elapsed, args.lookahead,
                   counted)
    if args.top:
        print(top_table(sites, args.top))
    return 0


_FILE_LINE = re.compile(r"[\w.+-]+\.\w+:\d+")


def shown_form(sites: SiteTable, form: str) -> str:
    """How the table's call sites read: `file:line` when the labels have lines (debug
    information), with how many do when not all; else the trace's own label form."""
    from hmtune.analyze.sites_io import LABEL_COLUMN

    labels = [str(x) for x in sites.column(LABEL_COLUMN)] if len(sites) else []
    n = sum(1 for x in labels if _FILE_LINE.search(x))
    if not n:
        return form
    return "as file:line" + ("" if n == len(labels) else
                             f" ({n} of {len(labels)} rows; the others {form})")


def _print_summary(scan: Scan, sites: SiteTable, split: Split | None, form: str,
                   sampler: str, out: Path, elapsed: float, lookahead: bool,
                   counted: list[str]) -> None:
    from hmtune.analyze.sites import unplaced_weight
    from hmtune.analyze.sites_io import (
        KIND_COLUMN,
        KIND_STATIC,
        describe_kinds,
        kind_weights,
        memory_addressed,
        no_address_weights,
    )

    kinds = dict(zip(sites.column("site_id"), sites.column(KIND_COLUMN), strict=True))
    nstatic = sum(1 for k in kinds.values() if k == KIND_STATIC)
    ntasks = len({r["task"] for r in scan.sites if r["n_allocs"] > 0})
    nsamples = sum(r["samples"] for r in scan.sites)
    _say(f"{scan.alloc_rows} allocations at {len(kinds) - nstatic} sites in {ntasks} "
         f"process(es), {nstatic} static variable(s) sampled; call sites "
         f"{shown_form(sites, form)}; sampler {sampler}; {nsamples} samples")
    if scan.lookahead_samples and not lookahead:
        _say(f"{scan.lookahead_samples} samples have an address from the look ahead (the "
             "next access after an instruction without one), counted without it; "
             "--lookahead attributes them")
    if scan.producer_samples:
        _say(f"{scan.producer_samples} samples have the address of the load their instruction "
             "(one without memory operand) waited for, counted as direct ones")
    sampled = [r for r in sites.rows if r.get("sampled_blocks")]
    if sampled:
        blocks = sum(int(r["sampled_blocks"]) for r in sampled)
        _say(f"{len({r['site_id'] for r in sampled})} site(s) have blocks of small-call "
             f"sampling ({blocks} recorded, each standing for the calls between them): "
             "their counts, bytes, peaks and weights are estimates (column sampled_blocks)")
        if scan.meta.get("small_unsupported_sites"):
            _say("their scaled weights keep only what their samples support (a block sampled "
                 "once stands for itself alone)")
        if scan.meta.get("small_capped_tasks"):
            _say("their scaled weights were lowered to the weight sampled in untraced memory "
                 f"in {scan.meta['small_capped_tasks']} process(es)")
    total = scan.total_weight
    if total > 0 and split is not None:
        _say(f"sampled weight by address: {split.describe()}")
        outside = 100.0 * unplaced_weight(scan, sites) / total
        _say(f"{100 - outside:.1f}% of it is in the rows of sites.csv (allocation sites "
             "and static variables)")
    elif total > 0:
        outside = 100.0 * unplaced_weight(scan, sites) / total
        _say(f"{outside:.1f}% of the sampled weight is outside allocation sites and "
             "static variables (stack, untraced memory, no address)")
    else:
        _say("no sampled weight in the trace: the advisor can only rank by size and lifetime")
    by_kind = kind_weights(scan.meta)
    if total > 0 and by_kind is not None:
        _say(f"sampled weight by access kind: {describe_kinds(by_kind, total)}")
    unaddressed = no_address_weights(scan.meta)
    if total > 0 and unaddressed is not None and sum(unaddressed) > 0:
        compute, memory = (100.0 * w / total for w in unaddressed)
        _say(f"sampled weight without an address: compute {compute:.1f}% (instructions "
             f"without memory operand, no load address behind them), other {memory:.1f}% "
             "(accesses whose address is unknown, time in system calls)")
    mem = memory_addressed(split, scan.kind_samples(events.HM_ACCESS_KIND_COMPUTE),
                           0 if lookahead else scan.lookahead_samples) if split else None
    if mem is not None:
        memory, direct, ahead = mem
        more = f", {100.0 * ahead / memory:.1f}% more from the look ahead" if ahead else ""
        _say(f"{100.0 * direct / memory:.1f}% of the {memory} samples that may wait on memory "
             f"(all but compute) carry an address{more}")
    faults = scan.faults
    if faults > 0:
        from hmtune.analyze.sites_io import KIND_COLUMN, KIND_STATIC

        static = [r.get(KIND_COLUMN) == KIND_STATIC for r in sites.rows]
        in_heap = sum(int(r["faults"]) for r, st in zip(sites.rows, static, strict=True)
                      if not st)
        in_static = sum(int(r["faults"]) for r, st in zip(sites.rows, static, strict=True)
                        if st)
        _say(f"~{faults} minor page faults (from {scan.meta.get('fault_samples', 0)} "
             f"samples), {100.0 * in_heap / faults:.1f}% of them in allocation sites' "
             f"blocks and {100.0 * in_static / faults:.1f}% in static variables "
             "(first touch)")
    stage = Stage(out)
    if stage.profile.exists():
        _say(_profile_summary(scan, sites, stage.profile))
    for line in counted:
        _say(line)
    more = f", {stage.counters}" if stage.counters.exists() else ""
    _say(f"wrote {stage.sites}, {stage.allocs}, {stage.profile}{more} in {elapsed:.1f} s")


def _profile_summary(scan: Scan, sites: SiteTable, profile_csv: Path) -> str:
    """One line: of the sites (heap sites and statics) whose largest object spans 4 or
    more huge-page buckets, how many have a concentrated profile, how many a flat one, how many too
    few samples to tell (hmtune.analyze.profile.flatness)."""
    from hmtune.analyze.profile import flat_counts, is_large, read_counts
    size: dict[int, int] = {}
    for r in sites.rows:
        if is_large(int(r["max_size"])):
            size[int(r["site_id"])] = max(size.get(int(r["site_id"]), 0), int(r["max_size"]))
    verdicts = [flat_counts(rows, size[sid])
                for sid, rows in read_counts(profile_csv, set(size)).items()]
    concentrated = sum(1 for v in verdicts if v is False)
    flat = sum(1 for v in verdicts if v is True)
    line = (f"profiles: {len(size)} large site(s) (an object over 6 MiB, 4+ huge pages): "
            f"{concentrated} concentrated (splitting them can pay), {flat} flat, "
            f"{len(size) - concentrated - flat} with too few samples to tell")
    unplaced = int(scan.meta.get("profile_unplaced_samples", 0))
    if unplaced:
        line += (f"; {unplaced} sample(s) of allocation sites are in no profile (no live "
                 "block of their site at their address)")
    return line
