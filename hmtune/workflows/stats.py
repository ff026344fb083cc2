"""How sure compare and explore are: each variant's speedup over the reference (all-slow,
or explore's placement with nothing in the fast tier) from interleaved rounds, with a
95 % confidence interval, its verdict, and its share of the gain the upper bound (every
site in the fast tier) achieves. Pure Python (no numpy: the CLI starts without it).

The method (docs/formats.md §7):
- A round holds one run of every variant, so the runs of one round share the machine's
  state of that moment. Each round gives a paired ratio per variant, "how many times
  faster" than the reference in that round (reference FOM / FOM for a time, FOM /
  reference FOM for a rate; the reference FOM of a round where it ran twice is the
  geometric mean of its two runs, hmtune/workflows/measure.py round_fom). The speedup
  is their geometric mean: exp of the mean of the log ratios over the rounds.
- Interval: paired bootstrap over rounds. A resample draws rounds with replacement (all
  variants of a drawn round together, so differences between rounds cancel in every
  ratio and the share of gain keeps the variants' correlation), RESAMPLES times from a
  fixed seed (the same runs give the same intervals). The interval is the expanded
  percentile interval (Hesterberg 2015, "What teachers should know about the
  bootstrap"): the percentiles at alpha'/2 and 1 - alpha'/2 with
  alpha' = 2 Phi(-sqrt(n/(n-1)) t_{n-1}(0.975)), which corrects the plain percentile
  interval's narrowness in small samples. A bootstrap cannot reach beyond the rounds'
  own range, which with few rounds (2-4) is too narrow; each variant's resampled means
  are therefore stretched about the estimate so that its interval is at least as wide
  as Student's t interval of the mean log ratio (which then decides with few rounds,
  while the bootstrap keeps the skew of many).
- Verdict: "faster" when the interval lies above 1, "slower" below, "indistinguishable
  from all-slow" when it holds 1; a single round has no interval ("unsupported").
- Share of the achievable gain: (S - 1) / (S_all - 1), S_all the upper bound's speedup,
  its interval from the same resamples; undefined when the upper bound's own interval
  holds 1 (there is no gain to share).
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

LEVEL = 0.95
RESAMPLES = 2000
SEED = 14                       # fixed: the same runs give the same intervals
MIN_ROUNDS = 5                  # --repeats auto: rounds before the target may stop it

REFERENCE = "reference"
FASTER = "faster"
SLOWER = "slower"
SAME = "indistinguishable from all-slow"
UNSUPPORTED = "unsupported (1 round: no interval)"


def speedup_of(ref_fom: float, fom: float, higher: bool) -> float:
    """How many times faster than the reference one run (or median) is, above 1 when
    better whichever way the FOM goes (a time: ref / fom; a rate: fom / ref)."""
    return fom / ref_fom if higher else ref_fom / fom


def gain_per_mib(ref_fom: float, speedup: float, mib: float, higher: bool) -> float:
    """FOM gained over the reference per MiB in the fast tier, at this speedup: the
    reference's FOM times (1 - 1/speedup) for a time (seconds saved), times (speedup - 1)
    for a rate; so it is positive exactly when the speedup is above 1. nan without
    bytes in the fast tier."""
    if not mib or math.isnan(mib):
        return math.nan
    gained = ref_fom * (speedup - 1.0) if higher else ref_fom * (1.0 - 1.0 / speedup)
    return gained / mib


# ---- distributions (no scipy) ----

def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        for num in (m * (b - m) * x / ((a + m2 - 1) * (a + m2)),
                    -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                     + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """Student's t distribution function."""
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t with df degrees of freedom (bisection)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), not {p}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return (lo + hi) / 2.0


def expanded_alpha(n: int, level: float = LEVEL) -> float:
    """alpha' of the expanded percentile interval for n rounds (Hesterberg 2015)."""
    t = t_quantile(1.0 - (1.0 - level) / 2.0, n - 1)
    return 2.0 * statistics.NormalDist().cdf(-math.sqrt(n / (n - 1)) * t)


def quantile(sorted_values: Sequence[float], p: float) -> float:
    """The p-quantile of sorted values, interpolating linearly (R's type 7)."""
    n = len(sorted_values)
    if n == 1:
        return sorted_values[0]
    h = (n - 1) * min(1.0, max(0.0, p))
    i = int(math.floor(h))
    if i >= n - 1:
        return sorted_values[-1]
    a, b = sorted_values[i], sorted_values[i + 1]
    if a == b or math.isinf(a) or math.isinf(b):
        return a if h - i < 0.5 else b
    return a + (h - i) * (b - a)


# ---- estimates ----

@dataclass(frozen=True)
class Estimate:
    """One variant's speedup over the reference, from `rounds` paired rounds."""
    rounds: int
    speedup: float
    lo: float | None = None         # 95 % interval; None: one round, no interval
    hi: float | None = None
    verdict: str = ""
    share: float | None = None      # of the upper bound's gain; None: undefined
    share_lo: float | None = None
    share_hi: float | None = None

    @property
    def halfwidth(self) -> float:
        """The interval's half-width relative to the speedup (0.03: +-3 %); inf
        without an interval."""
        if self.lo is None or self.hi is None:
            return math.inf
        return (self.hi - self.lo) / (2.0 * self.speedup)


