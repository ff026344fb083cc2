"""The exact strategies as placements: ilp (assign.py over the limited tiers of
limited.py) and ilp-lifetime (lifetime.py). Either falls back to the density placement,
with a note saying why, when no MIP solver can run."""

from __future__ import annotations

from hmtune.advisor.model import Placement, Problem
from hmtune.advisor.solve import greedy
from hmtune.advisor.solve.assign import AssignResult, solve_assign
from hmtune.advisor.solve.lifetime import density_lifetime, solve_lifetime
from hmtune.advisor.solve.limited import Limited
from hmtune.advisor.solve.mip import SolverUnavailable


def _from_assign(red: Limited, strategy: str, res: AssignResult) -> Placement:
    base = float(red.base_value.sum())
    tier_of = red.tier_of(res.assign)
    value = red.value(tier_of)
    return Placement(tier_of, strategy, value, max(value, base + res.bound), res.solver,
                     list(res.notes))


def _fallback(problem: Problem, strategy: str, red: Limited, why: str,
              placement: Placement | None = None) -> Placement:
    p = placement if placement is not None else greedy.placement(problem, "density", 0.0,
                                                                 red)
    p.strategy = strategy
    p.solver = "density-fallback"
    p.notes.insert(0, f"{strategy}: {why}; fell back to the density strategy")
    return p


def ilp_placement(problem: Problem, red: Limited, deadline: float,
                  gap_target: float) -> Placement:
    """The ilp strategy: every site's peak held all run."""
    try:
        res = solve_assign(red.tp, deadline, gap_target)
    except SolverUnavailable as e:
        return _fallback(problem, "ilp", red, str(e))
    return _from_assign(red, "ilp", res)


def lifetime_placement(problem: Problem, red: Limited, deadline: float,
                       gap_target: float) -> Placement:
    """The ilp-lifetime strategy (problem.allocs given): sites never live together
    share capacity."""
    try:
        return solve_lifetime(problem, red, deadline, gap_target)
    except SolverUnavailable as e:
        return _fallback(problem, "ilp-lifetime", red, str(e),
                         density_lifetime(problem, red))
