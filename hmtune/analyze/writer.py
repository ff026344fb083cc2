"""Write `sites.csv` and put the scanner's `allocs.csv` and `profile.csv` in place
(DESIGN.md §4; formats in hmtune.analyze.sites_io and hmtune.analyze.profile).

sites.csv is written atomically (hmtune.core.files), so a reader never sees half a file.
allocs.csv is written whole by the scanner (its rows grow with the trace, so they
never pass through Python); its version line gets the trace id and the release
(`hmtune=VERSION`, as every version line has) and the rows are copied
behind it (copy_file_range) into a temporary file that is renamed into place.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from hmtune.analyze.profile import PROFILE_VERSION, profile_line
from hmtune.analyze.sites import SiteTable
from hmtune.analyze.sites_io import SITES_VERSION, Split, parse_version_line, version_line
from hmtune.analyze.traceid import FIELD
from hmtune.core.files import write_atomic
from hmtune.core.sitesfile import release_field


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
                label_form: str, trace_id: str | None = None,
                split: Split | None = None, samples_compute: int | None = None,
                samples_lookahead: int = 0) -> None:
    """`# hmtune sites v2 trace=... trace-id=... sampler=... label_form=...
    samples_CLASS=... weight_CLASS=...` (the split when given) `samples_compute=N`
    (when given: samples of access kind compute) `samples_lookahead=N` (when some:
    look-ahead samples the split counts as no_address), header, rows."""
    ids = {FIELD: trace_id} if trace_id else {}
    compute = {"samples_compute": samples_compute} if samples_compute is not None else {}
    if samples_lookahead:
        compute["samples_lookahead"] = samples_lookahead
    line = version_line("sites", SITES_VERSION, trace=trace, **ids,
                        sampler=_one_word(sampler), label_form=label_form,
                        **(split.fields() if split is not None else {}), **compute)
    _write(Path(path), line, sites)


def _copy_rest(src: BinaryIO, start: int, dst: BinaryIO) -> None:
    """src from byte `start` on, appended to dst (in the kernel when it can)."""
    dst.flush()
    pos, out = start, dst.tell()
    try:
        while n := os.copy_file_range(src.fileno(), dst.fileno(), 1 << 30, pos, out):
            pos, out = pos + n, out + n
    except OSError:
        src.seek(pos)
        dst.seek(out)
        shutil.copyfileobj(src, dst, 1 << 20)


def install_allocs(scanned: str | Path, path: str | Path, trace_id: str | None = None) -> None:
    """Put the scanner's allocs.csv at `path`: its version line with `trace-id=` (when
    given) and `hmtune=VERSION` added (the rest copied as it is), written next to `path`
    under a temporary name and renamed."""
    def with_id(first: bytes) -> bytes:
        tid = f" {FIELD}={trace_id}" if trace_id is not None else ""
        return first.rstrip(b"\r\n") + f"{tid} {release_field()}\n".encode()

    _install(scanned, path, with_id)


def install_profile(scanned: str | Path, path: str | Path, trace_id: str | None = None) -> None:
    """Put the scanner's profile.csv at `path` as install_allocs does, its version line
    made again in the order of docs/formats.md: `trace=`, `trace-id=`, `granularity=`."""
    def with_id(first: bytes) -> bytes:
        meta = parse_version_line(first.decode(), "profile", PROFILE_VERSION, scanned)
        return (profile_line(meta["trace"], trace_id, int(meta["granularity"])) + "\n").encode()

    _install(scanned, path, with_id)


def _install(scanned: str | Path, path: str | Path,
             first_line: Callable[[bytes], bytes]) -> None:
    """`scanned` to `path` (atomically), its first line replaced by first_line(line)."""
    src, dst = Path(scanned), Path(path)
    tmp = dst.with_name(f".{dst.name}.tmp.{os.getpid()}")
    try:
        with src.open("rb") as fin, tmp.open("wb") as fout:
            first = fin.readline()
            fout.write(first_line(first))
            _copy_rest(fin, len(first), fout)
            fout.flush()
            os.fsync(fout.fileno())
        os.replace(tmp, dst)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
