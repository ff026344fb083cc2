"""`profile.csv`: where in its objects each allocation site's sampled weight falls
(docs/formats.md §4), its reader, and the tests the advisor asks of it.

    # hmtune profile v1 trace=hmtune-out/app/trace.prv trace-id=3f2a9c0d5e7b1a46 granularity=4096
    site_id,offset,weight,samples
    3,0,1200000,3
    3,2097152,800000,2

One row per (site, bucket) with samples: `offset` is the bucket's start from the start
of the block (a multiple of `granularity`), `weight` and `samples` what sites.csv's
`weight` and `samples` count, of the samples in [offset, offset + granularity) of the
site's blocks, summed over blocks and processes. Written by hmtune-prvscan
(analyze/prvscan/ps_profile.c); `hmtune analyze` adds the trace id.

- read_profile(path) -> ProfileData (granularity, trace, trace_id, df / table: a
  DataFrame with PROFILE_COLUMNS, meta: the version line's fields);
  ProfileFormatError (also named ProfileError; a SitesFormatError, so a ValueError)
  with `FILE:LINE: why` for what it cannot read.
- profile_next_to(sites_csv) -> ProfileData | None: the profile of an analyze output
  directory; None when it has none (an older analyze): no profile, no splits.
- rebucket(df, granularity): the same profile in coarser buckets.
- flatness(df_site, object_size, granularity=2 MiB) -> bool | None: whether a site's
  samples are spread evenly over its largest object (chi-square goodness of fit).

The module imports pandas only when a function that returns a DataFrame runs, so
`hmtune analyze` (whose summary uses flat_counts) does not load it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from hmtune.core.sitesfile import (
    PROFILE_VERSION,
    SitesFormatError,
    parse_version_line,
    version_line,
)
from hmtune.core.stage import PROFILE, another_trace, beside_sites

if TYPE_CHECKING:
    import pandas as pd

PROFILE_NAME = PROFILE
PROFILE_COLUMNS = ["site_id", "offset", "weight", "samples"]
MIN_GRANULARITY = 4096
MAX_GRANULARITY = 1 << 30
DEFAULT_GRANULARITY = 4096
HUGEPAGE = 2 << 20          # the bucket of flatness(): a transparent huge page
LARGE_BUCKETS = 4           # a "large" site's object spans at least this many buckets
FLAT_P = 0.01               # flat when the uniform hypothesis has p above this
MIN_EXPECTED = 5.0          # samples expected in every bucket for the test to tell


class ProfileFormatError(SitesFormatError):
    """A profile.csv that this reader cannot read; str() is `FILE:LINE: why`."""


ProfileError = ProfileFormatError      # the name the advisor imports


def granularity_error(value: int) -> str | None:
    """Why `value` is not a profile granularity (None when it is one)."""
    if value < MIN_GRANULARITY or value > MAX_GRANULARITY or value & (value - 1):
        return (f"{value} is not a power of two from {MIN_GRANULARITY} (4 KiB) to "
                f"{MAX_GRANULARITY} (1 GiB)")
    return None


@dataclass
class ProfileData:
    """A read profile.csv: `df` (also `table`) has PROFILE_COLUMNS (int64; weight
    float64 only when a file has fractional weights), sorted by site_id then offset;
    `meta` the version line's fields (`trace`, `trace-id`, `granularity`, `version`)."""

    path: Path
    granularity: int
    trace: str | None
    trace_id: str | None
    df: pd.DataFrame
    meta: dict[str, str] = field(default_factory=dict)

    @property
    def table(self) -> pd.DataFrame:
        return self.df

    def site(self, site_id: int) -> pd.DataFrame:
        """The rows of one site (empty when it has none)."""
        return self.df[self.df["site_id"] == int(site_id)]


def profile_line(trace: str, trace_id: str | None, granularity: int) -> str:
    """The version line: `# hmtune profile v1 trace=... [trace-id=...] granularity=G`."""
    fields: dict[str, object] = {"trace": trace}
    if trace_id:
        fields["trace-id"] = trace_id
    fields["granularity"] = granularity
    return version_line("profile", PROFILE_VERSION, **fields)


