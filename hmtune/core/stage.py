"""A stage directory (`hmtune-out/APP/`, DESIGN.md §7): the names of the files the
stages write there, in one place, and the one merge of sites.csv's per-rank rows.

    trace.prv (.pcf, .row)                       hmtune trace
    sites.csv, allocs.csv, profile.csv,          hmtune analyze
    counters.csv (a trace with counters)
    placement.txt, report.txt, capacity_curve.*  hmtune advise
    calibration.json                             hmtune compare (advise reads it)
    compare/, explore/, report/                  hmtune compare, explore, report
    stale/                                       an earlier trace's outputs, moved aside

`hmtune analyze --per-rank` writes one row per (site, rank); every reader of the sites
takes them through `site_rows`, which folds them into one row per site the way analyze
folds ranks (RANK_SUM, RANK_MAX, RANK_MIN; a static is one object per process). The
advisor's pandas reader (hmtune.advisor.inputs) folds its checked table by the same
columns (`rank_fold`). csv only, no pandas: `hmtune run` reads the sites at start-up.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from hmtune.core.sitesfile import SitesFormatError, iter_rows, parse_version_line

TRACE = "trace.prv"
SITES = "sites.csv"
ALLOCS = "allocs.csv"
PROFILE = "profile.csv"
COUNTERS = "counters.csv"
PLACEMENT = "placement.txt"
REPORT = "report.txt"
CURVE = "capacity_curve.csv"
CURVE_PNG = "capacity_curve.png"
CALIBRATION = "calibration.json"
COMPARE = "compare"
EXPLORE = "explore"
REPORT_DIR = "report"
STALE = "stale"


class _File:
    """A Stage attribute: the path of one name in the stage directory."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, stage: Stage, owner: type | None = None) -> Path:
        return stage.dir / self.name


@dataclass(frozen=True)
class Stage:
    """The files of one stage directory."""

    dir: Path

    trace = _File(TRACE)
    sites = _File(SITES)
    allocs = _File(ALLOCS)
    profile = _File(PROFILE)
    counters = _File(COUNTERS)
    placement = _File(PLACEMENT)
    calibration = _File(CALIBRATION)
    compare = _File(COMPARE)
    explore = _File(EXPLORE)
    stale = _File(STALE)

    def site_rows(self) -> list[dict[str, str]]:
        """sites.csv's rows, one per site (site_rows)."""
        return site_rows(self.sites)


def beside_sites(sites_csv: str | Path, name: str) -> tuple[Path, Path]:
    """The file `name` of the analyze output sites_csv belongs to (sites_csv, or the
    directory it names), and that output's sites.csv."""
    p = Path(sites_csv)
    d = p if p.is_dir() else p.parent
    return d / name, p if p.is_file() else Stage(d).sites


def another_trace(path: Path, trace_id: str | None, sites: Path) -> str | None:
    """Why `path` (made from the trace `trace_id`) is not of the trace of `sites`: both
    name a trace and they differ; None when they agree or either names none (sites.csv
    missing or unreadable: nothing to compare with)."""
    try:
        with sites.open() as fh:
            theirs = parse_version_line(fh.readline(), "sites", 1 << 30, sites).get("trace-id")
    except (OSError, UnicodeDecodeError, SitesFormatError):
        return None
    if not theirs or not trace_id or theirs == trace_id:
        return None
    return (f"{path}:1: made from another trace (trace-id {trace_id}) than {sites} "
            f"({theirs}); run hmtune analyze on the trace again")


# ---- the one merge of per-rank rows ----

# Columns a site's rows of several ranks add up in, take the largest or the smallest
# of; any other column is the first rank's (its text: callstack, label, kind, density).
RANK_SUM = ("n_allocs", "total_bytes", "samples", "loads", "stores", "misses", "weight",
            "share", "fault_samples", "faults", "bytes_touched", "allocs_per_s",
            "sampled_blocks", "weight_streaming", "weight_scattered", "weight_sync")
RANK_MAX = ("max_size", "peak_live_bytes", "live_ns", "last_free_ns")
RANK_MIN = ("first_alloc_ns",)
RANK = "rank"
_HOW = {**dict.fromkeys(RANK_SUM, "sum"), **dict.fromkeys(RANK_MAX, "max"),
        **dict.fromkeys(RANK_MIN, "min")}


