"""`make bench-apps`: hmtune on real applications no one here wrote (Debian packages),
end to end, with stated confidence (never part of `make test`).

For each code: a bare run (its figure of merit and correctness lines); the tracer's
overhead from interleaved bare and traced runs; where the samples fell (heap sites,
statics, stack, no address); analyze; then one `hmtune compare` at 25 % and 50 % of the
heap footprint (one process's heap live at once at its most, from allocs.csv, plus its
static variables; not the sum of the sites' peaks, which counts memory reused over
time several times), both capacities in the same rounds with one all-slow and one
all-fast: first-come, size-window and the advisor (ilp-lifetime, and
ilp-lifetime-whole: --whole-objects) at each capacity, and every site in the fast tier
(the upper bound), interleaved, with 95 % intervals. Every run's correctness lines
(energies, validity checks) must equal the bare run's.

Codes (why each): LAMMPS Lennard-Jones melt (the classic MD benchmark: neighbour lists
and per-atom arrays, C++), LAMMPS EAM copper (a many-body potential with more per-atom
state and tabulated splines), HPC Challenge on 2 MPI ranks (RandomAccess, STREAM, FFT:
latency-, bandwidth- and FFT-bound kernels in one MPI code, C), NWChem SCF of a water
dimer with the integrals kept in memory (Fortran, its MA heap, a quantum chemistry
production code with offline inputs from nwchem-data), BWA-MEM aligning 25,000 reads to
a 64 Mbp genome on 2 threads (C, the short-read aligner of most genomics pipelines on HPC
clusters: seeds found by random lookups in its FM-index, a 64 MiB BWT, 32 MiB suffix
array and 16 MiB packed genome read into the heap, so TLB-bound; both made here from a
seeded random genome, the index built once by `bwa index`; its FOM its own "Real time",
its correctness line the checksum of its SAM output), and hotwindow (bench/hotwindow.c,
ours: a 256 MiB array whose hot part is a 32 MiB window beside two warm 8 MiB arrays,
the case for split objects: at 25 % of the footprint no whole-object placement holds
the window), and two more of ours whose gains must hold (issue 15): latency, the
demo's program at the demo's size (examples/latency.c: a TLB-bound pointer chase
allocated last among six arrays), and hashjoin (examples/hashjoin.c: a build-and-probe
hash join whose table, a quarter of the footprint, is allocated after its inputs and its
result buffer, so allocation order places the wrong arrays). The advisor runs twice
at each capacity: ilp-lifetime (split objects on, its default) and ilp-lifetime-whole
(hmtune advise --whole-objects).

Output (written by bench/apps_report.py): bench/results/apps-<date>-<host>.md (table) and
.png (speedups with intervals), one summary line per code on stdout. Work files in
bench/work/ (not committed)."""

from __future__ import annotations

import argparse
import csv
import json
import random
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from apps_report import ADVISOR, suffixed, write_results
from benchlib import HMTUNE, ROOT, require

sys.path.insert(0, str(ROOT))
from hmtune.core.stage import footprint_of, site_rows  # noqa: E402
from hmtune.workflows import measure, stats  # noqa: E402

NAME = "bench-apps"
WORK = ROOT / "bench" / "work"
FRACTIONS = (0.25, 0.5)

LJ = """# 3d Lennard-Jones melt: LAMMPS examples/melt/in.melt with the box and the run length
# set by variables (-var n N -var steps S)
variable	n index 20
variable	steps index 250
units		lj
atom_style	atomic
lattice		fcc 0.8442
region		box block 0 $n 0 $n 0 $n
create_box	1 box
create_atoms	1 box
mass		1 1.0
velocity	all create 3.0 87287 loop geom
pair_style	lj/cut 2.5
pair_coeff	1 1 1.0 1.0 2.5
neighbor	0.3 bin
neigh_modify	every 20 delay 0 check no
fix		1 all nve
thermo		50
run		${steps}
"""

