"""What compare and explore print and write about measured rounds: per-variant summaries
(speedup, interval, share of the gain, resources) from runs.csv's rows, their summary.csv
columns, and the text lines (speedups, shares, resources, why the rounds stopped,
the method). The rounds themselves are hmtune.workflows.measure's."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterator
from dataclasses import dataclass

from hmtune.workflows import stats
from hmtune.workflows.measure import (
    RESOURCES,
    Outcome,
    Plan,
    Rows,
    complete_rounds,
    fom_table,
    round_runs,
)

# ---- the summary ----

@dataclass
class Summary:
    """One variant over the complete rounds."""
    name: str
    runs: int
    median_fom: float
    min_fom: float
    max_fom: float
    est: stats.Estimate
    fast_bytes: float               # median high-water mark of the first tier
    gain_per_mib: float             # FOM gained per MiB in the fast tier (nan: none),
                                    # at the speedup (stats.gain_per_mib)
    resources: dict[str, float]     # medians of RESOURCES over its runs (the reference's
                                    # second runs too; nan: not recorded)


def summarize(rows: Rows, names: list[str], top: str | None, higher: bool) -> list[Summary]:
    """Every variant over the rounds that hold a run of each (names[0]: the reference)."""
    rounds = complete_rounds(rows, names)
    if not rounds:
        return []
    table = fom_table(rows, names)
    est = stats.estimate(table, names, names[0], top, higher)
    base = statistics.median(t[names[0]] for t in table)
    out = []
    for n in names:
        foms = [t[n] for t in table]
        mine = [x for r in rounds for x in round_runs(rows, n, r)]
        med = statistics.median(foms)
        fast = statistics.median(int(x["fast_bytes"]) for x in mine)
        res = {}
        for k in RESOURCES:
            vals = [float(x[k]) for x in mine if x.get(k)]
            res[k] = statistics.median(vals) if vals else math.nan
        out.append(Summary(n, len(rounds), med, min(foms), max(foms), est[n], fast,
                           stats.gain_per_mib(base, est[n].speedup, fast / 2**20, higher),
                           res))
    return out


def _num(x: float | None, fmt: str) -> str:
    return "" if x is None or math.isnan(x) else format(x, fmt)


def csv_columns(s: Summary, speedup_fmt: str = ".3f") -> dict[str, str]:
    """The summary.csv columns compare and explore share (docs/formats.md §7)."""
    e, r = s.est, s.resources
    return {"runs": str(s.runs), "median_fom": f"{s.median_fom:.6g}",
            "min_fom": f"{s.min_fom:.6g}", "max_fom": f"{s.max_fom:.6g}",
            "speedup": format(e.speedup, speedup_fmt),
            "speedup_lo": _num(e.lo, speedup_fmt), "speedup_hi": _num(e.hi, speedup_fmt),
            "halfwidth": _num(None if math.isinf(e.halfwidth) else e.halfwidth, ".4f"),
            "verdict": e.verdict, "share_of_gain": _num(e.share, ".4f"),
            "share_lo": _num(e.share_lo, ".4f"), "share_hi": _num(e.share_hi, ".4f"),
            "dfom_per_mib": f"{s.gain_per_mib:.6g}",
            "wall_s": _num(r["wall_s"], ".3f"), "user_s": _num(r["user_s"], ".3f"),
            "sys_s": _num(r["sys_s"], ".3f"), "minflt": _num(r["minflt"], ".0f"),
            "majflt": _num(r["majflt"], ".0f"),
            "maxrss_mib": _num(r["maxrss_kib"] / 1024, ".1f"),
            "hugepages": _num(r["hugepages"], ".0f")}


SHARED_COLUMNS = list(csv_columns(Summary("", 1, 1, 1, 1, stats.Estimate(1, 1.0), 0, 0,
                                          dict.fromkeys(RESOURCES, 0.0))))


# ---- what to print ----

@dataclass
class Versus:
    """The best of one group of variants against the best of another, paired round by
    round (its speedup over the other's, with the interval and verdict)."""
    mine: str
    other: str
    est: stats.Estimate

    @property
    def word(self) -> str:
        return {stats.FASTER: f"{self.mine} is ahead", stats.SLOWER: f"{self.other} is ahead",
                stats.UNSUPPORTED: "1 round: no interval"}.get(self.est.verdict,
                                                               "indistinguishable")

    def line(self) -> str:
        return (f"{self.mine} over {self.other}, paired over {self.est.rounds} round(s): "
                f"{fmt_speedup(self.est)}: {self.word}")


def versus(summary: list[Summary], rows: Rows, mine: list[str], other: list[str],
           higher: bool) -> Versus | None:
    """The fastest of `mine` (by speedup over the reference) over the fastest of `other`,
    on the rounds complete for both; None when either group has no summarized variant."""
    speed = {s.name: s.est.speedup for s in summary}
    a = max((n for n in mine if n in speed), key=speed.__getitem__, default=None)
    b = max((n for n in other if n in speed), key=speed.__getitem__, default=None)
    if a is None or b is None:
        return None
    table = fom_table(rows, [a, b])
    est = stats.estimate(table, [b, a], b, None, higher)
    return Versus(a, b, est[a]) if a in est else None


def split_over_whole(summary: list[Summary], rows: Rows, names: list[str], whole: str,
                     higher: bool) -> list[Versus]:
    """Each strategy among names whose whole-objects twin (its name with `whole` before
    the capacity tag) is there too, over that twin, paired round by round: what
    placing parts of objects gained over placing whole objects at the same capacity."""
    have = {s.name for s in summary}
    out = []
    for n in names:
        base, at, tag = n.partition("@")
        twin = base + whole + at + tag
        if base.endswith(whole) or twin not in have or n not in have:
            continue
        table = fom_table(rows, [n, twin])
        est = stats.estimate(table, [twin, n], twin, None, higher)
        if n in est:
            out.append(Versus(n, twin, est[n]))
    return out


def fmt_speedup(e: stats.Estimate) -> str:
    """`1.81x [1.70-1.93]`, `1.00x (reference)`, `1.81x (1 round)`."""
    if e.verdict == stats.REFERENCE:
        return f"{e.speedup:.2f}x (reference)"
    if e.lo is None or e.hi is None:
        return f"{e.speedup:.2f}x (1 round)"
    lo, hi = f"{e.lo:.2f}", f"{e.hi:.2f}"
    if e.verdict == stats.FASTER and lo == "1.00":      # above 1, if barely: show it
        lo = f"{e.lo:.3f}"
    if e.verdict == stats.SLOWER and hi == "1.00":
        hi = f"{e.hi:.3f}"
    return f"{e.speedup:.2f}x [{lo}-{hi}]"


def fmt_share(e: stats.Estimate) -> str:
    """`94 % [88-99 %]`; `-` when undefined."""
    if e.share is None:
        return "-"
    if e.share_lo is None or e.share_hi is None:
        return f"{100 * e.share:.0f} %"
    if e.share_lo == e.share_hi:
        return f"{100 * e.share:.0f} %"
    if e.share_hi - e.share_lo > 2:        # more than 200 points: says nothing
        return f"{100 * e.share:.0f} % [too wide]"
    return f"{100 * e.share:.0f} % [{100 * e.share_lo:.0f}-{100 * e.share_hi:.0f} %]"


def beyond_bound(summary: list[Summary], upper: str) -> str | None:
    """One line when variants gain measurably more than the upper bound (the low end of
    their share's interval above 100 %), naming them and what each run of the bound and
    of the best of them took in CPU time; None otherwise."""
    up = next((s for s in summary if s.name == upper), None)
    over = [s for s in summary if s is not up and s.est.share_lo is not None
            and s.est.share_lo > 1.0]
    if up is None or not over:
        return None
    best = max(over, key=lambda s: s.est.speedup)

    def cpu(s: Summary) -> float:
        return s.resources.get("user_s", math.nan) + s.resources.get("sys_s", math.nan)

    spent = "" if math.isnan(cpu(up)) or math.isnan(cpu(best)) else \
        f" ({upper} took {cpu(up):.1f} s of CPU a run, {best.name} {cpu(best):.1f} s)"
    return (f"{', '.join(s.name for s in over)} gained measurably more than {upper}, "
            f"which places every allocation: here that costs more than the fast tier gains "
            f"for some of them{spent}, so {upper} is no upper bound for this application "
            "and shares above 100 % are real")


@dataclass
class Short:
    """A variant whose fast tier left blocks in ordinary memory in some of its runs."""
    name: str
    runs: int                       # runs with such blocks
    of: int                         # its runs with the columns recorded
    not_fitting: int                # median over those runs: blocks left out
    map_failed: int                 # of them, mappings the kernel refused

    def line(self) -> str:
        pool = (f", {self.map_failed} of them because the kernel refused the mappings "
                "(the hugepage pool or the nodes' memory ran out: reserve more, e.g. "
                "--reserve-hugepages as root), so its speedup understates the tier"
                if self.map_failed else ", all refused by its capacity")
        return (f"{self.name}: in {self.runs} of {self.of} runs the fast tier left blocks in "
                f"ordinary memory (median {self.not_fitting}){pool}")


def short_of_tier(rows: Rows, names: list[str], planned: set[str]) -> list[Short]:
    """The variants whose runs left blocks out of the fast tier (runs.csv's
    not_fitting and map_failed, libhmalloc's statistics summed over ranks): every
    variant whose mappings the kernel refused, and of `planned` (placements meant to
    fit whole: the advisor's and the upper bound) also those whose capacity refused
    some. Baselines that fill their capacity and stop are expected to refuse."""
    out = []
    for n in names:
        runs = [r for (v, _), r in rows.items() if v == n
                and r.get("not_fitting", "") != "" and r.get("map_failed", "") != ""]
        bad = [r for r in runs if int(r["map_failed"]) > 0
               or (n in planned and int(r["not_fitting"]) > 0)]
        if bad:
            out.append(Short(n, len(bad), len(runs),
                             round(statistics.median(int(r["not_fitting"]) for r in bad)),
                             round(statistics.median(int(r["map_failed"]) for r in bad))))
    return out


def fmt_count(x: float) -> str:
    """2720000 -> `2.72 M`, 23000 -> `23.0 k`."""
    if math.isnan(x):
        return "-"
    for div, unit in ((1e9, " G"), (1e6, " M"), (1e3, " k")):
        if abs(x) >= div:
            return f"{x / div:.3g}{unit}" if x / div < 100 else f"{x / div:.0f}{unit}"
    return f"{x:.0f}"


def resource_table(summary: list[Summary], width: int = 14) -> Iterator[str]:
    """Lines of the per-variant medians of the runs' resources."""
    yield (f"{'variant':<{width}} {'wall s':>8} {'user s':>8} {'sys s':>7} "
           f"{'minor faults':>12} {'major faults':>12} {'max RSS':>10} {'hugepages':>9}")
    for s in summary:
        r = s.resources
        rss = "-" if math.isnan(r["maxrss_kib"]) else f"{r['maxrss_kib'] / 1024:.0f} MiB"
        yield (f"{s.name:<{width}} {_num(r['wall_s'], '.3f') or '-':>8} "
               f"{_num(r['user_s'], '.3f') or '-':>8} {_num(r['sys_s'], '.3f') or '-':>7} "
               f"{fmt_count(r['minflt']):>12} {fmt_count(r['majflt']):>12} {rss:>10} "
               f"{_num(r['hugepages'], '.0f') or '-':>9}")


def stop_message(out: Outcome, plan: Plan, summary: list[Summary]) -> str:
    """What ended the measurement, in one sentence."""
    n = summary[0].runs if summary else 0
    rounds = f"{n} round{'s' if n != 1 else ''}"
    others = [s for s in summary[1:]]
    worst = max(others, key=lambda s: s.est.halfwidth, default=None)
    wide = ("" if worst is None or math.isinf(worst.est.halfwidth) else
            f"; the widest interval is {worst.name}'s, +-{100 * worst.est.halfwidth:.1f} %")
    if out.stopped_by == "target":
        return (f"stopped after {rounds}: every speedup's 95 % interval is within "
                f"+-{100 * plan.target:g} %{wide}")
    if out.stopped_by == "budget":
        short = (f" (fewer than the {plan.min_rounds} the target needs)"
                 if n < plan.min_rounds else "")
        return (f"stopped after {rounds}{short}: the {fmt_duration(plan.budget)} budget ran "
                f"out before every interval was within +-{100 * plan.target:g} %{wide}")
    if n == 1:
        return "1 round (--repeats 1): no interval, every speedup is unsupported"
    return f"{rounds} (--repeats {plan.repeats}){wide}"


def fmt_duration(seconds: float) -> str:
    s = round(seconds)
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return "".join(f"{v}{u}" for v, u in ((h, "h"), (m, "m"), (sec, "s")) if v) or "0s"


def method_note(n: int) -> str:
    if n < 2:
        return ""
    return (f"95 % intervals: paired bootstrap over the {n} rounds ({stats.RESAMPLES} "
            f"resamples, seed {stats.SEED}, expanded percentile, at least Student's t)")
