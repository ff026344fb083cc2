"""`hmtune analyze` as a user runs it: errors, empty traces and output files, with a
stand-in scanner (so these tests do not depend on the C scanner being built)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hmtune.analyze.scan_io import SITES_TSV_COLUMNS, SITES_TSV_VERSION
from hmtune.analyze.sites_io import (
    ACCESS_KIND_COLUMNS,
    ALLOCS_WRITTEN,
    SITES_WRITTEN,
    read_allocs,
    read_sites,
)
from hmtune.analyze.traceid import trace_id
from hmtune.core.sitesfile import release_field
from hmtune.core.version import version

ROOT = Path(__file__).resolve().parents[2]
HMTUNE = ROOT / "bin" / "hmtune"

# Copies the files prepared in $FAKE_SCAN (or fails with $FAKE_FAIL), logs its argv.
FAKE_SCANNER = f"""#!{sys.executable}
import os, shutil, sys
args = sys.argv[1:]
with open(os.environ["FAKE_LOG"], "w") as f:
    f.write("\\n".join(args))
if os.environ.get("FAKE_FAIL"):
    sys.stderr.write("50%\\r" + os.environ["FAKE_FAIL"] + "\\n")
    sys.exit(1)
out = args[args.index("-o") + 1]
for name in ("allocs.csv", "sites.tsv", "scan.json"):
    shutil.copy(os.path.join(os.environ["FAKE_SCAN"], name), out)
