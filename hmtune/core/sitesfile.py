"""The version line of hmtune analyze's files (sites.csv, allocs.csv, profile.csv) and
the light reader of their rows (csv only: no pandas, so a command can read them at
start-up).

Each file starts with a comment line naming its kind and version, then `key=value`
fields (values percent-encoded, so they hold no spaces), then a CSV header row:

    # hmtune sites v2 trace=hmtune-out/app/trace.prv sampler=soft ...

Readers refuse a version newer than theirs and a file without the line, so a file of
a newer analyzer (whose columns may mean something else) is never misread. Every
reader goes through parse_version_line: read_rows here, and the pandas readers of
hmtune.analyze.sites_io (read_sites, read_allocs) and hmtune.analyze.profile.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from urllib.parse import quote, unquote

from hmtune.core.version import version as release

SITES_VERSION = 2
ALLOCS_VERSION = 1
PROFILE_VERSION = 1
COUNTERS_VERSION = 1
# The newest version of each kind this hmtune reads.
VERSIONS = {"sites": SITES_VERSION, "allocs": ALLOCS_VERSION, "profile": PROFILE_VERSION,
            "counters": COUNTERS_VERSION}

RELEASE_KEY = "hmtune"             # the version line's field naming the writer's release
_VERSION_LINE = re.compile(r"^# hmtune (?P<kind>\w+) v(?P<version>\d+)(?P<rest>.*)$")
_SAFE = "/:+!,.-_~@()[]"
REDO = "re-run hmtune analyze on the trace"


class SitesFormatError(ValueError):
    """A sites.csv / allocs.csv / profile.csv that this reader cannot read; str() names
    the file and says why."""


def version_line(kind: str, version: int, **fields: object) -> str:
    """`# hmtune <kind> v<version> k=v ... hmtune=VERSION` (values percent-encoded; the
    last field names the hmtune release that wrote the file)."""
    parts = [f"# hmtune {kind} v{version}"]
    parts += [f"{k}={quote(str(v), safe=_SAFE)}" for k, v in fields.items()]
    parts.append(release_field())
    return " ".join(parts)


def release_field() -> str:
    """`hmtune=VERSION`: the field of every version line that names the writer's release
    (hmtune.core.version)."""
    return f"{RELEASE_KEY}={quote(release(), safe=_SAFE)}"


def parse_version_line(line: str, kind: str, supported: int,
                       path: str | Path = "<input>") -> dict[str, str]:
    """Check a version line; return its fields (with `version`). Raises
    SitesFormatError for another kind of file, no version line, or a version newer
    than `supported`."""
    m = _VERSION_LINE.match(line.rstrip("\r\n"))
    if not m or m["kind"] != kind:
        raise SitesFormatError(f"{path}: not an hmtune {kind}.csv (its first line should be"
                               f" '# hmtune {kind} v{supported} ...'; {REDO})")
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


def iter_rows(path: str | Path, kind: str = "sites", required: Iterable[str] = (),
              meta: dict[str, str] | None = None) -> Iterator[dict[str, str]]:
    """The rows (text, by column) of a file of `kind` ("sites", "allocs" or "profile"),
    one at a time (allocs.csv has a row per block); its version line's fields go into
    `meta` when given. Raises SitesFormatError (naming the file) when it cannot be read,
    is not such a file, is of a newer version, or lacks a column of `required`."""
    p = Path(path)
    try:
        with p.open(newline="") as fh:
            fields = parse_version_line(fh.readline(), kind, VERSIONS[kind], p)
            if meta is not None:
                meta.update(fields)
            reader = csv.DictReader(fh)
            missing = [c for c in required if c not in (reader.fieldnames or [])]
            if missing:
                raise SitesFormatError(f"{p}: missing column(s) {', '.join(missing)} "
                                       f"({REDO})")
            yield from reader
    except OSError as e:
        raise SitesFormatError(f"{p}: {e.strerror or e}") from None
    except SitesFormatError:
        raise
    except (ValueError, csv.Error) as e:     # UnicodeDecodeError is a ValueError
        raise SitesFormatError(f"{p}: not a readable {kind}.csv ({e}; {REDO})") from None


def read_rows(path: str | Path, kind: str = "sites", required: Iterable[str] = ()
              ) -> tuple[dict[str, str], list[dict[str, str]]]:
    """The version line's fields and all the rows of a file of `kind` (iter_rows)."""
    meta: dict[str, str] = {}
    rows = list(iter_rows(path, kind, required, meta))
    return meta, rows

