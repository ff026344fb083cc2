"""`hmtune run`: re-run the application with libhmalloc.so preloaded, so that the
allocation sites listed in placement.txt go to their memory tiers (DESIGN.md §6, §7).

Before running: the placement is read with the advisor's checking reader, which
refuses what the library's reader refuses (a missing, malformed or non-regular one
stops here, exit 2), and tiers this machine cannot serve in full get a one-line warning
(hugetlb beyond the free hugepages, memkind HBW kinds without a high-bandwidth node).
The library's own contract (common/hm_options.c): HMTUNE_PLACEMENT, HMTUNE_STATS (JSON
per process at exit), HMTUNE_SUMMARY=0 (no stderr summary), HMTUNE_TARGET (the program
that places when the placement has no `program` line, found through wrappers such as
env and timeout; helpers pass everything through and only the target warns). Under MPI each
rank writes DIR/run-stats.RANK.json and this command prints one summary over the ranks;
a single process prints its own (the statistics files' names and the summary:
runstats.py). The application's stdout, stderr and exit status are its own (a signal
death is re-raised)."""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import re
import shlex
import signal
import sys
import time
from pathlib import Path

from hmtune.core import elf, paths
from hmtune.core.backends import is_hbw, uses_hugetlb
from hmtune.core.errors import Failure
from hmtune.core.placement import PlacementFile, PlacementFormatError, TierLine, read_placement
from hmtune.core.stage import Stage
from hmtune.core.units import human
from hmtune.machine.host import memory_only_nodes
from hmtune.workflows import hugepages, launch, runstats
from hmtune.workflows.hugepages import HugePages, Want
from hmtune.workflows.runstats import MPI_STATS, RANK, SINGLE_STATS

_SHARED_LIB = re.compile(r"\.so(\.|$)")
# Programs that run the rest of their command line: the placement is for the program
# they start, not for them (they pass everything through).
WRAPPERS = frozenset({"env", "timeout", "nice", "nohup", "stdbuf", "taskset", "numactl",
                      "chrt", "ionice", "setsid", "time", "setarch", "likwid-pin",
                      "hwloc-bind"})


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run",
        help="re-run an application with its allocation sites placed in memory tiers",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        usage="hmtune run [-h] [--placement FILE] [--stats FILE] [--mpirun|--launcher CMD] "
              "[-o DIR] [-q]\n                  [--reserve-hugepages] [--allow-unplaced] "
              "-- APP [ARGS...]",
        description="Run APP with libhmalloc.so preloaded: the allocation sites listed in\n"
                    "the placement (from 'hmtune advise') are served by their tiers, the\n"
                    "rest by the default allocator. The application's stdout, stderr and\n"
                    "exit status are its own. At exit each process writes its statistics\n"
                    "(JSON) and a per-tier summary goes to stderr (under --mpirun: one\n"
                    "summary over all ranks).",
        epilog="examples:\n"
               "  hmtune run -- ./app -n 10          # placement hmtune-out/app/placement.txt\n"
               "  hmtune run -o out --mpirun 'mpirun -np 4' -- ./app\n"
               "  hmtune run --reserve-hugepages -- ./app   # as root: hugepages for its tiers\n"
               "  make rerun APP='./app -n 10' [MPIRUN=...] [OUT=...] [PLACEMENT=...] "
               "[RESERVE=1]\n"
               "\n"
               "tiers that need the machine set up:\n"
               "  hugetlb    needs reserved hugepages: echo N > /proc/sys/vm/nr_hugepages,\n"
               "             or --reserve-hugepages (make rerun RESERVE=1) as root\n"
               "  memkind:MEMKIND_HBW*  without HBM, memkind refuses it unless\n"
               "             MEMKIND_HBW_NODES=0 (ordinary memory on node 0) is set\n"
               "A tier that cannot be used, or is full, sends its sites to the default\n"
               "allocator; the application keeps running.\n"
               "\n"
               "exit status: the application's (a signal death is re-raised); 2 when the\n"
               "placement is missing or malformed, the program is statically linked or\n"
               "the library is not built (nothing is run); 127 when APP does not exist.",
    )
    p.add_argument("--placement", metavar="FILE", default=None,
                   help="placement.txt from 'hmtune advise' (default DIR/placement.txt)")
    p.add_argument("--stats", metavar="FILE", default=None,
                   help=f"per-process statistics, JSON (default DIR/{SINGLE_STATS}; with "
                        f"--mpirun DIR/{MPI_STATS}, where {RANK} becomes the rank; a FILE "
                        f"without {RANK} gets .RANK appended under MPI)".replace("%", "%%"))
    p.add_argument("--mpirun", "--launcher", dest="mpirun", metavar="CMD", default="",
                   help="MPI launcher prefix, e.g. 'mpirun -np 4' or 'srun -n 4' (the "
                        "library is applied to the ranks, not to the launcher); one summary "
                        "over all ranks")
    p.add_argument("-o", "--out", metavar="DIR", default=None,
                   help="stage directory (default hmtune-out/<app name>/)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no summary (the library's and this command's); warnings still")
    p.add_argument("--allow-unplaced", action="store_true",
                   help="run even when a tier of the placement cannot place anything on "
                        "this host (its sites stay in ordinary memory); without it hmtune "
                        "refuses and says what to change")
    p.add_argument("--reserve-hugepages", action="store_true",
                   help="as root, make the hugepages the placement's hugetlb tiers need "
                        "free for the length of the run (its sites' sizes from sites.csv "
                        "and allocs.csv next to the placement, page-rounded as the library "
                        "maps them, at most the tiers' capacity, times the ranks on this "
                        "node; on the NUMA nodes the tier or the run binds to, else in the "
                        "machine's pool) and put every pool setting back when it ends, "
                        "however it ends; without root it prints the command that would, "
                        "and runs anyway (make rerun RESERVE=1)")
    p.add_argument("app", nargs=argparse.REMAINDER, help="-- APP [ARGS...]")
    p.set_defaults(func=run)