def verdict(lo: float | None, hi: float | None) -> str:
    """What the interval says about the variant against all-slow."""
    if lo is None or hi is None:
        return UNSUPPORTED
    if lo > 1.0:
        return FASTER
    if hi < 1.0:
        return SLOWER
    return SAME


def log_ratios(rounds: Sequence[Mapping[str, float]], name: str, ref: str,
               higher: bool) -> list[float]:
    """Per round, log of how many times faster `name` ran than `ref`."""
    return [math.log(speedup_of(r[ref], r[name], higher)) for r in rounds]


def t_halfwidth(logs: Sequence[float], level: float = LEVEL) -> float:
    """Half-width of Student's t interval of the mean of logs (inf with one value)."""
    n = len(logs)
    if n < 2:
        return math.inf
    t = t_quantile(1.0 - (1.0 - level) / 2.0, n - 1)
    return t * statistics.stdev(logs) / math.sqrt(n)


def quick_halfwidth(rounds: Sequence[Mapping[str, float]], names: Sequence[str], ref: str,
                    higher: bool) -> float:
    """The largest relative half-width of the variants' Student t intervals: cheap, and
    (nearly) a lower bound of estimate()'s, so a larger value means the target is not
    met without running the bootstrap."""
    worst = 0.0
    for n in names:
        if n != ref:
            worst = max(worst, math.sinh(t_halfwidth(log_ratios(rounds, n, ref, higher))))
    return worst


def estimate(rounds: Sequence[Mapping[str, float]], names: Sequence[str], ref: str,
             top: str | None, higher: bool, *, level: float = LEVEL,
             resamples: int = RESAMPLES, seed: int = SEED) -> dict[str, Estimate]:
    """Each variant's Estimate from complete rounds (a FOM of every variant in each, all
    above 0); top: the upper bound's variant (its share is 1), None for no shares.
    See the module's doc for the method."""
    n = len(rounds)
    if n == 0:
        return {}
    logs = {v: log_ratios(rounds, v, ref, higher) for v in names}
    means = {v: math.fsum(d) / n for v, d in logs.items()}
    point = {v: math.exp(m) for v, m in means.items()}
    if n == 1:
        out = {v: Estimate(1, point[v], verdict=UNSUPPORTED) for v in names}
        out[ref] = Estimate(1, 1.0, 1.0, 1.0, REFERENCE)
        if top is not None and point[top] > 1.0:
            for v in names:
                s = (point[v] - 1.0) / (point[top] - 1.0)
                out[v] = Estimate(1, out[v].speedup, out[v].lo, out[v].hi, out[v].verdict, s)
        return out
    rng = random.Random(seed)
    draws = [rng.choices(range(n), k=n) for _ in range(resamples)]
    a = expanded_alpha(n, level)
    plo, phi = a / 2.0, 1.0 - a / 2.0
    stretched: dict[str, list[float]] = {}
    interval: dict[str, tuple[float, float]] = {}
    for v in names:
        d, m = logs[v], means[v]
        boot = [math.fsum(map(d.__getitem__, idx)) / n for idx in draws]
        srt = sorted(boot)
        qlo, qhi = quantile(srt, plo), quantile(srt, phi)
        th = t_halfwidth(d, level)
        bh = (qhi - qlo) / 2.0
        k = max(1.0, th / bh) if bh > 0 else 1.0
        if bh <= 0 < th:               # the rounds agree but not exactly: t alone
            qlo, qhi = m - th, m + th
        else:
            qlo, qhi = m + k * (qlo - m), m + k * (qhi - m)
        stretched[v] = [m + k * (b - m) for b in boot]
        interval[v] = (math.exp(qlo), math.exp(qhi))
    out: dict[str, Estimate] = {}
    top_ok = top is not None and interval[top][0] > 1.0
    for v in names:
        lo, hi = interval[v]
        share = share_lo = share_hi = None
        if top_ok and top is not None:
            share = (point[v] - 1.0) / (point[top] - 1.0)
            if v == top:
                share_lo = share_hi = 1.0
            else:
                g = sorted(_share(sv, st) for sv, st in zip(stretched[v], stretched[top],
                                                             strict=True))
                share_lo, share_hi = quantile(g, plo), quantile(g, phi)
        if v == ref:
            out[v] = Estimate(n, 1.0, 1.0, 1.0, REFERENCE, share, share_lo, share_hi)
        else:
            out[v] = Estimate(n, point[v], lo, hi, verdict(lo, hi), share, share_lo, share_hi)
    return out


def _share(log_v: float, log_top: float) -> float:
    den = math.expm1(log_top)
    num = math.expm1(log_v)
    if den == 0.0:
        return math.copysign(math.inf, num) if num else 0.0
    return num / den


# ---- when --repeats auto stops ----

def stop_reason(rounds: int, halfwidth: float, elapsed: float, per_round: float, *,
                target: float, budget: float, min_rounds: int = MIN_ROUNDS) -> str | None:
    """Whether --repeats auto stops before another round: "target" once at least
    min_rounds rounds are done and every interval's relative half-width (the largest,
    halfwidth) is at most target; "budget" when another round (per_round seconds,
    expected) would end after budget seconds of this invocation (elapsed so far), but
    never before two rounds, which an interval needs; else None."""
    if rounds >= min_rounds and halfwidth <= target:
        return "target"
    if rounds >= 2 and elapsed + per_round > budget:
        return "budget"
    return None
