"""make bench-kinds: the access kinds on Debian's HPC Challenge (issue 43): hpcc traced
with the software sampler on 2 MPI ranks (bench-apps' input, N = 3000), analyzed, and
each STREAM array and RandomAccess table found by its size as hpcc itself prints it
(`Array size = N`: STREAM's three vectors of N doubles; `Main table size = 2^k`: the
RandomAccess tables of 2^k words). Prints one row per site of those sizes (samples,
weight by kind) and, per object class, the weight-weighted share of its expected kind;
exits 1 when STREAM's arrays are not mostly streaming or RandomAccess's tables not
mostly scattered, or when under 70 % of the samples that may wait on memory (all but
compute) carry an address (look-ahead ones included). Needs the hpcc package
(bench/apps/deps.sh installs it)."""

from __future__ import annotations

import csv
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_apps import hpcc_input
from benchlib import HMTUNE, LIB, require

from hmtune.analyze.sites_io import memory_addressed, split_from_meta
from hmtune.core.sitesfile import VERSIONS, parse_version_line

NAME = "bench-kinds"
MOSTLY = 0.8            # share of an object class's weight that must be of its kind
ADDRESSED = 0.7         # share of the samples that may wait on memory with an address
KINDS = ("weight_streaming", "weight_scattered", "weight_sync")


def sizes(out: str) -> tuple[int, int]:
    """(STREAM's array bytes, RandomAccess's table bytes per process) from hpcc's output."""
    arr = re.search(r"^Array size = (\d+)", out, re.M)
    tab = re.search(r"^Main table size\s*= 2\^(\d+)", out, re.M)
    if not arr or not tab:
        sys.exit(f"{NAME}: hpcc's output has no STREAM array size or RandomAccess table size")
    return int(arr.group(1)) * 8, (1 << int(tab.group(1))) * 8


def rows(sites_csv: Path) -> list[dict[str, str]]:
    with sites_csv.open(newline="") as f:
        f.readline()
        return list(csv.DictReader(f))


def first_line(sites_csv: Path) -> dict[str, str]:
    with sites_csv.open() as f:
        return parse_version_line(f.readline(), "sites", VERSIONS["sites"], sites_csv)


def addressed(meta: dict[str, str]) -> tuple[int, int, int]:
    """(samples that may wait on memory, those with an address from the split, those
    with one from the look ahead) from sites.csv's first line, as analyze counts them."""
    split = split_from_meta(meta)
    got = memory_addressed(split, int(meta["samples_compute"]),
                           int(meta.get("samples_lookahead", 0))) \
        if split is not None and "samples_compute" in meta else None
    if got is None:
        sys.exit(f"{NAME}: sites.csv's first line has no sample split or compute count")
    return got


def main() -> int:
    require(NAME, HMTUNE, LIB)
    if not shutil.which("hpcc") or not shutil.which("mpirun"):
        sys.exit(f"{NAME}: hpcc or mpirun missing: bash bench/apps/deps.sh installs them")
    with tempfile.TemporaryDirectory(prefix="hmtune-kinds-") as tmp:
        work = Path(tmp)
        (work / "hpccinf.txt").write_text(hpcc_input(3000))
        (work / "hpccoutf.txt").symlink_to("/dev/stdout")
        out = work / "out"
        print(f"{NAME}: tracing hpcc (2 ranks, about 40 s)", file=sys.stderr, flush=True)
        r = subprocess.run([str(HMTUNE), "trace", "-q", "--sampler", "soft", "-o", str(out),
                            "--", "mpirun", "--allow-run-as-root", "-np", "2", "hpcc"],
                           cwd=work, capture_output=True, text=True, timeout=1800)
        if r.returncode != 0:
            sys.exit(f"{NAME}: hmtune trace failed (rc {r.returncode}): {r.stderr[-400:]}")
        stream_b, table_b = sizes(r.stdout)
        a = subprocess.run([str(HMTUNE), "analyze", str(out)], capture_output=True, text=True,
                           timeout=1800)
        if a.returncode != 0:
            sys.exit(f"{NAME}: hmtune analyze failed: {a.stderr[-400:]}")
        table = rows(out / "sites.csv")
        meta = first_line(out / "sites.csv")
    classes = {"STREAM array": (stream_b, "weight_streaming"),
               "RandomAccess table": (table_b, "weight_scattered")}
    print(f"{'object':<20} {'site':>6} {'bytes':>10} {'samples':>8} {'streaming':>10} "
          f"{'scattered':>10} {'sync':>6}")
    ok = True
    for name, (size, want) in classes.items():
        got = [s for s in table if int(s["max_size"]) == size and s["kind"] == "heap"]
        total = sum(float(s["weight"]) for s in got)
        for s in got:
            w = float(s["weight"]) or 1.0
            print(f"{name:<20} {s['site_id']:>6} {size:>10} {s['samples']:>8} "
                  + " ".join(f"{100 * float(s[k]) / w:>9.0f}%" for k in KINDS[:2])
                  + f" {100 * float(s['weight_sync']) / w:>5.0f}%")
        share = sum(float(s[want]) for s in got) / total if total > 0 else 0.0
        verdict = "ok" if got and share >= MOSTLY else "WRONG"
        ok &= verdict == "ok"
        print(f"{name}s: {len(got)} site(s), {100 * share:.1f} % of their weight "
              f"{want.removeprefix('weight_')} (at least {100 * MOSTLY:.0f} % wanted): {verdict}")
    memory, direct, ahead = addressed(meta)
    share = (direct + ahead) / memory
    verdict = "ok" if share >= ADDRESSED else "WRONG"
    ok &= verdict == "ok"
    print(f"samples that may wait on memory: {memory}, {100 * share:.1f} % with an address "
          f"({direct} direct or producer load, {ahead} look ahead; at least "
          f"{100 * ADDRESSED:.0f} % wanted): {verdict}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
