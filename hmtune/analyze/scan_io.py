"""Readers of hmtune-prvscan's outputs: `sites.tsv`, `scan.json`, `allocs.csv`.

The scanner (analyze/prvscan/, C) reads the `.prv` once and writes, in its output
directory:

- `sites.tsv`: the version line `# hmtune prvscan sites v1` (SITES_TSV_VERSION; any
  other or none is refused), then one row per (task, site) that allocated or was
  sampled, tab-separated, header row, sorted by (task, site_id): `task site_id n_allocs
  max_size peak_live_bytes total_bytes first_alloc_ns last_free_ns live_ns samples loads
  stores misses weight fault_samples faults sampled_blocks weight_streaming
  weight_scattered weight_sync` (the last three, the weight by access kind scaled as
  weight, are read as 0 when absent). The lifetime columns have the meanings of
  sites.csv (DESIGN.md §4) for that one process, and are 0 when the site allocated
  nothing there; site 0 collects the samples (and sampled page faults) that no
  allocation site owns (stack, statics without an id, unknown memory, no address); a
  static variable is a site of its own that allocated nothing. Blocks of small-call
  sampling are already scaled (counts, bytes, weight), `sampled_blocks` counts them as
  recorded.
- `allocs.csv`: the per-allocation table in its final form (DESIGN.md §4; written by
  the scanner because it grows with the trace). `hmtune analyze` moves it into place.
- `profile.csv`: each allocation site's sampled weight by offset bucket in its blocks,
  in its final form but for the trace id (docs/formats.md §4, hmtune.analyze.profile);
  `hmtune analyze` moves it into place too. scan.json's `profile_unplaced_samples`
  counts the samples of allocation sites it could not place in a block.
- `scan.json`: counters of the whole trace (records, tasks, end_time_ns,
  total_weight, sampler, alloc_rows, ...); `classes` and `class_weight` the samples and
  their weight by address class ("1".."5", the values of 41000023: the trace's own,
  or for a sample without one derived from its attribution: 1 in an object, 4 an
  address in none, 5 no address), `class_events` how many samples carried 41000023.

Python reads only the first two lines of allocs.csv, so its memory does not depend
on the trace's length. The tables are small (sites x processes), so they are read
into plain lists of dicts: no pandas import on the analyze path.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hmtune.analyze.sites_io import ACCESS_KIND_COLUMNS, ALLOCS_WRITTEN, SAMPLED_COLUMN
from hmtune.core import events as ev
from hmtune.core.stage import ALLOCS

Row = dict[str, Any]

SITE_KEYS = ["task", "site_id"]
LIFETIME_COLUMNS = ["n_allocs", "max_size", "peak_live_bytes", "total_bytes",
                    "first_alloc_ns", "last_free_ns", "live_ns"]
SAMPLE_COLUMNS = ["samples", "loads", "stores", "misses", "weight"]
FAULT_COLUMNS = ["fault_samples", "faults"]     # sampled minor page faults (41000030-31)
SITES_TSV_VERSION = "# hmtune prvscan sites v1"   # PS_SITES_VERSION, analyze/prvscan/ps.h
SITES_TSV_COLUMNS = SITE_KEYS + LIFETIME_COLUMNS + SAMPLE_COLUMNS + FAULT_COLUMNS + [
    SAMPLED_COLUMN] + ACCESS_KIND_COLUMNS
# Columns a sites.tsv may lack (a scanner from before them): read as 0.
OPTIONAL_TSV_COLUMNS = ACCESS_KIND_COLUMNS
META_REQUIRED = ("total_weight", "alloc_rows")


class ScanOutputError(Exception):
    """The scanner's output files are missing or do not have the expected shape."""


@dataclass
class Scan:
    sites: list[Row]         # SITES_TSV_COLUMNS, one row per (task, site)
    meta: dict[str, Any]     # scan.json
    allocs_csv: Path | None = None   # the scanner's allocs.csv

    @property
    def total_weight(self) -> float:
        return float(self.meta["total_weight"])

    @property
    def alloc_rows(self) -> int:
        return int(self.meta["alloc_rows"])

    @property
    def faults(self) -> int:
        """Estimated minor page faults of the whole trace (0 when it has no fault
        samples: traced without them, or by another tool)."""
        return int(self.meta.get("faults", 0))

    @property
    def lookahead_samples(self) -> int:
        """Samples with a look-ahead address (0 for scans from before it existed)."""
        return int(self.meta.get("lookahead_samples", 0))

    @property
    def producer_samples(self) -> int:
        """Samples with the address of the load their instruction (one without memory
        operand) consumed: attributed like direct ones (0 for scans from before)."""
        return int(self.meta.get("producer_samples", 0))

    def kind_samples(self, kind: int) -> int | None:
        """Samples of access kind `kind` (a value of 41000035); None for a scan from
        before the kinds."""
        counts = self.meta.get("kind_samples")
        return int(counts.get(str(kind), 0)) if isinstance(counts, dict) else None

    @property
    def sampler(self) -> str:
        return sampler_name(self.meta.get("sampler"), sum(r["samples"] for r in self.sites))


