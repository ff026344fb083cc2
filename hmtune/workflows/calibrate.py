"""`hmtune compare`'s calibration of the advisor's prediction (hmtune/advisor/predict.py):
the measured speedups of every site fast and of the advisor's placements fit the
coefficients k (gains) and m (call costs), written to DIR/calibration.json for `hmtune
advise`, and each advisor placement's predicted speedup, from the other measurements
alone, is set beside its measured one (the check that the model transfers)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hmtune.core.placement import PlacementFile, read_placement
from hmtune.core.stage import Stage

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from hmtune.advisor.model import Problem
    from hmtune.advisor.predict import Calibration, Prediction
    from hmtune.workflows.tables import Summary


@dataclass
class Outcome:
    calibration: Calibration | None
    predicted: dict[str, Prediction]        # advisor variants, with the calibration
    notes: list[str]


def stage_problem(sites_csv: Path, machine: Path) -> tuple[Problem, dict[str, str], list[str]]:
    """The advisor's problem for a stage's sites and a machine file, as `hmtune advise`
    builds it (hmtune/advisor/inputs.py build_problem: access, first touch and calls;
    the tiers' capacities do not matter here), its sites.csv fields and its chains."""
    from hmtune.advisor.inputs import build_problem, load_sites
    from hmtune.machine.machinefile import load_machine

    sites = load_sites(sites_csv)
    problem = build_problem(sites, load_machine(machine).tiers)
    return problem, sites.meta, sites.table["callstack_raw"].tolist()


def tier_of(problem: Problem, chains: list[str], placement: Path) -> np.ndarray:
    """The placement's tier index per site (sites it does not list: the fallback)."""

    return tiers_of(problem, chains, read_placement(placement))


def tiers_of(problem: Problem, chains: list[str], pf: PlacementFile) -> np.ndarray:
    """tier_of for a placement already read."""
    import numpy as np

    index = {t.name: i for i, t in enumerate(problem.tiers)}
    fb = len(problem.tiers) - 1
    where = {s.chain: index.get(s.tier, fb) for s in pf.sites}
    return np.asarray([where.get(c, fb) for c in chains], np.int64)


def stage_profile(sites_csv: Path) -> pd.DataFrame | None:
    """profile.csv's rows next to sites_csv, with the site ids as the advisor merges
    them (None without a profile)."""
    from hmtune.advisor.inputs import load_sites, renamed
    from hmtune.analyze.profile import profile_next_to

    prof = profile_next_to(sites_csv)
    return None if prof is None else renamed(prof.df, load_sites(sites_csv).merged)


def split_shares(problem: Problem, chains: list[str],
                 ranges: dict[str, tuple[tuple[int, int], ...]],
                 profile: pd.DataFrame | None) -> np.ndarray:
    """Per site, the share of its sampled weight that its placement's ranges (chain ->
    ranges) hold in the profile's rows (stage_profile); 1 for sites without ranges. A
    split site without profile rows counts as capturing nothing."""
    import numpy as np

    share = np.ones(problem.n)
    for i, c in enumerate(chains):
        r = ranges.get(c)
        if not r:
            continue
        rows = profile[profile["site_id"] == problem.site_ids[i]] \
            if profile is not None else None
        if rows is None or float(rows["weight"].sum()) <= 0:
            share[i] = 0.0
            continue
        off = rows["offset"].to_numpy(np.int64)
        inside = np.zeros(off.size, bool)
        for a, b in r:
            inside |= (off >= a) & (off < b)
        share[i] = float(rows["weight"].to_numpy(np.float64)[inside].sum()) \
            / float(rows["weight"].sum())
    return share


def calibrate(stage: Path, machine: Path, work: Path, summary: list[Summary], upper: str,
              placements: dict[str, Path]) -> Outcome:
    """Fit k and m on `upper`'s measured speedup and the placements' (name ->
    placement.txt), write stage/calibration.json, and predict each placement from the
    other measurements (hmtune/advisor/predict.py)."""
    from dataclasses import replace

    import numpy as np

    from hmtune.advisor import predict
    from hmtune.analyze.traceid import FIELD as TRACE_ID

    by = {s.name: s for s in summary}
    up = by.get(upper)
    if up is None or up.est.lo is None or up.est.hi is None:
        return Outcome(None, {}, ["no calibration: every site fast has no measured interval "
                                  "(at least 2 rounds are needed)"])
    try:
        problem, meta, chains = stage_problem(Stage(stage).sites, machine)
    except (OSError, ValueError) as e:
        return Outcome(None, {}, [f"no calibration: {e}"])
    notes: list[str] = []

    def point(name: str, p: Problem, tier: np.ndarray) -> predict.Point | None:
        est = by[name].est
        if est.lo is None or est.hi is None:
            return None
        g, c, _ = predict.parts(p, tier)
        kinds = tuple(float(x) for x in predict.kind_parts(p, tier))
        return predict.Point(name, est.speedup, est.lo, est.hi, g, c, kinds)

    run = predict.as_run_all_fast(problem)
    first = point(upper, run, predict.all_fast(run))
    assert first is not None
    points = [first]
    problems: dict[str, tuple[Problem, np.ndarray]] = {}
    profile: list[pd.DataFrame | None] = []      # read once, for the first split placement
    for name, pl in placements.items():
        try:
            pf = read_placement(pl)
            ranges = {s.chain: s.ranges for s in pf.sites if s.ranges}
            p = problem
            if ranges:
                if not profile:
                    profile.append(stage_profile(Stage(stage).sites))
                share = split_shares(problem, chains, ranges, profile[0])
                p = replace(problem, _charged={},
                            fraction=np.repeat(share[:, None], len(problem.tiers), axis=1))
            problems[name] = (p, tiers_of(problem, chains, pf))
        except (OSError, ValueError) as e:
            notes.append(f"no prediction for {name}: {e}")
            continue
        pt = point(name, *problems[name]) if name in by else None
        if pt is not None:
            points.append(pt)
    tiers = problem.tiers

    def fitted(pts: list[predict.Point]) -> Calibration | None:
        return predict.calibration(pts, meta.get(TRACE_ID, ""), meta.get("sampler", "?"),
                                   tiers[0].backend, tiers[0].load_cost, tiers[-1].load_cost,
                                   up.est.rounds, str(work))

    cal = fitted(points)
    if cal is None:
        return Outcome(None, {}, ["no calibration: the trace's sampled weight predicts no "
                                  "gain at all from the fast tier"])
    try:
        predict.write_calibration(Stage(stage).calibration, cal)
    except OSError as e:
        notes.append(f"cannot write {Stage(stage).calibration}: {e.strerror or e}")
    out: dict[str, Prediction] = {}
    for name, (p, tier) in problems.items():
        out[name] = predict.predict(p, tier, fitted([q for q in points if q.variant != name]))
    return Outcome(cal, out, notes)
