"""The terminal view of a sites table: the top sites in at most 100 columns, each named
by its short label (hmtune.analyze.shortlabels), cut in the middle when it is too long."""

from __future__ import annotations

from hmtune.analyze.shortlabels import fit_label
from hmtune.analyze.sites import SiteTable
from hmtune.core.units import human

WIDTH = 100


def si(value: float) -> str:
    """3 significant digits with k/M/G/T: 1234567 -> '1.23M'."""
    v = float(value)
    for unit in ("", "k", "M", "G", "T"):
        if abs(v) < 999.5 or unit == "T":
            return f"{v:.0f}{unit}" if unit == "" or abs(v) >= 99.95 else f"{v:.3g}{unit}"
        v /= 1000
    return f"{v:.3g}P"


def top_table(sites: SiteTable, top: int, width: int = WIDTH) -> str:
    """The first `top` rows of `sites` (already sorted) as a text table; a `faults`
    column (estimated minor page faults) when the trace sampled any."""
    per_rank = "rank" in sites.columns
    faults = "faults" in sites.columns and any(r["faults"] for r in sites.rows)
    head = f"{'site':>5}  {'weight':>7}  {'share':>6}  {'peak':>10}  {'allocs':>7}  "
    head += f"{'faults':>7}  " if faults else ""
    head += f"{'rank':>5}  " if per_rank else ""
    room = max(10, width - len(head) - len("call site"))
    lines = [head + "call site"]
    for row in sites.rows[:top]:
        line = (f"{row['site_id']:>5}  {si(row['weight']):>7}  {100 * row['share']:>5.1f}%  "
                f"{human(row['peak_live_bytes']):>10}  {row['n_allocs']:>7}  ")
        line += f"{si(row['faults']):>7}  " if faults else ""
        line += f"{row['rank']:>5}  " if per_rank else ""
        lines.append(line + fit_label(str(row["label"]), room + len("call site")))
    return "\n".join(lines)
