"""The advisor's notes about a problem and its placement: sites whose largest object
alone is over a tier (no whole-object placement captures them), sizes estimated from
small-call sampling, and tiers whose first-touch gains cannot be counted (hmtune
advise prints them; report.txt keeps them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:                   # pandas loads only when advise runs
    import numpy as np
    import pandas as pd

    from hmtune.advisor.inputs import Sites
    from hmtune.advisor.model import Problem
    from hmtune.machine.tiers import Tier


def estimate_notes(table: pd.DataFrame, tier_of: np.ndarray, fallback: int) -> list[str]:
    """A note when placed sites' figures are estimates of small-call sampling (sites.csv
    sampled_blocks > 0): their sizes are good to about 1/sqrt(blocks seen)."""
    if "sampled_blocks" not in table.columns or not len(table):
        return []
    seen = table["sampled_blocks"].to_numpy()
    placed = (tier_of != fallback) & (seen > 0)
    if not placed.any():
        return []
    fewest = int(seen[placed].min())
    return [f"{int(placed.sum())} placed site(s) have blocks of small-call sampling: their "
            f"sizes and weights are estimates from the blocks seen (as few as {fewest}: "
            f"about {100 / max(fewest, 1) ** 0.5:.0f} % uncertain); size-window widened "
            "around their requests"]


def too_large(problem: Problem, tier_of: np.ndarray) -> list[tuple[str, float, int, int, int]]:
    """Per limited tier with at least 1 % of the sampled weight in sites left out whose
    single largest object the tier could never hold (no whole-object placement captures
    it): (tier, share of the weight, sites, capacity, largest object's charge)."""
    from hmtune.advisor import granularity

    out: list[tuple[str, float, int, int, int]] = []
    if problem.max_sizes is None or problem.total_weight <= 0:
        return out
    for t, tier in enumerate(problem.tiers[:-1]):
        if tier.capacity is None:
            continue
        one = (problem.max_sizes if tier.backend == "default"
               else granularity.charges(problem.max_sizes, tier.backend))
        big = (one > tier.capacity) & (tier_of != t) & (problem.weights > 0)
        if problem.statics is not None:
            big &= ~problem.statics
        share = float(problem.weights[big].sum()) / problem.total_weight
        if share >= 0.01:
            out.append((tier.name, share, int(big.sum()), int(tier.capacity),
                        int(one[big].max())))
    return out


def too_large_notes(problem: Problem, tier_of: np.ndarray) -> list[str]:
    from hmtune.core.units import human

    return [f"{100 * share:.1f}% of the sampled weight is in {n} site(s) whose largest "
            f"object alone is over tier {name}'s {human(cap)} (up to {human(largest)}): no "
            "placement of whole objects can capture it"
            for name, share, n, cap, largest in too_large(problem, tier_of)]


def first_touch_notes(sites: Sites, tiers: list[Tier], faults: np.ndarray | None,
                      weight_per_ns: float) -> list[str]:
    """Why a tier that speeds up first touch gains nothing from it with these sites."""
    names = [t.name for t in tiers[:-1] if "first_touch" in t.speeds_up]
    if not names:
        return []
    which = f"tier{'s' if len(names) > 1 else ''} {', '.join(repr(n) for n in names)}"
    if faults is None:
        return [f"{sites.path.name} has no page-fault columns (an older hmtune analyze): the "
                f"first-touch gains of {which} are not counted; run hmtune analyze again "
                "(on a trace of this hmtune, which samples page faults)"]
    if not faults.sum():
        return [f"no page faults were sampled in the trace (traced with --fault-period 0, "
                f"--sampler none, or by another tool): the first-touch gains of {which} are "
                "not counted"]
    if weight_per_ns <= 0:
        return [f"the weights of {sites.path.name} are sampler "
                f"'{sites.meta.get('sampler', '?')}' latency cycles, which the ns of a page "
                f"fault do not convert to: the first-touch gains of {which} are not counted"]
    return []


def partial_trace_notes(sites_csv: Path) -> list[str]:
    """A note when the trace next to sites.csv is partial: its application was
    interrupted or killed (trace.summary.json's `app_end`, written by hmtune trace)."""
    try:
        end = json.loads((sites_csv.parent / "trace.summary.json").read_text()).get("app_end")
    except (OSError, ValueError, AttributeError):
        return []
    if not isinstance(end, dict) or not end.get("partial"):
        return []
    return [f"the trace is partial: its application {end.get('how', 'did not finish')}, so the "
            "sites, their weights and lifetimes are those of the part that ran; trace a whole "
            "run to advise on all of it"]
