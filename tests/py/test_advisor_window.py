"""hmtune/advisor/window.py: placed sites whose small requests would bring the other
sites' calls into libhmalloc's size window, at a cost above their value, are dropped."""

from __future__ import annotations

import numpy as np
import pandas as pd

from hmtune.advisor.model import Placement, Problem
from hmtune.advisor.window import trim
from hmtune.core.units import MIB
from hmtune.machine.tiers import Tier


def case(small_calls: int, cost: float | None = 2000.0) -> tuple[Problem, pd.DataFrame]:
    """Site 1: one 32 MiB array (value 4e9 ns); site 2: 64-byte objects (1 MiB live at
    most) worth 1e8 ns; site 3 (never placed): small_calls calls of 100 bytes; each call
    costs cost ns (None: the default)."""
    tiers = [Tier("huge", 256 * MIB, "hugetlb", 1.0, 1.0, alloc_cost_ns=cost),
             Tier("slow", None, "default", 1.55, 1.55)]
    p = Problem(np.array([1, 2, 3]), np.array([32 * MIB, MIB, 4096], np.int64),
                np.array([4e9 * 2.82, 1e8 * 2.82, 0.0]), np.array([10, 10, 0]),
                np.zeros(3, np.int64), tiers, total_weight=2e10,
                n_allocs=np.array([1, 10, small_calls]))
    allocs = pd.DataFrame({"site_id": [1, 2, 3], "rank": 0, "size": [32 * MIB, 64, 100],
                           "t_alloc": 0, "t_free": -1, "scale": [1, 10, small_calls]})
    return p, allocs


def test_small_sites_that_widen_the_window_at_a_loss_are_dropped() -> None:
    p, allocs = case(1_000_000)          # 1e6 calls x 2 us = 2e9 ns > site 2's value
    table = pd.DataFrame({"site_id": p.site_ids})
    both = Placement(np.array([0, 0, 1]), "ilp", 1.0, 1.0)
    got, note = trim(p, table, both, allocs)
    assert got.tier_of.tolist() == [0, 1, 1] and note is not None and "33554432 bytes" in note
    v = p.values()
    assert got.value == 1.0 - v[1, 0]
    # few other calls: the window costs less than site 2 gains, both stay
    p, allocs = case(1000)
    assert trim(p, table, both, allocs) == (both, None)
    # no per-call cost, or no request sizes: nothing changes
    p, allocs = case(1_000_000, cost=0.0)
    assert trim(p, table, both, allocs) == (both, None)
    assert trim(p, table, both, None) == (both, None)
    # the default cost (100 ns): a million other calls cost 1e8 ns, about site 2's
    # value less its own calls; 10 million cost more
    from hmtune.machine.tiers import DEFAULT_ALLOC_COST_NS
    p, allocs = case(1_000_000, cost=None)
    assert p.tiers[0].call_cost_ns == DEFAULT_ALLOC_COST_NS
    assert trim(p, table, both, allocs) == (both, None)
    p, allocs = case(10_000_000, cost=None)
    assert trim(p, table, both, allocs)[0].tier_of.tolist() == [0, 1, 1]


def test_split_pieces_take_their_sites_requests() -> None:
    """Pieces of a split site (table parent_id) are judged by their site's requests."""
    p, allocs = case(1_000_000)
    q = Problem(np.array([101, 102, 2, 3]), np.array([16 * MIB, 16 * MIB, MIB, 4096]),
                np.array([2e9 * 2.82, 2e9 * 2.82, 1e8 * 2.82, 0.0]), np.array([5, 5, 10, 0]),
                np.zeros(4, np.int64), p.tiers, total_weight=2e10,
                n_allocs=np.array([1, 1, 10, 1_000_000]))
    table = pd.DataFrame({"site_id": [101, 102, 2, 3], "parent_id": [1, 1, 2, 3]})
    got, _ = trim(q, table, Placement(np.array([0, 0, 0, 1]), "ilp", 1.0, 1.0), allocs)
    assert got.tier_of.tolist() == [0, 0, 1, 1]
