"""`hmtune compare`: the same application and fast-tier capacity under each placement
worth comparing — all-slow (no interposer), first-come-first-served into the fast tier
(what `numactl --preferred` does), a size window like memkind's autohbw (>= 1 MiB until
full), and the advisor's strategies — run interleaved, several times each, with the
figure of merit (FOM) of every run kept in DIR/compare/runs.csv as it comes (a
re-invocation skips the runs already there; --force redoes them) and a summary table
(medians, min-max, speedup over all-slow, bytes in the fast tier, dFOM/MB)."""

from __future__ import annotations

import argparse
import contextlib
import csv
import hashlib
import json
import math
import os
import re
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from workflows import hugepages, launch, paths
from workflows.units import fraction, human, parse_size

if TYPE_CHECKING:   # advisor.tiers imports pandas: not at every CLI start
    from advisor.tiers import Tier

STRATEGIES = ("ilp", "ilp-lifetime", "misses", "density")
BASELINES = {"first-come": "first-come", "size-window": "size-window:1M"}
RUNS_FIELDS = ["variant", "repeat", "fom", "wall_s", "fast_bytes", "fast_bytes_intended"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare",
        help="run an application under all-slow, first-come, size-window and the advisor's "
             "placements, interleaved, and compare their figures of merit",
        description="Run the application under all-slow, first-come, size-window and each "
                    "advisor strategy's placement on the same fast tier, interleaved and "
                    "REPEATS times each (resumable), and print medians, spread, speedups "
                    "over all-slow and dFOM/MiB. Results in DIR/compare/ "
                    "(docs/formats.md §7).",
        epilog="example: hmtune compare --machine "
               "configs/machines/vm-hugetlb.toml --fom 'kernel_time_s=([0-9.]+)' -- "
               "./build/examples/latency -s 256",
    )
    add_run_options(p, "compare")
    p.add_argument("--strategies", default="ilp,ilp-lifetime,misses,density", metavar="LIST",
                   help="advisor strategies to compare (default all four; ilp-lifetime "
                        "only when DIR has allocs.csv)")
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
                           "of the sites' peak live bytes; above 0, at most 1; default 0.4)")
    p.add_argument("--machine", metavar="FILE.toml", default=None,
                   help="tiers (default: configs/machines/vm-hugetlb.toml when 2 MiB "
                        "hugepages are free or --reserve-hugepages can reserve them, else "
                        "vm-thp.toml)")
    repeats = 5 if what == "compare" else 3
    p.add_argument("--repeats", type=int, default=repeats, metavar="N",
                   help=f"runs of each variant, interleaved (default {repeats})")
    p.add_argument("--fom", metavar="REGEX", default=None,
                   help="figure of merit: the first group of REGEX in the application's "
                        "stdout (default: the run's wall-clock seconds)")
    p.add_argument("--higher-is-better", action="store_true",
                   help="the FOM is a rate (default: a time, lower is better)")
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


