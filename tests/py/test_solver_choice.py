"""Which MIP solver `hmtune advise` uses and says it used: --solver / HMTUNE_SOLVER ask
for one first, and one asked for that cannot run (PuLP before 2.8 has no pulp.HiGHS,
highspy missing) is a warning naming why and what runs instead, never a silent switch."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from advisefix import advise, standard_dir

from hmtune.advisor.advise import solver_said, solver_warnings
from hmtune.advisor.model import Placement
from hmtune.advisor.solve import mip


def fake_pulp(version: str, highs: bool, cbc: bool = True) -> SimpleNamespace:
    """A PuLP as old ones look to the advisor: pulp.HiGHS only when `highs`."""
    available = SimpleNamespace(available=lambda: cbc)
    attrs: dict[str, object] = {"__version__": version,
                                "PULP_CBC_CMD": lambda msg=False: available}
    if highs:
        attrs["HiGHS"] = lambda: SimpleNamespace(available=lambda: True)
    return SimpleNamespace(**attrs)


@pytest.fixture(autouse=True)
def _no_asked_solver(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(mip.SOLVER_ENV, raising=False)
    mip.ask(None)
    yield
    mip.ask(None)


def test_old_pulp_has_no_highs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mip, "pulp", fake_pulp("2.6.0", highs=False))
    why = mip.unusable("highs")
    assert why is not None and "PuLP 2.6.0 has no HiGHS interface" in why and "2.8" in why
    assert mip.unusable("cbc") is None
    mip.ask("highs")
    assert mip.available_solvers() == ["cbc"]


def test_warning_when_highs_is_asked_for_and_unusable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mip, "pulp", fake_pulp("2.6.0", highs=False))
    monkeypatch.setenv(mip.SOLVER_ENV, "highs")
    warnings = solver_warnings("ilp-lifetime")
    assert len(warnings) == 1
    assert warnings[0].startswith("HiGHS was asked for (HMTUNE_SOLVER=highs) but cannot be "
                                  "used: PuLP 2.6.0 has no HiGHS interface")
    assert warnings[0].endswith("CBC is used instead")
    mip.ask("highs")                                 # --solver names itself
    assert "(--solver=highs)" in solver_warnings("ilp")[0]
    assert solver_warnings("density") == []         # no MIP: nothing to say
    mip.ask("cbc")
    assert solver_warnings("ilp") == []


def test_what_advise_says_it_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mip, "pulp", fake_pulp("2.6.0", highs=False, cbc=False))
    def placed(strategy: str, solver: str) -> Placement:
        return Placement(np.zeros(0, np.int64), strategy, 0.0, 0.0, solver)

    assert solver_said(placed("ilp-lifetime", "lazy-rows+cbc")) == \
        "hmtune advise: MIP solver: CBC (PuLP 2.6.0)"
    assert solver_said(placed("ilp", "knapsack-exact")) == \
        "hmtune advise: MIP solver: none needed (knapsack-exact)"
    said = solver_said(placed("ilp", "density-fallback"))
    assert said is not None and said.startswith("hmtune advise: MIP solver: none could run "
                                                "(CBC: PuLP's bundled CBC binary")
    assert solver_said(placed("misses", "greedy")) is None
    mip.ask("highs")
    assert solver_warnings("ilp")[0].endswith("no MIP solver can run: the density placement "
                                               "is used instead")


def test_asked_solver_comes_first_when_usable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mip, "pulp", fake_pulp("2.9.0", highs=True))
    monkeypatch.setattr(mip, "unusable", lambda name: None)     # highspy: not asked here
    assert mip.available_solvers() == ["cbc", "highs"]
    monkeypatch.setenv(mip.SOLVER_ENV, "HiGHS")
    assert mip.available_solvers() == ["highs", "cbc"]
    assert solver_warnings("ilp") == []
    monkeypatch.setenv(mip.SOLVER_ENV, "glpk")
    with pytest.raises(ValueError, match="HMTUNE_SOLVER=glpk: use one of auto, cbc, highs"):
        mip.asked()


@pytest.mark.parametrize("solver", ["cbc", "highs"])
def test_advise_says_and_uses_the_solver(tmp_path: Path, capsys: pytest.CaptureFixture,
                                         solver: str) -> None:
    """With this PuLP (the requirements'), both solvers run: the one asked for is the one
    said on stdout and recorded in report.txt's strategy line."""
    if mip.unusable(solver):
        pytest.skip(f"{solver}: {mip.unusable(solver)}")
    d = standard_dir(tmp_path)
    rc, out, err = advise(capsys, str(d), "--mem", "80M", "--strategy", "ilp-lifetime",
                          "--solver", solver)
    assert rc == 0, err
    assert f"hmtune advise: MIP solver: {mip.TITLES[solver]} (PuLP {mip.pulp_version()})" \
        in out.splitlines()
    assert "warning" not in err
    strategy = next(line for line in (d / "report.txt").read_text().splitlines()
                    if line.startswith("strategy:"))
    assert f"+{solver}," in strategy, strategy


def test_bad_environment_value_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(mip.SOLVER_ENV, "gurobi")
    d = standard_dir(tmp_path)
    rc, _, err = advise(capsys, str(d), "--mem", "80M", "--strategy", "ilp")
    assert rc == 2 and "HMTUNE_SOLVER=gurobi" in err
    assert not (d / "placement.txt").exists()
