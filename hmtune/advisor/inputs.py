"""The advisor's inputs: `sites.csv` (and `allocs.csv`) → the sites of a Problem.

Reading is strict: a missing or empty file, a wrong version line, malformed CSV,
missing columns, non-numeric, NaN or negative values and duplicate site ids are each
one `InputError` naming the file (and the column or row). `share` is derived from
`weight`: it only gives the trace's total weight, and a share that disagrees is
recomputed with a note. A `--per-rank` sites.csv is
folded back to one row per site the way analyze does it across ranks: counts and
weights summed, sizes the maximum.

Every site has a `label` (hmtune.analyze.shortlabels): sites.csv's, or made from the chains
when the file has none. The first-touch columns (`fault_samples`, `faults`,
`bytes_touched`, `allocs_per_s`) are optional: a file without them (an older hmtune
analyze) has no page-fault data (`Sites.has_faults` False) and is advised as before.

Sites whose `callstack_raw` is empty (Extrae traces labelled with file:line) cannot be
matched by the interposer: they stay out of the Problem, but their weight stays in the
total, and `Sites.unplaceable` lists them for the report.

Static variables (`kind` static, sites.csv v2) are sites like the others: their size
(`peak_live_bytes`, the symbol's size) for the whole run. Their `callstack_raw` is
`module+0xOFF [static SIZE]`, what placement.txt's static lines carry; a static without
one (its size unknown: an Extrae trace, a symbol without an ELF size, an older hmtune)
is unplaceable. `Sites.split` is the sampled weight by address class from the version
line (None for a v1 file).

Several site ids with one `callstack_raw` are one site for the interposer (it matches
the chain): they are merged into the first (heaviest) one with a note — counts and
weights summed, `max_size` the maximum, `peak_live_bytes` the sum (an upper bound: their
blocks may be live together) — and `Sites.merged` maps the other ids to it, which
`load_allocs` applies to allocs.csv.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from hmtune.advisor.model import Problem, ns_weight, static_fraction
from hmtune.analyze.shortlabels import labels_for_rows
from hmtune.analyze.sites_io import (
    KIND_COLUMN,
    KIND_STATIC,
    LABEL_COLUMN,
    SAMPLED_COLUMN,
    SCALE_COLUMN,
    SitesFormatError,
    Split,
    read_allocs,
    read_sites,
    split_from_meta,
)
from hmtune.core.backends import static_page
from hmtune.core.placement import StaticLine, chain_ok, static_line, static_ok
from hmtune.core.stage import RANK_SUM, SITES, rank_fold
from hmtune.machine.tiers import KINDS, Tier

_INT_COLS = ("site_id", "n_allocs", "max_size", "peak_live_bytes", "total_bytes",
             "samples", "loads", "stores", "misses", SAMPLED_COLUMN)
_FLOAT_COLS = ("weight", "share")
_FAULT_INT_COLS = ("fault_samples", "faults", "bytes_touched")   # optional (newer files)
_FAULT_FLOAT_COLS = ("allocs_per_s",)
_KIND_COLS = tuple(f"weight_{k}" for k in KINDS)         # optional (newer files)
_SUM_COLS = RANK_SUM                    # what site ids of one chain add up in, as ranks


class InputError(ValueError):
    """A sites.csv / allocs.csv the advisor cannot use; str() names the file."""


@dataclass
class Sites:
    """The sites of one sites.csv, split into those the interposer can match and not."""

    path: Path
    meta: dict[str, str]
    table: pd.DataFrame             # placeable sites, one row per site, sites.csv order
    unplaceable: pd.DataFrame       # rows without a callstack_raw
    total_weight: float             # all sampled weight of the trace (share denominator)
    notes: list[str] = field(default_factory=list)
    merged: dict[int, int] = field(default_factory=dict)   # site id -> the id it joined
    has_faults: bool = False        # the file has the `faults` column (page-fault data)
    split: Split | None = None      # the sampled weight by address class (version line)


def resolve(arg: str | Path, name: str = SITES) -> Path:
    """A directory argument means DIR/sites.csv."""
    p = Path(arg)
    return p / name if p.is_dir() else p


def _read_checked(p: Path, reader: Callable[[Path], pd.DataFrame],
                  what: str) -> pd.DataFrame:
    """`reader(p)` on an existing, non-empty regular file; every failure an InputError."""
    if not p.exists():
        raise InputError(f"{p}: no such file ({what})")
    if not p.is_file():
        raise InputError(f"{p}: not a regular file ({what})")
    if p.stat().st_size == 0:
        raise InputError(f"{p}: empty file ({what}; re-run hmtune analyze)")
    try:
        return reader(p)
    except SitesFormatError as e:
        raise InputError(str(e)) from None


def _numeric(df: pd.DataFrame, cols: tuple[str, ...], p: Path, integer: bool) -> None:
    """Convert columns in place; refuse text, NaN, infinities and negative values."""
    for col in cols:
        if col not in df.columns:
            continue
        values = pd.to_numeric(df[col], errors="coerce")
        floor = -1 if col == "t_free" else 0          # t_free -1: never freed
        bad = values.isna() | ~np.isfinite(values.astype(float)) | (values < floor)
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise InputError(f"{p}: column {col}, data row {row + 1}: "
                             f"{df[col].iloc[row]!r} is not a "
                             f"{'whole number' if integer else 'number'} "
                             f"{'>= -1' if col == 't_free' else '>= 0'}")
        if integer:
            if (values != np.floor(values)).any():
                row = int(np.flatnonzero((values != np.floor(values)).to_numpy())[0])
                raise InputError(f"{p}: column {col}, data row {row + 1}: "
                                 f"{df[col].iloc[row]!r} is not a whole number")
            df[col] = values.astype(np.int64)
        else:
            df[col] = values.astype(np.float64)


def _fold_ranks(df: pd.DataFrame, p: Path) -> pd.DataFrame:
    """One row per site: the rows of its ranks folded by hmtune.core.stage's rules
    (rank_fold; a static one object per process, fold_static), on the checked table."""
    dup = df.duplicated(["site_id", "rank"])
    if dup.any():
        row = df[dup].iloc[0]
        raise InputError(f"{p}: site_id {row['site_id']} appears twice for rank "
                         f"{row['rank']}")
    out = df.groupby("site_id", sort=False, as_index=False).agg(rank_fold(df.columns))
    static = out[KIND_COLUMN] == KIND_STATIC
    out.loc[static, "n_allocs"] = 1
    out.loc[static, "total_bytes"] = out.loc[static, "max_size"]
    return out


def _merge_chains(df: pd.DataFrame) -> tuple[pd.DataFrame, dict[int, int]]:
    """One row per non-empty callstack_raw: rows sharing a chain join the first of them
    (sums of counts and weights, largest request, summed peaks); returns the table and
    {merged id: kept id}."""
    chain = df["callstack_raw"]
    dup = (chain != "") & chain.duplicated(keep=False)
    if not dup.any():
        return df, {}
    key = chain.where(chain != "", "\0" + df["site_id"].astype(str))   # empty: no merge
    first = df.groupby(key, sort=False)["site_id"].transform("first")
    merged = {int(a): int(b) for a, b in zip(df["site_id"], first, strict=True) if a != b}
    agg: dict[str, str] = {c: "first" for c in df.columns}
    agg.update({c: "sum" for c in (*_SUM_COLS, "peak_live_bytes") if c in df.columns})
    agg.update({c: "max" for c in ("max_size", "live_ns", "last_free_ns") if c in df.columns})
    if "first_alloc_ns" in df.columns:
        agg["first_alloc_ns"] = "min"
    out = df.groupby(key, sort=False).agg(agg).reset_index(drop=True)
    if "density" in out.columns:
        peak = out["peak_live_bytes"].to_numpy(dtype=float)
        w = pd.to_numeric(out["weight"], errors="coerce").to_numpy(dtype=float)
        out["density"] = np.where(peak > 0, w / np.maximum(peak, 1) * (1 << 20), 0.0)
    return out, merged


def _fill_labels(df: pd.DataFrame) -> None:
    """The `label` column (hmtune.analyze.shortlabels): kept where sites.csv has one, made
    from the chains of all its sites where it has none (an older hmtune analyze); a
    static's is its callstack (`symbol [static, module]`)."""
    if LABEL_COLUMN not in df.columns:
        df[LABEL_COLUMN] = ""
    label = df[LABEL_COLUMN].astype(str).str.strip()
    static = df[KIND_COLUMN] == KIND_STATIC
    missing = (label == "") & ~static
    if missing.any():
        heap = df[~static]
        made = labels_for_rows(zip(heap["site_id"], heap["callstack"], heap["callstack_raw"],
                                   strict=True))
        label = label.where(~missing, df["site_id"].map(made))
    label = label.where(~(static & (label == "")), df["callstack"])
    df[LABEL_COLUMN] = label