def prepare(args: argparse.Namespace, what: str) -> Setup | int:
    """Check the arguments and the stage directory, size the fast tier and open
    DIR/<what>/ (config.json; runs.csv is kept only for the same configuration or
    dropped with --force); the Setup, or the exit status after a one-line error."""
    who = f"hmtune {what}"
    app = launch.app_command(args.app)
    if not app:
        return launch.fail(what, f"no application given: {who} [options] -- ./app args")
    stage = Path(args.out) if args.out else paths.default_out(app[0])
    sites = stage / "sites.csv"
    if not sites.is_file():
        return launch.fail(what, f"{sites}: not found (run hmtune trace and hmtune analyze "
                                 "first)")
    if args.repeats < 1:
        return launch.fail(what, "--repeats must be at least 1")
    exe, rc = launch.check_program(app[0], what, f"it cannot be {what}d")
    if exe is None:
        return rc
    try:
        fom_re = re.compile(args.fom) if args.fom else None
    except re.error as e:
        return launch.fail(what, f"--fom: not a regular expression: {e}")
    machine = Path(args.machine) if args.machine else default_machine(args.reserve_hugepages)
    if not machine.is_file():
        return launch.fail(what, f"--machine {machine}: no such file")
    from advisor.tiers import load_machine

    try:
        tiers = load_machine(machine).tiers
    except ValueError as e:
        return launch.fail(what, f"--machine: {e}")
    try:
        mem = parse_size(args.mem) if args.mem else int(footprint(sites) * args.fraction)
    except (ValueError, KeyError) as e:
        return launch.fail(what, f"cannot size the fast tier: {e}")
    mem = (mem + (2 << 20) - 1) // (2 << 20) * (2 << 20)       # whole 2 MiB pages
    if mem <= 0:
        return launch.fail(what, "the fast tier would be empty (--mem, or a trace with no "
                                 "sites)")
    work = stage / what
    try:
        work.mkdir(parents=True, exist_ok=True)
        probe = work / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        return launch.fail(what, f"cannot write to {work}: {e.strerror}")
    config: dict[str, object] = {
        "app": [str(exe.resolve()), *app[1:]], "machine": str(machine.resolve()),
        "mem": mem, "fom": args.fom, "higher_is_better": args.higher_is_better,
        "sites_sha256": hashlib.sha256(sites.read_bytes()).hexdigest()}
    return Setup(app, stage, work, fom_re, machine, tiers, mem, config)


def open_runs(setup: Setup, what: str, force: bool) -> int | None:
    """Keep DIR/<what>/runs.csv when it holds runs of this configuration, drop it with
    --force; None, or the exit status after saying why the runs cannot go on."""
    cfg_path, runs_path = setup.work / "config.json", setup.work / "runs.csv"
    if cfg_path.exists() and runs_path.exists() and not force:
        try:
            old = json.loads(cfg_path.read_text())
        except ValueError:
            old = None
        if old != setup.config:
            return launch.fail(what, f"{runs_path} holds runs of another configuration "
                                     f"({old}); add --force to start over")
    if force:
        runs_path.unlink(missing_ok=True)
    cfg_path.write_text(json.dumps(setup.config, indent=1) + "\n")
    return None


@dataclass
class Variant:
    name: str
    placement: Path | None          # None: no interposer
    baseline: str = ""              # HMTUNE_BASELINE


def _fail(msg: str, code: int = 2) -> int:
    return launch.fail("compare", msg, code)


def footprint(sites: Path) -> int:
    """One process's footprint: the sum of the sites' peak live bytes (sites.csv,
    docs/formats.md §4); with one row per (site, rank), the largest rank's sum."""
    per_rank: dict[str, int] = {}
    with sites.open(newline="") as f:
        for r in csv.DictReader(line for line in f if not line.startswith("#")):
            rank = r.get("rank") or ""
            per_rank[rank] = per_rank.get(rank, 0) + int(r["peak_live_bytes"])
    return max(per_rank.values(), default=0)


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


def advise(stage: Path, out: Path, machine: Path, mem: int, strategy: str) -> str | None:
    """placement.txt for one strategy in out/; None when written, else the reason."""
    out.mkdir(parents=True, exist_ok=True)
    cmd = [str(paths.cli()), "advise", str(stage), "--machine", str(machine),
           "--mem", str(mem), "--strategy", strategy, "-o", str(out / "placement.txt")]
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


def read_runs(path: Path) -> dict[tuple[str, int], dict[str, str]]:
    if not path.exists():
        return {}
    with path.open(newline="") as f:
        return {(r["variant"], int(r["repeat"])): r for r in csv.DictReader(f)}


