"""The advisor's inputs: `sites.csv` (and `allocs.csv`) → the sites of a Problem.

Reading is strict: a missing or empty file, a wrong version line, malformed CSV,
missing columns, non-numeric, NaN or negative values and duplicate site ids are each
one `InputError` naming the file (and the column or row). A `--per-rank` sites.csv is
folded back to one row per site the way analyze does it across ranks: counts and
weights summed, sizes the maximum.

Sites whose `callstack_raw` is empty (Extrae traces labelled with file:line) cannot be
matched by the interposer: they stay out of the Problem, but their weight stays in the
total, and `Sites.unplaceable` lists them for the report.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from advisor.placement import chain_ok
from analyze.sites_io import SitesFormatError, read_allocs, read_sites

_INT_COLS = ("site_id", "n_allocs", "max_size", "peak_live_bytes", "total_bytes",
             "samples", "loads", "stores", "misses")
_FLOAT_COLS = ("weight", "share")
_SUM_COLS = ("n_allocs", "total_bytes", "samples", "loads", "stores", "misses", "weight",
             "share")
_MAX_COLS = ("max_size", "peak_live_bytes", "live_ns", "last_free_ns")


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


def resolve(arg: str | Path, name: str = "sites.csv") -> Path:
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
    dup = df.duplicated(["site_id", "rank"])
    if dup.any():
        row = df[dup].iloc[0]
        raise InputError(f"{p}: site_id {row['site_id']} appears twice for rank "
                         f"{row['rank']}")
    agg: dict[str, str] = {c: "first" for c in df.columns if c not in ("site_id", "rank")}
    agg.update({c: "sum" for c in _SUM_COLS if c in df.columns})
    agg.update({c: "max" for c in _MAX_COLS if c in df.columns})
    if "first_alloc_ns" in df.columns:
        agg["first_alloc_ns"] = "min"
    return df.groupby("site_id", sort=False, as_index=False).agg(agg)


def _total_weight(df: pd.DataFrame, p: Path) -> float:
    """All sampled weight: weight / share where share > 0 (the trace total, including
    weight outside any site), else the sum of the site weights."""
    w = df["weight"].to_numpy(dtype=float)
    s = df["share"].to_numpy(dtype=float)
    if (s > 1 + 1e-9).any():
        raise InputError(f"{p}: column share holds values above 1 (share is a fraction "
                         "of the trace's weight)")
    pos = s > 0
    if not pos.any():
        return float(w.sum())
    if (pos != (w > 0)).any():
        raise InputError(f"{p}: columns weight and share disagree (one is 0, the other not)")
    totals = w[pos] / s[pos]
    total = float(totals[np.argmax(w[pos])])        # the largest weight: least rounding
    if np.abs(totals - total).max() > 1e-4 * total:
        raise InputError(f"{p}: column share is not weight / one common total "
                         f"(totals from {totals.min():.6g} to {totals.max():.6g})")
    return max(total, float(w.sum()))


def load_sites(path: str | Path) -> Sites:
    """Read and check a sites.csv. Raises InputError."""
    p = Path(path)
    df = _read_checked(p, read_sites, "sites.csv from hmtune analyze")
    meta = dict(df.attrs.get("meta", {}))
    per_rank = "rank" in df.columns
    _numeric(df, _INT_COLS + (("rank",) if per_rank else ()), p, integer=True)
    _numeric(df, _FLOAT_COLS, p, integer=False)
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
    total = _total_weight(df, p)
    bad_raw = df["callstack_raw"].str.contains(r"[#\n\r\t]", regex=True)
    if bad_raw.any():
        raise InputError(f"{p}: site_id {int(df['site_id'][bad_raw].iloc[0])}: "
                         "callstack_raw holds '#' or a control character")
    empty = df["callstack_raw"] == ""
    odd = ~empty & ~df["callstack_raw"].map(chain_ok)
    if empty.any() or meta.get("label_form") == "file:line":
        notes.append(f"{int(empty.sum())} site(s) have no module+offset call stack "
                     "(file:line labels): the interposer cannot match them")
    if odd.any():
        notes.append(f"{int(odd.sum())} site(s) have a callstack_raw that is not "
                     "module+0xHEX frames joined by ' > ' (e.g. site "
                     f"{int(df['site_id'][odd].iloc[0])}): they cannot be placed")
    placeable = ~empty & ~odd
    return Sites(path=p, meta=meta, table=df[placeable].reset_index(drop=True),
                 unplaceable=df[~placeable].reset_index(drop=True),
                 total_weight=total, notes=notes)


def load_allocs(path: str | Path, site_ids: set[int], full: bool) -> pd.DataFrame:
    """Read and check an allocs.csv; keep the rows of `site_ids`.

    `full` keeps site_id, rank, size, t_alloc, t_free (the lifetime-aware strategy's
    rows) with a never-freed block's `t_free` (-1) replaced by one past the latest time
    in the file, so every row is a finite live interval; otherwise only site_id, rank
    and size are kept (size window). `attrs["nprocs"]` is the number of processes
    (ranks) in the whole file, None when it has no rows.
    """
    p = Path(path)
    df = _read_checked(p, read_allocs, "allocs.csv from hmtune analyze")
    cols = ["site_id", "rank", "size"] + (["t_alloc", "t_free"] if full else [])
    df = df[cols].copy()
    _numeric(df, ("site_id", "rank", "size") + (("t_alloc", "t_free") if full else ()),
             p, integer=True)
    if full and len(df):
        early = (df["t_free"] >= 0) & (df["t_free"] < df["t_alloc"])
        if early.any():
            row = int(np.flatnonzero(early.to_numpy())[0])
            raise InputError(f"{p}: data row {row + 1}: t_free is before t_alloc")
        end = int(max(df["t_alloc"].max(), df["t_free"].max())) + 1
        df.loc[df["t_free"] < 0, "t_free"] = end
    nprocs = int(df["rank"].nunique())
    kept = df[df["site_id"].isin(site_ids)].reset_index(drop=True)
    kept.attrs["nprocs"] = nprocs or None
    return kept
