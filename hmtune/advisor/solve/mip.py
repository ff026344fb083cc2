"""Binary programs through PuLP: the exact step of the ilp strategies.

    maximize    sum_{i,k} profit[i,k] x[i,k]
    subject to  sum_i rows_k[r, i] x[i,k] <= caps_k[r]     for every tier k and row r
                sum_k x[i,k] <= 1                          for every item i
                x[i,k] in {0,1}, and x[i,k] = 0 where not allowed

CBC (bundled with PuLP) is preferred, HiGHS (through highspy) used when CBC cannot
run; `hmtune advise --solver` or HMTUNE_SOLVER (auto, cbc, highs) asks for one first
(ask, asked), and `unusable` says why one cannot run (the advisor warns with it when
the one asked for cannot). Both report a proven bound: CBC in its log, HiGHS in its
info record.
`solve_lp` solves the LP relaxation of the same program (ilp-lifetime's rows).
A returned assignment is always checked against the rows in exact arithmetic on the
integral page counts and repaired when solver tolerances let a row overflow.
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from dataclasses import dataclass

import numpy as np

try:
    import pulp
except ImportError:   # reported as "no solver"; the strategies fall back to density
    pulp = None


class SolverUnavailable(RuntimeError):
    """No MIP solver could be used (PuLP or its solvers missing, or the run failed)."""


@dataclass
class MipResult:
    assign: np.ndarray      # int64: tier index per item, -1 for none
    value: float
    bound: float            # proven upper bound (>= value)
    optimal: bool           # the solver proved its gap target
    solver: str             # "highs" or "cbc"


MIN_SOLVER_SECONDS = 0.5   # the solver's own time limit, at the least
READ_BACK_SECONDS = 0.2    # kept for reading the solution back

# CBC first: it takes the incumbent as a MIP start, and on the cores left after
# reduced-cost fixing it proved optimality several times faster than HiGHS 1.7
# (bench/bench_advise.py, 1k sites x 3 tiers: about 1 s against 6-25 s).
PREFERENCE = ("cbc", "highs")


SOLVER_ENV = "HMTUNE_SOLVER"
CHOICES = ("auto", *PREFERENCE)
TITLES = {"cbc": "CBC", "highs": "HiGHS"}
_asked: str | None = None       # ask(); None: HMTUNE_SOLVER, else auto


def ask(name: str | None) -> None:
    """Ask for a solver first (a name of PREFERENCE, or "auto"); None: HMTUNE_SOLVER.
    Raises ValueError for another name."""
    global _asked
    if name is not None and name not in CHOICES:
        raise ValueError(f"unknown MIP solver {name!r}: use one of {', '.join(CHOICES)}")
    _asked = name


def asked() -> str | None:
    """The solver asked for (ask(), else HMTUNE_SOLVER), None for auto. Raises
    ValueError when HMTUNE_SOLVER names no solver."""
    name = _asked if _asked is not None else \
        (os.environ.get(SOLVER_ENV, "").strip().lower() or "auto")
    if name not in CHOICES:
        raise ValueError(f"{SOLVER_ENV}={name}: use one of {', '.join(CHOICES)}")
    return None if name == "auto" else name


def asked_where() -> str:
    """Where the solver asked for comes from: "--solver" (ask) or HMTUNE_SOLVER."""
    return "--solver" if _asked is not None else SOLVER_ENV


def pulp_version() -> str:
    """PuLP's version ("" without PuLP)."""
    return str(getattr(pulp, "__version__", "?")) if pulp is not None else ""


def unusable(name: str) -> str | None:
    """Why the solver `name` cannot run here; None when it can."""
    if pulp is None:
        return "PuLP is not installed"
    if name == "highs":
        if not hasattr(pulp, "HiGHS"):
            return (f"PuLP {pulp_version()} has no HiGHS interface (pulp.HiGHS needs PuLP "
                    "2.8 or newer)")
        try:
            import highspy  # noqa: F401
        except ImportError:
            return "highspy (HiGHS's Python module, which pulp.HiGHS drives) is not installed"
    try:
        if name == "highs":
            ok = bool(pulp.HiGHS().available())
        else:
            ok = bool(pulp.PULP_CBC_CMD(msg=False).available())
    except Exception as e:   # noqa: BLE001 - a broken install counts as missing
        return f"PuLP failed to check it ({e})"
    if not ok:
        return ("PuLP's bundled CBC binary cannot run here" if name == "cbc"
                else "PuLP reports it unavailable")
    return None