def rank_fold(columns: Iterable[str]) -> dict[str, str]:
    """How each of columns (but site_id and rank) folds across ranks: "sum", "max",
    "min" or "first"."""
    return {c: _HOW.get(c, "first") for c in columns if c not in ("site_id", RANK)}


def fold_static(row: dict[str, str]) -> None:
    """A folded static's row: one object per process (analyze's count), whatever the
    number of ranks."""
    row["n_allocs"] = "1"
    row["total_bytes"] = row.get("max_size", "0")


def _number(text: str, where: str, column: str, n: int) -> int | float:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        raise SitesFormatError(f"{where}: column {column}, data row {n}: {text!r} is not "
                               "a number") from None


def _text(value: int | float) -> str:
    return str(value) if isinstance(value, int) else repr(value)


def site_rows(sites: str | Path, meta: dict[str, str] | None = None
              ) -> list[dict[str, str]]:
    """The rows of the sites.csv at sites, one per site id in the order of their first
    row: a file with one row per (site, rank) is folded across ranks (rank_fold; the
    rank column dropped), any other comes as it is. Its version line's fields go into
    meta when given. Raises SitesFormatError (a ValueError, naming the file) for a file
    hmtune.core.sitesfile.iter_rows refuses, a site twice for one rank, or a column to
    fold that holds no number."""
    where = str(sites)
    rows = iter_rows(sites, "sites", meta=meta)
    first = next(rows, None)
    if first is None:
        return []
    if RANK not in first:
        return [first, *rows]
    folded: dict[str, dict[str, str]] = {}
    values: dict[str, dict[str, int | float]] = {}
    ranks: set[tuple[str, str]] = set()
    how = rank_fold(first)
    for n, row in enumerate([first, *rows], 1):
        sid = row["site_id"]
        if (sid, row[RANK]) in ranks:
            raise SitesFormatError(f"{where}: site_id {sid} appears twice for rank "
                                   f"{row[RANK]}")
        ranks.add((sid, row[RANK]))
        if sid not in folded:
            folded[sid] = {c: v for c, v in row.items() if c != RANK}
            values[sid] = {}
        have = values[sid]
        for c, h in how.items():
            if h == "first" or row.get(c) in (None, ""):
                continue
            v = _number(row[c], where, c, n)
            old = have.get(c)
            have[c] = v if old is None else (
                old + v if h == "sum" else max(old, v) if h == "max" else min(old, v))
    for sid, row in folded.items():
        row.update({c: _text(v) for c, v in values[sid].items()})
        if row.get("kind") == "static":
            fold_static(row)
    return list(folded.values())


# ---- the footprint the fast-tier fractions take a part of ----

FAST_TIER_UNIT = 2 << 20        # fast-tier sizes are whole 2 MiB pages


def footprint_of(rows: Iterable[dict[str, str]]) -> int:
    """The sum of the peak live bytes of site_rows' rows (footprint)."""
    return sum(int(r["peak_live_bytes"]) for r in rows)


def footprint(sites: str | Path) -> int:
    """The traced footprint of one process (bytes): the sum over the sites of sites.csv
    of each site's peak live bytes, a site's peak being the largest of any rank's when
    the file has one row per (site, rank). What every site in the fast tier at once
    needs at most per process (the peaks of different sites may fall at different
    times), the bytes --fraction takes a fraction of and explore's fractions divide
    by (docs/formats.md §7). Raises KeyError or ValueError (SitesFormatError: not a
    sites.csv of a version this hmtune reads, or unreadable) for a file that cannot be
    read."""
    return footprint_of(site_rows(sites))


def fast_tier_bytes(sites: str | Path, fraction: float) -> int:
    """--fraction F (advise, compare, explore): F of the traced footprint per process,
    rounded up to whole 2 MiB pages; 0 for a trace with no sites. Raises as footprint."""
    unit = FAST_TIER_UNIT
    return (int(footprint(sites) * fraction) + unit - 1) // unit * unit