# A share more than this far from weight / total is "far off" (rounding to 4 decimals
# or more never is); it is only ever a note: weight is the data, share is derived.
SHARE_ABS_TOL = 5e-5
SHARE_REL_TOL = 1e-3
_TOTAL_CANDIDATES = 64


def _total_weight(df: pd.DataFrame, p: Path, notes: list[str],
                  known: float | None = None) -> float:
    """All sampled weight of the trace, including weight outside any site: the version
    line's split's total (`known`) when it is at least the sum of the weights; else the
    total weight / share agrees on for the most weight (shares may be rounded: the
    candidates are the rows with the largest shares), never less than the sum of the
    weights; else the sum of the weights. `share` is then recomputed as weight / total,
    with a note when some given share was far off."""
    w = df["weight"].to_numpy(dtype=float)
    s = df["share"].to_numpy(dtype=float)
    total = float(w.sum())
    both = np.flatnonzero((s > 0) & (w > 0))
    if known is not None and known >= total * (1 - 1e-12):
        total = max(known, total)
    elif len(both):
        top = both[np.argsort(-s[both], kind="stable")][:_TOTAL_CANDIDATES]
        best, support = total, -1.0
        for t in w[top] / s[top]:
            exp = w / t
            agree = float(w[np.abs(s - exp) <= SHARE_ABS_TOL + SHARE_REL_TOL * exp].sum())
            if agree > support:
                best, support = float(t), agree
        total = max(best, total)
    exp = w / total if total > 0 else np.zeros_like(w)
    off = np.flatnonzero(np.abs(s - exp) > SHARE_ABS_TOL + SHARE_REL_TOL * exp)
    if len(off) and (s > 0).any():
        i = int(off[0])
        notes.append(f"{p.name}: {len(off)} site(s) have a share that is not weight / the "
                     f"trace's total weight {total:.6g} (e.g. site {int(df['site_id'].iloc[i])}:"
                     f" share {s[i]:.6g}, weight / total {exp[i]:.6g}): shares recomputed "
                     "from the weights")
    df["share"] = exp
    return total