EAM = """# Cu EAM (the settings of LAMMPS's bench/in.eam: fcc 3.615, Cu_u3.eam, 1600 K, NVE,
# 5 fs steps) with the box and the run length set by variables
variable	n index 20
variable	steps index 100
units		metal
atom_style	atomic
lattice		fcc 3.615
region		box block 0 $n 0 $n 0 $n
create_box	1 box
create_atoms	1 box
pair_style	eam
pair_coeff	1 1 /usr/share/lammps/potentials/Cu_u3.eam
velocity	all create 1600.0 376847 loop geom
neighbor	1.0 bin
neigh_modify	every 1 delay 5 check yes
fix		1 all nve
timestep	0.005
thermo		50
run		${steps}
"""

NWCHEM = """start water2
memory total 1600 mb
title "water dimer SCF, aug-cc-pVTZ, integrals in memory"
geometry units angstrom noautoz
  O   -1.551007  -0.114520   0.000000
  H   -1.934259   0.762503   0.000000
  H   -0.599677   0.040712   0.000000
  O    1.350625   0.111469   0.000000
  H    1.680398  -0.373741  -0.758561
  H    1.680398  -0.373741   0.758561
end
basis spherical
  * library aug-cc-pvtz
end
scf
  semidirect memsize 150000000 filesize 0
end
task scf energy
"""

THERMO = r"^\s*\d+(\s+-?\d[\d.e+-]*){5}\s*$"      # a thermo line: step and five values


BWA = """#!/bin/sh
# BWA-MEM on the suite's reads (bench/bench_apps.py), its log on stdout and then the
# checksum of its alignments (the SAM header's @PG line is this same command every run)
bwa mem -t 2 -K 10000000 -o out.sam ref.fa reads.fq 2>&1 || exit
exec sha256sum out.sam
"""


def bwa_inputs(bp: int, reads: int) -> Callable[[Path], None]:
    """Writes ref.fa (a random genome of bp bases, seeded), reads.fq (reads single-end
    150 bp reads of it, two substitutions each, half reverse-complemented) and bwa's
    index of ref.fa into a directory, once: kept while inputs.txt names the same sizes.
    The genome and its index (about 100 s to build) are kept when only the number of
    reads changed: the reads come after the genome in one seeded stream."""
    length = 150

    def make(d: Path) -> None:
        stamp = d / "inputs.txt"
        genome_part = f"genome {bp} "
        want = f"{genome_part}reads {reads} length {length} seed 7\n"
        had = stamp.read_text() if stamp.exists() else ""
        indexed = (d / "ref.fa.sa").exists()
        if had == want and indexed:
            return
        keep_index = indexed and had.startswith(genome_part) and had.endswith(
            f" length {length} seed 7\n")
        stamp.unlink(missing_ok=True)
        say(f"bwa-mem: writing {reads} reads" if keep_index else
            f"bwa-mem: writing a {bp / 1e6:.0f} Mbp genome and {reads} reads")
        rng = random.Random(7)
        genome = rng.randbytes(bp).translate(bytes(b"ACGT"[b & 3] for b in range(256)))
        if not keep_index:
            with open(d / "ref.fa", "wb") as f:
                f.write(b">chr1\n")
                f.writelines(genome[i:i + 80] + b"\n" for i in range(0, bp, 80))
        comp = bytes.maketrans(b"ACGT", b"TGCA")
        with open(d / "reads.fq", "wb") as f:
            for r in range(reads):
                at = rng.randrange(bp - length)
                s = bytearray(genome[at:at + length])
                for k in rng.sample(range(length), 2):
                    s[k] = b"ACGT"[(b"ACGT".index(s[k]) + rng.randrange(1, 4)) % 4]
                seq = bytes(s) if rng.random() < 0.5 else bytes(s).translate(comp)[::-1]
                f.write(b"@r%d\n%s\n+\n%s\n" % (r, seq, b"I" * length))
        if not keep_index:
            say("bwa-mem: bwa index ref.fa (once; about 100 s for 64 Mbp here)")
            r = subprocess.run(["bwa", "index", "ref.fa"], cwd=d, capture_output=True,
                               text=True)
            if r.returncode != 0:
                sys.exit(f"{NAME}: bwa-mem: bwa index failed (rc {r.returncode}): "
                         f"{r.stderr.strip()[-300:]}")
        stamp.write_text(want)

    return make


