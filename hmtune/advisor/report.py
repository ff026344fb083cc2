"""The advisor's report: `report.txt`, the terminal summary and the capacity curve.

Shares are of the trace's whole sampled weight (`Problem.total_weight`, the
denominator of sites.csv's `share`) unless they say "of the capturable weight": the
weight of the sites the interposer can match, which is the most any placement captures.
The capacity curve gives, per fast-tier capacity, the best share of the capturable
weight a placement reaches (from `hmtune.advisor.strategies.capacity_curve`).

When a tier speeds up first touch (page faults) and the sites have fault data, each
site row also gives its value (in the weight's unit: what the site saves in that
tier, or for the fallback's rows in the fastest tier) and the part of it that comes
from first touch; the header says how the placement's value splits.

What the advisor can act on: the weight of the placeable sites, allocation sites and
static variables, as a share of all sampled weight; the rest is named by address
class (sites.csv's split: stack, unknown memory, no address) and unplaceable sites. A
static's captured weight in a tier is scaled by the part of it in whole pages there
(`Problem.fraction`).
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np
import pandas as pd

from hmtune.advisor.arena_fit import charged_at_once, footprint
from hmtune.advisor.inputs import Sites
from hmtune.advisor.model import Placement, Problem
from hmtune.analyze.traceid import FIELD as TRACE_ID
from hmtune.analyze.traceid import PNG_SOFTWARE
from hmtune.core.units import human, human_ranges
from hmtune.machine.tiers import KINDS, Tier

_FALLBACK_ROWS = 20


@dataclass
class TierUse:
    tier: Tier                    # per-process capacity (what the solver used)
    rows: pd.DataFrame            # site_id, label, weight, share, bytes (rounded), value, ft
    used: int                     # bytes: the sum of the sites' own peaks in the tier
    share: float                  # fraction of the trace's weight in this tier
    # the most the tier holds at once in one process (allocs.csv known), else None; less
    # than `used` when the sites' peaks come at different times (time-shared capacity),
    # more when the arena's partly used chunks add to them
    at_once: int | None = None
    # of at_once, what libhmalloc charges the tier (its high_water_bytes counts these):
    # the objects' charges without the arena's partly used chunks; None without blocks
    charged: int | None = None

    def occupancy(self) -> str:
        """`16.9 MiB of 18.0 MiB (93.8%) used`, saying when the capacity is time-shared
        and how much of it libhmalloc's own count (the objects' charges) will show."""
        text = self._occupancy()
        if self.at_once is not None and self.charged is not None and \
                self.charged < self.at_once:
            text += (f"; of it {human(self.charged)} in the objects' charges, which "
                     "libhmalloc's high-water mark counts, the rest in the arena's partly "
                     "used chunks")
        return text

    def _occupancy(self) -> str:
        held = self.used if self.at_once is None else self.at_once
        of = "" if self.tier.capacity is None else \
            f" of {human(self.tier.capacity)} ({_pct(held / self.tier.capacity)})"
        if self.at_once is None or self.at_once == self.used:
            return f"{human(held)}{of} used"
        if self.at_once > self.used:
            return (f"{human(held)}{of} used (the sites' own peaks add up to "
                    f"{human(self.used)}; the rest is the arena's rounding: each size class's "
                    "last, partly used slab and chunk on hugepages, or page, and what its "
                    "threads may hold back)")
        return (f"{human(held)}{of} used at most at once (the sites' own peaks add up to "
                f"{human(self.used)}: they are live at different times)")


def tier_use(sites: Sites, problem: Problem, placement: Placement) -> list[TierUse]:
    """Per tier its sites; `value` is a site's value in that tier (in the fastest tier
    for the fallback's sites: what placing it would give) and `ft` the first-touch
    part of it."""
    out: list[TierUse] = []
    table = sites.table
    total = problem.total_weight or 1.0
    access, first = problem.access_values(), problem.first_touch_values()
    fb = last = len(problem.tiers) - 1
    for t, tier in enumerate(problem.tiers):
        idx = np.flatnonzero(placement.tier_of == t)
        sizes = problem.rounded_sizes(t)[idx]
        col = 0 if t == fb else t
        weight = problem.weights[idx]
        if problem.fraction is not None and t != last:
            weight = weight * problem.fraction[idx, t]
        parents = (table["parent_id"] if "parent_id" in table.columns
                   else table["site_id"]).to_numpy()
        starts = (table["range_start"].to_numpy() if "range_start" in table.columns
                  else np.full(len(table), -1))
        ends = (table["range_end"].to_numpy() if "range_end" in table.columns
                else np.full(len(table), -1))
        npieces = pd.Series(parents).map(pd.Series(parents).value_counts()).to_numpy()
        rows = pd.DataFrame({
            "site_id": problem.site_ids[idx],
            "parent": parents[idx],
            "pieces": npieces[idx],          # the parent's pieces over every tier
            "range_start": starts[idx],
            "range_end": ends[idx],
            "label": table["label"].to_numpy()[idx],
            "weight": weight,
            "share": weight / total,
            "bytes": sizes,
            "value": access[idx, col] + first[idx, col],
            "ft": first[idx, col],
            "kind": kind_labels(problem.kind_shares, idx),
        }).sort_values(["weight", "site_id"], ascending=[False, True], kind="stable")
        at_once = charged = None
        if problem.blocks is not None and len(problem.blocks) and t < len(problem.tiers) - 1:
            # blocks over time, chunk tails included; statics (no blocks) their size
            unit = Problem.unit(tier)
            at_once = -(-footprint(problem, t, placement.tier_of == t) // unit) * unit
            charged = charged_at_once(problem, t, placement.tier_of == t)
        out.append(TierUse(tier, rows.reset_index(drop=True), int(sizes.sum()),
                           float(weight.sum() / total), at_once, charged))
    return out


def count_text(rows: pd.DataFrame, rest: bool = False) -> str:
    """How many sites rows hold, each counted once however many ranges of it are
    there, and the ranges as placement.txt writes them (touching pieces joined): `3
    site(s)`, `3 site(s) (2 of them by ranges of their objects, 3 range(s))`. With
    `rest` (the fallback tier, which holds what the split sites' ranges leave): `2
    site(s), and the rest of 1 split site(s)`, so that the tiers' counts add up to the
    sites."""
    n = int(rows["parent"].nunique()) if len(rows) else 0
    here = rows.groupby("parent")["site_id"].transform("size") if len(rows) else []
    # a site with only some of its pieces here (all of them: the whole object)
    pieces = rows[(rows["parent"] != rows["site_id"]) & (here < rows["pieces"])] \
        if len(rows) else rows
    if not len(pieces):
        return f"{n} site(s)"
    if rest:
        k = int(pieces["parent"].nunique())
        return f"{n - k} site(s), and the rest of {k} split site(s)"
    ranges = 0                     # touching pieces are one range, as placement.txt writes
    for _, g in pieces.groupby("parent"):
        end = None
        for a, b in sorted(zip(g["range_start"], g["range_end"], strict=True)):
            ranges += end is None or a > end
            end = b if end is None else max(end, b)
    return (f"{n} site(s) ({int(pieces['parent'].nunique())} of them by ranges of their "
            f"objects, {ranges} range(s))")


@dataclass
class Reach:
    """What the advisor can act on: shares of the trace's sampled weight."""

    heap: float                   # placeable allocation sites
    static: float                 # placeable static variables
    nheap: int
    nstatic: int
    unplaceable: float            # rows of sites.csv the interposer cannot name
    split: str                    # the version line's split, "" when it has none

    @property
    def total(self) -> float:
        return self.heap + self.static


def reach(sites: Sites, problem: Problem) -> Reach:
    total = problem.total_weight
    static = (sites.table["kind"] == "static").to_numpy()
    w = problem.weights
    un = float(sites.unplaceable["weight"].sum())
    # split sites and statics count once, not per piece
    ids = sites.table["parent_id" if "parent_id" in sites.table.columns else "site_id"]
    ids = ids.to_numpy()
    return Reach(float(w[~static].sum()) / total if total > 0 else 0.0,
                 float(w[static].sum()) / total if total > 0 else 0.0,
                 len(set(ids[~static].tolist())), len(set(ids[static].tolist())),
                 un / total if total > 0 else 0.0,
                 sites.split.describe() if sites.split is not None else "")


def reach_text(r: Reach) -> str:
    return (f"{_pct(r.total)} of the sampled weight: {_pct(r.heap)} in {r.nheap} "
            f"allocation site(s), {_pct(r.static)} in {r.nstatic} static variable(s)")


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _cap(t: Tier) -> str:
    return "unlimited" if t.capacity is None else human(t.capacity)


_KIND_SHORT = {"streaming": "stream", "scattered": "scatter", "sync": "sync"}


def kind_labels(shares: np.ndarray | None, idx: np.ndarray) -> list[str]:
    """Per site of idx, its main access kind and that kind's share of its weight
    ("stream 92%"); "-" where sites.csv gives no kinds or none was sampled."""
    if shares is None:
        return ["-"] * len(idx)
    out = []
    for row in shares[idx]:
        k = int(np.argmax(row)) if row.size else 0
        out.append(f"{_KIND_SHORT[KINDS[k]]} {row[k] * 100:.0f}%" if row.size and row[k] > 0
                   else "-")
    return out


def _site_rows(rows: pd.DataFrame, limit: int | None = None, values: bool = False) -> list[str]:
    """Site lines; with `values`, each site's value and the first-touch part of it."""
    extra = f"  {'value':>8}  {'1st touch':>9}" if values else ""
    out = [f"    {'site':>6}  {'weight':>7}  {'size':>10}  {'kind':>12}{extra}  call site"]
    shown = rows if limit is None else rows.head(limit)
    for r in shown.itertuples():
        v = (f"  {r.value:>8.3g}  {_pct(r.ft / r.value) if r.value > 0 else '-':>9}"
             if values else "")
        out.append(f"    {r.site_id:>6}  {_pct(r.share):>7}  {human(r.bytes):>10}  "
                   f"{r.kind:>12}{v}  {r.label}")
    if limit is not None and len(rows) > limit:
        out.append(f"    ... {len(rows) - limit} more (weight "
                   f"{_pct(float(rows['share'].iloc[limit:].sum()))})")
    return out


def _split_lines(sites: Sites, problem: Problem, placement: Placement) -> list[str]:
    """The placed sites with only ranges of their objects in a tier (split.py):
    `N of M MiB (ranges ...)` per site; nothing when none is split."""
    from hmtune.advisor.split import placed_sites

    last = len(problem.tiers) - 1
    split = [s for s in placed_sites(sites.table, placement.tier_of, last) if s.ranges]
    if not split:
        return []
    out = ["", f"split sites (only these ranges of each object are placed; the rest stays "
               f"in ordinary memory): {len(split)}"]
    for s in split:
        label = s.label(sites.table)
        out.append(f"    {s.parent_id:>6}  {human(s.placed_bytes)} of {human(s.object_bytes)} "
                   f"(ranges {human_ranges(s.ranges)}) -> {problem.tiers[s.tier].name}  {label}")
    return out


def counter_lines(sites: Sites, problem: Problem) -> list[str]:
    """Which sites' values came from counters.csv (hmtune/advisor/counted.py) and which
    from the sampler alone: a summary, then a table of the counted sites; why none was
    counted when counters.csv valued none; nothing without counters.csv."""
    from hmtune.advisor.counted import bound_for, bound_of, uncounted_reason

    if problem.counted is None:
        why = uncounted_reason(sites.path)
        return [] if why is None else [why]
    table = sites.table
    parents = (table["parent_id"] if "parent_id" in table.columns else table["site_id"])
    threshold = bound_for(problem.tiers)
    bound = bound_of(problem.counted[:, 1], threshold)
    rows: dict[int, str] = {}
    for i, pid in enumerate(parents.tolist()):
        share, bw = problem.counted[i]
        if int(pid) in rows or (np.isnan(share) and np.isnan(bw)):
            continue
        verdict = "-" if np.isnan(bound[i]) else "bandwidth" if bound[i] else "latency"
        rows[int(pid)] = (f"    {int(pid):>6}  {'-' if np.isnan(share) else _pct(share):>7}  "
                          f"{'-' if np.isnan(bw) else f'{bw / 1e9:.2f} GB/s':>11}  "
                          f"{verdict:>9}  {table['label'].iloc[i]}")
    n = int(parents.nunique())
    head = (f"{len(rows)} of {n} placeable site(s) valued from the trace's hardware counters "
            "(counters.csv: the share of their time stalled on memory, and bandwidth-bound "
            f"when their last-level misses move {threshold / 1e9:g} GB/s or more per "
            f"thread), the other {n - len(rows)} from the sampler alone")
    return [head, "", f"sites valued from counters: {len(rows)}",
            f"    {'site':>6}  {'memory':>7}  {'misses':>11}  {'bound':>9}  call site",
            *rows.values()]


@dataclass
class Curve:
    table: pd.DataFrame           # capacity (bytes), share (of the capturable weight)
    cap90: int                    # capacity that captures 90% of the capturable weight
    capturable: float             # capturable weight (the curve's most) / trace weight


def report_text(sites: Sites, problem: Problem, placement: Placement, uses: list[TierUse],
                curve: Curve, header: list[tuple[str, str]], notes: list[str],
                forecast: list[str]) -> str:
    total = problem.total_weight
    out = ["hmtune advise report", "=" * 20]
    out += [f"{k + ':':<16}{v}" for k, v in header]
    tid = sites.meta.get(TRACE_ID)
    out.append(f"{TRACE_ID + ':':<16}{tid or 'unknown (sites.csv does not record it)'}")
    out.append(f"{'strategy:':<16}{placement.strategy}, solver {placement.solver or '?'}, "
               f"value {placement.value:.6g} of at most {placement.bound:.6g} "
               f"(proven gap {_pct(placement.gap)})")
    r = reach(sites, problem)
    out.append(f"{'weight:':<16}{total:.6g} sampled in the trace; {_pct(r.total)} of it "
               f"in {r.nheap + r.nstatic} placeable site(s), {_pct(curve.capturable)} capturable "
               "(in sites that gain from a faster tier)")
    out += [f"{k + ':':<16}{v}" for k, _, v in (x.partition(": ") for x in forecast)]
    first = problem.first_touch_values()
    values = bool(first.any())
    if values:
        rows = np.arange(problem.n)
        got = problem.values()[rows, placement.tier_of]
        ft = first[rows, placement.tier_of]
        faults = float(problem.faults.sum()) if problem.faults is not None else 0.0
        share = _pct(float(ft.sum()) / float(got.sum())) if got.sum() > 0 else "-"
        out.append(f"{'first touch:':<16}{faults:.6g} minor page faults estimated in the "
                   f"placeable sites; of the placement's value {placement.value:.6g}, "
                   f"{share} comes from page faults avoided (first touch), the rest "
                   "from sampled access stalls")
    out.append(f"{'acts on:':<16}{reach_text(r)}; {_pct(r.unplaceable)} in sites it cannot "
               "name")
    if r.split:
        out.append(f"{'by address:':<16}{r.split} (of the sampled weight)")
    counted = counter_lines(sites, problem)
    if counted:
        out.append(f"{'counters:':<16}{counted[0]}")
    for i, u in enumerate(uses):
        fb = i == len(uses) - 1
        live = u.rows[u.rows["weight"] > 0]
        zero = len(u.rows) - len(live)
        cap = _cap(u.tier) + ("" if u.tier.capacity is None else " per process")
        out += ["", f"tier {u.tier.name}  [{u.tier.backend}, {cap}]"
                + ("  (fallback)" if fb else "")]
        out.append(f"  {count_text(u.rows, rest=fb)}"
                   + (f" ({zero} without weight)" if zero else "")
                   + f", {u.occupancy()}, {_pct(u.share)} of the weight "
                   + ("stays here" if fb else "captured"))
        if values:                      # sites that gain by first touch alone count too
            live = u.rows[(u.rows["weight"] > 0) | (u.rows["value"] > 0)]
        if len(live):
            out += _site_rows(live, _FALLBACK_ROWS if fb else None, values)
        if values and fb and len(live):
            out.append(f"    (value: what the site would save in tier {uses[0].tier.name})")
    out += _split_lines(sites, problem, placement)
    out += counted[1:]
    zero_rows = pd.concat([u.rows[(u.rows["weight"] == 0) & ~(u.rows["value"] > 0)]
                           .assign(tier=u.tier.name) for u in uses])
    out += ["", "zero-weight sites (no sampled access fell in them"
            + (", no page fault avoided" if values else "") + f"): {len(zero_rows)}"]
    for r in zero_rows.itertuples():
        out.append(f"    {r.site_id:>6}  {human(r.bytes):>10}  {r.label}  -> {r.tier}")
    un = sites.unplaceable
    out += ["", "unplaceable sites (no module+offset call stack: the interposer cannot "
            f"match them): {len(un)}"]
    for r in un.itertuples():
        out.append(f"    {r.site_id:>6}  {_pct(r.weight / total if total else 0):>7}  "
                   f"{human(r.peak_live_bytes):>10}  {r.label}")
    inside = float(problem.weights.sum() + un["weight"].sum())
    out.append(f"\nweight outside every site and static variable (stack, untraced memory, "
               f"no address): {_pct(1 - inside / total) if total else 'n/a'}")
    out += ["", "capacity curve (capacity_curve.csv, capacity_curve.png): best share of "
            "the capturable weight per fast-tier capacity",
            f"  90% of the capturable weight needs {human(curve.cap90)} of fast memory; "
            f"all of it {human(int(curve.table['capacity'].max()))}"]
    pick = np.unique(np.linspace(0, len(curve.table) - 1, min(9, len(curve.table)))
                     .round().astype(int))
    rows = [f"    {human(r.capacity):>10}  {_pct(r.share):>7}"
            for r in curve.table.iloc[pick].itertuples()]
    out += list(dict.fromkeys(rows))
    if values:
        out.append("  (the curve counts sampled access weight; first-touch value is in the "
                   "value column above)")
    if notes or placement.notes:
        out += ["", "notes:"] + [f"  - {n}" for n in [*placement.notes, *notes]]
    return "\n".join(out) + "\n"


def terminal_summary(uses: list[TierUse], placement: Placement, curve: Curve,
                     written: list[str], forecast: list[str], r: Reach | None = None) -> str:
    out = list(forecast) + ([f"acts on {reach_text(r)}"] if r is not None else [])
    for i, u in enumerate(uses):
        if i == len(uses) - 1:
            out.append(f"tier {u.tier.name} (fallback): {count_text(u.rows, rest=True)}, "
                       f"{_pct(u.share)} of the weight")
        else:
            out.append(f"tier {u.tier.name}: {count_text(u.rows)}, {u.occupancy()}, "
                       f"{_pct(u.share)} of the weight captured")
    placed = [u.rows for u in uses[:-1]]
    value = sum(float(r["value"].sum()) for r in placed)
    first = sum(float(r["ft"].sum()) for r in placed)
    if first > 0:
        out.append(f"{_pct(first / value)} of the placed sites' value comes from page faults "
                   "avoided (first touch), the rest from sampled access stalls")
    out.append(f"90% of the capturable weight ({_pct(curve.capturable)} of all) needs "
               f"{human(curve.cap90)} of fast memory")
    out.append(f"strategy {placement.strategy}, solver {placement.solver or '?'}, proven gap "
               f"{_pct(placement.gap)}; wrote {', '.join(written)}")
    return "\n".join(f"hmtune advise: {line}" for line in out)


def curve_csv(curve: Curve) -> str:
    """capacity_bytes, share_of_capturable, share_of_total (fractions), one row a point."""
    t = curve.table
    df = pd.DataFrame({"capacity_bytes": t["capacity"].astype(np.int64),
                       "share_of_capturable": t["share"].astype(float),
                       "share_of_total": t["share"].astype(float) * curve.capturable})
    return df.to_csv(index=False, float_format="%.6f")


def curve_png(curve: Curve, chosen: int | None) -> bytes:
    """The curve with the 90% point and the chosen fast-tier capacity marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = curve.table
    mib = t["capacity"].to_numpy(dtype=float) / (1 << 20)
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=100)
    ax.step(mib, 100 * t["share"].to_numpy(dtype=float), where="post", color="tab:blue",
            label="best share of the capturable weight")
    x90 = curve.cap90 / (1 << 20)
    ax.axhline(90, color="gray", lw=0.8, ls=":")
    ax.axvline(x90, color="tab:red", lw=1, ls="--")
    ax.annotate(f"90% at {human(curve.cap90)}", (x90, 90), xytext=(8, -18),
                textcoords="offset points", color="tab:red")
    if chosen is not None:
        ax.axvline(chosen / (1 << 20), color="tab:green", lw=1, ls="-.",
                   label=f"fast tier: {human(chosen)}")
    ax.set_xlabel("fast-tier capacity per process (MiB)")
    ax.set_ylabel("captured weight (% of capturable)")
    ax.set_ylim(0, 102)
    ax.set_xlim(left=0)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": PNG_SOFTWARE})
    plt.close(fig)
    return buf.getvalue()