def load_sites(path: str | Path) -> Sites:
    """Read and check a sites.csv. Raises InputError."""
    p = Path(path)
    df = _read_checked(p, read_sites, "sites.csv from hmtune analyze")
    meta = dict(df.attrs.get("meta", {}))
    per_rank = "rank" in df.columns
    _numeric(df, _INT_COLS + (("rank",) if per_rank else ()), p, integer=True)
    _numeric(df, _FLOAT_COLS, p, integer=False)
    _numeric(df, _FAULT_INT_COLS, p, integer=True)
    _numeric(df, _FAULT_FLOAT_COLS, p, integer=False)
    _numeric(df, _KIND_COLS, p, integer=False)
    notes: list[str] = []
    if per_rank:
        df = _fold_ranks(df, p)
        notes.append(f"{p.name} has one row per (site, rank): sites folded across ranks "
                     "(weights summed, sizes the maximum)")
    dup = df["site_id"].duplicated()
    if dup.any():
        raise InputError(f"{p}: site_id {int(df['site_id'][dup].iloc[0])} appears more "
                         "than once")
    df["callstack"] = df["callstack"].astype(str).str.strip()
    df["callstack_raw"] = df["callstack_raw"].astype(str).str.strip()
    _fill_labels(df)
    split = split_from_meta(meta)
    total = _total_weight(df, p, notes, split.total if split is not None else None)
    bad_raw = df["callstack_raw"].str.contains(r"[#\n\r\t]", regex=True)
    if bad_raw.any():
        raise InputError(f"{p}: site_id {int(df['site_id'][bad_raw].iloc[0])}: "
                         "callstack_raw holds '#' or a control character")
    df, merged = _merge_chains(df)
    if merged:
        kept = sorted(set(merged.values()))
        example = next(i for i in merged if merged[i] == kept[0])
        notes.append(f"{len(merged) + len(kept)} site ids share {len(kept)} call stack(s) "
                     f"(callstack_raw), which the interposer cannot tell apart: each merged "
                     f"into one site (e.g. site {example} into site {kept[0]}; weights "
                     "summed, peak live bytes summed)")
    static = df[KIND_COLUMN] == KIND_STATIC
    empty = df["callstack_raw"] == ""
    odd = ~empty & ~static & ~df["callstack_raw"].map(chain_ok)
    bad_static = ~empty & static & ~df["callstack_raw"].map(_static_placeable)
    if (empty & ~static).any() or meta.get("label_form") == "file:line":
        notes.append(f"{int((empty & ~static).sum())} site(s) have no module+offset call "
                     "stack (file:line labels, or a frame outside every module without its "
                     "address, '??'): the interposer cannot match them")
    if (empty & static).any():
        notes.append(f"{int((empty & static).sum())} static variable(s) without a module "
                     "offset and size (an Extrae trace, a symbol without an ELF size, or an "
                     "older hmtune's trace): they cannot be placed")
    if odd.any():
        notes.append(f"{int(odd.sum())} site(s) have a callstack_raw that is not "
                     "module+0xHEX frames joined by ' > ' (e.g. site "
                     f"{int(df['site_id'][odd].iloc[0])}): they cannot be placed")
    if bad_static.any():
        notes.append(f"{int(bad_static.sum())} static variable(s) have a callstack_raw that "
                     "is not module+0xHEX [static SIZE] with SIZE >= 1 below 2^48 (e.g. site "
                     f"{int(df['site_id'][bad_static].iloc[0])}): they cannot be placed")
    placeable = ~empty & ~odd & ~bad_static
    return Sites(path=p, meta=meta, table=df[placeable].reset_index(drop=True),
                 unplaceable=df[~placeable].reset_index(drop=True),
                 total_weight=total, notes=notes, merged=merged,
                 has_faults="faults" in df.columns, split=split)