def _usable(name: str) -> bool:
    return unusable(name) is None


def available_solvers() -> list[str]:
    """Names of the usable solvers: the one asked for first (when usable), then
    PREFERENCE's order."""
    if pulp is None:
        return []
    usable = [name for name in PREFERENCE if _usable(name)]
    want = asked()
    return sorted(usable, key=lambda n: n != want)


def row_usage(assign: np.ndarray, rows: list[np.ndarray]) -> list[np.ndarray]:
    """Per tier, the usage of each row by the items assigned to it."""
    return [r[:, assign == k].sum(axis=1) if r.size else np.zeros(r.shape[0])
            for k, r in enumerate(rows)]


def repair(assign: np.ndarray, profit: np.ndarray, rows: list[np.ndarray],
           caps: list[np.ndarray]) -> np.ndarray:
    """Drop items from overflowing rows (least profit per unit of the row first)."""
    assign = assign.copy()
    for k, (r, c) in enumerate(zip(rows, caps, strict=True)):
        while True:
            use = r[:, assign == k].sum(axis=1)
            over = np.flatnonzero(use > c)
            if over.size == 0:
                break
            row = int(over[np.argmax(use[over] - c[over])])
            members = np.flatnonzero((assign == k) & (r[row] > 0))
            worst = members[np.argmin(profit[members, k] / r[row, members])]
            assign[worst] = -1
    return assign


def _cbc_bound(log_text: str) -> float | None:
    """The proven bound from a CBC log, in the model's sense.

    CBC ends with "Objective value:" (the incumbent) and, for a maximization,
    "Upper bound:" printed with three decimals: widened by one unit of the last
    printed digit so that the rounding cannot make it unsound."""
    m = re.search(r"^Upper bound:\s*(-?[0-9.eE+-]+)", log_text, re.M)
    if not m:
        return None
    try:
        v = float(m.group(1))
    except ValueError:
        return None
    return v + 1e-3 + 1e-9 * abs(v)


def _pick(solver: str | None) -> str:
    names = available_solvers()
    if solver is not None:
        names = [s for s in names if s == solver]
    if not names:
        raise SolverUnavailable("no MIP solver available through PuLP (CBC or HiGHS)")
    return names[0]


def _build(profit: np.ndarray, allowed: np.ndarray, rows: list[np.ndarray],
           caps: list[np.ndarray], integer: bool, start: np.ndarray | None,
           ) -> tuple[pulp.LpProblem, dict[tuple[int, int], pulp.LpVariable]]:
    nt = profit.shape[1]
    prob = pulp.LpProblem("hmtune_placement", pulp.LpMaximize)
    xs: dict[tuple[int, int], pulp.LpVariable] = {}
    for i, k in zip(*np.nonzero(allowed), strict=True):
        if integer:
            v = pulp.LpVariable(f"x_{i}_{k}", cat="Binary")
        else:
            v = pulp.LpVariable(f"x_{i}_{k}", lowBound=0, upBound=1)
        xs[(int(i), int(k))] = v
        if start is not None:
            v.setInitialValue(1 if start[i] == k else 0)
    prob += pulp.LpAffineExpression([(v, float(profit[i, k])) for (i, k), v in xs.items()])
    by_tier: list[list[tuple[int, pulp.LpVariable]]] = [[] for _ in range(nt)]
    by_item: dict[int, list[pulp.LpVariable]] = {}
    for (i, k), v in xs.items():
        by_tier[k].append((i, v))
        by_item.setdefault(i, []).append(v)
    for k in range(nt):
        members = by_tier[k]
        if not members:
            continue
        idx = np.array([i for i, _ in members])
        for r in range(rows[k].shape[0]):
            coef = rows[k][r, idx]
            nz = np.flatnonzero(coef > 0)
            if nz.size == 0 or coef[nz].sum() <= caps[k][r]:
                continue   # the row can never bind
            expr = pulp.LpAffineExpression([(members[j][1], float(coef[j])) for j in nz])
            prob += expr <= float(caps[k][r]), f"cap_{k}_{r}"
    for i, vs in by_item.items():
        if len(vs) > 1:
            prob += pulp.lpSum(vs) <= 1, f"one_{i}"
    return prob, xs


