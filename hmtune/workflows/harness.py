"""The run harness of `hmtune compare` and `hmtune explore`: their shared options,
the checked stage directory and fast-tier size (Setup), the resumable runs file, the
machine they run on (this host's fast tier unless --machine), the hugepage pool held
for the length of the runs (pools), the advisor's placements (advise(), in this
process, for the machine loaded once) and the all-fast upper bound. The rounds
themselves are hmtune/workflows/measure.py's; the commands on top are compare.py and
explore.py."""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import sys
import time
import traceback
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hmtune.core import paths
from hmtune.core.errors import Failure
from hmtune.core.files import write_atomic
from hmtune.core.placement import (
    PlacementFile,
    PlacementFormatError,
    TierLine,
    read_placement,
    write_placement,
)
from hmtune.core.sitesfile import SitesFormatError, read_rows
from hmtune.core.stage import FAST_TIER_UNIT as UNIT
from hmtune.core.stage import PLACEMENT, Stage, fast_tier_bytes
from hmtune.core.units import fraction, human, parse_capacity
from hmtune.workflows import hugepages, launch, measure, sitegroups

if TYPE_CHECKING:
    from hmtune.advisor.advise import Said
    from hmtune.machine.tiers import Machine, Tier

STRATEGIES = ("ilp", "ilp-lifetime", "misses", "density")
REFERENCE = "all-slow"
UPPER = "all-fast"
# how libhmalloc runs all-fast (HMTUNE_BASELINE): every request in the fast tier, no
# call stack unwound or matched, the placement's statics placed (docs/formats.md §6)
UPPER_POLICY = "all"
WHOLE = "-whole"        # a strategy name's suffix: hmtune advise --whole-objects


def add_run_options(p: argparse.ArgumentParser, what: str) -> None:
    """The options compare and explore share: stage, capacity, tiers, runs, FOM."""
    p.add_argument("-o", "--out", metavar="DIR", default=None,
                   help="stage directory with sites.csv (and allocs.csv) from hmtune trace "
                        "and hmtune analyze (default hmtune-out/<app name>/); results go to "
                        f"DIR/{what}/")
    size = p.add_mutually_exclusive_group()
    several = what == "compare"
    also = (" (several, comma-separated: each capacity's placements measured in the same "
            "rounds, sharing all-slow and all-fast)") if several else ""
    size.add_argument("--mem", metavar="SIZE[,SIZE...]" if several else "SIZE",
                      help=f"fast-tier capacity per process{also}")
    size.add_argument("--fraction", type=fractions if several else fraction, default=0.4,
                      metavar="F[,F...]" if several else "F",
                      help="fast-tier capacity as a fraction of the traced footprint (the sum "
                           "of the sites' peak live bytes, each site's largest of any rank; "
                           f"above 0, at most 1; default 0.4){also}")
    p.add_argument("--machine", metavar="FILE.toml", default=None,
                   help="tiers (default: this host's fast tier as hmtune machine shows it, "
                        "hugepages only when the pool has free pages or "
                        "--reserve-hugepages can reserve them, else THP; written to "
                        f"DIR/{what}/machine.toml)")
    measure.add_options(p, REFERENCE if what == "compare" else "the placement with nothing "
                                                               "in the fast tier")
    p.add_argument("--fom", metavar="REGEX", action="append", default=None,
                   help="figure of merit: the first group of REGEX in the application's "
                        "stdout, ^ and $ matching at each line (default: the run's "
                        "wall-clock seconds); given more than once, the geometric mean of "
                        "the figures (all rates or all times)")
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
    fom_re: list[re.Pattern]          # empty: the run's wall-clock seconds
    machine: Path
    spec: Machine                   # the machine file, loaded once (its source: machine)
    mems: list[int]                 # fast-tier bytes per process, whole 2 MiB pages:
                                    # compare's capacities, ascending (one for explore)
    config: dict[str, object]
    plan: measure.Plan
    procs: int                      # processes that place (MPI ranks), 1 without --mpirun

    @property
    def mem(self) -> int:
        """The largest capacity (explore's only one)."""
        return self.mems[-1]

    @property
    def tiers(self) -> list[Tier]:
        """The machine file's tiers, fastest first."""
        return self.spec.tiers


