"""Measuring variants of one application for compare and explore: interleaved rounds
(each runs every variant once and the reference once or twice: round_order), a fixed
number or until the intervals are narrow enough or the time budget is spent (--repeats auto);
each run's FOM, exit status and resources (wall, user and system time, page faults,
max RSS, hugepages) kept in runs.csv as it ends, so that an interrupted measurement
resumes where it stopped; a warning when the machine is busy; and the per-variant
summary (hmtune/workflows/stats.py for the intervals). docs/formats.md §7.

About 560 lines: the options (--repeats, --budget, --pin, ...), runs.csv and the
round loop are one contract with one reader; the options part (repeats_arg to
plan_from) is what would move out first."""

from __future__ import annotations

import argparse
import contextlib
import csv
import functools
import json
import math
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from hmtune.core import elf, paths
from hmtune.core.backends import uses_hugetlb
from hmtune.core.placement import read_placement
from hmtune.core.stage import Stage
from hmtune.workflows import hugepages, launch, stats
from hmtune.workflows.busy import busy_note, cpu_snapshot, loadavg_note
from hmtune.workflows.reserve import MEMKIND_PAGE

RUNS_FORMAT = 2                     # config.json's runs_format: the runs.csv below
# the columns a runs.csv must have to be resumed, and those added since, which read as
# unknown ("") in one written before them
RUNS_REQUIRED = ["variant", "repeat", "fom", "rc", "wall_s", "user_s", "sys_s", "minflt",
                 "majflt", "maxrss_kib", "hugepages", "fast_bytes", "fast_bytes_intended"]
RUNS_FIELDS = [*RUNS_REQUIRED, "not_fitting", "map_failed"]
RESOURCES = ["wall_s", "user_s", "sys_s", "minflt", "majflt", "maxrss_kib", "hugepages"]
DEFAULT_BUDGET = "20m"
DEFAULT_TARGET = 3.0                # percent

Rows = dict[tuple[str, int], dict[str, str]]
SECOND = "#2"                       # runs.csv: the reference's second run of a round
TWICE_FROM = 3                      # the reference runs twice in a round of this many others


@dataclass
class Variant:
    name: str
    placement: Path | None          # None: no interposer (all-slow)
    baseline: str = ""              # HMTUNE_BASELINE


# ---- options ----

def repeats_arg(text: str) -> int | None:
    """--repeats: a number of rounds (1 or more), or auto (None)."""
    if text.strip().lower() == "auto":
        return None
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of rounds: give auto or "
                                         "a whole number of at least 1")
    return n


_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*([hms]?)", re.IGNORECASE)


def duration_arg(text: str) -> float:
    """--budget: seconds from `20m`, `1h30m`, `90s`, `1.5h` or plain seconds."""
    s = text.strip().replace(" ", "")
    pos, total = 0, 0.0
    while pos < len(s):
        m = _DURATION.match(s, pos)
        if not m or (not m.group(2) and m.end() != len(s)):
            break
        total += float(m.group(1)) * {"h": 3600, "m": 60, "s": 1, "": 1}[m.group(2).lower()]
        pos = m.end()
    if not s or pos != len(s) or not total > 0 or math.isinf(total):
        raise argparse.ArgumentTypeError(f"'{text}' is not a duration: give e.g. 20m, 1h30m, "
                                         "90s or seconds")
    return total


def target_arg(text: str) -> float:
    """--target: a percentage (3 or 3%) as a fraction (0.03), above 0 and below 100."""
    try:
        value = float(text.strip().rstrip("%"))
    except ValueError:
        value = math.nan
    if not 0 < value < 100:
        raise argparse.ArgumentTypeError(f"'{text}' is not a percentage above 0 and below 100 "
                                         "(e.g. 3 for +-3 %)")
    return value / 100


def cpus_arg(text: str) -> frozenset[int]:
    """--pin: a CPU list (0-1,3) within the CPUs this process may run on."""
    cpus: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.strip().partition("-")
        if not lo.isdigit() or not (hi or lo).isdigit() or int(hi or lo) < int(lo):
            raise argparse.ArgumentTypeError(f"'{text}' is not a CPU list (e.g. 1 or 0-1,3)")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    allowed = os.sched_getaffinity(0)
    if not cpus <= allowed:
        raise argparse.ArgumentTypeError(
            f"CPU(s) {','.join(map(str, sorted(cpus - allowed)))} not available here (this "
            f"process may run on {','.join(map(str, sorted(allowed)))})")
    return frozenset(cpus)