def hpcc_input(n: int) -> str:
    """hpccinf.txt: Debian's example with problem size n on a 1 x 2 process grid."""
    lines = Path("/usr/share/doc/hpcc/examples/_hpccinf.txt").read_text().splitlines()
    lines[5] = f"{n:<13d}Ns"
    lines[10] = "1            Ps"
    lines[11] = "2            Qs"
    return "\n".join(lines) + "\n"


@dataclass
class App:
    name: str
    cmd: list[str]
    foms: list[str]                   # regexes, group 1 a figure of merit; several: their
                                      # geometric mean (hmtune compare --fom, repeated)
    higher_is_better: bool
    checks: list[str]                 # regexes (multiline) whose matches must not change
    files: dict[str, str] = field(default_factory=dict)
    mpirun: str = ""
    links: dict[str, str] = field(default_factory=dict)
    setup: Callable[[Path], None] | None = None     # makes input files in the work dir
    scripts: tuple[str, ...] = ()                   # files of `files` made executable


def apps(quick: bool) -> list[App]:
    lj_n, eam_n, hpcc_n = (16, 14, 2000) if quick else (26, 22, 3000)
    # BWA-MEM: 25,000 reads, about 2 s a run. Its run-to-run noise here does not shrink
    # with the run's length (30 interleaved rounds, 2026-11-28: two runs of one variant
    # in a round differ by 7.9 % (sd of the log ratio) at 25,000 reads, 2.0 s, and 7.5 %
    # at 100,000, 7.6 s), so short runs buy rounds: about 25 rounds for +-3 %, which
    # 20 minutes hold at 2 s and not at 7.6 s (15 rounds)
    bwa_bp, bwa_reads = (8_000_000, 10_000) if quick else (64_000_000, 25_000)
    return [
        App("lammps-lj", ["lmp", "-in", "in.lj", "-var", "n", str(lj_n), "-log", "none"],
            [r"Loop time of ([0-9.]+)"], False, [THERMO], {"in.lj": LJ}),
        App("lammps-eam", ["lmp", "-in", "in.eam", "-var", "n", str(eam_n), "-log", "none"],
            [r"Loop time of ([0-9.]+)"], False, [THERMO], {"in.eam": EAM}),
        # RandomAccess, the kernel 2 MiB pages speed up, as the geometric mean of HPCC's
        # two MPIRandomAccess results (both generators; the table spread over the 2
        # ranks): the steadiest here. 10 bare runs (2026-11-26): 4.7 % between runs
        # against 11 % for the mean of all six RandomAccess results (Single and Star
        # 11-22 % each); 6 interleaved pairs (2026-11-27): the pair's ratio 5.8 %
        # against 13.9 % for the six
        App("hpcc", ["hpcc"], [rf"MPIRandomAccess{g}_GUPs=([0-9.]+)" for g in ("", "_LCG")],
            True,
            [r"^Success=\d+", r"^Failure=\d+", r"FAILED"],
            {"hpccinf.txt": hpcc_input(hpcc_n)},
            mpirun="mpirun --allow-run-as-root -np 2",
            links={"hpccoutf.txt": "/dev/stdout"}),     # hpcc's results on stdout
        App("hotwindow", [str(ROOT / "build" / "bench" / "hotwindow"),
                          *(["-n", "30"] if quick else [])],
            [r"kernel_time_s=([0-9.]+)"], False, [r"^checksum=\d+"]),
        # Ours, the cases whose gains issue 15 says must be kept: the demo's program at
        # the demo's size, and a hash join whose table allocation order leaves out
        App("latency", [str(ROOT / "build" / "examples" / "latency"),
                        *(["-q"] if quick else ["-s", "512", "-n", "2"])],
            [r"kernel_time_s=([0-9.]+)"], False, [r"checksum=\d+"]),
        App("hashjoin", [str(ROOT / "build" / "examples" / "hashjoin"),
                         *(["-s", "64", "-n", "10"] if quick else [])],
            [r"kernel_time_s=([0-9.]+)"], False, [r"checksum=\d+"]),
        App("nwchem-scf", ["nwchem", "scf.nw"], [r"Time for solution =\s+([0-9.]+)s"], False,
            [r"Total SCF energy =\s+\S+"], {"scf.nw": NWCHEM}),
        App("bwa-mem", ["./run-bwa.sh"], [r"\[main\] Real time: ([0-9.]+) sec"], False,
            [r"^[0-9a-f]{64}  out\.sam$", r"^\[M::mem_process_seqs\] Processed \d+ reads"],
            {"run-bwa.sh": BWA}, setup=bwa_inputs(bwa_bp, bwa_reads),
            scripts=("run-bwa.sh",)),
    ]