def _say(msg: str) -> None:
    print(f"hmtune run: {msg}", file=sys.stderr)


def load_placement(path: Path) -> PlacementFile:
    """The checked placement. Raises Failure (exit 2) saying what to do."""

    if not path.exists():
        raise Failure(f"no placement {path}: run 'hmtune advise' first (after 'hmtune trace' "
                      "and 'hmtune analyze'), or give --placement FILE", 2)
    try:                # the library's own grammar and limits: what it refuses, we do
        return read_placement(path)
    except PlacementFormatError as e:
        raise Failure(f"cannot use the placement: {e}; write it again with 'hmtune advise'",
                      2) from None


def launcher_processes(launcher: list[str], environ: dict[str, str] | None = None
                       ) -> int | None:
    """The process count an MPI launcher line asks for (`-np N`, `-n N`, `-nN`, `--np N`,
    `--np=N`, `--ntasks=N`); for srun without one, the job's task count
    (SLURM_NTASKS, what srun starts inside an allocation); None when nothing says."""
    for i, word in enumerate(launcher):
        key, eq, value = word.partition("=")
        if not eq and key in ("-np", "--np", "-n", "--n", "--ntasks"):
            value = launcher[i + 1] if i + 1 < len(launcher) else ""
        elif not eq and key.startswith("-n") and key[2:].isdigit():
            value = key[2:]                                 # srun -n4
        elif not (eq and key in ("-np", "--np", "--n", "--ntasks")):
            continue
        if value.isdigit() and int(value) > 0:
            return int(value)
    env = os.environ if environ is None else environ
    ntasks = env.get("SLURM_NTASKS", "")
    if launch.is_srun(launcher) and ntasks.isdigit() and int(ntasks) > 0:
        return int(ntasks)
    return None


def capacity_pages(tiers: list[TierLine], page: int) -> int:
    """Pages of `page` bytes the tiers' capacities come to, per process (an upper bound of
    what they take; --reserve-hugepages computes the exact need)."""
    return sum(math.ceil((t.capacity or 0) / page) for t in tiers)


