"""A placement's predicted speedup, with a range, and its calibration by measurement.

Model. The sampled weight of a trace stands for where the run's time goes (the
software sampler: ns of thread time per sample; PEBS/IBS: load latency). A site's
value in a tier (hmtune/advisor/model.py) is what it gains there (access stalls and
first touch no longer paid) less what its allocation calls cost. With T the trace's
total weight, g the placed sites' gains / T and c their calls' cost / T, the placement
saves the fraction k * g - m * c of the run, where k says how much of the modelled gain
the tier really gives and m how much of the modelled call cost libhmalloc really adds;
the predicted speedup is

    S = 1 / (1 - (k * g - m * c)).

The two are apart because they are different quantities: the gain is sampled weight
times the machine file's costs, the calls a count times a cost per call. One
coefficient for both fitted k = -0.50 on BWA-MEM's every-site-fast (0.98x: 3.1 M small
allocations whose calls cost about what their hugepages gain), which predicted 0.90x
for placements of its big objects (no calls) that measured 1.06x.

Every site fast. `hmtune compare` runs it as libhmalloc's HMTUNE_BASELINE=all: every
request in the fast tier with no call stack unwound or matched, so each allocation
costs UNMATCHED_SHARE of the tier's alloc_cost_ns (as_run_all_fast); its prediction and
the calibration below use that cost.

Coefficients. Uncalibrated, k = m = 1: the machine file's costs taken at their word.
`hmtune compare` measures every-site-fast's speedup and each advisor placement's, each
with its 95 % interval; each is a point (g, c, x = 1 - 1/S) with x's standard error
from its interval. fit() finds k, m >= 0 by weighted least squares over the points,
with m held towards 1 by a prior of standard deviation CALL_PRIOR_SD (placements
without calls say nothing about m; with one point the prior decides m and the point
k); their intervals from the fit's covariance, widened by the points' scatter when
it exceeds their intervals (reduced chi-square above 1). The result is stored in
DIR/calibration.json for the trace (trace-id), sampler and fast tier (backend and
costs) it was measured with; `hmtune advise` uses it when all of them match. compare
predicts each advisor placement from the other points only (leave one out), so that
predicted beside measured is a check, not a restatement.

Range. A site's weight is a count of samples: its relative standard error is about
1 / sqrt(samples), so sd(G)^2 = sum(gain_i^2 / samples_i); g's range is g ± 1.96 sd,
and S's range takes the extremes of g's, k's and m's ranges together.

"No placement worth making": neither the advisor's placement nor every site fast is
predicted to gain MIN_GAIN at the top of its range (every site fast alone is not the
test: its calls can cost more than the gains of a placement that leaves them out).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from hmtune.advisor.model import Problem
from hmtune.machine.tiers import KINDS, Tier

MIN_GAIN = 0.02           # a predicted gain below this at the top of its range: not worth it
Z95 = 1.96
MAX_SAVED = 0.95          # a fraction saved is capped here (S at most 20x)
CALL_PRIOR_SD = 1.0       # fit(): m's prior, 1 +- this
MIN_SD = 1e-3             # fit(): a point's standard error is at least this
# libhmalloc's placing path without call-site matching (HMTUNE_BASELINE=all) over the
# matched path (alloc_cost_ns), per allocation: `make bench-callcost` on BWA-MEM (0.77 M
# small allocations a run, bench/results/callcost-2026-11-29-vm.txt): every request
# placed without matching cost 226 ns [101, 355] and 59 ns [-165, 192] a call more than
# the index placed alone where matched placing cost 86 and 39 ns; paired, 40 ns
# [-75, 130] more than matched. (It was 0.4 while matching unwound every stack.)
UNMATCHED_SHARE = 1.5
FORMAT = "hmtune calibration v3"
OLDER_FORMAT = "hmtune calibration v2"      # read as v3 without kinds
# The gains a calibration can scale apart: machine.tiers.KINDS, then the rest (weight of no
# known kind, first touch)
GAIN_KINDS = (*KINDS, "other")
# fit_kinds(): each kind's k is held towards the one k of fit() with this standard
# deviation, so a kind the points do not tell apart keeps that k; one is reported
# (Calibration.kind_k) when the points narrowed it to under KIND_TOLD of the prior's
KIND_PRIOR_SD = 1.0
KIND_TOLD = 0.5


@dataclass(frozen=True)
class Prediction:
    speedup: float
    lo: float
    hi: float
    fraction: float             # g - c: the share of the run the placement saves (k = m = 1)

    def text(self) -> str:
        return f"{self.speedup:.2f}x [{self.lo:.2f}-{self.hi:.2f}]"


@dataclass(frozen=True)
class Point:
    """One measured placement of a calibration: its speedup and interval, and its
    gain g and calls' cost c as fractions of the trace's weight (module doc)."""
    variant: str
    measured: float
    lo: float
    hi: float
    gain: float
    calls: float
    kinds: tuple[float, ...] = ()   # gain by GAIN_KINDS (summing to gain); () unknown


@dataclass(frozen=True)
class Calibration:
    k: float
    k_lo: float
    k_hi: float
    call_scale: float           # m
    call_scale_lo: float
    call_scale_hi: float
    measured: float             # every-site-fast's measured speedup and its interval
    measured_lo: float
    measured_hi: float
    points: tuple[Point, ...]   # what k and m were fitted on, every site fast first
    trace_id: str
    sampler: str
    backend: str                # the fast tier's
    load_cost: float            # the fast and fallback tiers' costs
    fallback_cost: float
    rounds: int
    source: str                 # the compare directory it came from
    # (GAIN_KINDS entry, k, lo, hi) for the kinds the points tell apart (fit_kinds);
    # the others' gains are scaled by k
    kind_k: tuple[tuple[str, float, float, float], ...] = ()

    def k_of(self, kind: str) -> tuple[float, float, float]:
        """k and its interval for the gains of one of GAIN_KINDS."""
        return next(((x, lo, hi) for n, x, lo, hi in self.kind_k if n == kind),
                    (self.k, self.k_lo, self.k_hi))


def parts(problem: Problem, tier_of: np.ndarray) -> tuple[float, float, float]:
    """g, c and g's standard error for sites in tiers tier_of (module doc)."""
    total = problem.total_weight or float(problem.weights.sum())
    if total <= 0 or problem.n == 0:
        return 0.0, 0.0, 0.0
    idx = np.arange(problem.n)
    gain = (problem.access_values() + problem.first_touch_values())[idx, tier_of]
    calls = problem.call_cost_values()[idx, tier_of]
    samples = problem.samples if problem.samples is not None else np.ones(problem.n)
    var = float(np.sum(gain * gain / np.maximum(samples, 1)))
    return float(gain.sum()) / total, float(calls.sum()) / total, math.sqrt(var) / total


