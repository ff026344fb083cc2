"""Write `sites.csv` and put the scanner's `allocs.csv` in place (DESIGN.md §4; format
in analyze.sites_io).

sites.csv is written atomically (workflows.fileio), so a reader never sees half a file.
allocs.csv is written whole by the scanner (its rows grow with the trace, so they
never pass through Python) and moved into place the same way.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
from pathlib import Path

from analyze.sites import SiteTable
from analyze.sites_io import SITES_VERSION, version_line
from workflows.fileio import write_atomic


def _one_word(text: str) -> str:
    """Sampler descriptions like "soft 250 Hz" become one token: "soft_250_Hz"."""
    return "_".join(str(text).split()) or "none"


def _write(path: Path, first_line: str, table: SiteTable) -> None:
    """The version line, then the table as CSV: minimal quoting, '\n' line ends, floats
    in their shortest round-trip form (what pandas' to_csv writes too)."""
    buf = io.StringIO()
    buf.write(first_line + "\n")
    out = csv.writer(buf, lineterminator="\n")
    out.writerow(table.columns)
    out.writerows([r[c] for c in table.columns] for r in table.rows)
    write_atomic(path, buf.getvalue())


def write_sites(path: str | Path, sites: SiteTable, trace: str, sampler: str,
                label_form: str) -> None:
    """`# hmtune sites v1 trace=... sampler=... label_form=...`, header, rows."""
    line = version_line("sites", SITES_VERSION, trace=trace, sampler=_one_word(sampler),
                        label_form=label_form)
    _write(Path(path), line, sites)


def install_allocs(scanned: str | Path, path: str | Path) -> None:
    """Move the scanner's allocs.csv to `path` (a rename when on the same file system,
    else a copy to `NAME.tmp` and a rename)."""
    src, dst = Path(scanned), Path(path)
    try:
        os.replace(src, dst)
    except OSError:
        tmp = dst.with_name(dst.name + ".tmp")
        shutil.copyfile(src, tmp)
        os.replace(tmp, dst)
