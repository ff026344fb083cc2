"""Test helpers for the advisor: random problems, brute-force optima and a capacity
checker written independently of the strategies (per moment, not per peak)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from hmtune.advisor.model import Placement, Problem
from hmtune.core.units import KIB
from hmtune.machine.tiers import Tier


def tiers_for(n_tiers: int, caps: list[int], page: int = 4 * KIB,
              unlimited_middle: bool = False) -> list[Tier]:
    """Fastest first; the last is the unlimited fallback (cost 2.0)."""
    out = []
    costs = np.linspace(1.0, 2.0, n_tiers)
    for t in range(n_tiers - 1):
        cap = None if (unlimited_middle and t == n_tiers - 2) else caps[t]
        out.append(Tier(f"t{t}", cap, "default", float(costs[t]), float(costs[t]) * 1.1,
                        page_size=page))
    out.append(Tier("slow", None, "default", 2.0, 2.2, page_size=page))
    return out


def random_problem(seed: int, n: int, n_tiers: int, unlimited_middle: bool = False,
                   zero_weights: bool = True) -> Problem:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 40, n) * 64 * KIB + rng.integers(0, 8 * KIB, n)
    weights = np.round(rng.pareto(1.3, n) * 50, 1)
    if zero_weights:
        weights[rng.random(n) < 0.1] = 0.0
    loads = rng.integers(0, 50, n)
    stores = rng.integers(0, 50, n)
    total = int(sizes.sum())
    caps = [int(total * f) for f in rng.uniform(0.1, 0.4, n_tiers - 1)]
    return Problem(np.arange(3, 3 + n), sizes.astype(np.int64), weights, loads, stores,
                   tiers_for(n_tiers, caps, unlimited_middle=unlimited_middle),
                   total_weight=float(weights.sum()) * 1.25)


def all_assignments(n: int, nt: int, chunk: int = 1 << 20) -> list[np.ndarray]:
    """Every assignment of n sites to nt tiers, as (rows, n) int8 chunks."""
    total = nt ** n
    powers = nt ** np.arange(n, dtype=np.int64)
    out = []
    for start in range(0, total, chunk):
        codes = np.arange(start, min(total, start + chunk), dtype=np.int64)
        out.append(((codes[:, None] // powers[None, :]) % nt).astype(np.int8))
    return out


def brute_force_static(problem: Problem) -> float:
    """Best sum of value(i, t) with every limited tier's page-rounded capacity kept."""
    values = problem.values()
    nt = len(problem.tiers)
    best = -np.inf
    for a in all_assignments(problem.n, nt):
        ok = np.ones(a.shape[0], bool)
        for t, tier in enumerate(problem.tiers):
            if tier.capacity is not None:
                used = ((a == t) * problem.rounded_sizes(t)[None, :]).sum(axis=1)
                ok &= used <= tier.capacity
        val = values[np.arange(problem.n)[None, :], a.astype(np.int64)].sum(axis=1)
        if ok.any():
            best = max(best, float(val[ok].max()))
    return best


def moment_matrix(problem: Problem, tier: int) -> np.ndarray:
    """Rows: (rank, event time) after that time's frees and allocations; columns:
    sites; entries: live bytes, each block rounded up to the tier's page size."""
    allocs = problem.allocs
    assert allocs is not None
    page = problem.tiers[tier].page_size
    index = {int(s): i for i, s in enumerate(problem.site_ids)}
    rows = []
    for _, g in allocs.groupby("rank"):
        t_free = np.where(g["t_free"] < 0, np.inf, g["t_free"]).astype(float)
        t_alloc = g["t_alloc"].to_numpy(float)
        times = np.unique(np.concatenate([t_alloc, t_free[np.isfinite(t_free)]]))
        for t in times:
            live = (t_alloc <= t) & (t < t_free)
            row = np.zeros(problem.n)
            for s, size in zip(g["site_id"][live], g["size"][live], strict=True):
                if int(s) in index:
                    row[index[int(s)]] += -(-int(size) // page) * page
            rows.append(row)
    return np.array(rows).reshape(len(rows), problem.n)


def brute_force_lifetime(problem: Problem) -> float:
    values = problem.values()
    nt = len(problem.tiers)
    mats = {t: moment_matrix(problem, t) for t in range(nt)
            if problem.tiers[t].capacity is not None}
    best = -np.inf
    for a in all_assignments(problem.n, nt):
        ok = np.ones(a.shape[0], bool)
        for t, m in mats.items():
            used = (a == t).astype(float) @ m.T
            ok &= np.all(used <= problem.tiers[t].capacity, axis=1)
        val = values[np.arange(problem.n)[None, :], a.astype(np.int64)].sum(axis=1)
        if ok.any():
            best = max(best, float(val[ok].max()))
    return best


def check_placement(problem: Problem, p: Placement, lifetime: bool = False) -> None:
    """Every limited tier's capacity holds (static sizes, or at every moment), the
    value is what the tiers say, and the bound is not below it."""
    assert p.tier_of.shape == (problem.n,)
    nt = len(problem.tiers)
    assert np.all((p.tier_of >= 0) & (p.tier_of < nt))
    values = problem.values()
    assert np.isclose(p.value, values[np.arange(problem.n), p.tier_of].sum(), rtol=1e-9,
                      atol=1e-9)
    assert p.bound >= p.value - 1e-9 * max(1.0, abs(p.value))
    for t, tier in enumerate(problem.tiers):
        if tier.capacity is None:
            continue
        on = p.tier_of == t
        assert np.all(values[on, t] > 0), "a site worth nothing sits in a limited tier"
        if lifetime:
            used = moment_matrix(problem, t) @ on.astype(float)
            assert used.size == 0 or used.max() <= tier.capacity
        else:
            assert int(problem.rounded_sizes(t)[on].sum()) <= tier.capacity


def allocs_frame(rows: list[tuple[int, int, int, int, int]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["site_id", "rank", "size", "t_alloc", "t_free"])


def random_lifetimes(problem: Problem, seed: int, ranks: int = 2,
                     blocks: int = 3) -> pd.DataFrame:
    """A few blocks per site and rank, splitting its peak size, at random times."""
    rng = np.random.default_rng(seed)
    rows = []
    for i, sid in enumerate(problem.site_ids.tolist()):
        for r in range(ranks):
            for _ in range(blocks):
                a = int(rng.integers(0, 40))
                f = -1 if rng.random() < 0.15 else a + int(rng.integers(0, 20))
                size = max(1, int(problem.sizes[i]) // blocks)
                rows.append((sid, r, size, a, f))
    return allocs_frame(rows)

