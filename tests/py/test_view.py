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
