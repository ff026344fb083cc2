"""Bad input and unfriendly surroundings across the stages (issue 13, "Nothing lost,
nothing killed"): outputs follow the umask, stale outputs are never read as fresh."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest
from prvtext import HMTUNE, PRVSCAN, PrvText, pcf_text, read_csv

pytestmark = pytest.mark.skipif(not PRVSCAN.exists(), reason="hmtune-prvscan is not built (make)")

APP = "/opt/app"
LIBC = "/lib/x86_64-linux-gnu/libc.so.6"


def small_trace(d: Path, offset: int = 0x10) -> Path:
    """Two sites (3: 1 MiB, heavily sampled; 4: 64 KiB), a .pcf with both label tables."""
    t = PrvText()
    t.alloc(100, 1 << 20, 3, 0x10000000)
    t.alloc(200, 1 << 16, 4, 0x20000000)
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