def _fail(path: Path, line: int, why: str) -> ProfileFormatError:
    return ProfileFormatError(f"{path}:{line}: {why}")


def _header(path: Path, first: str) -> tuple[dict[str, str], int]:
    try:
        meta = parse_version_line(first, "profile", PROFILE_VERSION, f"{path}:1")
    except SitesFormatError as e:
        raise ProfileFormatError(str(e)) from None
    text = meta.get("granularity", "")
    if not text.isdigit():
        raise _fail(path, 1, f"no granularity=BYTES field (got {text!r})" if text
                    else "no granularity=BYTES field")
    granularity = int(text)
    if (why := granularity_error(granularity)) is not None:
        raise _fail(path, 1, f"granularity {why}")
    return meta, granularity


def _locate_bad_row(path: Path, lines: list[str], columns: list[str]) -> ProfileFormatError:
    """The first data line that is not a row of integers (weight: a number)."""
    for lineno, line in enumerate(lines[2:], 3):
        fields = line.rstrip("\r\n").split(",")
        if len(fields) != len(columns):
            return _fail(path, lineno, f"{len(fields)} fields, expected {len(columns)} "
                         f"({','.join(columns)})")
        for name, value in zip(columns, fields, strict=True):
            try:
                if name == "weight":
                    float(value)
                elif name in PROFILE_COLUMNS:
                    int(value)
            except ValueError:
                return _fail(path, lineno, f"{name} {value!r} is not a number")
    return _fail(path, 2, "cannot be read as CSV")


def read_profile(path: str | Path) -> ProfileData:
    """Read a profile.csv. Raises ProfileFormatError (`FILE:LINE: why`) for a missing or
    unreadable file, another kind or a newer version, a bad granularity, a missing
    column, a row that is not numbers, a negative or misaligned offset, a negative
    weight, a row without samples, or rows out of order or repeated."""
    import numpy as np
    import pandas as pd

    p = Path(path)
    try:
        text = p.read_text()
    except FileNotFoundError:
        raise ProfileFormatError(f"{p}:0: no such file (run hmtune analyze on the trace "
                                 "to write it)") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ProfileFormatError(f"{p}:0: {getattr(e, 'strerror', None) or e}") from None
    lines = text.splitlines(keepends=True)
    if not lines:
        raise _fail(p, 1, "empty file: not an hmtune profile.csv")
    meta, granularity = _header(p, lines[0])
    if len(lines) < 2:
        raise _fail(p, 2, f"no header row (expected {','.join(PROFILE_COLUMNS)})")
    columns = lines[1].rstrip("\r\n").split(",")
    missing = [c for c in PROFILE_COLUMNS if c not in columns]
    if missing:
        raise _fail(p, 2, f"missing column(s) {', '.join(missing)} (expected "
                          f"{','.join(PROFILE_COLUMNS)})")
    ints = {c: np.int64 for c in ("site_id", "offset", "samples")}
    try:
        df = pd.read_csv(p, skiprows=1, dtype=ints, keep_default_na=False, na_values=[])
        if len(df) == 0:
            df = df.astype({"weight": np.int64})
        bad_weight = df["weight"].dtype.kind not in "iuf"
    except (ValueError, TypeError, OverflowError, pd.errors.ParserError):
        bad_weight = True
    if bad_weight or len(df) != len(lines) - 2:
        raise _locate_bad_row(p, lines, columns)
    df = df[PROFILE_COLUMNS].reset_index(drop=True)
    if df["weight"].dtype.kind == "f" and (df["weight"] % 1 == 0).all():
        df["weight"] = df["weight"].astype(np.int64)
    _check_rows(p, df, granularity)
    df.attrs["granularity"] = granularity
    return ProfileData(p, granularity, meta.get("trace"), meta.get("trace-id"), df, meta)


