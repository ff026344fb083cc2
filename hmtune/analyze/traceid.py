"""Which trace an output was made from (docs/formats.md §4 "Trace id").

A trace's id is the first 16 hex digits of the SHA-256 of its first line (the
`#Paraver (date at time):end_ns:layout` header) and its size in bytes: it needs no
file of hmtune's, so a real Extrae trace has one too, and it changes whenever the
trace is written again (another date, end time or length). `hmtune analyze` writes it
into sites.csv and allocs.csv (`trace-id=`), `hmtune advise` into placement.txt and
report.txt, and `hmtune advise` refuses a sites.csv whose id is not that of the trace
next to it. `hmtune trace` moves the derived outputs of an earlier trace aside
(`stale_outputs`, `move_aside`).
"""

from __future__ import annotations

import gzip
import hashlib
import re
import shutil
import zlib
from pathlib import Path

from hmtune.core.stage import (
    ALLOCS,
    CALIBRATION,
    COMPARE,
    COUNTERS,
    CURVE,
    CURVE_PNG,
    EXPLORE,
    PLACEMENT,
    PROFILE,
    REPORT,
    REPORT_DIR,
    SITES,
    STALE,
    TRACE,
)

FIELD = "trace-id"                   # key of the version line / placement comment
STALE_DIR = STALE                    # DIR/stale/: outputs of an earlier trace
# `trace-id=ID` in the text outputs, `"trace_id": "ID"` in calibration.json
_IN_TEXT = re.compile(r"\btrace[-_]id\"?[=:]\s*\"?([0-9a-f]{16})\b")
_CURVE_HEADER = b"capacity_bytes,share_of_capturable,share_of_total"
_PNG = b"\x89PNG\r\n\x1a\n"
PNG_SOFTWARE = "hmtune advise"       # capacity_curve.png's Software text chunk


def trace_id(prv: Path) -> str | None:
    """The id of the trace at prv (`.prv` or `.prv.gz`), None when it cannot be read."""
    try:
        size = prv.stat().st_size
        opener = gzip.open if prv.name.endswith(".gz") else open
        with opener(prv, "rb") as fh:
            first = fh.readline(1 << 16)
    except (OSError, EOFError, zlib.error):
        return None
    digest = hashlib.sha256(first.rstrip(b"\r\n") + b"\n" + str(size).encode())
    return digest.hexdigest()[:16]


def trace_next_to(directory: Path, recorded: str | None) -> Path | None:
    """The trace in `directory` an output there was made from: the file of the name its
    `trace=` field records (trace.prv when it records none), when it is there."""
    p = directory / (Path(recorded).name if recorded else TRACE)
    return p if p.is_file() else None


def recorded_id(path: Path) -> str | None:
    """The trace id an hmtune output records in its first lines, None without one."""
    try:
        with path.open("rb") as fh:
            head = fh.read(4096).decode("utf-8", "replace")
    except OSError:
        return None
    m = _IN_TEXT.search(head)
    return m.group(1) if m else None


# ---- the derived outputs hmtune knows, recognized by what hmtune writes first ----

def _starts(path: Path, prefix: bytes) -> bool:
    try:
        with path.open("rb") as fh:
            return fh.read(len(prefix)) == prefix
    except OSError:
        return False


def _png_by_hmtune(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            head = fh.read(8192)
    except OSError:
        return False
    return head.startswith(_PNG) and b"Software\x00" + PNG_SOFTWARE.encode() in head


def written_by_hmtune(path: Path) -> bool:
    """Whether path is one of the derived outputs of a stage directory as hmtune
    writes it (sites.csv, allocs.csv, profile.csv, counters.csv, placement.txt, report.txt,
    capacity_curve.*, calibration.json)."""
    name = path.name
    if name == CURVE_PNG:                 # older ones carry no mark: go by their csv
        return _png_by_hmtune(path) or (
            _starts(path, _PNG) and written_by_hmtune(path.with_name(CURVE)))
    prefix = {SITES: b"# hmtune sites v", ALLOCS: b"# hmtune allocs v",
              PROFILE: b"# hmtune profile v", COUNTERS: b"# hmtune counters v",
              PLACEMENT: b"# hmtune placement v", REPORT: b"hmtune advise report",
              CURVE: _CURVE_HEADER,
              CALIBRATION: b'{\n "format": "hmtune calibration v'}.get(name)
    return prefix is not None and _starts(path, prefix)


DERIVED = (SITES, ALLOCS, PROFILE, COUNTERS, PLACEMENT, REPORT, CURVE, CURVE_PNG, CALIBRATION)


# Directories of results derived from a trace (hmtune compare, explore, report), known
# by a file hmtune writes in each; they record no trace id: a new trace makes any there
# stale (they measured or showed the placements of the trace before it).
DERIVED_DIRS = {COMPARE: ("config.json", "runs.csv"), EXPLORE: ("config.json", "runs.csv"),
                REPORT_DIR: ("report.md",)}


def stale_outputs(directory: Path, new_id: str | None) -> list[Path]:
    """The derived outputs in directory that hmtune wrote and that do not record
    new_id (made from an earlier trace, or by a hmtune that recorded no id), then the
    result directories of DERIVED_DIRS there."""
    found = [directory / n for n in DERIVED
             if (directory / n).is_file() and written_by_hmtune(directory / n)]
    files = [p for p in found if new_id is None or recorded_id(p) != new_id]
    return files + [directory / d for d in DERIVED_DIRS if _results_dir(directory / d)]


def _results_dir(d: Path) -> bool:
    return d.is_dir() and any((d / m).is_file() for m in DERIVED_DIRS.get(d.name, ()))


def move_aside(files: list[Path], directory: Path) -> tuple[list[Path], list[Path]]:
    """Move files into directory/stale/ (replacing only files there that hmtune wrote);
    returns (moved, left in place)."""
    moved: list[Path] = []
    left: list[Path] = []
    if not files:
        return moved, left
    dest = directory / STALE_DIR
    try:
        dest.mkdir(exist_ok=True)
    except OSError:
        return moved, list(files)
    for f in files:
        target = dest / f.name
        ours = (target.is_file() and written_by_hmtune(target)) or _results_dir(target)
        if target.exists() and not ours:
            left.append(f)
            continue
        try:
            if target.is_dir():
                shutil.rmtree(target)     # an older trace's, set aside before
            f.replace(target)
            moved.append(f)
        except OSError:
            left.append(f)
    return moved, left