def tier_warnings(pf: PlacementFile, nprocs: int, pool: HugePages | None,
                  memory_only: set[int] | None, environ: dict[str, str],
                  reserving: bool = False) -> list[str]:
    """One line per problem a tier will have on this machine (nothing is changed);
    reserving: --reserve-hugepages will say itself what the pools lack."""
    out: list[str] = []
    placed = pf.placed_tiers
    huge = [t for t in pf.tiers if uses_hugetlb(t.backend) and t.name in placed]
    if huge and not (reserving and pool is not None):
        names = ", ".join(f"{t.name} ({t.backend})" for t in huge)
        if pool is None:
            out.append(f"warning: tier {names} needs hugepages and this kernel has none: "
                       "its sites will go to the default allocator")
        else:
            need = capacity_pages(huge, pool.page) * nprocs
            if need > pool.free:
                procs = f" for {nprocs} processes" if nprocs > 1 else ""
                out.append(
                    f"warning: tier {names} may take up to {need} hugepages of "
                    f"{human(pool.page)} ({human(need * pool.page)}{procs}) but only "
                    f"{pool.free} are free: blocks that do not fit go to the default "
                    f"allocator; reserve them as root with: echo "
                    f"{pool.total + need - pool.free} > /proc/sys/vm/nr_hugepages")
    hbw = [t for t in pf.tiers if is_hbw(t.backend) and t.name in placed]
    if hbw and not environ.get("MEMKIND_HBW_NODES") and memory_only is not None \
            and not memory_only:
        names = ", ".join(f"{t.name} ({t.backend})" for t in hbw)
        out.append(f"warning: tier {names}: no NUMA node here is high-bandwidth memory (every "
                   "memory node has CPUs), so memkind will refuse the tier and its sites will "
                   "stay in ordinary memory; to use node 0 as the tier anyway (e.g. to try the "
                   "placement), set MEMKIND_HBW_NODES=0")
    return out


def command_program(app: list[str], exe: Path) -> Path | None:
    """The program the command line runs in the end: APP itself (exe, as resolved), or
    for a wrapper (WRAPPERS: env, timeout, nice, ...) the first later word that names
    an executable file (found as execvp would), through nested wrappers; None when a
    wrapper's words name none. A script is returned as itself."""
    i, prog = 0, exe
    while Path(app[i]).name in WRAPPERS or Path(os.path.realpath(prog)).name in WRAPPERS:
        for j in range(i + 1, len(app)):
            found = elf.resolve(app[j])
            if found is not None and found.is_file() and os.access(found, os.X_OK):
                i, prog = j, found
                break
        else:
            return None
    return prog


def target_program(program: Path | None, pf: PlacementFile) -> str | None:
    """HMTUNE_TARGET: the path /proc/self/exe will have in the process that places (the
    library lets no other process place when the placement has no `program` line, and
    only the target warns). An ELF program is itself; for a script, the placement's
    program, or else the executable it names: a module with a program interpreter that
    is not named like a shared library (libc.so.6 has one too)."""
    if program is not None and elf.program_headers(program) is not None:
        return os.path.realpath(program)
    if pf.program:
        return pf.program
    programs = sorted(m for m in pf.modules if not _SHARED_LIB.search(Path(m).name)
                      and (ph := elf.program_headers(m)) is not None
                      and any(t == elf.PT_INTERP for t, _, _ in ph.entries))
    return programs[0] if len(programs) == 1 else None


def hugepage_wants(pf: PlacementFile, placement: Path, out: Path, app: list[str],
                   launcher: list[str]) -> tuple[list[Want], list[str]]:
    """--reserve-hugepages: what the placement's hugetlb tiers need free on this node
    (hmtune/workflows/reserve.py), and notes for the user (tiers sized by their capacity)."""
    from hmtune.workflows import reserve

    placed = pf.placed_tiers
    huge = [t for t in pf.tiers if uses_hugetlb(t.backend) and t.name in placed]
    if not huge:
        return [], ["note: no hugetlb tier of the placement has sites: no hugepages to "
                    "reserve"]
    default_page = hugepages.Sysfs().default_page()
    if default_page is None:
        return [], []                    # tier_warnings says the kernel has none
    sizes, why = reserve.sizes_for(placement, [placement.parent, out],
                                   {s.chain for s in pf.sites if s.tier in placed})
    environ, cpuset, memory_only = dict(os.environ), reserve.cpuset_nodes(), memory_only_nodes()
    nodes_of = {t.name: reserve.tier_nodes(t.backend, app, environ, memory_only, cpuset)
                for t in huge}
    procs = reserve.node_processes(launcher, launcher_processes(launcher)) if launcher else 1
    needs = reserve.tier_needs(pf, sizes, procs, default_page, nodes_of)
    notes = [f"note: hugepages for {reserve.describe(n)}" + (f"; {why}" if why else "")
             for n in needs if n.sized_by == "capacity"]
    wants = [Want(n.page, n.pages, n.nodes, f"tier {n.tier}") for n in needs if n.pages]
    return wants, notes


# ---- the command ----