def _check_rows(path: Path, df: pd.DataFrame, granularity: int) -> None:
    """Row rules, vectorised; the first row that breaks one is reported by line."""
    import numpy as np

    site = df["site_id"].to_numpy()
    offset = df["offset"].to_numpy()
    rules = [
        (site < 0, "site_id is negative"),
        (offset < 0, "offset is negative"),
        (offset % granularity != 0, f"offset is not a multiple of the granularity "
                                    f"({granularity})"),
        (~np.isfinite(df["weight"].to_numpy(dtype=float)) | (df["weight"].to_numpy() < 0),
         "weight is negative or not finite"),
        (df["samples"].to_numpy() < 1, "samples is below 1 (rows with no samples are not "
                                       "written)"),
    ]
    order = np.zeros(len(df), dtype=bool)
    if len(df) > 1:
        prev_site, prev_off = site[:-1], offset[:-1]
        order[1:] = (site[1:] < prev_site) | ((site[1:] == prev_site) & (offset[1:] <= prev_off))
    rules.append((order, "rows out of order or repeated (sorted by site_id, then offset)"))
    first = None
    for bad, why in rules:
        idx = np.flatnonzero(bad)
        if idx.size and (first is None or idx[0] < first[0]):
            first = (int(idx[0]), why)
    if first is not None:
        row = df.iloc[first[0]]
        raise _fail(path, first[0] + 3, f"{first[1]}: {row['site_id']},{row['offset']},"
                                        f"{row['weight']},{row['samples']}")


def profile_next_to(sites_csv: str | Path) -> ProfileData | None:
    """The profile.csv in the directory of `sites_csv` (or in `sites_csv` when it is a
    directory); None when there is none (an analyze older than the profile): callers
    take it as "no profile", e.g. no splits. A profile that is there but unreadable
    raises ProfileFormatError, and so does one whose trace-id is not that of the
    sites.csv next to it (when both have one: a profile of another trace)."""
    path, sites = beside_sites(sites_csv, PROFILE_NAME)
    if not path.exists():
        return None
    prof = read_profile(path)
    if (why := another_trace(path, prof.trace_id, sites)) is not None:
        raise ProfileFormatError(why)
    return prof