def one_run(v: Variant, rep: int, app: list[str], work: Path, fom_re: re.Pattern | None,
            ) -> dict[str, str] | str:
    """Run the application once as variant v; the row for runs.csv, or why it failed."""
    d = work / v.name
    d.mkdir(parents=True, exist_ok=True)
    stats = d / f"stats.{rep}.json"
    stats.unlink(missing_ok=True)
    env = dict(os.environ)
    if v.placement is None:
        cmd = list(app)
    else:
        cmd = [str(paths.cli()), "run", "-q", "--placement", str(v.placement),
               "--stats", str(stats), "--", *app]
        if v.baseline:
            env["HMTUNE_BASELINE"] = v.baseline
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.monotonic() - t0
    (d / f"run.{rep}.log").write_text(f"$ {shlex.join(cmd)}\n{r.stdout}{r.stderr}")
    if r.returncode != 0:
        return f"exit status {r.returncode} (see {d / f'run.{rep}.log'})"
    fom = wall
    if fom_re is not None:
        m = fom_re.search(r.stdout)
        if not m:
            return (f"--fom {fom_re.pattern!r} matches nothing in its stdout "
                    f"(see {d / f'run.{rep}.log'})")
        try:
            fom = float(m.group(1) if m.groups() else m.group(0))
        except ValueError:
            return f"--fom matched {m.group(0)!r}, not a number"
    fast = intended = 0
    if stats.exists():
        tier = json.loads(stats.read_text())["tiers"][0]
        fast = int(tier["high_water_bytes"])
        intended = int(tier["residency"]["bytes_intended"])
    return {"variant": v.name, "repeat": str(rep), "fom": f"{fom:.9g}", "wall_s": f"{wall:.3f}",
            "fast_bytes": str(fast), "fast_bytes_intended": str(intended)}


def pending(variants: list[Variant], repeats: int, rows: dict[tuple[str, int], dict[str, str]]
            ) -> bool:
    """Whether rows (runs.csv as read_runs gives it) still lack any run of these variants."""
    return any((v.name, rep) not in rows for v in variants for rep in range(repeats))


def run_all(variants: list[Variant], repeats: int, app: list[str], work: Path,
            fom_re: re.Pattern | None, who: str, rows: dict[tuple[str, int], dict[str, str]]
            ) -> dict[tuple[str, int], dict[str, str]] | None:
    """Every variant `repeats` times, interleaved (odd rounds in reverse order), skipping
    the runs already in rows (work/runs.csv as read_runs gives it) and adding each new
    one to rows and to the file as it ends; the rows, or None (after saying why) when
    the application failed."""
    runs_path = work / "runs.csv"
    todo = [(rep, v) for rep in range(repeats)
            for v in (variants if rep % 2 == 0 else variants[::-1])]
    total = len(todo)
    for k, (rep, v) in enumerate(todo, 1):
        if (v.name, rep) in rows:
            continue
        res = one_run(v, rep, app, work, fom_re)
        if isinstance(res, str):
            print(f"{who}: {v.name}, run {rep + 1}: the application failed: {res}; "
                  f"the {len(rows)} runs so far are kept in {runs_path}", file=sys.stderr)
            return None
        rows[(v.name, rep)] = res
        write_csv(runs_path, RUNS_FIELDS, [rows[key] for key in sorted(rows)])
        print(f"{who}: [{k}/{total}] {v.name} run {rep + 1}: FOM {res['fom']}",
              file=sys.stderr)
    return rows


@dataclass
class Stats:
    """One variant's runs."""
    runs: int
    median: float
    lo: float
    hi: float
    speedup: float | None          # over the reference's median; None: no reference, or 0
    fast_bytes: float              # median high-water mark of the first tier
    dfom_per_mib: float            # (median - reference's) / MiB in the fast tier, or nan


def variant_stats(rows: dict[tuple[str, int], dict[str, str]], name: str, base: float,
                  higher: bool) -> Stats | None:
    """The runs of variant `name` against the reference median `base` (nan: none)."""
    f = [float(r["fom"]) for (v, _), r in sorted(rows.items()) if v == name]
    if not f:
        return None
    med = statistics.median(f)
    fast = statistics.median(int(r["fast_bytes"]) for (v, _), r in rows.items() if v == name)
    speed = None if not med or math.isnan(base) else (med / base if higher else base / med)
    mb = fast / 2**20
    return Stats(len(f), med, min(f), max(f), speed, fast,
                 (med - base) / mb if mb else float("nan"))


