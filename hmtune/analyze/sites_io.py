"""The `sites.csv` / `allocs.csv` contract: version line, columns, and the readers.

Both files start with a comment line naming the file kind and its version, then
`key=value` fields (values percent-encoded, so they hold no spaces):

    # hmtune sites v2 trace=hmtune-out/app/trace.prv sampler=soft label_form=module+0xoffset
      samples_heap=108 ... weight_no_address=36000000   (one line)
    # hmtune allocs v1 trace=hmtune-out/app/trace.prv

then a CSV header row and the rows. Readers refuse a version newer than theirs, so an
old advisor never misreads a newer analyzer's columns. sites.csv v2 added the static
variables as rows (`kind` column `static`; their `callstack_raw` is not a call stack,
which an advisor of v1 would misread) and the split of the sampled weight by address
class in the version line (`samples_CLASS`, `weight_CLASS`); v1 files, which have
neither, are still read (every row a heap site, no split).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hmtune.core import events as ev

# The version line (its parsing and check) is defined once, in hmtune.core.sitesfile,
# for these readers and the light ones (csv only) of the workflows.
from hmtune.core.sitesfile import (
    ALLOCS_VERSION,
    SITES_VERSION,
    SitesFormatError,
    parse_version_line,
    version_line,  # noqa: F401 (re-exported: the writers and tests import it from here)
)

if TYPE_CHECKING:        # the readers load pandas; the writers (hmtune analyze) do not
    import pandas as pd

SITES_COLUMNS = ["site_id", "callstack", "callstack_raw", "n_allocs", "max_size",
                 "peak_live_bytes", "total_bytes", "first_alloc_ns", "last_free_ns", "live_ns",
                 "samples", "loads", "stores", "misses", "weight", "share", "density"]
# Written after SITES_COLUMNS by hmtune analyze; readers do not require it (older
# files lack it: hmtune.analyze.shortlabels.labels_for_rows makes it from the chains).
LABEL_COLUMN = "label"
# What first-touch cost needs (docs/formats.md §4), written last; readers do not
# require them (older files lack them: no page-fault data).
FIRST_TOUCH_COLUMNS = ["fault_samples", "faults", "bytes_touched", "allocs_per_s"]

# `heap` (an allocation site) or `static` (a static variable); readers take a file
# without it (v1) as all heap.
KIND_COLUMN = "kind"
KIND_HEAP, KIND_STATIC = "heap", "static"
# Small-call sampling (docs/formats.md §4): sites.csv's blocks recorded 1 in N (0: the
# row is exact) and allocs.csv's blocks a row stands for. Written after the others;
# readers do not require them (older files are exact: 0 and 1).
SAMPLED_COLUMN = "sampled_blocks"
SCALE_COLUMN = "scale"
# The sampled weight by access kind (event 41000035: streaming, scattered,
# synchronization), scaled as `weight` is (docs/formats.md §4). Written last; readers
# do not require them (older files lack them: no kinds).
ACCESS_KIND_COLUMNS = ["weight_streaming", "weight_scattered", "weight_sync"]
SITES_WRITTEN = [*SITES_COLUMNS, LABEL_COLUMN, KIND_COLUMN, *FIRST_TOUCH_COLUMNS,
                 SAMPLED_COLUMN, *ACCESS_KIND_COLUMNS]

# The access kinds (the values of 41000035, common/trace_values.tsv), by key, in the
# order analyze shows them, with the words that show them.
ACCESS_KIND_VALUES = {key: value for value, key in sorted(ev.HM_ACCESS_KIND_KEYS.items())}
ACCESS_KINDS = tuple(ACCESS_KIND_VALUES)
ACCESS_KIND_WORDS = {"streaming": "streaming", "scattered": "scattered",
                     "sync": "synchronization", "compute": "compute"}


def kind_weights(meta: dict[str, object]) -> dict[str, float] | None:
    """The trace's sampled weight by access kind from scan.json's kind_weight; None
    when the scanner did not count kinds or no sample carried one."""
    w = meta.get("kind_weight")
    if not isinstance(w, dict):
        return None
    out = {k: float(w.get(str(v), 0)) for k, v in ACCESS_KIND_VALUES.items()}
    return out if sum(out.values()) > 0 else None


def no_address_weights(meta: dict[str, object]) -> tuple[float, float] | None:
    """The sampled weight without a data address from scan.json, split: compute (access
    kind compute: the sampled instruction had no memory operand, and no load it
    consumed gave one) and memory (an access whose address is unknown). None when the
    scanner counted no classes or kinds."""
    cw, kw = meta.get("class_weight"), meta.get("kind_weight")
    if not isinstance(cw, dict) or not isinstance(kw, dict):
        return None
    none = float(cw.get(str(ev.HM_SAMPLE_CLASS_NO_ADDRESS), 0))
    compute = min(none, float(kw.get(str(ev.HM_ACCESS_KIND_COMPUTE), 0)))
    return compute, none - compute


def memory_addressed(split: Split, compute: int | None,
                     lookahead_aside: int = 0) -> tuple[int, int, int] | None:
    """Of the samples that may wait on memory (all but those of access kind compute):
    (how many, how many the split gives an address, how many more have one from the
    look ahead that the split counts as no_address). None without a count of compute
    samples or without such samples."""
    if compute is None:
        return None
    total = sum(split.samples.values())
    memory = total - compute
    if memory <= 0:
        return None
    aside = min(lookahead_aside, split.samples["no_address"])
    return memory, total - split.samples["no_address"], aside


def describe_kinds(weights: dict[str, float], total: float) -> str:
    """`streaming 40.1%, scattered 30.0%, ...` (shares of the sampled weight total)."""
    return ", ".join(f"{ACCESS_KIND_WORDS[k]} {100 * weights[k] / total:.1f}%"
                     for k in ACCESS_KINDS)

# Address classes of the sampled weight: the values of event 41000023 but 0 (none),
# by key (common/trace_values.tsv, docs/formats.md §3), in the order the split is
# shown, with the words that show them.
CLASS_VALUES = {key: value for value, key in ev.HM_SAMPLE_CLASS_KEYS.items()
                if value != ev.HM_SAMPLE_CLASS_NONE}
CLASSES = tuple(CLASS_VALUES)
CLASS_WORDS = {"heap": "heap objects", "static": "statics", "stack": "stack",
               "unknown": "unknown memory", "no_address": "no address"}


@dataclass
class Split:
    """The sampled accesses and their weight by address class (CLASSES)."""

    samples: dict[str, int]
    weight: dict[str, float]

    @property
    def total(self) -> float:
        return float(sum(self.weight.values()))

    def share(self, cls: str) -> float:
        total = self.total
        return self.weight[cls] / total if total > 0 else 0.0

    def fields(self) -> dict[str, object]:
        """The version line's fields: samples_CLASS, then weight_CLASS."""
        out: dict[str, object] = {f"samples_{c}": self.samples[c] for c in CLASSES}
        out.update({f"weight_{c}": _number_text(self.weight[c]) for c in CLASSES})
        return out

    def describe(self) -> str:
        """`heap objects 43.2%, statics 55.1%, ...` (shares of the sampled weight)."""
        return ", ".join(f"{CLASS_WORDS[c]} {100 * self.share(c):.1f}%" for c in CLASSES)


