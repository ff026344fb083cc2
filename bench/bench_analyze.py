"""`make bench-analyze`: what `hmtune analyze` costs on a 10 M-record trace, CPU and
memory, against the targets (>= 3 M records per second of CPU for the whole command,
Python included; <= 300 MB peak RSS, bounded by live blocks and sites, not by the
trace's length).

Generates the traces with hmtune-gentrace in a temporary directory (deleted after),
proves the scanner's answers with `hmtune-gentrace --check`, then runs the scanner
alone and the whole `bin/hmtune analyze` several times (medians; this VM is noisy).
CPU and peak RSS come from rsswrap (wait4 of the command: the scanner is a child of
the Python process, so both count, and the RSS is the larger of the two). Two
workloads: the generator's default (mostly samples) and --alloc-heavy (mostly
malloc/free: one block per ~6 records); the second also at a tenth of the length, to
show the peak RSS does not grow with the trace. A third, the default with a counter
reading before each sample (--counters: what counters.csv costs), is measured against
the same targets."""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import BUILD, HMTUNE, RSSWRAP, require

NAME = "bench-analyze"

GENTRACE = BUILD / "bin" / "hmtune-gentrace"
PRVSCAN = BUILD / "bin" / "hmtune-prvscan"

TARGET_RATE = 3e6            # records per second of CPU, whole command
TARGET_RSS_MB = 300
PARAMEDIR = ("Paramedir (quoted reference, not runnable here): ~1.3 M records/s of CPU, "
             "460 MB RSS on 10 M records")


def run(cmd: list[str]) -> tuple[float, float, float]:
    """Run under rsswrap; return (CPU s, wall s, peak RSS MB)."""
    t0 = time.monotonic()
    p = subprocess.run([str(RSSWRAP), *cmd], capture_output=True, text=True)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit(f"bench-analyze: {' '.join(cmd)} failed ({p.returncode}): {p.stderr.strip()}")
    m = re.findall(r"maxrss_kib=(\d+) cpu_s=([0-9.]+)", p.stderr)
    if not m:
        sys.exit(f"bench-analyze: no rsswrap line in {p.stderr!r}")
    rss_kib, cpu = m[-1]
    return float(cpu), wall, int(rss_kib) / 1024


def medians(cmd: list[str], runs: int) -> tuple[float, float, float]:
    """Median CPU and wall time over `runs`, and the largest peak RSS."""
    results = [run(cmd) for _ in range(runs)]
    return (statistics.median(r[0] for r in results), statistics.median(r[1] for r in results),
            max(r[2] for r in results))


def generate(tmp: Path, name: str, records: int, extra: list[str]) -> tuple[Path, dict]:
    """A trace, checked: the scanner's outputs against the generator's answers."""
    prv = tmp / f"{name}.prv"
    gen = [str(GENTRACE), str(records), str(prv), "--tasks", "4", "--threads", "2", *extra]
    subprocess.run(gen, check=True)
    out = tmp / f"{name}-check"
    subprocess.run([str(PRVSCAN), str(prv), "-o", str(out)], check=True)
    check = subprocess.run([str(GENTRACE), "--check", str(prv), str(out)], capture_output=True,
                           text=True)
    if check.returncode == 0:
        print("  gentrace --check: OK (sites.tsv, allocs.csv, scan.json match the generator's "
              "answers)")
    else:
        sys.exit(f"bench-analyze: the scanner's answers do not match:\n{check.stdout}")
    meta = json.loads((out / "scan.json").read_text())
    shutil.rmtree(out)
    return prv, meta


def remove_trace(prv: Path) -> None:
    for p in prv.parent.glob(prv.stem + ".*"):
        p.unlink()


def case(tmp: Path, name: str, records: int, extra: list[str], runs: int,
         targets: bool = True) -> tuple[bool, float]:
    """Benchmark one workload; print its figures (and PASS/FAIL against the targets when
    `targets`); return (targets met, whole-run peak RSS MB)."""
    print(f"{name}: {records / 1e6:g} M records requested" + (f" ({' '.join(extra)})" if extra
                                                               else ""))
    prv, meta = generate(tmp, re.sub(r"\W+", "-", name), records, extra)
    n = meta["records"]
    size_mb = prv.stat().st_size / 1e6
    print(f"  trace: {n} records, {size_mb:.0f} MB, {meta['alloc_rows']} blocks, "
          f"{meta['samples']} samples, peak {meta['peak_live_blocks']} live blocks")
    cpu, wall, rss = medians([str(PRVSCAN), str(prv), "-o", str(tmp / "scan")], runs)
    print(f"  scanner alone     : {n / cpu / 1e6:5.2f} M records/s CPU ({cpu:.2f} s), "
          f"{n / wall / 1e6:5.2f} M records/s wall, peak RSS {rss:.0f} MB")
    cmd = [str(HMTUNE), "analyze", str(prv), "-o", str(tmp / "out"), "--top", "0"]
    cpu, wall, rss = medians(cmd, runs)
    print(f"  hmtune analyze    : {n / cpu / 1e6:5.2f} M records/s CPU ({cpu:.2f} s), "
          f"{n / wall / 1e6:5.2f} M records/s wall, peak RSS {rss:.0f} MB")
    ok_rate, ok_rss = n / cpu >= TARGET_RATE, rss <= TARGET_RSS_MB
    if not targets:
        ok_rate = ok_rss = True
    else:
        print(f"  {'PASS' if ok_rate else 'FAIL'} CPU rate >= {TARGET_RATE / 1e6:g} M records/s "
              f"({n / cpu / 1e6:.2f})")
        print(f"  {'PASS' if ok_rss else 'FAIL'} peak RSS <= {TARGET_RSS_MB} MB ({rss:.0f})")
    remove_trace(prv)
    shutil.rmtree(tmp / "out", ignore_errors=True)
    shutil.rmtree(tmp / "scan", ignore_errors=True)
    return ok_rate and ok_rss, rss


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=10_000_000, help="records per trace")
    ap.add_argument("--runs", type=int, default=3, help="runs per figure (medians)")
    ap.add_argument("--dir", default=None, help="where to write the traces (default: a "
                    "temporary directory; ~1 GB free needed for 10 M records)")
    args = ap.parse_args()
    require(NAME, GENTRACE, PRVSCAN, RSSWRAP, HMTUNE)
    tmp = Path(tempfile.mkdtemp(prefix="hmtune-bench-analyze-", dir=args.dir))
    try:
        print(f"# bench-analyze: medians of {args.runs} runs; CPU = user + sys of the "
              "whole command (Python startup included)")
        ok, _ = case(tmp, "default", args.records, [], args.runs)
        ok_cnt, _ = case(tmp, "default with counters", args.records, ["--counters"],
                         args.runs)
        ok_heavy, rss_long = case(tmp, "alloc-heavy", args.records, ["--alloc-heavy"], args.runs)
        _, rss_short = case(tmp, "alloc-heavy, a tenth as long", args.records // 10,
                            ["--alloc-heavy"], args.runs, targets=False)
        flat = rss_long <= rss_short * 1.25 + 8
        print(f"{'PASS' if flat else 'FAIL'} memory does not grow with the trace: peak RSS "
              f"{rss_short:.0f} MB at {args.records // 10 / 1e6:g} M records, {rss_long:.0f} MB "
              f"at {args.records / 1e6:g} M (alloc-heavy)")
        print(PARAMEDIR)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0 if ok and ok_cnt and ok_heavy and flat else 1


if __name__ == "__main__":
    sys.exit(main())