def kind_parts(problem: Problem, tier_of: np.ndarray) -> np.ndarray:
    """g by GAIN_KINDS for sites in tiers tier_of (first touch in the last, `other`)."""
    total = problem.total_weight or float(problem.weights.sum())
    if total <= 0 or problem.n == 0:
        return np.zeros(len(GAIN_KINDS))
    idx = np.arange(problem.n)
    by = problem.kind_values()[idx, tier_of, :].sum(axis=0)
    by[-1] += float(problem.first_touch_values()[idx, tier_of].sum())
    return by / total


def saved(problem: Problem, tier_of: np.ndarray) -> tuple[float, float]:
    """g - c and g's standard error for sites in tiers tier_of (k = m = 1)."""
    g, c, sd = parts(problem, tier_of)
    return g - c, sd


def speedup(f: float, k: float, c: float = 0.0, m: float = 1.0) -> float:
    """S for a gain f scaled by k and calls c scaled by m."""
    return 1.0 / (1.0 - min(k * f - m * c, MAX_SAVED))


def predict(problem: Problem, tier_of: np.ndarray, cal: Calibration | None) -> Prediction:
    g, c, sd = parts(problem, tier_of)
    k, k_lo, k_hi = (1.0, 1.0, 1.0) if cal is None else (cal.k, cal.k_lo, cal.k_hi)
    if cal is not None and cal.kind_k and g > 0:
        # one k for the placement: the kinds' own, weighted by its gain in each
        w = kind_parts(problem, tier_of) / g
        ks = np.array([cal.k_of(n) for n in GAIN_KINDS])
        k, k_lo, k_hi = (float(w @ ks[:, j]) for j in range(3))
    m, m_lo, m_hi = (1.0, 1.0, 1.0) if cal is None else \
        (cal.call_scale, cal.call_scale_lo, cal.call_scale_hi)
    g_lo, g_hi = max(0.0, g - Z95 * sd), g + Z95 * sd
    return Prediction(speedup(g, k, c, m), speedup(g_lo, k_lo, c, m_hi),
                      speedup(g_hi, k_hi, c, m_lo), g - c)


def all_fast(problem: Problem) -> np.ndarray:
    """tier_of with every site in the fastest tier."""
    return np.zeros(problem.n, np.int64)


def as_run_all_fast(problem: Problem) -> Problem:
    """problem with each placing tier's call cost as every site fast pays it (module
    doc): UNMATCHED_SHARE of alloc_cost_ns."""
    tiers = [t if t.backend == "default" else
             replace(t, alloc_cost_ns=t.call_cost_ns * UNMATCHED_SHARE) for t in problem.tiers]
    return replace(problem, tiers=tiers, _charged={})


