"""What a tier speeds up per access kind (issue 43): a streamed, a scattered and a
synchronization site of equal sampled weight. On the Xeon Max files HBM speeds up the
streamed one only (bandwidth), on the hugepage tier the scattered one most (the TLB's
reach); sites.csv without the kind columns, or a machine file without kind costs,
values every access alike, as before."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from advisefix import advise, site, write_sites

from hmtune.advisor.inputs import build_problem, load_sites
from hmtune.advisor.model import Problem
from hmtune.core.placement import read_placement
from hmtune.core.units import MIB
from hmtune.machine.machinefile import load_machine, with_fast_capacity
from hmtune.machine.tiers import KINDS, Tier

MACHINES = Path(__file__).resolve().parents[2] / "configs" / "machines"
XEON_MAX = MACHINES / "xeon-max-9468-flat-quadrant.toml"
HUGE = MACHINES / "vm-hugetlb.toml"
W = 1e9                                     # each site's weight (ns)


def kinds_problem(tiers: list[Tier], shares: np.ndarray | None) -> Problem:
    n = 3
    return Problem(np.arange(n), np.full(n, 64 * MIB, np.int64), np.full(n, W),
                   np.full(n, 100, np.int64), np.zeros(n, np.int64), tiers,
                   total_weight=n * W, kind_shares=shares)


ONE_EACH = np.eye(3)                        # streamed, scattered, synchronization


def tiers_of(path: Path) -> list[Tier]:
    return with_fast_capacity(load_machine(path), 64 * MIB).tiers


def test_hbm_speeds_up_streamed_accesses_only() -> None:
    v = kinds_problem(tiers_of(XEON_MAX), ONE_EACH).access_values()[:, 0]
    assert v[0] == pytest.approx(W * (1 - 1 / 5.3))
    assert v[1] == 0.0 and v[2] == 0.0


def test_hugepages_speed_up_scattered_accesses_most() -> None:
    v = kinds_problem(tiers_of(HUGE), ONE_EACH).access_values()[:, 0]
    assert v[1] == pytest.approx(W * (1 - 1 / 1.55))
    assert v[0] == pytest.approx(W * (1 - 1 / 1.05))
    assert v[1] > 5 * v[0] and v[2] == 0.0


def test_a_mix_is_valued_by_its_shares() -> None:
    """Half streamed, a quarter scattered, a quarter of unknown kind (the load cost)."""
    shares = np.array([[0.5, 0.25, 0.0]] * 3)
    v = kinds_problem(tiers_of(XEON_MAX), shares).access_values()[0, 0]
    assert v == pytest.approx(W * (0.5 * (1 - 1 / 5.3) + 0.25 * (1 - 1 / 5.3)))


def test_without_kinds_every_access_is_valued_alike() -> None:
    old = kinds_problem(tiers_of(XEON_MAX), None).access_values()[:, 0]
    assert old == pytest.approx([W * (1 - 1 / 5.3)] * 3)
    # a machine file without kind costs: the kinds change nothing
    legacy = [Tier("hbm", 64 * MIB, "numa:2-3"), Tier("ddr", None, "default", 5.3, 5.3)]
    assert kinds_problem(legacy, ONE_EACH).access_values()[:, 0] == pytest.approx(old)


def rows() -> list[dict]:
    """sites.csv rows: 7 streamed, 8 scattered, 9 a lock array (the weight_KIND columns),
    the lock array the heaviest: valued alike, it would be placed first."""
    out = []
    for sid, kind, w in zip((7, 8, 9), KINDS, (1050.0, 1000.0, 1100.0), strict=True):
        r = site(sid, 48 * MIB, w)
        r.update({f"weight_{k}": (w * 1e6 if k == kind else 0.0) for k in KINDS})
        out.append(r)
    return out


def test_sites_csv_columns_reach_the_problem(tmp_path: Path) -> None:
    write_sites(tmp_path / "sites.csv", rows())
    sites = load_sites(tmp_path / "sites.csv")
    p = build_problem(sites, tiers_of(XEON_MAX))
    assert p.kind_shares is not None
    assert p.kind_shares.tolist() == ONE_EACH.tolist()


@pytest.mark.parametrize("machine,placed", [(XEON_MAX, 7), (HUGE, 8)])
def test_advise_places_what_the_tier_speeds_up(tmp_path: Path, capsys: pytest.CaptureFixture,
                                               machine: Path, placed: int) -> None:
    """Room for one of the three: HBM takes the streamed array, hugepages the scattered
    one; the lock array never goes first."""
    write_sites(tmp_path / "sites.csv", rows())
    rc, _, err = advise(capsys, str(tmp_path), "--machine", str(machine), "--mem", "64M")
    assert rc == 0, err
    pf = read_placement(tmp_path / "placement.txt")
    chains = {s.chain for s in pf.sites}
    want = next(r["callstack_raw"] for r in rows() if r["site_id"] == placed)
    assert chains == {want}