def rcs_arg(text: str) -> frozenset[int]:
    """--ok-rc: exit statuses (0-255), comma-separated."""
    try:
        codes = {int(x) for x in text.split(",") if x.strip()}
    except ValueError:
        codes = {-1}
    if not codes or not all(0 <= c <= 255 for c in codes):
        raise argparse.ArgumentTypeError(f"'{text}' is not a list of exit statuses 0-255 "
                                         "(e.g. 0,3)")
    return frozenset(codes)


def add_options(p: argparse.ArgumentParser, reference: str) -> None:
    """The measurement options compare and explore share."""
    p.add_argument("--repeats", type=repeats_arg, default=None, metavar="N|auto",
                   help="rounds, each running every variant once, interleaved: N, or auto "
                        "(default): rounds until every speedup's 95 %% interval is within "
                        "+-TARGET, or the BUDGET runs out (at least --min-rounds, and two "
                        "whatever the budget); --repeats 1 gives no interval (unsupported)")
    p.add_argument("--target", type=target_arg, default=DEFAULT_TARGET / 100, metavar="PCT",
                   help=f"--repeats auto: the largest half-width of an interval, in percent "
                        f"of the speedup (default {DEFAULT_TARGET:g})")
    p.add_argument("--budget", type=duration_arg, default=duration_arg(DEFAULT_BUDGET),
                   metavar="TIME", help="--repeats auto: time this invocation may spend "
                                        f"running (e.g. 20m, 1h30m, 90s; default "
                                        f"{DEFAULT_BUDGET}); a round starts only when it is "
                                        "expected to end within it")
    p.add_argument("--min-rounds", type=int, default=stats.MIN_ROUNDS, metavar="N",
                   help=f"--repeats auto: rounds before the target may end it (default "
                        f"{stats.MIN_ROUNDS}, at least 2)")
    p.add_argument("--pin", type=cpus_arg, default=None, metavar="CPUS",
                   help="run the application on these CPUs only (sched_setaffinity, "
                        "e.g. 1 or 0-1)")
    p.add_argument("--warmup", action="store_true",
                   help=f"one run of {reference} before the first round, not recorded")
    p.add_argument("--ok-rc", type=rcs_arg, default=frozenset(), metavar="N,...",
                   help=f"exit statuses accepted besides {reference}'s (every run must "
                        f"exit as {reference}'s first run did; a signal death always "
                        "fails)")
    p.add_argument("--mpirun", "--launcher", dest="mpirun", metavar="CMD", default="",
                   help="MPI launcher prefix, e.g. 'mpirun -np 2' or 'srun -n 2' (the "
                        "interposer is applied to the ranks)")


@dataclass
class Plan:
    """How to measure: --repeats and the rules around it."""
    repeats: int | None             # None: auto
    target: float = DEFAULT_TARGET / 100
    budget: float = 1200.0          # seconds
    min_rounds: int = stats.MIN_ROUNDS
    warmup: bool = False
    pin: frozenset[int] | None = None
    ok_rc: frozenset[int] = frozenset()
    launcher: list[str] = field(default_factory=list)
    higher: bool = False


def plan_from(args: argparse.Namespace) -> Plan | str:
    """The Plan of parsed options, or why they do not make one."""
    if args.min_rounds < 2:
        return "--min-rounds must be at least 2 (an interval needs two rounds)"
    return Plan(args.repeats, args.target, args.budget, args.min_rounds, args.warmup,
                args.pin, args.ok_rc, shlex.split(args.mpirun) if args.mpirun else [],
                args.higher_is_better)


# ---- runs.csv ----

class RunsFormatError(ValueError):
    pass


def read_runs(path: Path) -> Rows:
    """runs.csv as {(variant, round): row}; {} when there is none. RunsFormatError for a
    file without this version's columns (written by an earlier hmtune)."""
    if not path.exists():
        return {}
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in RUNS_REQUIRED if c not in (reader.fieldnames or [])]
        if missing:
            raise RunsFormatError(
                f"{path} lacks the columns {', '.join(missing)} (written by an earlier "
                "hmtune, whose runs are not comparable with new ones)")
        return {(r["variant"], int(r["repeat"])): {**dict.fromkeys(RUNS_FIELDS, ""), **r}
                for r in reader}


