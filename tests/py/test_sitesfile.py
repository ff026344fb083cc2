"""sites.csv and allocs.csv are read through one version check (hmtune.core.sitesfile):
the light readers of the workflows (the stage's footprint, sitegroups' groups, run's sizes for
the reservation) and the pandas readers (hmtune.analyze.sites_io) refuse a file without
the version line or of a newer version, naming the file and saying what to do; the
commands that read them (compare, explore, report) stop with one line and write
nothing; a good file reads as before."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from advisefix import MS, STANDARD, standard_dir
from clistage import CRASH, ROOT, THP, hmtune

from hmtune.analyze import profile, sites_io
from hmtune.core import sitesfile
from hmtune.core.sitesfile import SitesFormatError, iter_rows, read_rows
from hmtune.core.stage import Stage, footprint
from hmtune.workflows import reserve, sitegroups

RAW3 = STANDARD[0]["callstack_raw"]

# (what to put in place of the version line, what the error says)
BAD_FIRST_LINES = [
    ("", "not an hmtune sites.csv"),                               # no version line
    ("# hmtune allocs v1 trace=t.prv", "not an hmtune sites.csv"),  # another kind
    ("# hmtune sites v3 trace=t.prv", "sites.csv version 3 is newer"),
]


def spoil(path: Path, first: str) -> None:
    """Replace the file's version line with `first` (drop it when empty)."""
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(([first + "\n"] if first else []) + lines[1:]))


READERS: dict[str, Callable[[Path], object]] = {
    "footprint": footprint,
    "load_groups": lambda p: sitegroups.load_groups(p, 2),
    "read_sizes": lambda p: reserve.read_sizes(Stage(p.parent), {RAW3}),
    "read_rows": read_rows,
    "read_sites": sites_io.read_sites,
}


def test_one_definition() -> None:
    """The pandas readers and the light ones share the core's version check."""
    assert sites_io.parse_version_line is sitesfile.parse_version_line
    assert sites_io.SitesFormatError is SitesFormatError
    assert sites_io.SITES_VERSION == sitesfile.SITES_VERSION
    assert sites_io.ALLOCS_VERSION == sitesfile.ALLOCS_VERSION
    assert profile.PROFILE_VERSION == sitesfile.PROFILE_VERSION
    assert issubclass(profile.ProfileFormatError, SitesFormatError)


def test_core_reader_needs_no_pandas() -> None:
    code = ("import sys, hmtune.core.sitesfile, hmtune.workflows.sitegroups; "
            "sys.exit('pandas' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT).returncode == 0


def test_good_files_read_as_before(tmp_path: Path) -> None:
    d = standard_dir(tmp_path)
    meta, rows = read_rows(d / "sites.csv")
    assert meta["version"] == "1" and meta["trace"] == "t.prv"
    assert [int(r["site_id"]) for r in rows] == [s["site_id"] for s in STANDARD]
    assert footprint(d / "sites.csv") == sum(s["peak_live_bytes"] for s in STANDARD)
    groups, _ = sitegroups.load_groups(d / "sites.csv", 2)
    assert [g.label for g in groups] == ["site 3", "site 4", "rest (3 sites)"]
    sizes = reserve.read_sizes(Stage(d), {RAW3})
    assert sizes[RAW3].max_size == STANDARD[0]["max_size"]
    assert sizes[RAW3].blocks is not None and len(sizes[RAW3].blocks) == 1
    assert float(sites_io.read_sites(d / "sites.csv")["weight"].sum()) == \
        sum(s["weight"] for s in STANDARD) * MS
    meta: dict[str, str] = {}
    assert len(list(iter_rows(d / "allocs.csv", "allocs", ["size"], meta))) == 7
    assert meta["version"] == "1"


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize(("first", "why"), BAD_FIRST_LINES)
def test_readers_refuse_a_wrong_version_line(tmp_path: Path, reader: str, first: str,
                                             why: str) -> None:
    d = standard_dir(tmp_path)
    spoil(d / "sites.csv", first)
    with pytest.raises(SitesFormatError, match=why) as e:
        READERS[reader](d / "sites.csv")
    msg = str(e.value)
    assert msg.startswith(f"{d / 'sites.csv'}: ") and "\n" not in msg
    assert "analyze" in msg                  # says what to do


def test_allocs_of_a_newer_version_refused(tmp_path: Path) -> None:
    d = standard_dir(tmp_path)
    spoil(d / "allocs.csv", "# hmtune allocs v2 trace=t.prv")
    with pytest.raises(SitesFormatError, match="allocs.csv version 2 is newer"):
        reserve.read_sizes(Stage(d), {RAW3})
    with pytest.raises(SitesFormatError, match="allocs.csv version 2 is newer"):
        sites_io.read_allocs(d / "allocs.csv")


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(SitesFormatError, match=f"^{tmp_path / 'nope.csv'}: "):
        read_rows(tmp_path / "nope.csv")
    p = tmp_path / "sites.csv"
    p.write_bytes(b"# hmtune sites v2\nsite_id\n\xff\xfe\n")
    with pytest.raises(SitesFormatError, match="not a readable sites.csv"):
        read_rows(p)
    p.write_text("# hmtune sites v2\nsite_id\n1\n")
    with pytest.raises(SitesFormatError, match="missing column.*peak_live_bytes"):
        read_rows(p, "sites", ["site_id", "peak_live_bytes"])


@pytest.mark.parametrize(("first", "why"), BAD_FIRST_LINES)
def test_commands_refuse_with_one_line(tmp_path: Path, first: str, why: str) -> None:
    """compare and explore (with --fraction: the footprint; with --mem: the groups read
    later) and report stop before running or writing anything."""
    d = standard_dir(tmp_path)
    spoil(d / "sites.csv", first)
    before = sorted(p.name for p in d.iterdir())
    runs = [("compare", "--fraction", "0.5"), ("compare", "--mem", "64M"),
            ("explore", "--mem", "64M")]
    for what, *size in runs:
        r = hmtune(what, "-o", str(d), "--machine", str(THP), "--repeats", "1", *size,
                   "--", str(CRASH), "exit3")
        assert r.returncode == 2, (what, r.stderr)
        assert r.stderr.count("\n") == 1 and r.stderr.startswith(f"hmtune {what}: {d}"), \
            r.stderr
        assert why in r.stderr
    r = hmtune("report", str(d))
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith(f"hmtune report: {d / 'sites.csv'}: ") and why in r.stderr
    assert sorted(p.name for p in d.iterdir()) == before