def _number_text(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(float(v))


def split_from_meta(meta: dict[str, str]) -> Split | None:
    """The split a sites.csv version line records; None when it has none (v1, or a
    field missing or not a number >= 0)."""
    try:
        samples = {c: int(meta[f"samples_{c}"]) for c in CLASSES}
        weight = {c: float(meta[f"weight_{c}"]) for c in CLASSES}
    except (KeyError, ValueError):
        return None
    if min(samples.values()) < 0 or not all(0 <= w < float("inf") for w in weight.values()):
        return None
    return Split(samples, weight)


ALLOCS_COLUMNS = ["site_id", "rank", "thread", "ptr", "size", "t_alloc", "t_free"]
ALLOCS_WRITTEN = [*ALLOCS_COLUMNS, SCALE_COLUMN]


def _read(path: str | Path, kind: str, supported: int, columns: list[str],
          text: dict[str, type]) -> pd.DataFrame:
    import pandas as pd

    p = Path(path)
    try:
        with p.open() as fh:
            meta = parse_version_line(fh.readline(), kind, supported, p)
            df = pd.read_csv(fh, dtype=text, keep_default_na=False, na_values=[])
    except OSError as e:
        raise SitesFormatError(f"{p}: {e.strerror or e}") from None
    except (ValueError, pd.errors.ParserError) as e:
        if isinstance(e, SitesFormatError):
            raise
        raise SitesFormatError(f"{p}: {e}") from None
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise SitesFormatError(f"{p}: missing column(s) {', '.join(missing)}")
    df.attrs["meta"] = meta
    return df


def read_sites(path: str | Path) -> pd.DataFrame:
    """Read a sites.csv; the version line's fields are in `df.attrs["meta"]`.

    Raises SitesFormatError for a file that is not a sites.csv, a newer version, or
    missing columns. A `rank` column is present when the file was written per rank;
    `kind` is always there (`heap` for every row of a file without it).
    """
    df = _read(path, "sites", SITES_VERSION, SITES_COLUMNS,
               {"callstack": str, "callstack_raw": str, LABEL_COLUMN: str, KIND_COLUMN: str})
    if KIND_COLUMN not in df.columns:
        df[KIND_COLUMN] = KIND_HEAP
    bad = ~df[KIND_COLUMN].isin([KIND_HEAP, KIND_STATIC])
    if bad.any():
        raise SitesFormatError(f"{path}: kind {df[KIND_COLUMN][bad].iloc[0]!r} is neither "
                               f"{KIND_HEAP!r} nor {KIND_STATIC!r}")
    return df


def read_allocs(path: str | Path) -> pd.DataFrame:
    """Read an allocs.csv (ptr stays text, `0x...`); same checks as read_sites."""
    return _read(path, "allocs", ALLOCS_VERSION, ALLOCS_COLUMNS, {"ptr": str})