def write_csv(path: Path, fields: list[str], rows: list[dict[str, str]]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    os.replace(tmp, path)


def complete_rounds(rows: Rows, names: list[str]) -> list[int]:
    """The rounds that hold a run of every one of names."""
    reps = sorted({rep for (_, rep) in rows})
    return [r for r in reps if all((n, r) in rows for n in names)]


def round_runs(rows: Rows, name: str, r: int) -> list[dict[str, str]]:
    """name's runs in round r: its run and, when the round has one, its second run
    (name + SECOND, the reference's)."""
    again = rows.get((name + SECOND, r))
    return [rows[(name, r)]] if again is None else [rows[(name, r)], again]


def round_fom(rows: Rows, name: str, r: int) -> float:
    """name's FOM in round r: the geometric mean of its runs there (round_runs)."""
    runs = round_runs(rows, name, r)
    return math.prod(float(x["fom"]) for x in runs) ** (1.0 / len(runs))


def fom_table(rows: Rows, names: list[str]) -> list[dict[str, float]]:
    """Per complete round, each of names' FOM (round_fom)."""
    return [{n: round_fom(rows, n, r) for n in names} for r in complete_rounds(rows, names)]


# ---- one run ----

def rc_problem(rc: int, ref_rc: int | None, ok: frozenset[int], ref: str,
               first: bool = False) -> str | None:
    """Why a run's exit status rc is not accepted (None: it is): rc must be the
    reference's (its first run's, which first is and which sets it; 0 before there is
    one) or in ok; a signal death (rc below 0) never is."""
    if rc < 0:
        import signal

        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = f"signal {-rc}"
        return f"killed by {name}"
    want = 0 if ref_rc is None else ref_rc
    if first or rc == want or rc in ok:
        return None
    than = f"{ref} exited {ref_rc}" if ref_rc is not None else "0 was expected"
    return f"exit status {rc} where {than} (--ok-rc {rc} accepts it)"


def _hugepages(tier: dict) -> int:
    """Hugepages the run's fast tier held: hugetlb (and memkind hugepage kinds) its
    high-water mark in pages, thp the bytes its residency check found in huge pages."""
    backend = str(tier.get("backend", ""))
    if uses_hugetlb(backend):
        pool = hugepages.pool()
        page = pool.page if backend == "hugetlb" and pool else MEMKIND_PAGE
        return -(-int(tier.get("high_water_bytes", 0)) // page)
    if backend == "thp":
        return int(tier.get("residency", {}).get("bytes_intended", 0)) // (2 << 20)
    return 0


def _stats_files(d: Path, tag: str) -> list[Path]:
    return [d / f"stats.{tag}.json", *sorted(d.glob(f"stats.{tag}.*.json"))]


# Thousands separators as programs print them ("2,082,568", "2_082_568", "2 082 568"):
# a comma, underscore, space or apostrophe between groups of three digits
_THOUSANDS = re.compile(r"(?<=\d)[,_ '](?=\d{3}(?:\D|$))")


def fom_of(patterns: list[re.Pattern], stdout: str) -> float | str:
    """The figure of merit in a run's stdout: the first group (else the whole match) of
    each pattern's first match, their geometric mean when there are several; or why
    there is none. Thousands separators are read (XSBench's "Lookups/s: 2,082,568").
    Every figure must be above 0 (a ratio of FOMs is the speedup)."""
    logs = []
    for rx in patterns:
        m = rx.search(stdout)
        if not m:
            return f"--fom {rx.pattern!r} matches nothing in its stdout"
        text = (m.group(1) if m.groups() else m.group(0)).strip()
        try:
            x = float(_THOUSANDS.sub("", text))
        except ValueError:
            return f"--fom {rx.pattern!r} matched {m.group(0)!r}, not a number"
        if not (x > 0 and math.isfinite(x)):
            return (f"--fom {rx.pattern!r} gives {x:g}: speedups are ratios of FOMs, which "
                    f"must be above 0")
        logs.append(math.log(x))
    return x if len(logs) == 1 else math.exp(sum(logs) / len(logs))


def one_run(v: Variant, tag: str, app: list[str], work: Path, fom_re: list[re.Pattern],
            plan: Plan, target: str | None,
            judge: Callable[[int], str | None] = lambda rc: None) -> dict[str, str] | str:
    """Run the application once as variant v (files work/v/run.TAG.log, stats.TAG.json);
    the row for runs.csv, or why the run gave none (judge(exit status) first)."""
    d = work / v.name
    d.mkdir(parents=True, exist_ok=True)
    for old in _stats_files(d, tag):
        old.unlink(missing_ok=True)
    app_env: dict[str, str] = {}
    if v.placement is not None:
        stats_file = d / (f"stats.{tag}.%r.json" if plan.launcher else f"stats.{tag}.json")
        app_env = {"LD_PRELOAD": launch.preload_with(paths.hmalloc_lib()),
                   "HMTUNE_PLACEMENT": str(v.placement.resolve()),
                   "HMTUNE_STATS": str(stats_file.absolute()), "HMTUNE_SUMMARY": "0"}
        if target:
            app_env["HMTUNE_TARGET"] = target
        if v.baseline:
            app_env["HMTUNE_BASELINE"] = v.baseline
    if app_env:
        cmd, env = launch.command(plan.launcher, app, app_env)
    else:
        cmd, env = plan.launcher + app, dict(os.environ)
    shown = cmd if plan.launcher or not app_env else \
        ["env", *(f"{k}={x}" for k, x in app_env.items()), *cmd]
    log = d / f"run.{tag}.log"
    pin = plan.pin
    helper = paths.helper_dir() / "hmtune-rusage"
    usage = d / f"rusage.{tag}.txt"
    usage.unlink(missing_ok=True)
    wrapped = [str(helper), str(usage), *cmd] if helper.exists() else cmd
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.monotonic()
        try:
            proc = subprocess.Popen(wrapped, env=env, stdout=out, stderr=err,
                                    preexec_fn=(lambda: os.sched_setaffinity(0, pin))
                                    if pin else None)
        except OSError as e:
            return f"cannot run {wrapped[0]}: {e.strerror or e}"
        try:
            _, status, ru = os.wait4(proc.pid, 0)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        wall = time.monotonic() - t0
        proc.returncode = rc = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode(errors="replace")
        log.write_text(f"$ {shlex.join(shown)}\n{stdout}{err.read().decode(errors='replace')}")
    res = {"wall_s": wall, "user_s": ru.ru_utime, "sys_s": ru.ru_stime,
           "minflt": ru.ru_minflt, "majflt": ru.ru_majflt, "maxrss_kib": ru.ru_maxrss}
    if wrapped is not cmd:
        got = read_rusage(usage)
        usage.unlink(missing_ok=True)
        if got is None:
            return f"{helper} gave no resource usage (see {log})"
        res, rc = got
        wall = res["wall_s"]
    problem = judge(rc)
    if problem:
        return f"{problem} (see {log})"
    fom = wall
    if fom_re:
        figure = fom_of(fom_re, stdout)
        if isinstance(figure, str):
            return f"{figure} (see {log})"
        fom = figure
    if not (fom > 0 and math.isfinite(fom)):
        return (f"its FOM is {fom:g}: speedups are ratios of FOMs, which must be above 0 "
                f"(see {log})")
    fast = intended = pages = refused = failed = 0
    for f in _stats_files(d, tag):
        try:
            tier = json.loads(f.read_text())["tiers"][0]
        except (OSError, ValueError, KeyError, IndexError, TypeError):
            continue
        fast = max(fast, int(tier["high_water_bytes"]))
        intended = max(intended, int(tier["residency"]["bytes_intended"]))
        pages += _hugepages(tier)
        refused += int(tier.get("not_fitting", 0))
        failed += int(tier.get("map_failed", 0))
    return {"variant": v.name, "repeat": tag, "fom": f"{fom:.9g}", "rc": str(rc),
            "wall_s": f"{wall:.3f}", "user_s": f"{res['user_s']:.3f}",
            "sys_s": f"{res['sys_s']:.3f}", "minflt": f"{res['minflt']:.0f}",
            "majflt": f"{res['majflt']:.0f}", "maxrss_kib": f"{res['maxrss_kib']:.0f}",
            "hugepages": str(pages), "fast_bytes": str(fast),
            "fast_bytes_intended": str(intended), "not_fitting": str(refused),
            "map_failed": str(failed)}


def read_rusage(path: Path) -> tuple[dict[str, float], int] | None:
    """hmtune-rusage's line (workflows/rusage.c): the resources and the exit status (as
    subprocess gives it: -N for a death by signal N); None when it is missing or
    malformed."""
    try:
        fields = dict(w.split("=", 1) for w in path.read_text().split())
        values = {k: float(fields[k]) for k in ("wall_s", "user_s", "sys_s", "minflt",
                                                "majflt", "maxrss_kib")}
        return values, os.waitstatus_to_exitcode(int(fields["status"]))
    except (OSError, ValueError, KeyError):
        return None


def targets(variants: list[Variant], app: list[str],
            stage: Path | None = None) -> dict[str, str | None]:
    """HMTUNE_TARGET per placed variant, as `hmtune run` sets it (hmtune/workflows/run.py);
    for a script, a placement without a program line (all-fast, the baselines') takes
    the program the stage's trace names (hmtune.advisor.program_line.traced_program)."""
    from hmtune.advisor.program_line import traced_program
    from hmtune.workflows import run as hrun

    exe = elf.resolve(app[0])
    program = hrun.command_program(app, exe) if exe is not None else None
    if program is not None and elf.program_headers(program) is not None:
        return {v.name: os.path.realpath(program) for v in variants}
    traced = traced_program(Stage(stage).sites) if stage is not None else ""
    return {v.name: hrun.target_program(program, read_placement(v.placement)) or traced or None
            for v in variants if v.placement is not None}


# ---- the rounds ----

@dataclass
class Outcome:
    rows: Rows
    stopped_by: str                 # "repeats", "target" or "budget"
    ran: int = 0                    # runs made by this invocation
    seconds: float = 0.0            # time this invocation spent measuring
    load_warning: str = ""


def round_order(variants: list[Variant], r: int, top: str | None = None) -> list[Variant]:
    """Round r's order. The reference (variants[0]) every speedup is a ratio to runs
    twice when TWICE_FROM or more others share the round (its second run named
    reference + SECOND; round_fom takes the geometric mean of the two), once otherwise.
    The others keep their order, top (the upper bound, the denominator of every share)
    first, so that neighbours in the list (a strategy and its -whole twin) stay
    neighbours: with two reference runs, about half of the others run between them
    (top next to the first) and a quarter before and after; with one, it runs in the
    middle, the first half before it (top next to it) and the rest after. Mirrored on
    odd rounds. This host drifts, so two runs differ more the further apart they ran
    (BWA-MEM, 59 rounds of 10 variants, 2026-11-28: the sd of a log ratio 0.067-0.092
    between neighbours and 0.10-0.12 eight or nine runs apart), and the mean of two
    runs is a steadier reference than one: 25 rounds of 11 runs of one command the same
    day, the references at positions 2 and 8 against one at 5 of 10, the sd of the
    worst variant's log ratio 0.083 against 0.112, the interval 22 % narrower at equal
    time (13 % on average over the positions)."""
    ref, others = variants[0], variants[1:]
    others = ([v for v in others if v.name == top]
              + [v for v in others if v.name != top])
    if len(others) >= TWICE_FROM:
        outer = max(1, round(len(others) / 4))
        mid = len(others) - 2 * outer
        again = Variant(ref.name + SECOND, ref.placement, ref.baseline)
        order = (others[mid:mid + outer][::-1] + [ref] + others[:mid] + [again]
                 + others[mid + outer:])
    else:
        half = (len(others) + 1) // 2
        order = others[:half][::-1] + [ref] + others[half:]
    return order if r % 2 == 0 else order[::-1]


def _halfwidth(rows: Rows, names: list[str], ref: str, top: str | None, plan: Plan) -> float:
    table = fom_table(rows, names)
    if len(table) < max(2, plan.min_rounds):
        return math.inf
    quick = stats.quick_halfwidth(table, names, ref, plan.higher)
    if quick > 1.2 * plan.target:
        return quick
    est = stats.estimate(table, names, ref, top, plan.higher)
    return max((e.halfwidth for n, e in est.items() if n != ref), default=0.0)


def measure(variants: list[Variant], plan: Plan, app: list[str], work: Path,
            fom_re: list[re.Pattern], who: str, rows: Rows, top: str | None = None,
            before_runs: Callable[[], contextlib.AbstractContextManager[None]] | None = None
            ) -> Outcome | None:
    """Run the rounds (variants[0] is the reference), skipping the runs already in rows
    (runs.csv as read_runs gives it) and adding each new one to rows and to the file as
    it ends. before_runs: a context entered before the first run is made (hugepages
    reserved for the runs). The Outcome, or None (after saying why) when a run failed."""
    names = [v.name for v in variants]
    ref = names[0]
    runs_path = work / "runs.csv"
    out = Outcome(rows, "repeats")
    ref_rc = next((int(rows[(ref, r)]["rc"]) for r in sorted(rep for n, rep in rows
                                                                if n == ref)), None)
    tgt: dict[str, str | None] | None = None
    t0 = time.monotonic()
    busy_time = 0.0
    with contextlib.ExitStack() as stack:
        r = 0
        last_existing = max((rep for _, rep in rows), default=-1)
        while True:
            if plan.repeats is not None:
                if r >= plan.repeats:
                    break
            order = round_order(variants, r, top)
            if plan.repeats is None and r > last_existing:
                per_round = busy_time / out.ran * len(order) if out.ran else 0.0
                why = stats.stop_reason(
                    len(complete_rounds(rows, names)), _halfwidth(rows, names, ref, top, plan),
                    time.monotonic() - t0, per_round, target=plan.target, budget=plan.budget,
                    min_rounds=plan.min_rounds)
                if why:
                    out.stopped_by = why
                    break
            if ref_rc is None:      # the reference's exit status judges the others' runs
                order = [variants[0]] + [v for v in order if v is not variants[0]]
            todo = [v for v in order if (v.name, r) not in rows]
            if todo and tgt is None:        # the first run of this invocation
                if before_runs is not None:
                    stack.enter_context(before_runs())
                tgt = targets(variants, app, work.parent)
                tgt[ref + SECOND] = tgt.get(ref)
                if any(v.placement is not None and not tgt.get(v.name) for v in variants):
                    print(f"{who}: note: cannot tell which program {app[0]} starts is the one "
                          "the placements are for: every process it starts places",
                          file=sys.stderr)
                note = loadavg_note()
                if note:
                    out.load_warning = note
                    _warn_load(who, note)
                if plan.warmup:
                    print(f"{who}: warm-up run of {ref} (not recorded)", file=sys.stderr)
                    one_run(variants[0], "warmup", app, work, fom_re, plan, tgt.get(ref))
            snap = cpu_snapshot() if todo else {}
            start = time.monotonic()
            for v in todo:
                first = v.name == ref and ref_rc is None     # sets the reference status
                judge = functools.partial(rc_problem, ref_rc=ref_rc, ok=plan.ok_rc, ref=ref,
                                          first=first)
                res = one_run(v, str(r), app, work, fom_re, plan, (tgt or {}).get(v.name),
                              judge)
                if isinstance(res, str):
                    print(f"{who}: {v.name}, round {r + 1}: the application failed: {res}; "
                          f"the {len(rows)} runs so far are kept in {runs_path}",
                          file=sys.stderr)
                    return None
                if v.name == ref and ref_rc is None:
                    ref_rc = int(res["rc"])
                    if ref_rc:
                        print(f"{who}: note: {ref} exits with status {ref_rc}: every variant "
                              "must (or one --ok-rc accepts)", file=sys.stderr)
                rows[(v.name, r)] = res
                out.ran += 1
                write_csv(runs_path, RUNS_FIELDS, [rows[key] for key in sorted(rows)])
                total = f"/{plan.repeats}" if plan.repeats is not None else ""
                print(f"{who}: round {r + 1}{total}: {v.name}: FOM {res['fom']} "
                      f"({res['wall_s']} s)", file=sys.stderr)
            if todo:
                spent = time.monotonic() - start
                busy_time += spent
                busy = busy_note(snap, cpu_snapshot(), spent, plan.pin,
                                 frozenset({os.getpid()}))
                if busy and not out.load_warning:
                    out.load_warning = busy
                    _warn_load(who, busy)
            r += 1
    out.seconds = time.monotonic() - t0
    return out


def _warn_load(who: str, note: str) -> None:
    print(f"{who}: warning: the machine is busy ({note}): timings are noisier and the "
          "intervals wider; stop the other work, or --pin the runs to an idle CPU",
          file=sys.stderr)