# Values of event 41000021 -> the samplers' names (their keys in common/trace_values.tsv).
SAMPLER_NAMES = ev.HM_SAMPLER_KEYS
NO_SAMPLER = SAMPLER_NAMES[ev.HM_SAMPLER_NONE]


def sampler_name(value: object, nsamples: int = 0) -> str:
    """scan.json's sampler (a 41000021 code or a name) as a name.

    A trace that declares no sampler but has samples (Extrae's) gives "unknown".
    """
    if isinstance(value, str) and value.strip() and not value.strip().isdigit():
        return value.strip()
    code = int(value) if isinstance(value, int | str) and str(value).strip() else 0
    name = SAMPLER_NAMES.get(code, f"sampler-{code}")
    return "unknown" if name == NO_SAMPLER and nsamples > 0 else name


def _number(text: str) -> int | float:
    """An integer column value; weight may also be written as a float."""
    try:
        return int(text)
    except ValueError:
        value = float(text)
        return int(value) if value.is_integer() else value


def _check_version(path: Path, first: str, version: str) -> None:
    """The file's first line is `version`; else a ScanOutputError that says why."""
    if first == version:
        return
    stem = version.rsplit(" ", 1)[0] + " "
    if not first.startswith(stem):
        raise ScanOutputError(f"{path}: no version line (expected {version!r}): written by "
                              "an older or another hmtune-prvscan; rebuild it (make build)")
    raise ScanOutputError(f"{path}: version {first[len(stem):]!r} is not one this hmtune "
                          f"reads ({version!r}): hmtune-prvscan and the hmtune package "
                          "come from different versions; rebuild (make build)")


def _read_tsv(path: Path, columns: list[str], version: str) -> list[Row]:
    if not path.exists():
        raise ScanOutputError(f"{path}: missing (the scanner did not write it)")
    try:
        lines = path.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise ScanOutputError(f"{path}: {getattr(e, 'strerror', None) or e}") from None
    _check_version(path, lines[0] if lines else "", version)
    header = lines[1].split("\t") if len(lines) > 1 else []
    absent = [c for c in columns if c in OPTIONAL_TSV_COLUMNS and c not in header]
    if header != columns and header != [c for c in columns if c not in absent]:
        raise ScanOutputError(f"{path}: header is {' '.join(header)!r}, expected "
                              f"{' '.join(columns)!r}")
    rows: list[Row] = []
    for lineno, line in enumerate(lines[2:], 3):
        fields = line.split("\t")
        try:
            if len(fields) != len(header):
                raise ValueError(f"{len(fields)} fields, expected {len(header)}")
            row: Row = dict.fromkeys(absent, 0)
            row.update({c: _number(v) for c, v in zip(header, fields, strict=True)})
            rows.append(row)
        except ValueError as e:
            raise ScanOutputError(f"{path}:{lineno}: {e}") from None
    return rows


def _check_allocs_csv(path: Path) -> None:
    """The version line and the header row, without reading the rows."""
    if not path.exists():
        raise ScanOutputError(f"{path}: missing (the scanner did not write it)")
    try:
        with path.open() as fh:
            first, header = fh.readline(), fh.readline().rstrip("\n")
    except OSError as e:
        raise ScanOutputError(f"{path}: {e.strerror or e}") from None
    if not first.startswith("# hmtune allocs v") or header != ",".join(ALLOCS_WRITTEN):
        raise ScanOutputError(f"{path}: not the allocs.csv the scanner writes")


def read_scan(outdir: str | Path) -> Scan:
    """Load what the scanner wrote into `outdir` (allocs.csv is only checked)."""
    d = Path(outdir)
    meta_path = d / "scan.json"
    try:
        meta = json.loads(meta_path.read_text())
    except FileNotFoundError:
        raise ScanOutputError(f"{meta_path}: missing (the scanner did not write it)") from None
    except (OSError, ValueError) as e:
        raise ScanOutputError(f"{meta_path}: {e}") from None
    missing = [k for k in META_REQUIRED if k not in meta]
    if missing:
        raise ScanOutputError(f"{meta_path}: no {', '.join(missing)}")
    sites = _read_tsv(d / "sites.tsv", SITES_TSV_COLUMNS, SITES_TSV_VERSION)
    _check_allocs_csv(d / ALLOCS)
    return Scan(sites, meta, d / ALLOCS)