def _run(prob: pulp.LpProblem, name: str, integer: bool, deadline: float, gap_rel: float,
         gap_abs: float, warm: bool) -> float | None:
    """Solve; return the solver's proven bound when it reports one."""
    t = max(MIN_SOLVER_SECONDS, deadline - time.monotonic() - READ_BACK_SECONDS)
    try:
        if name == "highs":
            s = pulp.HiGHS(mip=integer, msg=False, timeLimit=t, gapRel=gap_rel,
                           gapAbs=gap_abs, threads=1, output_flag=False)
            prob.solve(s)
            if not integer:
                return None
            info = prob.solverModel.getInfo()
            # PuLP hands HiGHS the negated objective of a maximization.
            db = float(getattr(info, "mip_dual_bound", np.nan))
            return -db if np.isfinite(db) else None
        fd, log = tempfile.mkstemp(prefix="hmtune-cbc-", suffix=".log")
        os.close(fd)
        try:
            s = pulp.PULP_CBC_CMD(mip=integer, msg=False, timeLimit=t, gapRel=gap_rel,
                                  gapAbs=gap_abs, warmStart=warm, logPath=log, threads=1)
            prob.solve(s)
            with open(log) as f:
                return _cbc_bound(f.read()) if integer else None
        finally:
            os.unlink(log)
    except Exception as e:   # noqa: BLE001 - any solver failure means "no answer from it"
        raise SolverUnavailable(f"{name} failed: {e}") from e


def solve_mip(profit: np.ndarray, allowed: np.ndarray, rows: list[np.ndarray],
              caps: list[np.ndarray], deadline: float, gap_rel: float, gap_abs: float,
              start: np.ndarray | None = None, solver: str | None = None) -> MipResult:
    """Solve the binary program above. Raises SolverUnavailable when no solver runs.

    rows[k] is (m_k, n) in the tier's pages, caps[k] is (m_k,). The solver stops
    at `deadline` (time.monotonic(); at least MIN_SOLVER_SECONDS once started) or
    when it proves gap_abs or gap_rel. `start` is a feasible assignment handed to
    CBC as a warm start (HiGHS through PuLP takes none); the better of it and the
    solver's answer is returned."""
    name = _pick(solver)
    n = profit.shape[0]
    if not allowed.any():
        return MipResult(np.full(n, -1, np.int64), 0.0, 0.0, True, name)
    prob, xs = _build(profit, allowed, rows, caps, True, start)
    bound = _run(prob, name, True, deadline, gap_rel, gap_abs, start is not None)
    status = pulp.LpStatus.get(prob.status, "")
    assign = np.full(n, -1, np.int64)
    for (i, k), v in xs.items():
        val = v.value()
        if val is not None and val > 0.5:
            assign[i] = k
    assign = repair(assign, profit, rows, caps)
    value = float(profit[np.arange(n), np.maximum(assign, 0)][assign >= 0].sum())
    if start is not None:
        sv = float(profit[np.arange(n), np.maximum(start, 0)][start >= 0].sum())
        if sv > value:
            assign, value = start.copy(), sv
    solved = status == "Optimal" and prob.sol_status == pulp.LpSolutionOptimal
    if bound is None or not np.isfinite(bound):
        bound = value + gap_abs + gap_rel * abs(value) if solved else np.inf
    return MipResult(assign, value, max(bound, value), solved, name)


def solve_lp(profit: np.ndarray, allowed: np.ndarray, rows: list[np.ndarray],
             caps: list[np.ndarray], deadline: float,
             solver: str | None = None) -> tuple[np.ndarray, float, str]:
    """The LP relaxation: x (n, K) in [0, 1], its optimal value (an upper bound on
    the binary program; np.inf when the solver did not reach the optimum) and the
    solver's name."""
    name = _pick(solver)
    x = np.zeros(profit.shape)
    if not allowed.any():
        return x, 0.0, name
    prob, xs = _build(profit, allowed, rows, caps, False, None)
    _run(prob, name, False, deadline, 0.0, 0.0, False)
    for (i, k), v in xs.items():
        val = v.value()
        x[i, k] = min(1.0, max(0.0, val)) if val is not None else 0.0
    if pulp.LpStatus.get(prob.status, "") != "Optimal":
        return x, np.inf, name
    obj = float(pulp.value(prob.objective) or 0.0)
    # Solver tolerances: widen by a relative 1e-7 (the simplex's optimality tolerance).
    return x, obj + 1e-7 * max(1.0, abs(obj)), name