def prepare(args: argparse.Namespace, what: str) -> Setup:
    """Check the arguments and the stage directory, size the fast tier and open
    DIR/<what>/ (config.json; runs.csv is kept only for the same configuration or
    dropped with --force); the Setup. Raises Failure (one line: what is wrong)."""
    who = f"hmtune {what}"
    app = launch.app_command(args.app)
    if not app:
        raise Failure(f"no application given: {who} [options] -- ./app args", 2)
    stage = Path(args.out) if args.out else paths.default_out(app[0])
    sites = Stage(stage).sites
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
        fom_re = [re.compile(x, re.MULTILINE) for x in args.fom or []]
    except re.error as e:
        raise Failure(f"--fom: not a regular expression: {e}", 2) from None
    work = stage / what
    try:
        work.mkdir(parents=True, exist_ok=True)
        probe = work / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise Failure(f"cannot write to {work}: {e.strerror}", 2) from None
    # this host's tiers go to machine.toml only once open_runs has found the runs
    # there of this configuration (a refusal leaves it as it was): read from HOST_NEW
    machine = Path(args.machine) if args.machine else work / "machine.toml"
    source = machine if args.machine else host_machine(work, args.reserve_hugepages, who)
    if not source.is_file():
        raise Failure(f"--machine {machine}: no such file", 2)
    from hmtune.machine.machinefile import check_tiers, load_machine
    from hmtune.machine.tiers import Machine

    try:
        spec = load_machine(source)
        if source != machine:   # this host's, read before open_runs names it machine.toml
            spec = Machine(spec.name, spec.tiers, str(machine),
                           check_tiers(spec.tiers, str(machine)))
    except ValueError as e:
        raise Failure(f"--machine: {e}", 2) from None
    tiers = spec.tiers
    mems = capacities(args, sites)
    if len(mems) > 1 and what != "compare":
        raise Failure(f"--mem: {who} measures one capacity: give one size", 2)
    from hmtune.workflows.run import launcher_processes

    procs = (launcher_processes(plan.launcher) if plan.launcher else 1) or 1
    config: dict[str, object] = {
        "app": [str(exe.resolve()), *app[1:]], "machine": str(machine.resolve()),
        # what the runs depend on: the tiers but the first one's capacity (mem sets it;
        # a host's choice sizes it by the hugepage pool of the moment)
        "tiers": [[t.name, t.backend, t.load_cost, t.store_cost, t.page_size,
                   t.capacity if i else None] for i, t in enumerate(tiers)],
        "mem": mems[0] if len(mems) == 1 else mems, "fom": args.fom,
        "higher_is_better": args.higher_is_better,
        "sites_sha256": hashlib.sha256(sites.read_bytes()).hexdigest(),
        "runs_format": measure.RUNS_FORMAT, "mpirun": plan.launcher,
        "pin": sorted(plan.pin) if plan.pin else None}
    return Setup(app, stage, work, fom_re, machine, spec, mems, config, plan, procs)


def fractions(text: str) -> tuple[float, ...]:
    """argparse type of compare's --fraction: one fraction or several, comma-separated."""
    return tuple(fraction(x.strip()) for x in text.split(","))