sys.stderr.write("hmtune-prvscan: skipped 2 bad lines\\n")
"""

AHEAD = "# hmtune allocs v1 trace=x.prv\nsite_id,rank,thread,ptr,size,t_alloc,t_free,scale\n"
# the stand-in scanner writes the columns before the access kinds' (read as 0)
SHEAD = SITES_TSV_VERSION + "\n" + "\t".join(
    c for c in SITES_TSV_COLUMNS if c not in ACCESS_KIND_COLUMNS) + "\n"
PCF = """EVENT_TYPE
0    32000009    Allocation memory object
VALUES
3 /src/app.c:10 > ./csu/libc-start.c:58
4 /src/app.c:11 > ./csu/libc-start.c:58
EVENT_TYPE
0    41000010    hmtune allocation site (module+offset chain)
VALUES
3 /opt/app+0x10 > /lib/libc.so.6+0x20
4 /opt/app+0x14 > /lib/libc.so.6+0x20
"""


@pytest.fixture()
def env(tmp_path: Path) -> dict[str, str]:
    build = tmp_path / "build"
    (build / "bin").mkdir(parents=True)
    scanner = build / "bin" / "hmtune-prvscan"
    scanner.write_text(FAKE_SCANNER)
    scanner.chmod(0o755)
    scan = tmp_path / "scan"
    scan.mkdir()
    e = dict(os.environ, HMTUNE_BUILD=str(build), FAKE_SCAN=str(scan),
             FAKE_LOG=str(tmp_path / "argv.txt"))
    e.pop("FAKE_FAIL", None)
    return e


def site(task: int, site_id: int, blocks: tuple[int, int, int] | None = None,
         samples: tuple[int, int, int, int, int] = (0, 0, 0, 0, 0),
         faults: tuple[int, int] = (0, 0)) -> str:
    """A sites.tsv row: one block (size, t_alloc, t_end) or none, sample counters and
    fault counters (samples, faults)."""
    size, t0, t1 = blocks or (0, 0, 0)
    life = (1, size, size, size, t0, t1, t1 - t0) if blocks else (0,) * 7
    return "\t".join(str(v) for v in (task, site_id, *life, *samples, *faults, 0)) + "\n"


def prepare(env: dict[str, str], allocs: str, sites: str, meta: dict) -> None:
    d = Path(env["FAKE_SCAN"])
    (d / "allocs.csv").write_text(AHEAD + allocs)
    (d / "sites.tsv").write_text(SHEAD + sites)
    (d / "scan.json").write_text(json.dumps(meta))


def make_trace(d: Path, pcf: str | None = PCF) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    prv = d / "trace.prv"
    prv.write_text("#Paraver (01/01/2026 at 00:00):1000_ns:1(1):1:1(1:1),0\n")
    if pcf is not None:
        (d / "trace.pcf").write_text(pcf)
    return prv


def analyze(env: dict[str, str], *args: str,
            cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(HMTUNE), "analyze", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_missing_trace(env: dict[str, str], tmp_path: Path) -> None:
    r = analyze(env, str(tmp_path / "nope.prv"))
    assert r.returncode == 2
    missing = tmp_path / "nope.prv"
    assert r.stderr.splitlines() == [f"hmtune analyze: {missing}: no such trace file"]


def test_missing_scanner(env: dict[str, str], tmp_path: Path) -> None:
    env["HMTUNE_BUILD"] = str(tmp_path / "empty-build")
    r = analyze(env, str(make_trace(tmp_path / "app")))
    assert r.returncode == 2
    assert len(r.stderr.splitlines()) == 1 and "run 'make'" in r.stderr


def test_usage_errors(env: dict[str, str], tmp_path: Path) -> None:
    assert analyze(env).returncode == 2
    assert analyze(env, str(make_trace(tmp_path / "app")), "--top", "-1").returncode == 2


def test_scanner_failure_message_passed_through(env: dict[str, str], tmp_path: Path) -> None:
    env["FAKE_FAIL"] = "hmtune-prvscan: trace.prv:7: event record has 9 fields"
    prv = make_trace(tmp_path / "app")
    r = analyze(env, str(prv))
    assert r.returncode == 1
    assert r.stderr.splitlines() == [
        "hmtune analyze: hmtune-prvscan: trace.prv:7: event record has 9 fields"]
    assert not (prv.parent / "sites.csv").exists()
    assert sorted(p.name for p in prv.parent.iterdir()) == ["trace.pcf", "trace.prv"]


def test_unknown_sites_tsv_version_refused(env: dict[str, str], tmp_path: Path) -> None:
    """A scanner whose sites.tsv has another version: a clear error, nothing written."""
    prepare(env, "", site(1, 0, samples=(4, 4, 0, 0, 40)),
            {"end_time_ns": 1000, "total_weight": 40, "alloc_rows": 0})
    scan = Path(env["FAKE_SCAN"]) / "sites.tsv"
    scan.write_text(scan.read_text().replace(SITES_TSV_VERSION, "# hmtune prvscan sites v2"))
    prv = make_trace(tmp_path / "app")
    r = analyze(env, str(prv))
    assert r.returncode == 1
    assert "sites.tsv: version 'v2' is not one this hmtune reads" in r.stderr, r.stderr
    assert sorted(p.name for p in prv.parent.iterdir()) == ["trace.pcf", "trace.prv"]


def test_empty_trace_writes_headers(env: dict[str, str], tmp_path: Path) -> None:
    prepare(env, "", site(1, 0, samples=(4, 4, 0, 0, 40)),
            {"end_time_ns": 1000, "total_weight": 40, "alloc_rows": 0})
    prv = make_trace(tmp_path / "app")
    r = analyze(env, str(prv))
    assert r.returncode == 0, r.stderr
    assert "no allocations" in r.stderr and r.stdout == ""
    sites = read_sites(prv.parent / "sites.csv")
    assert sites.empty and list(sites.columns) == SITES_WRITTEN
    allocs = read_allocs(prv.parent / "allocs.csv")
    assert allocs.empty and list(allocs.columns) == ALLOCS_WRITTEN


def test_outputs_next_to_the_trace(env: dict[str, str], tmp_path: Path) -> None:
    prepare(env, "3,0,1,0x1000,100,10,500,1\n4,0,1,0x2000,64,20,-1,1\n",
            site(1, 0, samples=(2, 2, 0, 0, 400)) + site(1, 3, (100, 10, 500), (5, 5, 0, 0, 500))
            + site(1, 4, (64, 20, 1000), (1, 0, 1, 1, 100)),
            {"end_time_ns": 1000, "total_weight": 1000, "sampler": 3, "alloc_rows": 2})
    make_trace(tmp_path / "hmtune-out" / "app")
    r = analyze(env, "hmtune-out/app/trace.prv", "--skip-bad", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "hmtune-out" / "app"
    sites = read_sites(out / "sites.csv")
    tid = trace_id(out / "trace.prv")
    assert tid is not None and len(tid) == 16
    assert sites.attrs["meta"] == {"version": "2", "trace": "hmtune-out/app/trace.prv",
                                   "trace-id": tid, "sampler": "soft",
                                   "label_form": "module+0xoffset", "hmtune": version()}
    allocs = read_allocs(out / "allocs.csv")
    assert allocs.attrs["meta"] == {"version": "1", "trace": "x.prv", "trace-id": tid,
                                    "hmtune": version()}
    assert list(sites["site_id"]) == [3, 4]
    assert list(sites["share"]) == [0.5, 0.1]
    assert sites.loc[0, "callstack_raw"] == "/opt/app+0x10 > /lib/libc.so.6+0x20"
    assert list(read_allocs(out / "allocs.csv")["ptr"]) == ["0x1000", "0x2000"]
    argv = (tmp_path / "argv.txt").read_text().split("\n")
    assert argv[0] == "hmtune-out/app/trace.prv" and "--skip-bad" in argv
    assert "hmtune-prvscan: skipped 2 bad lines" in r.stderr       # scanner notes shown
    assert "40.0% of the sampled weight is outside allocation sites" in r.stderr
    table = r.stdout.splitlines()
    assert table[0].split() == ["site", "weight", "share", "peak", "allocs", "call", "site"]
    assert table[1].split()[:4] == ["3", "500", "50.0%", "100"]
    assert table[1].endswith("  app.c:10")                       # the short label
    assert all(len(line) <= 100 for line in table)
    assert not list(out.glob(".hmtune-scan-*"))                  # scratch dir removed


def test_out_dir_per_rank_top(env: dict[str, str], tmp_path: Path) -> None:
    prepare(env, "3,0,1,0x1000,100,10,500,1\n3,1,1,0x1000,300,10,500,1\n",
            site(1, 3, (100, 10, 500), (1, 1, 0, 0, 10))
            + site(2, 3, (300, 10, 500), (1, 1, 0, 0, 30)),
            {"end_time_ns": 1000, "total_weight": 40, "sampler": "pebs", "alloc_rows": 2})
    prv = make_trace(tmp_path / "app", pcf=None)
    r = analyze(env, str(tmp_path / "app"), "-o", str(tmp_path / "o"), "--per-rank",
                "--top", "1")
    assert r.returncode == 0, r.stderr
    assert "no trace.pcf" in r.stderr
    sites = read_sites(tmp_path / "o" / "sites.csv")
    assert list(zip(sites["site_id"], sites["rank"], strict=True)) == [(3, 1), (3, 0)]
    assert list(sites["callstack"]) == ["site 3", "site 3"]
    assert sites.attrs["meta"]["label_form"] == "none"
    assert len(r.stdout.splitlines()) == 2 and "rank" in r.stdout.splitlines()[0]
    assert not (prv.parent / "sites.csv").exists()


def test_trace_id_changes_with_the_trace(tmp_path: Path) -> None:
    """The id is the header line and the size: another trace (another end time, another
    length) has another id; the same bytes, gzipped or not, keep theirs."""
    import gzip

    a = make_trace(tmp_path / "a")
    b = make_trace(tmp_path / "b")
    assert trace_id(a) == trace_id(b)
    b.write_text(a.read_text().replace("1000_ns", "1001_ns"))
    assert trace_id(a) != trace_id(b)
    b.write_text(a.read_text() + "1:1:1:1:1:0:10:1\n")
    assert trace_id(a) != trace_id(b)
    gz = tmp_path / "a" / "t.prv.gz"
    gz.write_bytes(gzip.compress(a.read_bytes()))
    assert trace_id(gz) is not None and trace_id(tmp_path / "none.prv") is None


def test_allocs_copied_whole_without_copy_file_range(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The trace id goes into allocs.csv's version line, the rows are copied as they
    are (also where copy_file_range fails), and the scanner's file is left alone."""
    from hmtune.analyze.writer import install_allocs

    rows = "".join(f"3,0,1,0x{i:x},{i},10,-1,1\n" for i in range(1, 50000))
    src = tmp_path / "scan.csv"
    src.write_text(AHEAD + rows)

    def refuse(*args: object) -> int:
        raise OSError(38, "not here")

    for name, patch in (("kernel", False), ("python", True)):
        if patch:
            monkeypatch.setattr(os, "copy_file_range", refuse)
        dst = tmp_path / name / "allocs.csv"
        dst.parent.mkdir()
        install_allocs(src, dst, "0123456789abcdef")
        text = dst.read_text()
        assert text == AHEAD.replace(
            "x.prv\n", f"x.prv trace-id=0123456789abcdef {release_field()}\n") + rows
        assert sorted(p.name for p in dst.parent.iterdir()) == ["allocs.csv"]
    assert src.read_text() == AHEAD + rows


def test_unwritable_output(env: dict[str, str], tmp_path: Path) -> None:
    prepare(env, "", "", {"end_time_ns": 1, "total_weight": 0, "alloc_rows": 0})
    blocker = tmp_path / "file"
    blocker.write_text("")
    r = analyze(env, str(make_trace(tmp_path / "app")), "-o", str(blocker / "sub"))
    assert r.returncode == 1 and "cannot write to" in r.stderr
