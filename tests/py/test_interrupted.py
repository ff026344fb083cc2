"""Interrupted runs say so (issue 44 item 6): a trace whose application was interrupted
or killed records it (trace.summary.json `app_end`) and says the trace is partial, and
advise notes it; a run that ends before libhmalloc writes its statistics keeps the
previous run's and says so; a placement made for another program is refused before
anything runs or is reserved."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest
from tracemodel import HMTUNE, PROGRAMS

from hmtune.workflows.trace import app_end

CRASH = PROGRAMS / "crash"
pytestmark = pytest.mark.skipif(not CRASH.exists(), reason="test programs not built")


def hmtune(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(HMTUNE), *args], capture_output=True, text=True, timeout=600)


def test_how_a_command_ended() -> None:
    assert app_end(0)["partial"] is False and app_end(3)["partial"] is False
    assert app_end(-signal.SIGINT) == {"status": -2, "signal": "SIGINT", "partial": True,
                                       "how": "was interrupted (SIGINT)"}
    assert app_end(-signal.SIGSEGV)["how"] == "was killed by SIGSEGV"
    assert app_end(130)["signal"] == "SIGINT"      # mpirun's report of its ranks' SIGINT


def test_a_killed_trace_is_partial_and_advise_says_so(tmp_path: Path) -> None:
    d = tmp_path / "out"
    r = hmtune("trace", "-o", str(d), "--", str(CRASH), "kill")
    assert r.returncode in (-signal.SIGKILL, 128 + signal.SIGKILL)
    end = json.loads((d / "trace.summary.json").read_text())["app_end"]
    assert end["partial"] is True and end["signal"] == "SIGKILL"
    assert "partial" in r.stderr
    assert hmtune("analyze", str(d)).returncode == 0
    a = hmtune("advise", str(d), "--mem", "64M")
    assert a.returncode == 0, a.stderr
    assert "the trace is partial" in (d / "report.txt").read_text()
    # a whole run: no such note
    d2 = tmp_path / "whole"
    assert hmtune("trace", "-o", str(d2), "--", str(CRASH), "exit3").returncode == 3
    assert json.loads((d2 / "trace.summary.json").read_text())["app_end"]["partial"] is False
    assert hmtune("analyze", str(d2)).returncode == 0
    assert hmtune("advise", str(d2), "--mem", "64M").returncode == 0
    assert "the trace is partial" not in (d2 / "report.txt").read_text()


PLACEMENT = """# hmtune placement v1
{program}tier fast thp 67108864
tier default default unlimited
depth 1
size-window 0 0
"""


def test_a_killed_run_keeps_the_previous_statistics(tmp_path: Path) -> None:
    pl = tmp_path / "placement.txt"
    pl.write_text(PLACEMENT.format(program=""))
    out = tmp_path / "d"
    r = hmtune("run", "-q", "--placement", str(pl), "-o", str(out), "--", str(CRASH), "exit3")
    assert r.returncode == 3, r.stderr
    stats = out / "run-stats.json"
    first = stats.read_bytes()
    r = hmtune("run", "-q", "--placement", str(pl), "-o", str(out), "--", str(CRASH), "kill")
    assert r.returncode in (-signal.SIGKILL, 128 + signal.SIGKILL)
    assert stats.read_bytes() == first                  # kept, not deleted
    assert str(stats) in r.stderr and "previous run" in r.stderr


def test_a_placement_for_another_program_is_refused_first(tmp_path: Path) -> None:
    pl = tmp_path / "placement.txt"
    pl.write_text(PLACEMENT.format(program="program /bin/true\n"))
    out = tmp_path / "d"
    r = hmtune("run", "--placement", str(pl), "-o", str(out), "--", str(CRASH), "exit3")
    assert r.returncode == 2 and "/bin/true" in r.stderr
    assert "out" not in r.stdout                         # the program never ran
    assert not (out / "run-stats.json").exists()