def static_fractions(table: pd.DataFrame, tiers: list[Tier]) -> np.ndarray | None:
    """[site, tier]: the share of each site's weight a placement in that tier captures
    (hmtune.advisor.model.static_fraction for statics, 1 for heap sites); None when the table
    has no static."""
    static = (table[KIND_COLUMN] == KIND_STATIC).to_numpy()
    if not static.any():
        return None
    out = np.ones((len(table), len(tiers)))
    for i in np.flatnonzero(static):
        s = static_line("t", str(table["callstack_raw"].iloc[i]))
        if s is None:
            continue
        for t, tier in enumerate(tiers):
            out[i, t] = static_share(s, tier)
    return out


def static_share(s: StaticLine, tier: Tier) -> float:
    """The share of static s's bytes that a placement in tier moves (its whole pages of
    the tier's backend, hmtune.advisor.model.static_fraction); 0: it can never move."""
    return static_fraction(s.offset, s.size, static_page(tier.backend))


def build_problem(sites: Sites, tiers: list[Tier], allocs: pd.DataFrame | None = None,
                  lifetime: bool = False) -> Problem:
    """The advisor's problem for sites in tiers (whole objects): every term of the
    value model (hmtune/advisor/model.py) from sites.csv's columns, the blocks from
    allocs (the lifetime strategy's timeline too when lifetime). `hmtune advise` and
    compare's calibration (hmtune/workflows/calibrate.py) share it. Where the analyze
    output has counters.csv, the sites' memory shares and bandwidth-bound accesses come
    from the counters (hmtune/advisor/counted.py); a counters.csv that cannot be read
    is an InputError."""
    from hmtune.advisor.counted import bound_for, counted_shares, load_counted, memory_factor
    from hmtune.core.sitesfile import SitesFormatError

    table = sites.table
    ids = table["site_id"].to_numpy(np.int64)
    try:
        counted = load_counted(sites.path, ids, bound_for(tiers), sites.merged)
    except SitesFormatError as e:
        raise InputError(str(e)) from None
    sampler = ns_weight(str(sites.meta.get("sampler", "none")))
    shares = kind_shares(table)
    return Problem(site_ids=ids,
                   sizes=table["peak_live_bytes"].to_numpy(np.int64),
                   weights=table["weight"].to_numpy(np.float64),
                   loads=table["loads"].to_numpy(np.int64),
                   stores=table["stores"].to_numpy(np.int64),
                   tiers=tiers, total_weight=sites.total_weight,
                   allocs=allocs if lifetime else None,
                   faults=table["faults"].to_numpy(np.float64) if sites.has_faults else None,
                   ns_weight=sampler,
                   samples=table["samples"].to_numpy(np.int64),
                   max_sizes=table["max_size"].to_numpy(np.int64),
                   n_allocs=table["n_allocs"].to_numpy(np.int64),
                   total_bytes=table["total_bytes"].to_numpy(np.int64),
                   blocks=allocs, fraction=static_fractions(table, tiers),
                   statics=(table[KIND_COLUMN] == KIND_STATIC).to_numpy(),
                   kind_shares=shares if counted is None else counted_shares(shares, counted),
                   memory_factor=None if counted is None
                   else memory_factor(counted, sampler > 0 and bool(table["samples"].sum())),
                   counted=None if counted is None
                   else np.column_stack([counted.memory_share, counted.bandwidth]))


