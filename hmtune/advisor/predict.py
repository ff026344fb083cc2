"""A placement's predicted speedup, with a range, and its calibration by measurement.

Model. The sampled weight of a trace stands for where the run's time goes (the
software sampler: ns of thread time per sample; PEBS/IBS: load latency). A site's
value in a tier (hmtune/advisor/model.py) is the part of its weight it would no longer pay
there. With T the trace's total weight and V the value of the placed sites, the
placement saves a fraction k * V / T of the run, where k says how much of that
sampled cost the tier really removes; the predicted speedup is

    S = 1 / (1 - k * f),   f = V / T.

Every site fast. `hmtune compare` runs it as libhmalloc's HMTUNE_BASELINE=all: every
request in the fast tier with no call stack unwound or matched, so each allocation
costs UNMATCHED_SHARE of the tier's alloc_cost_ns (as_run_all_fast); its prediction and
the calibration below use that cost.

Coefficient. Uncalibrated, k = 1: the machine file's costs taken at their word.
`hmtune compare` measures every-site-fast's speedup S_all with its 95 % interval and
fits k = (1 - 1 / S_all) / f_all (and k's interval from S_all's), stored in
DIR/calibration.json for the trace (trace-id), sampler and fast tier (backend and
costs) it was measured with; `hmtune advise` uses it when all of them match.

Range. A site's weight is a count of samples: its relative standard error is about
1 / sqrt(samples), so sd(V)^2 = sum(value_i^2 / samples_i); f's range is f ± 1.96 sd,
and S's range takes the extremes of f's and k's ranges together.

"No placement worth making": every site fast is predicted to gain less than MIN_GAIN
at the top of its range.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from hmtune.advisor.model import Problem, Tier

MIN_GAIN = 0.02           # a predicted gain below this at the top of its range: not worth it
Z95 = 1.96
MAX_SAVED = 0.95          # a fraction saved is capped here (S at most 20x)
# libhmalloc's placing path without call-site matching (HMTUNE_BASELINE) over the matched
# path (alloc_cost_ns), per allocation. BWA-MEM, 3.08 M allocations: every request placed
# without matching took 2.1-2.8 s more user CPU than the placements of its big objects
# alone (9-round medians, bench/results/apps-2026-11-27c-vm-bwa-mem.md), 680-910 ns
# each; matched, 2.1-2.5 us (apps-2026-11-27-vm-bwa-mem.md)
UNMATCHED_SHARE = 0.4
FORMAT = "hmtune calibration v1"


@dataclass(frozen=True)
class Prediction:
    speedup: float
    lo: float
    hi: float
    fraction: float             # f: the share of the sampled weight the placement saves (k = 1)

    def text(self) -> str:
        return f"{self.speedup:.2f}x [{self.lo:.2f}-{self.hi:.2f}]"


@dataclass(frozen=True)
class Calibration:
    k: float
    k_lo: float
    k_hi: float
    measured: float             # every-site-fast's measured speedup and its interval
    measured_lo: float
    measured_hi: float
    fraction_all: float         # f of every site fast, when it was fitted
    trace_id: str
    sampler: str
    backend: str                # the fast tier's
    load_cost: float            # the fast and fallback tiers' costs
    fallback_cost: float
    rounds: int
    source: str                 # the compare directory it came from


def saved(problem: Problem, tier_of: np.ndarray) -> tuple[float, float]:
    """f and its standard error for sites in tiers tier_of (k = 1)."""
    total = problem.total_weight or float(problem.weights.sum())
    if total <= 0 or problem.n == 0:
        return 0.0, 0.0
    v = problem.values()[np.arange(problem.n), tier_of]
    samples = problem.samples if problem.samples is not None else np.ones(problem.n)
    var = float(np.sum(v * v / np.maximum(samples, 1)))
    return float(v.sum()) / total, math.sqrt(var) / total


def speedup(f: float, k: float) -> float:
    return 1.0 / (1.0 - min(k * f, MAX_SAVED))


def predict(problem: Problem, tier_of: np.ndarray, cal: Calibration | None) -> Prediction:
    f, sd = saved(problem, tier_of)
    k, k_lo, k_hi = (1.0, 1.0, 1.0) if cal is None else (cal.k, cal.k_lo, cal.k_hi)
    f_lo, f_hi = max(0.0, f - Z95 * sd), f + Z95 * sd
    ends = [speedup(a * b, 1.0) for a in (f_lo, f_hi) for b in (k_lo, k_hi)]
    return Prediction(speedup(f, k), min(ends), max(ends), f)


def all_fast(problem: Problem) -> np.ndarray:
    """tier_of with every site in the fastest tier."""
    return np.zeros(problem.n, np.int64)


def as_run_all_fast(problem: Problem) -> Problem:
    """problem with each placing tier's call cost as every site fast pays it (module
    doc): UNMATCHED_SHARE of alloc_cost_ns."""
    tiers = [t if t.backend == "default" else
             replace(t, alloc_cost_ns=t.call_cost_ns * UNMATCHED_SHARE) for t in problem.tiers]
    return replace(problem, tiers=tiers, _charged={})


def worth_making(every_site: Prediction) -> bool:
    return every_site.hi >= 1.0 + MIN_GAIN


def fit(measured: float, lo: float, hi: float, fraction_all: float) -> tuple[float, float, float]:
    """k and its interval from every-site-fast's measured speedup (module doc)."""
    def k_of(s: float) -> float:
        return (1.0 - 1.0 / s) / fraction_all
    return k_of(measured), k_of(lo), k_of(hi)


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
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ValueError(f"{path}: not an {FORMAT} file")
    fields = set(Calibration.__dataclass_fields__)
    missing = sorted(fields - set(doc))
    if missing:
        raise ValueError(f"{path}: missing {', '.join(missing)}")
    cal = Calibration(**{k: doc[k] for k in fields})
    nums = (cal.k, cal.k_lo, cal.k_hi, cal.measured, cal.measured_lo, cal.measured_hi,
            cal.fraction_all)
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
        out.append(f"calibration: {cal.source} ({cal.rounds} rounds): every site fast "
                   f"measured {cal.measured:.2f}x [{cal.measured_lo:.2f}-"
                   f"{cal.measured_hi:.2f}], k = {cal.k:.2f} [{cal.k_lo:.2f}-{cal.k_hi:.2f}]")
    if not worth_making(every):
        out.append(f"no placement worth making: every site in tier {fast} is predicted to "
                   f"gain under {100 * MIN_GAIN:.0f} % ({every.text()})")
    return out
