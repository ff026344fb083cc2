"""`hmtune view`: the printed Paraver commands name files that exist, one per shipped
configuration and tool; bad input is refused with exit 2."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from clistage import ROOT, hmtune

EXTRAE = ROOT / "tests" / "py" / "data" / "extrae-malloc-trace"
CFGS = sorted((ROOT / "configs" / "paraver").glob("*.cfg"))


def view(*args: str) -> subprocess.CompletedProcess[str]:
    return hmtune("view", *args)


def commands(out: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines() if line and not line.startswith("#")]


def test_commands_for_a_stage_directory(tmp_path: Path) -> None:
    for suffix in (".prv", ".pcf", ".row"):
        shutil.copy(EXTRAE / f"malloc_test{suffix}", tmp_path / f"trace{suffix}")
    r = view(str(tmp_path))
    assert r.returncode == 0, r.stderr
    cmds = commands(r.stdout)
    prv = (tmp_path / "trace.prv").resolve()
    gui = [c for c in cmds if c[0] == "wxparaver"]
    cli = [c for c in cmds if c[0] == "paramedir"]
    assert len(gui) == len(cli) == len(CFGS) >= 3
    assert {Path(c[2]) for c in gui} == {Path(c[2]) for c in cli} == set(CFGS)
    for c in cmds:
        assert Path(c[1]) == prv and Path(c[2]).is_file()
    # paramedir writes NAME.csv next to the trace
    assert {Path(c[4]) for c in cli} == {prv.parent / f"{cfg.stem}.csv" for cfg in CFGS}


def test_a_trace_file_and_a_missing_pcf(tmp_path: Path) -> None:
    shutil.copy(EXTRAE / "malloc_test.prv", tmp_path / "t.prv")
    r = view(str(tmp_path / "t.prv"))
    assert r.returncode == 0
    assert all(Path(c[1]) == (tmp_path / "t.prv").resolve() for c in commands(r.stdout))
    assert "t.pcf" in r.stderr                  # said once, not fatal


def test_refusals(tmp_path: Path) -> None:
    assert view(str(tmp_path)).returncode == 2                      # no trace.prv there
    assert view(str(tmp_path / "none.prv")).returncode == 2
    gz = tmp_path / "trace.prv.gz"
    gz.write_bytes(b"\x1f\x8b")
    assert view(str(gz)).returncode == 2                            # Paraver reads .prv
    assert view("--help").returncode == 0
    assert view().returncode == 2


def test_without_an_argument_the_newest_stage(tmp_path: Path) -> None:
    """As hmtune report: the newest hmtune-out/*/ holding a trace.prv; none: exit 2."""
    import os
    import time
    for name in ("old", "new"):
        d = tmp_path / "hmtune-out" / name
        d.mkdir(parents=True)
        for suffix in (".prv", ".pcf", ".row"):
            shutil.copy(EXTRAE / f"malloc_test{suffix}", d / f"trace{suffix}")
        time.sleep(0.05)
    old = tmp_path / "hmtune-out" / "old"
    os.utime(old, (time.time() - 100, time.time() - 100))
    r = subprocess.run([str(ROOT / "bin" / "hmtune"), "view"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    prvs = {Path(c[1]) for c in commands(r.stdout)}
    assert prvs == {(tmp_path / "hmtune-out" / "new" / "trace.prv").resolve()}
    (tmp_path / "empty").mkdir()
    r = subprocess.run([str(ROOT / "bin" / "hmtune"), "view"], cwd=tmp_path / "empty",
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 2 and not r.stdout


def test_a_missing_program_says_where_it_was_looked_for(tmp_path: Path) -> None:
    r = subprocess.run([str(ROOT / "bin" / "hmtune"), "trace", "--", "./tri"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 127 and str(tmp_path) in r.stderr
    assert not (tmp_path / "hmtune-out").exists()