def planned_stats(pattern: Path, launcher: list[str],
                  environ: dict[str, str]) -> list[Path] | None:
    """The statistics files this run will write: one without a launcher (FILE, or its
    rank's name when the environment already names a rank), one per rank under a
    launcher whose process count is known; None when any rank may write."""
    if not launcher:
        return [runstats.stats_path(pattern, runstats.env_rank(environ))]
    n = launcher_processes(launcher)
    return None if n is None else [runstats.stats_path(pattern, r) for r in range(n)]


def unplaceable(pf: PlacementFile, environ: dict[str, str], nprocs: int = 1) -> list[str]:
    """One line per tier with sites that cannot place anything on this host now (after
    any hugepage reservation), saying what to change."""
    from hmtune.machine.host import HostError, detect, env_root
    from hmtune.machine.hostcheck import backend_problem, fast_tier_here

    used = pf.placed_tiers
    tiers = [t for t in pf.tiers if t.name in used and t.backend != "default"]
    if not tiers:
        return []
    try:
        host = detect(env_root(), probe=False)
    except HostError:
        return []
    out = []
    for t in tiers:
        why = backend_problem(t.backend, host, need_pages=True)
        if not why:
            continue
        kind = "hugetlb" if t.backend == "umf:hugetlb" else t.backend.partition(":")[0]
        if kind == "hugetlb" and "make deps" not in why:
            pool = hugepages.pool()
            if pool is None:
                fix = "advise again for this host (hmtune machine shows what it has)"
            else:
                need = capacity_pages([x for x in tiers if x.backend in ("hugetlb", "umf:hugetlb")],
                                      pool.page) * nprocs
                fix = ("give --reserve-hugepages (make rerun RESERVE=1) as root, or reserve "
                       f"them as root: echo {pool.total + need} > /proc/sys/vm/nr_hugepages")
        elif "make deps" in why:
            fix = "or advise again for this host with another backend for the tier"
        elif kind == "thp":
            fix = "as root: echo madvise > /sys/kernel/mm/transparent_hugepage/enabled"
        else:
            fix = (f"advise again for this host (hmtune advise --mem SIZE without --machine; "
                   f"its fast tier: {fast_tier_here(host)})")
            if is_hbw(t.backend) and not environ.get("MEMKIND_HBW_NODES"):
                fix += ", or set MEMKIND_HBW_NODES to the nodes to use"
        out.append(f"tier {t.name} ({t.backend}) cannot place anything here: {why}; {fix}")
    return out


def _say_stale(stats: Path, before: dict[Path, tuple[int, int] | None],
               planned: list[Path] | None, rc: int) -> None:
    """Statistics files of an earlier run that this one did not replace (it ended
    before the library's exit: interrupted, killed, exec'ed away): kept, and said."""
    fresh = set(runstats.fresh_stats(stats, before, planned).values())
    old = [f for f in (planned if planned is not None else list(before))
           if f in before and before[f] is not None and f not in fresh
           and runstats.is_hmalloc_stats(f)]
    if not old:
        return
    how = f"ended by {signal.Signals(-rc).name}" if rc < 0 else f"exited with {rc}"
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(old[0].stat().st_mtime))
    _say(f"the run {how} before writing its statistics: {', '.join(str(f) for f in old)} "
         f"still hold{'s' if len(old) == 1 else ''} the previous run's (from {when}), kept "
         "as they were")


def _other_program(pf: PlacementFile, program: Path | None) -> str | None:
    """Why the placement is not for this program (its `program` line names another
    executable than the ELF the command runs), None when it may be."""
    if not pf.program or program is None or elf.program_headers(program) is None:
        return None
    try:
        same = os.path.samefile(pf.program, program)
    except OSError:
        same = False
    return None if same else f"the placement was made for {pf.program}, not {program}"