def worth_making(*predictions: Prediction) -> bool:
    """Whether any of these placements (the advisor's, every site fast) is predicted to
    gain MIN_GAIN at the top of its range."""
    return any(p.hi >= 1.0 + MIN_GAIN for p in predictions)


Fit = tuple[float, float, float, float, float, float]     # k, k_lo, k_hi, m, m_lo, m_hi


def fit(points: list[Point] | tuple[Point, ...], prior_sd: float = CALL_PRIOR_SD) -> Fit | None:
    """k and m with their intervals from measured points (module doc), or None when no
    point has a gain to scale."""
    pts = [p for p in points if p.lo > 0 and p.hi >= p.lo and p.measured > 0]
    if not any(p.gain > 0 for p in pts):
        return None
    rows, rhs = [], []
    for p in pts:
        sd = max((1.0 / p.lo - 1.0 / p.hi) / (2 * Z95), MIN_SD)
        rows.append((p.gain / sd, -p.calls / sd))
        rhs.append((1.0 - 1.0 / p.measured) / sd)
    rows.append((0.0, 1.0 / prior_sd))
    rhs.append(1.0 / prior_sd)
    a, b = np.asarray(rows), np.asarray(rhs)

    def cost(x: np.ndarray) -> float:
        return float(np.sum((a @ x - b) ** 2))

    def along(col: int) -> np.ndarray:          # the other coefficient held at 0
        v = a[:, col]
        x = np.zeros(2)
        den = float(v @ v)
        x[col] = max(0.0, float(v @ b) / den) if den > 0 else 0.0
        return x

    ata = a.T @ a
    free, *_ = np.linalg.lstsq(a, b, rcond=None)
    cands = [along(0), along(1)]
    if free[0] >= 0 and free[1] >= 0:
        cands.append(free)
    best = min(cands, key=cost)
    dof = len(rhs) - 2
    scale = max(1.0, cost(best) / dof) if dof > 0 else 1.0
    cov = np.linalg.pinv(ata) * scale
    sk, sm = (Z95 * math.sqrt(max(0.0, float(cov[i, i]))) for i in (0, 1))
    k, m = float(best[0]), float(best[1])
    return k, max(0.0, k - sk), k + sk, m, max(0.0, m - sm), m + sm


def calibration(points: list[Point], trace_id: str, sampler: str, backend: str,
                load_cost: float, fallback_cost: float, rounds: int,
                source: str) -> Calibration | None:
    """The Calibration fitted on points (every site fast first), for that trace, sampler
    and fast tier; None as fit()."""
    got = fit(points)
    if got is None:
        return None
    k, k_lo, k_hi, m, m_lo, m_hi = got
    up = points[0]
    return Calibration(k, k_lo, k_hi, m, m_lo, m_hi, up.measured, up.lo, up.hi,
                       tuple(points), trace_id, sampler, backend, load_cost, fallback_cost,
                       rounds, source, fit_kinds(points, k, m))


def fit_kinds(points: list[Point] | tuple[Point, ...], k: float,
              m: float) -> tuple[tuple[str, float, float, float], ...]:
    """A k per kind of gain where the points tell the kinds apart: weighted least
    squares of 1 - 1/S = sum_j k_j g_j - m c over the points with their kinds, each k_j
    held towards k (KIND_PRIOR_SD), m as fit() found it. A kind is given when the points
    narrowed its interval to under KIND_TOLD of the prior's; none with fewer than two
    points (one point is fit()'s k exactly)."""
    pts = [p for p in points if p.lo > 0 and p.hi >= p.lo and p.measured > 0
           and len(p.kinds) == len(GAIN_KINDS)]
    if len(pts) < 2:
        return ()
    n = len(GAIN_KINDS)
    rows, rhs = [], []
    for p in pts:
        sd = max((1.0 / p.lo - 1.0 / p.hi) / (2 * Z95), MIN_SD)
        rows.append(np.asarray(p.kinds) / sd)
        rhs.append((1.0 - 1.0 / p.measured + m * p.calls) / sd)
    for j in range(n):
        prior = np.zeros(n)
        prior[j] = 1.0 / KIND_PRIOR_SD
        rows.append(prior)
        rhs.append(k / KIND_PRIOR_SD)
    a, b = np.asarray(rows), np.asarray(rhs)
    x, *_ = np.linalg.lstsq(a, b, rcond=None)
    cost = float(np.sum((a @ x - b) ** 2))
    dof = len(pts) - 1
    scale = max(1.0, cost / dof) if dof > 0 else 1.0
    cov = np.linalg.pinv(a.T @ a) * scale
    out = []
    for j, name in enumerate(GAIN_KINDS):
        sd = math.sqrt(max(0.0, float(cov[j, j])))
        if sd < KIND_TOLD * KIND_PRIOR_SD:
            kj = max(0.0, float(x[j]))
            out.append((name, kj, max(0.0, kj - Z95 * sd), kj + Z95 * sd))
    return tuple(out)