def say(msg: str) -> None:
    print(f"{NAME}: {msg}", file=sys.stderr, flush=True)


def prepare(app: App) -> Path:
    d = WORK / app.name
    d.mkdir(parents=True, exist_ok=True)
    for name, text in app.files.items():
        (d / name).write_text(text)
    for name, target in app.links.items():
        p = d / name
        if p.is_symlink() or p.exists():
            p.unlink()
        p.symlink_to(target)
    for name in app.scripts:
        (d / name).chmod(0o755)
    if app.setup is not None:
        app.setup(d)
    return d


def command(app: App) -> list[str]:
    return [*app.mpirun.split(), *app.cmd] if app.mpirun else list(app.cmd)


def checks_of(app: App, text: str) -> list[str]:
    return [m.group(0).strip() for rx in app.checks
            for m in re.finditer(rx, text, re.MULTILINE)]


def fom_of(rxs: list[str], text: str) -> float | None:
    """The figure of merit as hmtune compare computes it, or None if one is missing."""
    got = measure.fom_of([re.compile(rx, re.MULTILINE) for rx in rxs], text)
    return None if isinstance(got, str) else got


def bare(app: App, d: Path) -> tuple[float, str]:
    t0 = time.monotonic()
    r = subprocess.run(command(app), cwd=d, capture_output=True, text=True, timeout=3600)
    wall = time.monotonic() - t0
    fom = fom_of(app.foms, r.stdout)
    if r.returncode != 0 or fom is None:
        sys.exit(f"{NAME}: {app.name}: the bare run failed (rc {r.returncode}, FOM "
                 f"{'missing' if fom is None else 'found'}); "
                 f"stderr: {r.stderr.strip()[-300:]}")
    return wall, r.stdout


def trace_overhead(app: App, d: Path, rounds: int) -> dict:
    """Interleaved bare and traced runs (the last trace is kept for analyze)."""
    plain: list[float] = []
    traced: list[float] = []
    tdir = d / "stage"
    for i in range(rounds):
        order = ("bare", "trace") if i % 2 == 0 else ("trace", "bare")
        for what in order:
            cmd = command(app) if what == "bare" else [
                str(HMTUNE), "trace", "-q", "-o", str(tdir),
                *(["--mpirun", app.mpirun] if app.mpirun else []), "--", *app.cmd]
            t0 = time.monotonic()
            r = subprocess.run(cmd, cwd=d, capture_output=True, text=True, timeout=3600)
            wall = time.monotonic() - t0
            if r.returncode != 0:
                sys.exit(f"{NAME}: {app.name}: {what} run failed (rc {r.returncode}): "
                         f"{r.stderr.strip()[-300:]}")
            (plain if what == "bare" else traced).append(wall)
        say(f"{app.name}: trace overhead round {i + 1}/{rounds}: bare {plain[-1]:.1f} s, "
            f"traced {traced[-1]:.1f} s")
    # the statistics of hmtune compare (hmtune/workflows/stats.py): the traced run's speedup
    # over the bare one, as a slowdown
    est = stats.estimate([{"bare": a, "trace": b} for a, b in zip(plain, traced, strict=True)],
                         ["bare", "trace"], "bare", None, higher=False)["trace"]
    lo = 1.0 / est.hi if est.hi else None
    hi = 1.0 / est.lo if est.lo else None
    summary = json.loads((tdir / "trace.summary.json").read_text())
    return {"overhead": 1.0 / est.speedup, "overhead_lo": lo, "overhead_hi": hi,
            "rounds": rounds,
            "samples": summary.get("samples", {}), "stage": tdir}


