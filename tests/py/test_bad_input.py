"""Bad input and unfriendly surroundings across the stages (issue 13, "Nothing lost,
nothing killed"): outputs follow the umask, a .pcf that is not the trace's changes
nothing, outputs of another trace are never read as this one's."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest
from prvtext import HMTUNE, PRVSCAN, PrvText, pcf_text, read_csv
from tracemodel import PROGRAMS, trace

from hmtune.analyze.sites_io import read_allocs, read_sites
from hmtune.analyze.traceid import trace_id
from hmtune.core.placement import read_placement

pytestmark = pytest.mark.skipif(not PRVSCAN.exists(), reason="hmtune-prvscan is not built (make)")

APP = "/opt/app"
LIBC = "/lib/x86_64-linux-gnu/libc.so.6"


def small_trace(d: Path, offset: int = 0x10, small: int = 1 << 16) -> Path:
    """Two sites (3: 1 MiB, heavily sampled; 4: `small` bytes), a .pcf with both label
    tables."""
    t = PrvText()
    t.alloc(100, 1 << 20, 3, 0x10000000)
    t.alloc(200, small, 4, 0x20000000)
    for i in range(5):
        t.sample(300 + i, 0x10000000 + 64 * i, weight=10, obj=3)
    t.sample(400, 0x20000000, weight=1, obj=4)
    t.free(500, 0x10000000)
    t.free(600, 0x20000000)
    raw = {3: f"{APP}+0x{offset:x} > {LIBC}+0x20", 4: f"{APP}+0x{offset + 4:x} > {LIBC}+0x20"}
    return t.write(d, pcf=pcf_text({3: "app.c:10", 4: "app.c:11"}, raw))


def hmtune(*args: str, mask: int | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(HMTUNE), *args], capture_output=True, text=True, timeout=300,
                          preexec_fn=None if mask is None else (lambda: os.umask(mask)))


# ---- every output follows the umask ----

@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002], ids=["022", "077", "002"])
def test_outputs_follow_the_umask(tmp_path: Path, mask: int) -> None:
    d = tmp_path / "stage"
    small_trace(d)
    assert hmtune("analyze", str(d / "trace.prv"), mask=mask).returncode == 0
    r = hmtune("advise", str(d), "--mem", "2M", mask=mask)
    assert r.returncode == 0, r.stderr
    names = ["sites.csv", "allocs.csv", "placement.txt", "report.txt", "capacity_curve.csv",
             "capacity_curve.png"]
    modes = {n: stat.S_IMODE((d / n).stat().st_mode) for n in names}
    assert modes == dict.fromkeys(names, 0o666 & ~mask)


# ---- a .pcf that is there but is not the trace's ----

GARBAGE_PCF = {
    "binary": b"\x89PNG\r\n\x1a\n\xff\xfe\x00\x01garbage",
    "text": b"this is not a pcf\nat all\n",
    "syntax": b"EVENT_TYPE\n0    4000x041    Requested size\n",
    "no-site-table": b"EVENT_TYPE\n0    40000040    Dynamic memory calls\nVALUES\n1 malloc\n",
}


@pytest.mark.parametrize("kind", sorted(GARBAGE_PCF))
def test_garbage_pcf_leaves_sites_csv_alone(tmp_path: Path, kind: str) -> None:
    """A .pcf that cannot be read or has no site table stops analyze (exit 1) and the
    earlier sites.csv and allocs.csv stay as they were (their call stacks with them)."""
    d = tmp_path / "stage"
    small_trace(d)
    assert hmtune("analyze", str(d / "trace.prv")).returncode == 0
    before = {n: (d / n).read_bytes() for n in ("sites.csv", "allocs.csv")}
    (d / "trace.pcf").write_bytes(GARBAGE_PCF[kind])
    r = hmtune("analyze", str(d / "trace.prv"))
    assert r.returncode == 1
    assert {n: (d / n).read_bytes() for n in before} == before
    assert not [p.name for p in d.iterdir() if p.name.startswith(".")]   # no leftovers


def test_missing_pcf_is_only_a_warning(tmp_path: Path) -> None:
    d = tmp_path / "stage"
    small_trace(d)
    (d / "trace.pcf").unlink()
    assert hmtune("analyze", str(d / "trace.prv")).returncode == 0
    rows = read_csv(d / "sites.csv")
    assert sorted(r["site_id"] for r in rows) == ["3", "4"]
    assert all(r["callstack_raw"] == "" for r in rows)        # numbered sites


# ---- outputs know their trace ----

def test_advise_refuses_sites_of_another_trace(tmp_path: Path) -> None:
    """DIR/trace.prv replaced by another trace: advise DIR refuses the sites.csv of the
    old one (exit 2, placement.txt untouched) until analyze has run again."""
    d = tmp_path / "stage"
    small_trace(d)
    assert hmtune("analyze", str(d)).returncode == 0
    assert hmtune("advise", str(d), "--mem", "2M").returncode == 0
    assert read_sites(d / "sites.csv").attrs["meta"]["trace-id"] == trace_id(d / "trace.prv")
    before = (d / "placement.txt").read_bytes()
    small_trace(d, small=1 << 17)                         # another trace, same name
    for args in ((str(d),), (str(d / "sites.csv"),), (str(d), "--strategy", "ilp-lifetime")):
        r = hmtune("advise", *args, "--mem", "2M")
        assert r.returncode == 2, r.stderr
        assert (d / "placement.txt").read_bytes() == before
    assert hmtune("analyze", str(d)).returncode == 0
    assert hmtune("advise", str(d), "--mem", "2M").returncode == 0
    assert (d / "placement.txt").read_bytes() != before


def test_sites_of_another_named_trace_are_not_checked_against_trace_prv(
        tmp_path: Path) -> None:
    """analyze elsewhere/app.prv -o DIR, where DIR holds another trace.prv: the sites are
    app.prv's, which is not in DIR, so there is nothing to refuse."""
    small_trace(tmp_path / "elsewhere")
    for ext in ("prv", "pcf", "row"):
        (tmp_path / "elsewhere" / f"trace.{ext}").rename(tmp_path / "elsewhere" / f"app.{ext}")
    d = tmp_path / "stage"
    small_trace(d, small=1 << 17)
    assert hmtune("analyze", str(tmp_path / "elsewhere" / "app.prv"), "-o", str(d)).returncode == 0
    r = hmtune("advise", str(d), "--mem", "2M")
    assert r.returncode == 0, r.stderr


