"""The `sites.csv` / `allocs.csv` contract: version line, columns, and the readers.

Both files start with a comment line naming the file kind and its version, then
`key=value` fields (values percent-encoded, so they hold no spaces):

    # hmtune sites v1 trace=hmtune-out/app/trace.prv sampler=soft label_form=module+0xoffset
    # hmtune allocs v1 trace=hmtune-out/app/trace.prv

then a CSV header row and the rows. Readers refuse a version newer than theirs, so an
old advisor never misreads a newer analyzer's columns.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote

if TYPE_CHECKING:        # the readers load pandas; the writers (hmtune analyze) do not
    import pandas as pd

SITES_VERSION = 1
ALLOCS_VERSION = 1

SITES_COLUMNS = ["site_id", "callstack", "callstack_raw", "n_allocs", "max_size",
                 "peak_live_bytes", "total_bytes", "first_alloc_ns", "last_free_ns", "live_ns",
                 "samples", "loads", "stores", "misses", "weight", "share", "density"]
# Written after SITES_COLUMNS by hmtune analyze; readers do not require it (older
# files lack it: analyze.shortlabels.labels_for_rows makes it from the chains).
LABEL_COLUMN = "label"
# Small-call sampling (docs/formats.md §4): sites.csv's blocks recorded 1 in N (0: the
# row is exact) and allocs.csv's blocks a row stands for. Written after the others;
# readers do not require them (older files are exact: 0 and 1).
SAMPLED_COLUMN = "sampled_blocks"
SCALE_COLUMN = "scale"
SITES_WRITTEN = [*SITES_COLUMNS, LABEL_COLUMN, SAMPLED_COLUMN]
ALLOCS_COLUMNS = ["site_id", "rank", "thread", "ptr", "size", "t_alloc", "t_free"]
ALLOCS_WRITTEN = [*ALLOCS_COLUMNS, SCALE_COLUMN]

_VERSION_LINE = re.compile(r"^# hmtune (?P<kind>\w+) v(?P<version>\d+)(?P<rest>.*)$")
_SAFE = "/:+!,.-_~@()[]"


class SitesFormatError(ValueError):
    """A sites.csv / allocs.csv that this reader cannot read; str() says why."""


def version_line(kind: str, version: int, **fields: object) -> str:
    """`# hmtune <kind> v<version> k=v ...` (values percent-encoded)."""
    parts = [f"# hmtune {kind} v{version}"]
    parts += [f"{k}={quote(str(v), safe=_SAFE)}" for k, v in fields.items()]
    return " ".join(parts)


def parse_version_line(line: str, kind: str, supported: int,
                       path: str | Path = "<input>") -> dict[str, str]:
    """Check a version line; return its fields. Raises SitesFormatError."""
    m = _VERSION_LINE.match(line.rstrip("\r\n"))
    if not m or m["kind"] != kind:
        raise SitesFormatError(f"{path}: not an hmtune {kind}.csv (its first line should be"
                               f" '# hmtune {kind} v{supported} ...')")
    version = int(m["version"])
    if version > supported:
        raise SitesFormatError(f"{path}: {kind}.csv version {version} is newer than this "
                               f"hmtune reads (up to v{supported}); update hmtune, or re-run "
                               "this hmtune's analyze on the trace")
    fields: dict[str, str] = {"version": str(version)}
    for token in m["rest"].split():
        key, sep, value = token.partition("=")
        if sep:
            fields[key] = unquote(value)
    return fields


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
    missing columns. A `rank` column is present when the file was written per rank.
    """
    return _read(path, "sites", SITES_VERSION, SITES_COLUMNS,
                 {"callstack": str, "callstack_raw": str, LABEL_COLUMN: str})


def read_allocs(path: str | Path) -> pd.DataFrame:
    """Read an allocs.csv (ptr stays text, `0x...`); same checks as read_sites."""
    return _read(path, "allocs", ALLOCS_VERSION, ALLOCS_COLUMNS, {"ptr": str})