def summarize(rows: dict[tuple[str, int], dict[str, str]], variants: list[Variant],
              higher: bool) -> list[dict[str, str]]:
    base = [float(r["fom"]) for (v, _), r in rows.items() if v == "all-slow"]
    base_med = statistics.median(base) if base else float("nan")
    out = []
    for v in variants:
        st = variant_stats(rows, v.name, base_med, higher)
        if st is None:
            continue
        speed = float("nan") if st.speedup is None else st.speedup
        out.append({"variant": v.name, "runs": str(st.runs), "median_fom": f"{st.median:.6g}",
                    "min_fom": f"{st.lo:.6g}", "max_fom": f"{st.hi:.6g}",
                    "speedup": f"{speed:.3f}", "fast_mib": f"{st.fast_bytes / 2**20:.1f}",
                    "dfom_per_mib": f"{st.dfom_per_mib:.6g}"})
    return out


def write_csv(path: Path, fields: list[str], rows: list[dict[str, str]]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    os.replace(tmp, path)


def run(args: argparse.Namespace) -> int:
    strategies = [s for s in args.strategies.split(",") if s]
    bad = [s for s in strategies if s not in STRATEGIES]
    if bad:
        return _fail(f"--strategies: unknown {', '.join(bad)} (known: {', '.join(STRATEGIES)})")
    setup = prepare(args, "compare")
    if isinstance(setup, int):
        return setup
    stage, work, machine, mem = setup.stage, setup.work, setup.machine, setup.mem
    if "ilp-lifetime" in strategies and not (stage / "allocs.csv").is_file():
        strategies.remove("ilp-lifetime")
    rc = open_runs(setup, "compare", args.force)
    if rc is not None:
        return rc
    print(f"hmtune compare: fast tier {human(mem)} per process ({machine.name}); "
          f"{args.repeats} runs of each variant, interleaved", file=sys.stderr)

    variants = [Variant("all-slow", None)]
    for strategy in strategies:
        why = advise(stage, work / strategy, machine, mem, strategy)
        if why:
            print(f"hmtune compare: strategy {strategy} left out: {why}", file=sys.stderr)
            continue
        variants.append(Variant(strategy, work / strategy / "placement.txt"))
    if len(variants) == 1:
        return _fail("no strategy produced a placement (see DIR/compare/*/advise.log)", 1)
    tiers_only(variants[1].placement or Path(), work / "baseline-placement.txt")
    variants[1:1] = [Variant(n, work / "baseline-placement.txt", b) for n, b in BASELINES.items()]

    done = read_runs(work / "runs.csv")
    reserve = args.reserve_hugepages and pending(variants, args.repeats, done)
    with fast_tier_pool(setup.tiers[0], mem, reserve, "hmtune compare"):
        rows = run_all(variants, args.repeats, setup.app, work, setup.fom_re,
                       "hmtune compare", done)
    if rows is None:
        return 1
    summary = summarize(rows, variants, args.higher_is_better)
    fields = list(summary[0])
    write_csv(work / "summary.csv", fields, summary)
    print(f"{'variant':<14} {'runs':>4} {'median FOM':>12} {'min-max':>21} {'speedup':>8} "
          f"{'fast MiB':>9} {'dFOM/MiB':>11}")
    for s in summary:
        print(f"{s['variant']:<14} {s['runs']:>4} {s['median_fom']:>12} "
              f"{s['min_fom'] + '-' + s['max_fom']:>21} {s['speedup']:>7}x "
              f"{s['fast_mib']:>9} {s['dfom_per_mib']:>11}")
    print(f"hmtune compare: runs in {work / 'runs.csv'}, table in {work / 'summary.csv'}",
          file=sys.stderr)
    return 0
