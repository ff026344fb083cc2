"""One error style: commands raise hmtune.core.errors.Failure and the dispatcher
(hmtune/workflows/cli.py main) alone turns it into the one line `hmtune COMMAND:
MESSAGE` and the exit status; no module keeps a `_fail` helper returning a status."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hmtune.core.errors import Failure
from hmtune.workflows import cli

ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.mark.parametrize(("argv", "code", "line"), [
    (["trace"], 2, "hmtune trace: no application given: hmtune trace [options] -- ./app args"),
    (["run"], 2, "hmtune run: no application given: hmtune run [options] -- ./app args"),
    (["compare"], 2,
     "hmtune compare: no application given: hmtune compare [options] -- ./app args"),
    (["explore", "-k", "0"], 2,
     "hmtune explore: -k/--top must be 1 to 10 (2^(K+1) placements)"),
    (["analyze", "--top", "-1", "x"], 2, "hmtune analyze: --top must be 0 or more"),
    (["advise", "x", "--threshold", "200", "--mem", "1M"], 2,
     "hmtune advise: --threshold is a percentage, 0 to 100"),
    (["view", "/nonexistent/t.prv"], 2,
     "hmtune view: /nonexistent/t.prv: no trace there (run hmtune trace first)"),
])
def test_one_line_and_status(capsys: pytest.CaptureFixture[str], argv: list[str], code: int,
                             line: str) -> None:
    assert cli.main(argv) == code
    assert capsys.readouterr().err == line + "\n"


def test_dispatcher_turns_failure_into_status(monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    def boom(args: object) -> int:
        raise Failure("what went wrong", 7)

    monkeypatch.setattr(cli.report, "run", boom)
    assert cli.main(["report", "somewhere"]) == 7
    assert capsys.readouterr().err == "hmtune report: what went wrong\n"


def test_no_other_error_style() -> None:
    src = {p: p.read_text() for p in (ROOT / "hmtune").rglob("*.py")}
    assert not [p for p, s in src.items() if re.search(r"^def _fail\(.*-> int", s, re.M)]
    assert not [p for p, s in src.items() if re.search(r"^def \w+\(.*\) -> \w+ \| int:", s, re.M)
                and "workflows" in p.parts]
