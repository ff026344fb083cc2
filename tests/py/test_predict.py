"""The advisor's predicted speedup (hmtune/advisor/predict.py): the model's arithmetic, its
calibration by a measured every-site-fast speedup, and what advise does with a
calibration file that is there, bad, or for another trace."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from advisefix import MS, STANDARD, STANDARD_TOTAL, advise, site, write_sites

from hmtune.advisor import predict
from hmtune.advisor.model import Problem
from hmtune.core.units import MIB
from hmtune.machine.tiers import Tier


def problem(weights: list[float], samples: list[int], total: float,
            fast_cost: float = 1.0, slow_cost: float = 2.0) -> Problem:
    n = len(weights)
    tiers = [Tier("fast", 64 * MIB, "numa:0", fast_cost, fast_cost),
             Tier("slow", None, "default", slow_cost, slow_cost)]
    return Problem(np.arange(3, 3 + n), np.full(n, MIB, np.int64), np.asarray(weights, float),
                   np.asarray(samples, np.int64), np.zeros(n, np.int64), tiers,
                   total_weight=total, samples=np.asarray(samples, np.int64))


def test_uncalibrated_speedup_is_the_time_the_costs_save() -> None:
    """Fast tier half the fallback's cost: a site with 40 of 100 units of weight saves
    20, so S = 1 / (1 - 0.2) = 1.25; with many samples the range is narrow."""
    p = problem([40.0, 10.0], [10**6, 10**6], 100.0)
    only_first = np.array([0, 1])
    f, sd = predict.saved(p, only_first)
    assert f == pytest.approx(0.2) and sd < 1e-3
    got = predict.predict(p, only_first, None)
    assert got.speedup == pytest.approx(1.25)
    assert got.lo <= 1.25 <= got.hi and got.hi - got.lo < 0.01
    every = predict.predict(p, predict.all_fast(p), None)
    assert every.speedup == pytest.approx(1 / (1 - 0.25))


def test_every_site_fast_pays_the_unmatched_call_cost() -> None:
    """compare runs every site fast without call-site matching (HMTUNE_BASELINE=all):
    its prediction charges each allocation UNMATCHED_SHARE of the tier's call cost, a
    placement of sites the whole of it."""
    tiers = [Tier("fast", 64 * MIB, "numa:0", 1.0, 1.0, alloc_cost_ns=2000.0),
             Tier("slow", None, "default", 2.0, 2.0)]
    p = Problem(np.arange(2), np.full(2, MIB, np.int64), np.array([40e6, 10e6]),
                np.array([10**6, 10**6]), np.zeros(2, np.int64), tiers, total_weight=100e6,
                samples=np.array([10**6, 10**6]), n_allocs=np.array([1, 10**4]))
    calls = 10**4 * 2000.0                       # the second site's, matched
    f, _ = predict.saved(p, predict.all_fast(p))
    assert f == pytest.approx((25e6 - 1 * 2000.0 - calls) / 100e6)
    run = predict.as_run_all_fast(p)
    f_run, _ = predict.saved(run, predict.all_fast(run))
    assert f_run == pytest.approx((25e6 - (1 + 10**4) * 2000.0 * predict.UNMATCHED_SHARE)
                                  / 100e6)
    assert run.tiers[1] == p.tiers[1] and p.tiers[0].alloc_cost_ns == 2000.0
    every = predict.predict(run, predict.all_fast(run), None)
    assert every.speedup == pytest.approx(1 / (1 - f_run))


def test_few_samples_give_a_wide_range() -> None:
    """The same weight from 4 samples: relative error 1/2, so f = 0.2 +- 0.196."""
    p = problem([40.0], [4], 100.0)
    got = predict.predict(p, np.array([0]), None)
    assert got.lo == pytest.approx(1 / (1 - max(0.0, 0.2 - 1.96 * 0.1)))
    assert got.hi == pytest.approx(1 / (1 - (0.2 + 1.96 * 0.1)))


def point(name: str, measured: float, gain: float, calls: float = 0.0,
          halfwidth: float = 0.05) -> predict.Point:
    return predict.Point(name, measured, measured * (1 - halfwidth),
                         measured * (1 + halfwidth), gain, calls)


def calib(points: list[predict.Point]) -> predict.Calibration:
    cal = predict.calibration(points, "", "soft", "numa:0", 1.0, 2.0, 8, "x/compare")
    assert cal is not None
    return cal


def test_one_measurement_fits_the_gain_and_scales_the_rest() -> None:
    """Every site fast alone, without calls: k reproduces it, m stays 1 (its prior),
    and a placement of 4/5 of the value gains 4/5 as much."""
    p = problem([40.0, 10.0], [10**6, 10**6], 100.0)
    g_all, c_all, _ = predict.parts(p, predict.all_fast(p))
    assert c_all == 0.0
    cal = calib([predict.Point("all-fast", 1.10, 1.05, 1.16, g_all, 0.0)])
    assert cal.call_scale == pytest.approx(1.0)
    every = predict.predict(p, predict.all_fast(p), cal)
    assert every.speedup == pytest.approx(1.10)
    assert every.lo == pytest.approx(1.05, abs=5e-3) and every.hi == pytest.approx(1.16, abs=1e-2)
    first = predict.predict(p, np.array([0, 1]), cal)
    assert first.speedup == pytest.approx(1 / (1 - 0.8 * (1 - 1 / 1.10)))
    # a measured slowdown without calls to explain it: the tier gains nothing (k = 0),
    # never a negative gain
    cal = calib([predict.Point("all-fast", 0.9, 0.85, 0.95, g_all, 0.0)])
    assert cal.k == 0.0 and cal.k_lo == 0.0
    assert predict.predict(p, np.array([0, 1]), cal).speedup == pytest.approx(1.0)


def test_fit_recovers_gain_and_call_scales() -> None:
    """Points made by the model with k = 0.3 and m = 0.5, measured tightly: fit finds
    both, with intervals that hold them."""
    k, m = 0.3, 0.5
    pts = [point(n, 1 / (1 - (k * g - m * c)), g, c, 0.001)
           for n, g, c in (("all-fast", 0.25, 0.2), ("a", 0.15, 0.0), ("b", 0.2, 0.01),
                           ("c", 0.05, 0.1))]
    got = predict.fit(pts)
    assert got is not None
    assert got[0] == pytest.approx(k, abs=1e-3) and got[3] == pytest.approx(m, abs=1e-2)
    assert got[1] <= k <= got[2] and got[4] <= m <= got[5]
    assert predict.fit([point("x", 1.1, 0.0)]) is None      # nothing to scale


def test_costly_calls_do_not_turn_the_gain_negative() -> None:
    """BWA-MEM (bench-apps, 2026-11-28): every site fast measured 0.98x, its 3.1 M
    small allocations' calls costing 0.20 of the run by the model against a gain of
    0.235; the placements of its big objects (no calls) 1.04x and 1.06x. One
    coefficient for both fitted k = -0.50 and predicted 0.90x for 1.06x; apart, the
    gain's k is positive, the calls cost less than modelled, and each placement,
    predicted from the other measurements, is within 2 points of its own."""
    pts = [predict.Point("all-fast", 0.982, 0.937, 1.029, 0.2348, 0.1983),
           predict.Point("split@46M", 1.040, 0.998, 1.082, 0.1522, 0.0),
           predict.Point("whole@46M", 0.985, 0.950, 1.022, 0.0032, 0.0),
           predict.Point("split@90M", 1.058, 1.019, 1.104, 0.2116, 0.0),
           predict.Point("whole@90M", 1.048, 1.006, 1.100, 0.2109, 0.0)]
    cal = calib(pts)
    assert 0.15 < cal.k < 0.35 and cal.k_lo > 0
    assert cal.call_scale < 0.7                  # the calls cost less than modelled
    for p in pts[1:]:
        others = calib([q for q in pts if q is not p])
        got = predict.speedup(p.gain, others.k, p.calls, others.call_scale)
        assert got == pytest.approx(p.measured, abs=0.02), p.variant


def test_no_placement_worth_making() -> None:
    p = problem([0.5, 0.3], [10**4, 10**4], 1000.0)       # 0.08 % of the time in sites
    every = predict.predict(p, predict.all_fast(p), None)
    assert not predict.worth_making(every)
    text = predict.lines(every, every, None, "fast")
    assert any(line.startswith("no placement worth making") for line in text)
    p = problem([300.0], [10**4], 1000.0)
    assert predict.worth_making(predict.predict(p, predict.all_fast(p), None))


def test_a_placement_that_leaves_costly_calls_out_is_worth_making() -> None:
    """Every site fast slower than all-slow (a site of many small allocations whose calls
    cost more than the rest gains, as on CP2K: 0.88x) while the advisor's placement of
    the big site alone gains 5 %: the placement is worth making, and advise must not
    say otherwise."""
    tiers = [Tier("fast", 64 * MIB, "numa:0", 1.0, 1.0, alloc_cost_ns=2000.0),
             Tier("slow", None, "default", 2.0, 2.0)]
    p = Problem(np.arange(2), np.full(2, MIB, np.int64), np.array([10e6, 1e6]),
                np.array([10**5, 10**5]), np.zeros(2, np.int64), tiers, total_weight=100e6,
                samples=np.array([10**5, 10**5]), n_allocs=np.array([1, 2 * 10**4]))
    mine = predict.predict(p, np.array([0, 1]), None)
    every = predict.predict(predict.as_run_all_fast(p), predict.all_fast(p), None)
    assert every.hi < 1.0 < 1.0 + predict.MIN_GAIN < mine.lo
    assert predict.worth_making(mine, every) and not predict.worth_making(every)
    assert not any(line.startswith("no placement worth making")
                   for line in predict.lines(mine, every, None, "fast"))
    nothing = predict.predict(p, np.array([1, 1]), None)
    assert any(line.startswith("no placement worth making")
               for line in predict.lines(nothing, every, None, "fast"))


def test_calibration_file_round_trip_and_bad_files(tmp_path: Path) -> None:
    cal = predict.Calibration(0.8, 0.5, 1.1, 0.6, 0.2, 1.0, 1.1, 1.05, 1.16,
                              (point("all-fast", 1.1, 0.12, 0.01),
                               point("ilp", 1.05, 0.06)),
                              "3f2a9c0d5e7b1a46", "soft", "hugetlb", 1.0, 1.55, 8, "d/compare")
    path = tmp_path / "calibration.json"
    predict.write_calibration(path, cal)
    assert predict.read_calibration(path) == cal
    from hmtune.analyze.traceid import recorded_id, written_by_hmtune

    assert recorded_id(path) == "3f2a9c0d5e7b1a46" and written_by_hmtune(path)
    good = path.read_text()
    v1 = json.dumps({"format": "hmtune calibration v1", "k": 0.8, "k_lo": 0.5, "k_hi": 1.1,
                     "measured": 1.1, "measured_lo": 1.05, "measured_hi": 1.16,
                     "fraction_all": 0.12})
    for text in ("", "[]", '{"format": "something else"}', v1,
                 json.dumps({"format": predict.FORMAT, "k": 1.0}),
                 good.replace('"k": 0.8', '"k": NaN'),
                 good.replace('"gain": 0.12', '"gain": NaN'),
                 good.replace('"calls": 0.01', '"weight": 0.01')):
        path.write_text(text)
        with pytest.raises(ValueError):
            predict.read_calibration(path)
    path.write_text(v1)
    with pytest.raises(ValueError, match="earlier hmtune"):
        predict.read_calibration(path)


def test_advise_uses_a_matching_calibration_only(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture) -> None:
    """A calibration for this trace and tier changes the prediction; one for another
    trace, or a corrupt file, is left out with a note and nothing else changes."""
    d = tmp_path / "s"
    write_sites(d / "sites.csv", STANDARD, STANDARD_TOTAL)
    rc, _, err = advise(capsys, str(d), "--mem", "80M")
    assert rc == 0, err
    before = (d / "placement.txt").read_text()
    uncalibrated = (d / "report.txt").read_text()
    tiers = [Tier("fast", 80 * MIB, "memkind:MEMKIND_HBW", 1.0, 1.0),
             Tier("default", None, "default", 5.3, 5.3)]
    cal = predict.Calibration(0.5, 0.4, 0.6, 1.0, 1.0, 1.0, 1.2, 1.1, 1.3,
                              (point("all-fast", 1.2, 0.3),), "", "soft",
                              tiers[0].backend, 1.0, 5.3, 6, "s/compare")
    predict.write_calibration(d / "calibration.json", cal)
    rc, _, err = advise(capsys, str(d), "--mem", "80M")
    assert rc == 0, err
    assert (d / "placement.txt").read_text().splitlines()[3:] == before.splitlines()[3:]
    calibrated = (d / "report.txt").read_text()
    assert calibrated != uncalibrated and "s/compare (6 rounds, 1 measured placement)" in calibrated
    for bad in (replace(cal, sampler="pebs"), replace(cal, fallback_cost=2.0)):
        predict.write_calibration(d / "calibration.json", bad)
        rc, _, err = advise(capsys, str(d), "--mem", "80M")
        assert rc == 0 and "calibration.json not used" in err
        assert "s/compare" not in (d / "report.txt").read_text()
    (d / "calibration.json").write_text("{")
    rc, _, err = advise(capsys, str(d), "--mem", "80M")
    assert rc == 0 and "calibration.json not used" in err


def test_advise_predicts_from_the_sites_weights(tmp_path: Path,
                                                capsys: pytest.CaptureFixture) -> None:
    """The standard case on two-tier-memkind (fast 1.0, fallback 5.3): the placed sites 3
    and 4 hold 800 of 1500 units, each saving 1 - 1/5.3 of its weight."""
    from hmtune.advisor.inputs import load_sites

    d = tmp_path / "s"
    write_sites(d / "sites.csv", [*STANDARD, site(9, MIB, 0.0)], STANDARD_TOTAL)
    rc, _, err = advise(capsys, str(d), "--mem", "80M")
    assert rc == 0, err
    s = load_sites(d / "sites.csv")
    assert s.total_weight == pytest.approx(STANDARD_TOTAL * MS)
    f = 800 / 1500 * (1 - 1 / 5.3)
    want = predict.Prediction(1 / (1 - f), 0, 0, f).text().split(" ")[0]
    line = next(x for x in (d / "report.txt").read_text().splitlines()
                if x.startswith("predicted:"))
    assert line.split()[1] == want


def test_calibration_weighs_calls_as_advise_does(tmp_path: Path) -> None:
    """compare's calibration builds the problem as `hmtune advise` does: a site of many
    allocations lowers f_all by its calls at UNMATCHED_SHARE of alloc_cost_ns (before,
    the calibration's problem had no calls and no first touch, so its f_all was the
    access value alone and every prediction made with k was off by the calls)."""
    from hmtune.workflows.calibrate import stage_problem

    machine = tmp_path / "m.toml"
    machine.write_text('name = "m"\n[[tier]]\nname = "fast"\ncapacity = "1G"\n'
                       'backend = "numa:0"\nload_cost = 1.0\nstore_cost = 1.0\n'
                       'alloc_cost_ns = 1000\n[[tier]]\nname = "slow"\n'
                       'capacity = "unlimited"\nbackend = "default"\nload_cost = 2.0\n'
                       'store_cost = 2.0\n')
    f_all = {}
    for n in (1, 10**4):
        d = tmp_path / str(n)
        write_sites(d / "sites.csv", [*STANDARD[:3], {**STANDARD[3], "n_allocs": n}],
                    STANDARD_TOTAL)
        problem, _, chains = stage_problem(d / "sites.csv", machine)
        assert len(chains) == 4 and problem.n_allocs is not None
        f_all[n], _ = predict.saved(predict.as_run_all_fast(problem), predict.all_fast(problem))
    calls = (10**4 - 1) * 1000.0 * predict.UNMATCHED_SHARE
    assert f_all[1] - f_all[10**4] == pytest.approx(calls / (STANDARD_TOTAL * MS))


def kpoint(name: str, kinds: tuple[float, ...], ks: tuple[float, ...],
           halfwidth: float = 0.002) -> predict.Point:
    """A point measured as the model with a k per kind would give it."""
    saved = sum(k * g for k, g in zip(ks, kinds, strict=True))
    s = 1 / (1 - saved)
    return predict.Point(name, s, s * (1 - halfwidth), s * (1 + halfwidth), sum(kinds), 0.0,
                         kinds)


def test_kinds_the_runs_tell_apart_get_their_own_k() -> None:
    """Streamed gains really scale by 0.9 and scattered ones by 0.2 (GAIN_KINDS order:
    streaming, scattered, sync, other): placements that mix the two differently tell
    them apart; sync and other gains appear in no point, so they keep the one k."""
    true = (0.9, 0.2, 1.0, 1.0)
    pts = [kpoint("all-fast", (0.20, 0.20, 0.0, 0.0), true),
           kpoint("streamed", (0.20, 0.02, 0.0, 0.0), true),
           kpoint("chased", (0.01, 0.18, 0.0, 0.0), true)]
    cal = calib(pts)
    got = {n: (k, lo, hi) for n, k, lo, hi in cal.kind_k}
    assert set(got) == {"streaming", "scattered"}
    assert got["streaming"][0] == pytest.approx(0.9, abs=0.05)
    assert got["scattered"][0] == pytest.approx(0.2, abs=0.05)
    assert all(lo <= k <= hi for k, lo, hi in got.values())
    assert cal.k_of("sync") == (cal.k, cal.k_lo, cal.k_hi)
    # one point alone says nothing about the kinds: fit()'s one k
    assert calib(pts[:1]).kind_k == ()


def test_a_calibration_with_kinds_is_written_and_read_back(tmp_path: Path) -> None:
    true = (0.9, 0.2, 1.0, 1.0)
    cal = calib([kpoint("all-fast", (0.2, 0.2, 0.0, 0.0), true),
                 kpoint("streamed", (0.2, 0.02, 0.0, 0.0), true)])
    predict.write_calibration(tmp_path / "c.json", cal)
    assert predict.read_calibration(tmp_path / "c.json") == cal
    doc = json.loads((tmp_path / "c.json").read_text())
    doc["kind_k"] = [["bandwidth", 1.0, 0.5, 1.5]]
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="kind_k names a kind"):
        predict.read_calibration(tmp_path / "bad.json")
    # a v2 file (before kinds): read, with one k for every gain
    del doc["kind_k"]
    doc["format"] = "hmtune calibration v2"
    for p in doc["points"]:
        del p["kinds"]
    (tmp_path / "v2.json").write_text(json.dumps(doc))
    old = predict.read_calibration(tmp_path / "v2.json")
    assert old.kind_k == () and old.k == cal.k