def test_allocs_of_another_trace_are_refused(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    small_trace(a)
    small_trace(b, small=1 << 17)
    for d in (a, b):
        assert hmtune("analyze", str(d)).returncode == 0
    (b / "allocs.csv").replace(a / "allocs.csv")
    r = hmtune("advise", str(a), "--mem", "2M")
    assert r.returncode == 2 and not (a / "placement.txt").exists()


def test_sites_without_a_trace_id_are_accepted(tmp_path: Path) -> None:
    """An older hmtune's sites.csv (no trace-id) is still advised, next to any trace."""
    d = tmp_path / "stage"
    small_trace(d)
    assert hmtune("analyze", str(d)).returncode == 0
    for name in ("sites.csv", "allocs.csv"):
        f = d / name
        first, rest = f.read_text().split("\n", 1)
        f.write_text(" ".join(w for w in first.split() if not w.startswith("trace-id="))
                     + "\n" + rest)
    small_trace(d, small=1 << 17)
    r = hmtune("advise", str(d), "--mem", "2M")
    assert r.returncode == 0, r.stderr
    assert read_placement(d / "placement.txt").sites


@pytest.mark.skipif(not (PROGRAMS / "echo_io").exists(), reason="test programs not built")
def test_a_new_trace_moves_the_old_outputs_aside(tmp_path: Path) -> None:
    """Tracing another program into the same -o: the outputs hmtune derived from the
    previous trace move to DIR/stale/ (nothing deleted); files hmtune did not write stay
    where they are; advise then reads the new trace's sites only."""
    d = tmp_path / "out"
    assert trace(d, str(PROGRAMS / "echo_io")).returncode == 7
    assert hmtune("analyze", str(d)).returncode == 0
    assert hmtune("advise", str(d), "--mem", "1M").returncode == 0
    tid = trace_id(d / "trace.prv")
    pf = (d / "placement.txt").read_text()
    assert f"# trace-id={tid} " in pf and read_placement(d / "placement.txt") is not None
    assert f"trace-id:       {tid}" in (d / "report.txt").read_text()
    old = {n: (d / n).read_bytes() for n in DERIVED}
    (d / "notes.txt").write_text("mine\n")
    (d / "stale").mkdir()
    (d / "stale" / "report.txt").write_text("my own report, not hmtune's\n")
    assert trace(d, str(PROGRAMS / "crash"), "exit3").returncode == 3
    assert trace_id(d / "trace.prv") != tid
    moved = {n: (d / "stale" / n).read_bytes() for n in DERIVED if n != "report.txt"}
    assert moved == {n: b for n, b in old.items() if n != "report.txt"}
    assert sorted(p.name for p in d.iterdir() if p.name in DERIVED) == ["report.txt"]
    assert (d / "report.txt").read_bytes() == old["report.txt"]      # nowhere to go
    assert (d / "stale" / "report.txt").read_text() == "my own report, not hmtune's\n"
    assert (d / "notes.txt").read_text() == "mine\n"
    # after analyze, advise reads the new trace's sites
    assert hmtune("analyze", str(d)).returncode == 0
    assert read_allocs(d / "allocs.csv").attrs["meta"]["trace-id"] == trace_id(d / "trace.prv")
    assert hmtune("advise", str(d), "--mem", "1M").returncode == 0
    raw = list(read_sites(d / "sites.csv")["callstack_raw"])
    assert raw and all("/crash+0x" in c for c in raw)
    assert f"# trace-id={trace_id(d / 'trace.prv')} " in (d / "placement.txt").read_text()


DERIVED = ["sites.csv", "allocs.csv", "placement.txt", "report.txt", "capacity_curve.csv",
           "capacity_curve.png"]


# ---- hmtune run --stats ----

@pytest.mark.skipif(not (PROGRAMS / "echo_io").exists(), reason="test programs not built")
def test_run_stats_on_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    pl = tmp_path / "placement.txt"
    pl.write_text("# hmtune placement v1\ntier slow default unlimited\ndepth 1\n"
                  "size-window 0 0\n")
    fifo = tmp_path / "stats.json"
    os.mkfifo(fifo)
    r = subprocess.run([str(HMTUNE), "run", "-o", str(tmp_path), "--placement", str(pl),
                        "--stats", str(fifo), "--", str(PROGRAMS / "echo_io")],
                       capture_output=True, timeout=60)
    assert (r.returncode, r.stdout) == (2, b"")
    assert stat.S_ISFIFO(fifo.stat().st_mode)


@pytest.mark.skipif(not (PROGRAMS / "echo_io").exists(), reason="test programs not built")
def test_a_new_trace_moves_the_old_results_directories_aside(tmp_path: Path) -> None:
    """compare/, explore/ and report/ measured or showed the previous trace's
    placements: a new trace moves them to DIR/stale/ too (replacing an older trace's
    set aside there), so `make report` never shows them beside the new sites; a
    directory of the same name hmtune did not write stays."""
    d = tmp_path / "out"
    assert trace(d, str(PROGRAMS / "echo_io")).returncode == 7
    for name, marker in (("compare", "runs.csv"), ("report", "report.md")):
        (d / name).mkdir()
        (d / name / marker).write_text(f"{name} of the first trace\n")
    (d / "explore").mkdir()
    (d / "explore" / "mine.txt").write_text("not hmtune's\n")
    assert trace(d, str(PROGRAMS / "crash"), "exit3").returncode == 3
    assert not (d / "compare").exists() and not (d / "report").exists()
    assert (d / "stale" / "compare" / "runs.csv").read_text() == "compare of the first trace\n"
    assert (d / "stale" / "report" / "report.md").read_text() == "report of the first trace\n"
    assert (d / "explore" / "mine.txt").read_text() == "not hmtune's\n"
    (d / "compare").mkdir()
    (d / "compare" / "runs.csv").write_text("compare of the second trace\n")
    assert trace(d, str(PROGRAMS / "crash"), "exit3").returncode == 3
    assert (d / "stale" / "compare" / "runs.csv").read_text() == "compare of the second trace\n"