def rebucket(df: pd.DataFrame, granularity: int) -> pd.DataFrame:
    """The profile `df` (PROFILE_COLUMNS) in buckets of `granularity` bytes: a power of
    two no finer than the buckets it has (`df.attrs["granularity"]` when read by
    read_profile, else its offsets must all be multiples of it is all that is checked).
    Rows of one site and bucket are summed; sorted by site_id, offset."""
    import pandas as pd

    if (why := granularity_error(int(granularity))) is not None:
        raise ValueError(f"rebucket: granularity {why}")
    have = df.attrs.get("granularity")
    if have is not None and granularity < have:
        raise ValueError(f"rebucket: {granularity} is finer than the profile's buckets "
                         f"({have}); buckets can only be merged")
    if len(df) == 0:
        out = pd.DataFrame({c: pd.Series(dtype="int64") for c in PROFILE_COLUMNS})
    else:
        keyed = df.assign(offset=(df["offset"] // granularity) * granularity)
        out = (keyed.groupby(["site_id", "offset"], sort=True, as_index=False)
               [["weight", "samples"]].sum())[PROFILE_COLUMNS]
    out.attrs["granularity"] = int(granularity)
    return out


def buckets_of(object_size: int, granularity: int = HUGEPAGE) -> int:
    """Buckets of `granularity` an object of `object_size` bytes spans from its start."""
    return max(0, -(-int(object_size) // int(granularity)))


def is_large(object_size: int) -> bool:
    """An object spanning at least LARGE_BUCKETS huge-page buckets (over 6 MiB): big
    enough that placing parts of it apart can pay."""
    return buckets_of(object_size, HUGEPAGE) >= LARGE_BUCKETS


def chi2_sf(x: float, dof: int) -> float:
    """P(X >= x) for X chi-square with `dof` degrees of freedom: the regularized upper
    incomplete gamma Q(dof/2, x/2), by its series below a + 1 and its continued
    fraction above (both converge fast there)."""
    if dof <= 0:
        raise ValueError("chi2_sf: dof must be positive")
    if x <= 0:
        return 1.0
    a, z = dof / 2.0, x / 2.0
    log_front = a * math.log(z) - z - math.lgamma(a)
    if z < a + 1.0:
        term = total = 1.0 / a
        n = a
        while abs(term) > abs(total) * 1e-15:
            n += 1.0
            term *= z / n
            total += term
        return max(0.0, 1.0 - total * math.exp(log_front))
    tiny = 1e-300        # modified Lentz's method for the continued fraction of Q
    b = z + 1.0 - a
    c, d = 1.0 / tiny, 1.0 / b
    h = d
    for i in range(1, 10_000):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return min(1.0, math.exp(log_front) * h)


def flat_counts(rows: Iterable[tuple[int, int]], object_size: int,
                granularity: int = HUGEPAGE) -> bool | None:
    """flatness() on (offset, samples) pairs of one site (offsets in bytes from the
    block start, any bucket size that divides `granularity`)."""
    nb = buckets_of(object_size, granularity)
    if nb < LARGE_BUCKETS:
        return None
    counts = [0] * nb
    for offset, samples in rows:
        counts[min(nb - 1, int(offset) // granularity)] += int(samples)
    n = sum(counts)
    if n == 0:
        return None
    size = float(object_size)
    share = [min(granularity, object_size - i * granularity) / size for i in range(nb)]
    # pool runs of m adjacent buckets so that each run expects MIN_EXPECTED samples
    m = max(1, math.ceil(MIN_EXPECTED * size / (n * granularity)))
    counts = [sum(counts[i:i + m]) for i in range(0, nb, m)]
    share = [sum(share[i:i + m]) for i in range(0, nb, m)]
    if len(counts) > 1 and n * share[-1] < MIN_EXPECTED:   # a short last run: merged
        last_count, last_share = counts.pop(), share.pop()
        counts[-1] += last_count
        share[-1] += last_share
    if len(counts) < LARGE_BUCKETS:
        return None
    stat = sum((c - n * s) ** 2 / (n * s) for c, s in zip(counts, share, strict=True))
    return chi2_sf(stat, len(counts) - 1) > FLAT_P


def flatness(df_site: pd.DataFrame, object_size: int, granularity: int = HUGEPAGE
             ) -> bool | None:
    """Is the site's sampled weight spread evenly over its objects?

    `df_site`: one site's rows of a profile (PROFILE_COLUMNS; buckets no coarser than
    `granularity`); `object_size`: its largest object (sites.csv `max_size`). The
    samples are counted per `granularity` bucket of [0, object_size) and tested against
    a uniform spread over the object's bytes (each bucket expecting its share of the
    bytes; a last bucket of fewer bytes expects fewer) by Pearson's chi-square: True
    (flat) when p > 0.01, False (concentrated: some buckets hotter than the rest, so
    splitting the object can pay).

    None when it cannot tell: the object spans fewer than 4 buckets (not a large site),
    or its samples are too few. Pearson's test wants at least 5 samples expected per
    bucket, so with fewer the buckets are pooled in runs of m adjacent ones (m the
    smallest that makes each run expect 5; a short last run that would expect fewer is
    merged with the one before), and the test runs on the runs: None when fewer than 4
    runs remain, i.e. below 20 samples (15 + a short run's share), whatever the size.
    A window of a large object stays visible at the coarser scale as long as it is
    smaller than the runs are many (an 8 MiB window of a 64 MiB object shows with 40
    samples: 8 runs of 8 MiB).

    Samples of a site's smaller blocks all fall in the first buckets of the largest, so
    a site of many sizes reads concentrated at its start: the test is about the layout
    of one object, meant for sites whose weight is in few large objects.
    """
    pairs = zip(df_site["offset"].tolist(), df_site["samples"].tolist(), strict=True)
    return flat_counts(pairs, object_size, granularity)


def read_counts(path: str | Path, sites: set[int]) -> dict[int, list[tuple[int, int]]]:
    """(offset, samples) of the given sites, streamed from a profile.csv written by this
    hmtune (no checks beyond the numbers; no pandas): for analyze's summary."""
    out: dict[int, list[tuple[int, int]]] = {s: [] for s in sites}
    with Path(path).open() as fh:
        fh.readline()
        fh.readline()
        for line in fh:
            site, _, rest = line.partition(",")
            rows = out.get(int(site))
            if rows is not None:
                f = rest.split(",")
                rows.append((int(f[0]), int(f[2])))
    return out