def kind_shares(table: pd.DataFrame) -> np.ndarray | None:
    """[site, kind of machine.tiers.KINDS]: each site's share of its weight per access kind
    (sites.csv `weight_KIND`, docs/formats.md §4), at most 1 in all; None when the
    table has none of the columns (an older sites.csv: every access valued alike)."""
    if not any(c in table.columns for c in _KIND_COLS):
        return None
    w = table["weight"].to_numpy(np.float64)
    per = np.column_stack([table[c].to_numpy(np.float64) if c in table.columns
                           else np.zeros(len(table)) for c in _KIND_COLS])
    out = np.divide(per, w[:, None], out=np.zeros_like(per), where=w[:, None] > 0)
    total = out.sum(axis=1)
    over = total > 1.0
    out[over] /= total[over, None]
    return out


def _static_placeable(raw: str) -> bool:
    s = static_line("t", raw)
    return s is not None and static_ok(s)


def renamed(df: pd.DataFrame, merged: dict[int, int] | None) -> pd.DataFrame:
    """df (a site_id column: allocs.csv's, profile.csv's rows) with the site ids that
    were merged into another (Sites.merged) renamed to the id they joined."""
    if not merged:
        return df
    ids = df["site_id"].map(lambda i: merged.get(int(i), int(i))).astype(np.int64)
    return df.assign(site_id=ids)


def load_allocs(path: str | Path, site_ids: set[int], full: bool,
                merged: dict[int, int] | None = None) -> pd.DataFrame:
    """Read and check an allocs.csv; keep the rows of `site_ids`.

    `full` keeps site_id, rank, size, t_alloc, t_free (the lifetime-aware strategy's
    rows) with a never-freed block's `t_free` (-1) replaced by one past the latest time
    in the file, so every row is a finite live interval, and `thread` (the arena's
    thread stripes: hmtune/advisor/arena_fit.py); otherwise only site_id, rank and size
    are kept (size window). `scale` (the blocks a row stands for: small-call
    sampling's N, else 1; 1 for files without the column) is kept in both. `merged`
    (Sites.merged) renames the site ids that were merged into another. `attrs["nprocs"]`
    is the number of processes (ranks) in the whole file, None when it has no rows;
    `attrs["meta"]` the version line's fields.
    """
    p = Path(path)
    df = _read_checked(p, read_allocs, "allocs.csv from hmtune analyze")
    meta = dict(df.attrs.get("meta", {}))
    if SCALE_COLUMN not in df.columns:
        df[SCALE_COLUMN] = 1
    thread = ["thread"] if full and "thread" in df.columns else []
    cols = (["site_id", "rank", "size"] + (["t_alloc", "t_free"] if full else []) + thread
            + [SCALE_COLUMN])
    df = df[cols].copy()
    _numeric(df, ("site_id", "rank", "size", SCALE_COLUMN, *thread)
             + (("t_alloc", "t_free") if full else ()), p, integer=True)
    if len(df) and (df[SCALE_COLUMN] < 1).any():
        row = int(np.flatnonzero((df[SCALE_COLUMN] < 1).to_numpy())[0])
        raise InputError(f"{p}: column {SCALE_COLUMN}, data row {row + 1}: a row stands for "
                         "at least 1 block")
    if full and len(df):
        early = (df["t_free"] >= 0) & (df["t_free"] < df["t_alloc"])
        if early.any():
            row = int(np.flatnonzero(early.to_numpy())[0])
            raise InputError(f"{p}: data row {row + 1}: t_free is before t_alloc")
        end = int(max(df["t_alloc"].max(), df["t_free"].max())) + 1
        df.loc[df["t_free"] < 0, "t_free"] = end
    df = renamed(df, merged)
    nprocs = int(df["rank"].nunique())
    kept = df[df["site_id"].isin(site_ids)].reset_index(drop=True)
    kept.attrs["nprocs"] = nprocs or None
    kept.attrs["meta"] = meta
    return kept