def matches(cal: Calibration, trace_id: str, sampler: str, tiers: list[Tier]) -> str | None:
    """Why the calibration does not hold for this trace and machine (None: it does)."""
    fast, fb = tiers[0], tiers[-1]
    if trace_id and cal.trace_id and trace_id != cal.trace_id:
        return "it was measured for another trace"
    if cal.sampler != sampler:
        return f"it was measured with the {cal.sampler} sampler, this trace has {sampler}"
    if (cal.backend, cal.load_cost, cal.fallback_cost) != (fast.backend, fast.load_cost,
                                                          fb.load_cost):
        return "it was measured for another fast tier (backend or costs differ)"
    return None


def write_calibration(path: Path, cal: Calibration) -> None:
    from hmtune.core.files import write_atomic

    write_atomic(path, json.dumps({"format": FORMAT, **asdict(cal)}, indent=1) + "\n")


def read_calibration(path: Path) -> Calibration:
    """Raises ValueError (or OSError) for a file that is not a calibration."""
    doc = json.loads(path.read_text())
    if not isinstance(doc, dict) or not str(doc.get("format", "")).startswith(
            "hmtune calibration v"):
        raise ValueError(f"{path}: not an {FORMAT} file")
    if doc["format"] not in (FORMAT, OLDER_FORMAT):
        raise ValueError(f"{path}: {doc['format']}, fitted by an earlier hmtune with "
                         "another model: run hmtune compare again")
    fields = set(Calibration.__dataclass_fields__)
    if doc["format"] == OLDER_FORMAT:
        fields.discard("kind_k")
    missing = sorted(fields - set(doc))
    if missing:
        raise ValueError(f"{path}: missing {', '.join(missing)}")
    try:
        pts = tuple(Point(**{**p, "kinds": tuple(p.get("kinds", ()))}) for p in doc["points"])
        kind_k = tuple((str(n), float(x), float(lo), float(hi))
                       for n, x, lo, hi in doc.get("kind_k", ()))
    except (TypeError, ValueError, AttributeError) as e:
        raise ValueError(f"{path}: a point or kind is not one: {e}") from None
    if any(n not in GAIN_KINDS for n, *_ in kind_k):
        raise ValueError(f"{path}: kind_k names a kind that is none of "
                         f"{', '.join(GAIN_KINDS)}")
    cal = Calibration(**{k: doc[k] for k in fields if k not in ("points", "kind_k")},
                      points=pts, kind_k=kind_k)
    nums = (cal.k, cal.k_lo, cal.k_hi, cal.call_scale, cal.call_scale_lo, cal.call_scale_hi,
            cal.measured, cal.measured_lo, cal.measured_hi,
            *(x for p in pts for x in (p.measured, p.lo, p.hi, p.gain, p.calls, *p.kinds)),
            *(x for _, *v in kind_k for x in v))
    if not all(isinstance(x, int | float) and math.isfinite(x) for x in nums):
        raise ValueError(f"{path}: a coefficient is not a finite number")
    return cal


def lines(mine: Prediction, every: Prediction, cal: Calibration | None, fast: str) -> list[str]:
    """What advise says of the predictions: report.txt's and the terminal's lines."""
    out = [f"predicted: {mine.text()} speedup for this placement, {every.text()} with "
           f"every site in tier {fast}"]
    if cal is None:
        out.append("calibration: none: the machine file's costs taken at their word "
                   "(hmtune compare on this stage measures every site fast and calibrates)")
    else:
        out.append(f"calibration: {cal.source} ({cal.rounds} rounds, {len(cal.points)} "
                   f"measured placement{'s' if len(cal.points) != 1 else ''}): every site "
                   f"fast measured {cal.measured:.2f}x [{cal.measured_lo:.2f}-"
                   f"{cal.measured_hi:.2f}]; gains x k = {cal.k:.2f} [{cal.k_lo:.2f}-"
                   f"{cal.k_hi:.2f}], call costs x m = {cal.call_scale:.2f} "
                   f"[{cal.call_scale_lo:.2f}-{cal.call_scale_hi:.2f}]"
                   + "".join(f"; {n} gains x {x:.2f} [{lo:.2f}-{hi:.2f}]"
                             for n, x, lo, hi in cal.kind_k))
    if not worth_making(mine, every):
        out.append(f"no placement worth making: neither this placement ({mine.text()}) nor "
                   f"every site in tier {fast} ({every.text()}) is predicted to gain "
                   f"{100 * MIN_GAIN:.0f} %")
    return out
