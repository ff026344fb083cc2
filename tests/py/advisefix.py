"""Test helpers for the advisor: hand-built sites.csv/allocs.csv files (with a case
whose best placement is unique) and an in-process `hmtune advise`."""

from __future__ import annotations

import csv
import itertools
from pathlib import Path

import pytest

from hmtune.analyze.sites_io import ALLOCS_COLUMNS, KIND_COLUMN, SITES_COLUMNS, version_line
from hmtune.core.units import MIB

APP = "/opt/app/bin/app"
LIBC = "/lib/x86_64-linux-gnu/libc.so.6"


def site(site_id: int, peak: int, weight: float, raw: str | None = None, *,
         max_size: int | None = None, loads: int | None = None, stores: int = 0,
         callstack: str | None = None) -> dict:
    """One sites.csv row; raw=None gives a two-frame chain unique to the site."""
    raw = f"{APP}+0x{0x1000 + site_id * 16:x} > {LIBC}+0x2724a" if raw is None else raw
    samples = int(weight) if loads is None else loads + stores
    return {"site_id": site_id,
            "callstack": callstack or f"/src/app.c:{100 + site_id} > ./csu/libc-start.c:58",
            "callstack_raw": raw, "n_allocs": 1, "max_size": max_size or peak,
            "peak_live_bytes": peak, "total_bytes": peak, "first_alloc_ns": 10,
            "last_free_ns": 1000, "live_ns": 990, "samples": samples,
            "loads": samples - stores if loads is None else loads, "stores": stores,
            "misses": 0, "weight": weight, "share": 0.0, "density": 0.0}


def static_site(site_id: int, size: int, weight: float, offset: int | None = None, *,
                module: str = APP, symbol: str | None = None) -> dict:
    """A sites.csv row of a static variable (kind static, sites.csv v2): its size, one
    object live for the whole run, callstack_raw `module+0xOFF [static SIZE]`."""
    offset = 0x4000 + site_id * 0x10000 if offset is None else offset
    name = symbol or f"var{site_id}"
    return {"site_id": site_id, "callstack": f"{name} [static, {Path(module).name}]",
            "callstack_raw": f"{module}+0x{offset:x} [static {size}]" if size else "",
            "n_allocs": 1, "max_size": size, "peak_live_bytes": size, "total_bytes": size,
            "first_alloc_ns": 0, "last_free_ns": 1000, "live_ns": 1000,
            "samples": int(weight), "loads": int(weight), "stores": 0, "misses": 0,
            "weight": weight, "share": 0.0, "density": 0.0, KIND_COLUMN: "static"}


# The standard case: 80 MiB of fast memory holds sites 3 and 4 (weight 800 of 1500).
STANDARD = [site(3, 64 * MIB, 500.0, f"{APP}+0x1237 > {LIBC}+0x2724a > {APP}+0x15c1"),
            site(4, 16 * MIB, 300.0, max_size=8 * MIB),
            site(5, 40 * MIB, 200.0),
            site(6, 8 * MIB, 50.0),
            site(7, 1 * MIB, 0.0),
            site(8, 4 * MIB, 100.0, ""),                      # no raw chain: unplaceable
            ]
STANDARD_TOTAL = 1500.0
STANDARD_ALLOCS = [(3, 0, 64 * MIB, 10, 900), (4, 0, 8 * MIB, 20, 800),
                   (4, 0, 8 * MIB, 30, 700), (5, 0, 40 * MIB, 40, -1),
                   (6, 0, 8 * MIB, 50, 600), (7, 0, 1 * MIB, 60, 500), (8, 0, 4 * MIB, 70, 400)]


# A weight of 1 in the rows above stands for 1 ms of sampled CPU time: sites.csv says
# sampler "soft", whose weights are ns, and the advisor weighs them against ns costs
# (page faults, each placed allocation's alloc_cost_ns).
MS = 1e6


def write_sites(path: Path, rows: list[dict], total: float | None = None,
                first_line: str | None = None, label_form: str = "module+0xoffset") -> Path:
    """sites.csv with `share` = weight / total (total: the sum of the weights); weights
    are written in ns (MS per unit)."""
    total = sum(r["weight"] for r in rows) if total is None else total
    rows = [{**r, "weight": r["weight"] * MS} if isinstance(r["weight"], float | int) else r
            for r in rows]
    total = total * MS
    kinds = any(KIND_COLUMN in r for r in rows)      # v2: statics among the rows
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        fh.write((first_line if first_line is not None else
                  version_line("sites", 2 if kinds else 1, trace="t.prv", sampler="soft",
                               label_form=label_form)) + "\n")
        cols = SITES_COLUMNS + (["rank"] if rows and "rank" in rows[0] else []) + \
            ([KIND_COLUMN] if kinds else [])
        cols += [c for c in (rows[0] if rows else {}) if c not in cols]   # newer columns
        out = csv.DictWriter(fh, fieldnames=cols, lineterminator="\n")
        out.writeheader()
        for r in rows:
            r = {KIND_COLUMN: "heap", **r} if kinds else dict(r)
            if isinstance(r["weight"], float | int) and total:
                r["share"] = r["weight"] / total
            out.writerow(r)
    return path


def write_allocs(path: Path, rows: list[tuple]) -> Path:
    with path.open("w", newline="") as fh:
        fh.write(version_line("allocs", 1, trace="t.prv") + "\n")
        out = csv.writer(fh, lineterminator="\n")
        out.writerow(ALLOCS_COLUMNS)
        for n, (sid, rank, size, t0, t1) in enumerate(rows):
            out.writerow([sid, rank, 1, f"0x{0x7f0000000000 + (n << 28):x}", size, t0, t1])
    return path


def standard_dir(tmp: Path, allocs: bool = True) -> Path:
    d = tmp / "stage"
    write_sites(d / "sites.csv", STANDARD, STANDARD_TOTAL)
    if allocs:
        write_allocs(d / "allocs.csv", STANDARD_ALLOCS)
    return d


def best_subset(sizes: list[int], weights: list[float], cap: int) -> set[int]:
    """Indices of the heaviest subset that fits (brute force, unique optimum assumed)."""
    best: tuple[float, tuple[int, ...]] = (-1.0, ())
    for k in range(len(sizes) + 1):
        for combo in itertools.combinations(range(len(sizes)), k):
            if sum(sizes[i] for i in combo) <= cap:
                w = sum(weights[i] for i in combo)
                if w > best[0] + 1e-9:
                    best = (w, combo)
    return set(best[1])


TWO_TIER = Path(__file__).resolve().parents[1] / "machines" / "two-tier-memkind.toml"


def advise(capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str, str]:
    """Run `hmtune advise ARGS` in this process; (exit status, stdout, stderr). `--mem`
    without `--machine` gets tests/machines/two-tier-memkind.toml, so that the tiers do
    not depend on the host the tests run on."""
    from hmtune.workflows.cli import main

    if "--mem" in args and "--machine" not in args:
        args = ("--machine", str(TWO_TIER), *args)
    try:
        rc = main(["advise", *args])
    except SystemExit as e:                 # argparse usage errors
        rc = int(e.code or 0)
    out = capsys.readouterr()
    return rc, out.out, out.err