def run(args: argparse.Namespace) -> int:
    app = launch.app_command(args.app)
    if not app:
        raise Failure("no application given: hmtune run [options] -- ./app args", 2)
    lib = paths.hmalloc_lib()
    if not lib.exists():
        raise Failure(paths.not_built(lib), 2)
    exe = launch.check_program(app[0], "its allocations cannot be placed")
    program = command_program(app, exe)
    if program is not None and program != exe and elf.is_static_elf(program):
        raise Failure(f"{program} is statically linked: LD_PRELOAD cannot interpose its "
                      "malloc, so its allocations cannot be placed; link it dynamically "
                      "(without -static)", 2)
    out = Path(args.out) if args.out else paths.default_out(app[0])
    placement = Path(args.placement) if args.placement else Stage(out).placement
    pf = load_placement(placement)
    other = _other_program(pf, program)
    if other:                   # the library would refuse it: before any pool is reserved
        raise Failure(f"{other}: trace, analyze and advise this program, or give --placement "
                      "with its placement", 2)
    launcher = shlex.split(args.mpirun) if args.mpirun else []
    nprocs = (launcher_processes(launcher) if launcher else 1) or 1
    # a tier that cannot place anything here: refused before anything runs (after the
    # reservation when --reserve-hugepages, below)
    dead = [] if args.reserve_hugepages else unplaceable(pf, dict(os.environ), nprocs)
    if dead and not args.allow_unplaced:
        raise Failure(f"{dead[0]}; or give --allow-unplaced to run with those sites in "
                      "ordinary memory", 2)
    for w in tier_warnings(pf, nprocs, hugepages.pool(), memory_only_nodes(), dict(os.environ),
                           reserving=args.reserve_hugepages) if not dead else []:
        _say(w)
    if not pf.sites and not pf.statics:
        _say("note: the placement lists no sites: every allocation stays in the default "
             "allocator")

    app_env = {"LD_PRELOAD": launch.preload_with(lib),
               "HMTUNE_PLACEMENT": str(placement.resolve())}
    app_env.update(launch.asan_env("run", program or exe, lib, dict(os.environ)))
    target = target_program(program, pf)
    if target:
        app_env["HMTUNE_TARGET"] = target
    else:
        _say(f"note: cannot tell which program {app[0]} starts is the one the placement "
             "is for (it has no 'program' line and names no program): every process "
             "started places, and the last to exit writes the statistics; write the "
             "placement again with 'hmtune advise', which names the traced program")
    stats = Path(args.stats) if args.stats else out / (MPI_STATS if launcher else SINGLE_STATS)
    stats = stats.absolute()
    planned = planned_stats(stats, launcher, dict(os.environ))
    why = runstats.stats_conflict(stats, planned, {"placement": placement, "program": exe})
    if why:
        raise Failure(why, 2)
    try:
        stats.parent.mkdir(parents=True, exist_ok=True)
        # the earlier statistics stay until the library renames new ones over them at
        # exit; a run that ends before (interrupted, killed) leaves them, and says so
        app_env["HMTUNE_STATS"] = str(stats)
    except OSError as e:
        _say(f"cannot write statistics to {stats.parent} ({e.strerror or e}); running "
             "without them")
    before = runstats.stamps(stats)
    aggregate = bool(launcher) and not args.quiet and "HMTUNE_STATS" in app_env
    if args.quiet or aggregate:
        app_env["HMTUNE_SUMMARY"] = "0"

    cmd, env = launch.command(launcher, app, app_env)
    wants: list[Want] = []
    if args.reserve_hugepages:
        wants, notes = hugepage_wants(pf, placement, out, app, launcher)
        for note in notes if not args.quiet else []:
            _say(note)
    # the pools are put back however this ends: the app's exit or crash (exit_like
    # re-raises its signal only after), Ctrl-C, SIGTERM or SIGHUP (passed on to the app)
    with hugepages.topped_up(wants, "hmtune run", args.quiet) if wants \
            else contextlib.nullcontext(hugepages.Topup()) as pools:
        for note in pools.notes:
            _say(f"note: {note}; running anyway: what does not fit stays in ordinary memory")
        if wants and not pools.changes and not pools.missing and not args.quiet:
            _say(f"the {pools.wanted} hugepages needed are free already: nothing reserved")
        if args.reserve_hugepages:
            dead = unplaceable(pf, dict(os.environ), nprocs)
        if dead and not args.allow_unplaced:
            raise Failure(f"{dead[0]}; or give --allow-unplaced to run with those sites in "
                          "ordinary memory", 2)
        for line in dead:
            _say(f"warning: {line}; running anyway (--allow-unplaced)")
        rc = launch.run_foreground(cmd, env, "run")
        if "HMTUNE_STATS" in app_env:
            _say_stale(stats, before, planned, rc)
        if not args.quiet and "HMTUNE_STATS" in app_env:
            files = runstats.fresh_stats(stats, before, planned)
            if aggregate:
                for line in runstats.mpi_summary(runstats.read_stats(files), files,
                                        launcher_processes(launcher), stats):
                    _say(line)
            elif files:
                _say("statistics: " + ", ".join(str(f) for f in files.values()))
    return launch.exit_like(rc)