def analyze(app: App, stage: Path) -> dict:
    r = subprocess.run([str(HMTUNE), "analyze", str(stage)], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{NAME}: {app.name}: hmtune analyze failed: {r.stderr.strip()[-300:]}")
    rows = site_rows(stage / "sites.csv")
    # allocation sites, as before sites.csv v2 listed static variables too
    ids = {r["site_id"] for r in rows if r.get("kind", "heap") == "heap"}
    # one process's footprint, statics included: the sum of the sites' peaks (compare's
    # --fraction), and what is live at once (the capacities here are fractions of it)
    return {"sites": len(ids), "footprint": footprint_of(rows),
            "at_once": at_once(stage, rows)}


def at_once(stage: Path, rows: list[dict[str, str]]) -> int:
    """One process's heap live at once at its most (allocs.csv, the largest rank), plus
    its static variables: what every site in the fast tier needs. Without allocs.csv,
    the sum of the sites' peaks."""
    from hmtune.advisor.arena_fit import blocks_footprint
    from hmtune.analyze.sites_io import SitesFormatError, read_allocs

    statics = sum(int(r["peak_live_bytes"]) for r in rows if r.get("kind") == "static")
    try:
        allocs = read_allocs(stage / "allocs.csv")
    except SitesFormatError:
        return footprint_of(rows)
    return blocks_footprint(allocs, "default") + statics


def compare(app: App, d: Path, stage: Path, budget: str, base: int) -> Path:
    """One hmtune compare at every capacity of FRACTIONS (of base bytes): their variants
    in the same rounds as one all-slow and one all-fast."""
    out = d / "compared"
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(stage, out, ignore=shutil.ignore_patterns("raw", "compare*", "stale"))
    mems = ",".join(str(max(1, int(base * frac))) for frac in FRACTIONS)
    cmd = [str(HMTUNE), "compare", "-o", str(out), "--mem", mems,
           "--strategies", ",".join(ADVISOR), *(x for rx in app.foms for x in ("--fom", rx)),
           "--budget", budget,
           "--reserve-hugepages",
           *(["--higher-is-better"] if app.higher_is_better else []),
           *(["--mpirun", app.mpirun] if app.mpirun else []), "--", *app.cmd]
    say(f"{app.name}: compare at {' and '.join(f'{f:.0%}' for f in FRACTIONS)} of the "
        f"footprint (budget {budget})")
    r = subprocess.run(cmd, cwd=d, text=True, stdout=subprocess.PIPE, timeout=7200)
    (out / "compare.stdout.txt").write_text(r.stdout)
    if r.returncode != 0:
        sys.exit(f"{NAME}: {app.name}: hmtune compare failed (rc {r.returncode}); see "
                 f"{out}/compare")
    return out / "compare"


def correctness(app: App, cdir: Path, want: list[str]) -> dict[Path, bool]:
    """Every run's log (VARIANT/run.R.log, relative to cdir): whether its correctness
    lines equal the bare run's."""
    return {log.relative_to(cdir): checks_of(app, log.read_text(errors="replace")) == want
            for log in sorted(cdir.glob("*/run.*.log"))}


def tally(ok: dict[Path, bool], variants: set[str] | None = None) -> tuple[int, list[str]]:
    """Runs checked (of these variants, default all) and those whose correctness lines
    differ from the bare run's."""
    mine = {log: good for log, good in ok.items()
            if variants is None or log.parent.name in variants}
    return len(mine), [str(log) for log, good in mine.items() if not good]


def read_summary(cdir: Path) -> list[dict[str, str]]:
    with open(cdir / "summary.csv", newline="") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", metavar="NAMES", help="comma-separated codes to run")
    ap.add_argument("--quick", action="store_true", help="small inputs (a smoke test)")
    ap.add_argument("--budget", default="20m",
                    help="compare's time budget per code (both capacities)")
    ap.add_argument("--trace-rounds", type=int, default=3)
    ap.add_argument("--commit", default="", help="with --render: the commit measured")
    ap.add_argument("--render", action="store_true",
                    help="only write the table and plot again from bench/work/")
    args = ap.parse_args()
    require(NAME, HMTUNE)
    codes = apps(args.quick)
    if args.only:
        names = set(args.only.split(","))
        unknown = names - {a.name for a in codes}
        if unknown:
            sys.exit(f"{NAME}: unknown code(s) {', '.join(sorted(unknown))} (have "
                     f"{', '.join(a.name for a in codes)})")
        codes = [a for a in codes if a.name in names]
    if args.render:
        stem = write_results([load_result(app) for app in codes], args)
        say(f"results: {suffixed(stem, '.md')} and .png")
        return 0
    results = []
    for app in codes:
        d = prepare(app)
        wall, out = bare(app, d)
        want = checks_of(app, out)
        say(f"{app.name}: bare run {wall:.1f} s, FOM {fom_of(app.foms, out)}, "
            f"{len(want)} correctness line(s)")
        tr = trace_overhead(app, d, args.trace_rounds)
        an = analyze(app, tr["stage"])
        saved = {"bare_s": wall, "checks": want, "analyze": an,
                 "trace": {k: v for k, v in tr.items() if k != "stage"}}
        (d / "bench.json").write_text(json.dumps(saved, indent=1) + "\n")
        compare(app, d, tr["stage"], args.budget, an["at_once"])
        results.append(load_result(app))
    stem = write_results(results, args)
    say(f"results: {suffixed(stem, '.md')} and .png")
    return 0


def load_result(app: App) -> dict:
    """One code's figures from bench/work/CODE/ (bench.json, the compare directories)."""
    d = WORK / app.name
    try:
        saved = json.loads((d / "bench.json").read_text())
    except (OSError, ValueError):
        sys.exit(f"{NAME}: {app.name}: no measurements in {d}: run make bench-apps first")
    cdir = d / "compared" / "compare"
    if not (cdir / "summary.csv").exists():
        sys.exit(f"{NAME}: {app.name}: no comparison in {cdir}: run make bench-apps first")
    ok = correctness(app, cdir, saved["checks"])
    n, bad = tally(ok)
    res = {"app": app, "command": command(app), "bare_s": saved["bare_s"],
           "analyze": saved["analyze"], "trace": saved["trace"], "compares": {},
           "checked": n, "bad": bad}
    result = json.loads((cdir / "result.json").read_text())
    rows = read_summary(cdir)
    shared = {"all-slow", "all-fast"}
    for frac, cap in zip(FRACTIONS, result.get("capacities") or [], strict=False):
        tag = cap["tag"]
        mine = {v: v.removesuffix(tag) for v in cap["variants"]} | {v: v for v in shared}
        n, bad = tally(ok, set(mine))
        res["compares"][frac] = {
            "dir": cdir, "checked": n, "bad": bad, "mem": cap["mem"],
            "rows": [{**r, "variant": mine[r["variant"]]} for r in rows
                     if r["variant"] in mine],
            "result": {**result, "predicted": {
                mine[k]: v for k, v in (result.get("predicted") or {}).items() if k in mine}}}
    return res


if __name__ == "__main__":
    sys.exit(main())