def capacities(args: argparse.Namespace, sites: Path) -> list[int]:
    """The fast-tier capacities per process that --mem or --fraction give, each rounded
    up to whole 2 MiB pages, ascending. Raises Failure (one line: what is wrong)."""
    fracs = args.fraction if isinstance(args.fraction, tuple) else (args.fraction,)
    given = [x.strip() for x in args.mem.split(",")] if args.mem else [str(f) for f in fracs]
    try:
        mems = [(parse_capacity(x) + UNIT - 1) // UNIT * UNIT for x in given] if args.mem else \
            [fast_tier_bytes(sites, f) for f in fracs]
    except (ValueError, KeyError) as e:
        raise Failure(f"cannot size the fast tier: {e}", 2) from None
    if any(m <= 0 for m in mems):
        raise Failure("the fast tier would be empty (--mem, or a trace with no "
                      "sites)", 2)
    seen: dict[int, str] = {}
    for m, x in zip(mems, given, strict=True):
        if m in seen:
            raise Failure(f"--{'mem' if args.mem else 'fraction'}: {seen[m]} and {x} are the "
                          f"same capacity ({human(m)} in whole 2 MiB pages): give each "
                          "once", 2)
        seen[m] = x
    return sorted(mems)


def capacity_tag(mem: int) -> str:
    """A capacity (whole 2 MiB pages) in variant names when compare measures several:
    `@14M`."""
    return f"@{mem >> 20}M"


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
            (setup.work / HOST_NEW).unlink(missing_ok=True)
            raise Failure(f"{runs_path} holds runs of another configuration: "
                          f"{config_difference(old, setup.config)}; add --force to start "
                          "over (or -o another directory)", 2)
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
    new_host = setup.work / HOST_NEW
    if new_host.is_file():
        new_host.replace(setup.work / "machine.toml")
    cfg_path.write_text(json.dumps(setup.config, indent=1) + "\n")
    return rows


HOST_NEW = "machine.toml.new"      # this host's tiers, until open_runs keeps them
_CONFIG_NAMES = {"app": "the application command", "machine": "the machine file",
                 "tiers": "the tiers", "mem": "the fast tier's capacity", "fom": "--fom",
                 "runs_format": "the runs' format"}


def config_difference(old: object, new: dict[str, object]) -> str:
    """What differs between a directory's config.json and this run's, in words."""
    if not isinstance(old, dict):
        return "its config.json cannot be read"
    parts = []
    for k in sorted(set(old) | set(new), key=lambda k: list(new).index(k) if k in new else 99):
        if old.get(k) != new.get(k):
            parts.append(f"{_CONFIG_NAMES.get(k, k)} was {_short(old.get(k))}, "
                         f"now {_short(new.get(k))}")
    return "; ".join(parts) or "its config.json differs"


def _short(v: object) -> str:
    """A config value in a sentence: lists as space-joined words, at most 80 characters."""
    text = "none" if v is None else " ".join(map(str, v)) if isinstance(v, list) else str(v)
    return text if len(text) <= 80 else text[:77] + "..."


def work_files(work: Path, pattern: str) -> list[Path]:
    """The files of the runs in the variants' directories (work/VARIANT/pattern)."""
    return [f for d in work.iterdir() if d.is_dir() for f in d.glob(pattern)]


def host_machine(work: Path, reserve: bool, who: str) -> Path:
    """Without --machine: this host's fast tier by the rule `hmtune advise --mem` and
    `hmtune machine` follow (hmtune/machine/choice.py fast_tier: hugepages when the
    pool has free pages or this user can reserve some), written to work/machine.toml
    (left as it is when unchanged; first as work/HOST_NEW, which open_runs makes
    machine.toml) and said on stderr. Hugepages with an empty pool and
    no --reserve-hugepages would measure nothing: refused, saying to give it."""
    from hmtune.machine.choice import fast_tier
    from hmtune.machine.host import HostError
    from hmtune.machine.machinefile import machine_toml

    try:
        choice = fast_tier()
        text = machine_toml(choice.host, choice.why, choice.machine)
    except HostError as e:
        raise Failure(f"cannot choose a fast tier on this host: {e}", 2) from None
    if choice.machine.tiers[0].backend == "hugetlb" and not reserve and \
            choice.host.hugepages_free <= 0:
        raise Failure("the fast tier here is hugetlb pages (as hmtune advise chooses it) and "
                      "the pool has no free page: give --reserve-hugepages to reserve what "
                      "the runs need for the measurement (as root), or --machine "
                      "FILE.toml for another tier", 2)
    path, final = work / HOST_NEW, work / "machine.toml"
    try:
        if final.is_file() and final.read_text() == text:
            path.unlink(missing_ok=True)
            path = final                  # unchanged: left as it is
        else:
            write_atomic(path, text)
    except OSError as e:
        raise Failure(f"cannot write {path}: {e.strerror or e}", 2) from None
    print(f"{who}: {choice.why} (this host, {final}; --machine FILE.toml for another)",
          file=sys.stderr)
    return path


def pool_need(placements: list[Path], stage: Path, procs: int, bound: int,
              everything: Path | None = None) -> int:
    """Bytes of hugepages the runs of these placements need free on this node at most:
    the largest of what each needs as `hmtune run --reserve-hugepages` counts it
    (hmtune/workflows/reserve.py: every placed site's blocks as libhmalloc lays them,
    from allocs.csv), bound (the tiers' capacities) where that cannot be told. The
    all-fast bound's capacity (room_for_all) is a loose fit: reserving it would take
    tens of times the pages the run uses. `everything`, one of the placements, runs as
    HMTUNE_BASELINE=all: it also places the small blocks the trace only sampled or never
    saw, so its count gets ALL_MARGIN more."""
    from hmtune.workflows import reserve

    page = hugepages.Sysfs().default_page()
    if page is None:
        return bound
    need = 0
    for path in placements:
        try:
            pf = read_placement(path)
        except (OSError, PlacementFormatError):
            return bound
        chains = {x.chain for x in pf.sites}
        sizes, why = reserve.sizes_for(path, [stage], chains)
        if why:
            return bound
        needs = reserve.tier_needs(pf, sizes, procs, page)
        if any(n.sized_by == "capacity" for n in needs):
            return bound
        need = max(need, sum((all_margin(n.pages, n.processes) if path == everything
                              else n.pages) * n.page for n in needs))
    return min(need, bound)


ALL_MARGIN = 8      # all-fast's pool: 1/8 more pages than counted, and one more per process


def all_margin(pages: int, procs: int) -> int:
    """The pages all-fast (HMTUNE_BASELINE=all) is given for `pages` counted from the
    trace over `procs` processes. It places every request, also the small ones the
    trace sampled (its arena's chunks counted from a sample) or never saw: BWA-MEM's
    all-fast used 82 pages where 81 were counted, and the 2216 small blocks of the
    missing chunk stayed in ordinary memory in every run."""
    return pages + -(-pages // ALL_MARGIN) + procs


@contextlib.contextmanager
def pools(setup: Setup, placements: list[Path], nbytes: int, reserve: bool,
          who: str) -> Iterator[None]:
    """What compare and explore hold while their runs go (measure's before_runs): the fast
    tier's hugepage pool (fast_tier_pool) and the check that every tier with sites in
    these placements can place something here (Refused, saying which cannot)."""
    with fast_tier_pool(setup.tiers[0], nbytes, reserve, who):
        dead = cannot_place(placements, setup.procs)
        if dead:
            raise Refused(f"{dead}; nothing measured")
        yield


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
    from hmtune.workflows.run import unplaceable

    for p in placements:
        dead = unplaceable(read_placement(p), dict(os.environ), procs)
        if dead:
            return dead[0]
    return None


def known_strategy(name: str) -> bool:
    return name.removesuffix(WHOLE) in STRATEGIES


def advise(stage: Path, out: Path, machine: Machine, mem: int, strategy: str) -> str | None:
    """placement.txt for one strategy (NAME-whole: objects whole) in out/, by the advisor
    (hmtune/advisor/advise.py) in this process for `machine` (Setup.spec) with its fast
    tier of `mem` bytes, what it says (as hmtune advise prints it) in out/advise.log; None
    when written, else the reason (one line)."""
    from hmtune.advisor.advise import advise as advise_stage
    from hmtune.advisor.advise import done, write

    out.mkdir(parents=True, exist_ok=True)
    log: list[str] = []

    def say(line: Said) -> None:
        log.append(line.text + "\n")

    started = time.monotonic()
    why: str | None = None
    try:
        with warnings.catch_warnings(record=True) as caught:     # in the log too
            try:
                advice = advise_stage(stage, machine, mem, strategy=strategy.removesuffix(WHOLE),
                                      whole_objects=strategy.endswith(WHOLE),
                                      output=out / PLACEMENT, say=say)
                for line in [*write(advice), done(started)]:
                    say(line)
            finally:
                log += [warnings.formatwarning(w.message, w.category, w.filename, w.lineno,
                                               w.line) for w in caught]
    except Failure as e:
        why = str(e)
        log.append(f"hmtune advise: {e}\n")
    except Exception as e:  # noqa: BLE001 - one strategy failing must not end the runs
        why = f"hmtune advise failed: {type(e).__name__}: {e}"
        log.append(traceback.format_exc())
    (out / "advise.log").write_text("".join(log))
    return why


def tiers_only(placement: Path, dst: Path) -> None:
    """The tiers of placement with no site or static: what the baselines run with.
    Raises PlacementFormatError for a placement the reader refuses."""
    write_placement(dst, PlacementFile(tiers=read_placement(placement).tiers, depth=1,
                                       size_window=(0, 0), sites=[]))


def all_fast(setup: Setup, out: Path) -> int | None:
    """out/placement.txt with every site of sites.csv that has a chain in the machine's
    first tier, sized so that all fit at once (the upper bound); the capacity it needs
    per process, or None when no site can be placed."""

    groups, _ = sitegroups.load_groups(Stage(setup.stage).sites, 0)
    if not groups:
        return None
    room = sitegroups.room_for_all(groups)
    first, last = setup.tiers[0], setup.tiers[-1]
    out.mkdir(parents=True, exist_ok=True)
    write_placement(out / PLACEMENT, sitegroups.placement_for(
        1, groups, TierLine(first.name, first.backend, room),
        TierLine(last.name, last.backend, last.capacity), "compare (all-fast)"))
    return room


