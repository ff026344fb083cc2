"""compare's and explore's statistics and measurement rules on synthetic data
(hmtune/workflows/stats.py, hmtune/workflows/measure.py): the 95 % interval covers a known speedup
about 95 % of the time, verdicts, the share of the achievable gain, times and rates
(lower and higher is better), the --repeats auto stopping rule, --ok-rc, the option
parsers, runs.csv's format and the busy-machine checks. Nothing here is timed."""

from __future__ import annotations

import argparse
import math
import random
from pathlib import Path

import pytest

from hmtune.workflows import busy, measure, stats, tables
from hmtune.workflows.measure import Plan, Variant

# ---- distributions ----


@pytest.mark.parametrize(("df", "want"), [(1, 12.7062), (2, 4.3027), (4, 2.7764),
                                          (9, 2.2622), (30, 2.0423), (1000, 1.9623)])
def test_t_quantile(df: int, want: float) -> None:
    assert stats.t_quantile(0.975, df) == pytest.approx(want, abs=1e-4)
    assert stats.t_quantile(0.025, df) == pytest.approx(-want, abs=1e-4)


def test_expanded_alpha_shrinks_with_few_rounds() -> None:
    alphas = [stats.expanded_alpha(n) for n in (3, 5, 10, 30, 300)]
    assert alphas == sorted(alphas) and alphas[-1] == pytest.approx(0.05, abs=0.003)


# ---- coverage ----

def simulate(n: int, ratio: float, top: float, rng: random.Random, skew: bool,
             higher: bool = False) -> list[dict[str, float]]:
    """n rounds of a reference, a variant `ratio` times faster and an upper bound `top`
    times faster: a shared per-round factor (the machine's state) and independent,
    identically distributed noise per run (right-skewed with skew)."""
    out = []
    for _ in range(n):
        base = 10.0 * math.exp(rng.gauss(0, 0.3))

        def noise() -> float:
            x = math.exp(rng.gauss(0, 0.05))
            return x * (1 + rng.expovariate(20.0)) if skew else x

        if higher:      # a rate: faster is more
            out.append({"ref": base * noise(), "v": base * ratio * noise(),
                        "top": base * top * noise()})
        else:           # a time
            out.append({"ref": base * noise(), "v": base / ratio * noise(),
                        "top": base / top * noise()})
    return out


@pytest.mark.parametrize(("n", "skew", "higher"), [(5, False, False), (10, True, False),
                                                   (3, False, True), (20, True, True)])
def test_interval_covers_the_true_speedup_about_95_percent(n: int, skew: bool,
                                                            higher: bool) -> None:
    """Over many simulated experiments with a known speedup (1.2) and upper bound (1.5,
    so a share of 0.4), the 95 % intervals cover them about 95 % of the time."""
    rng = random.Random(n * 10 + skew)
    trials, hit, share_hit, shares = 300, 0, 0, 0
    for k in range(trials):
        rounds = simulate(n, 1.2, 1.5, rng, skew, higher)
        e = stats.estimate(rounds, ["ref", "v", "top"], "ref", "top", higher,
                           resamples=600, seed=k)
        v = e["v"]
        assert v.lo is not None and v.hi is not None and v.lo <= v.speedup <= v.hi
        hit += v.lo <= 1.2 <= v.hi
        if v.share_lo is not None and v.share_hi is not None:
            shares += 1
            share_hit += v.share_lo <= 0.4 <= v.share_hi
    assert 0.90 <= hit / trials <= 0.99, hit / trials
    assert shares > trials / 2 and 0.88 <= share_hit / shares <= 0.995, (share_hit, shares)


def test_reproducible() -> None:
    rounds = simulate(6, 1.1, 1.3, random.Random(1), True)
    names = ["ref", "v", "top"]
    assert stats.estimate(rounds, names, "ref", "top", False) == \
        stats.estimate(rounds, names, "ref", "top", False)


# ---- verdicts and shares ----

def rounds_of(ref: list[float], **others: list[float]) -> list[dict[str, float]]:
    return [{"ref": r, **{k: v[i] for k, v in others.items()}} for i, r in enumerate(ref)]


def test_verdicts() -> None:
    ref = [10.0, 12.0, 11.0, 10.5, 11.5, 10.2]
    same = [10.3, 11.5, 11.4, 10.1, 11.9, 10.0]       # straddles 1
    fast = [x / 1.5 for x in ref]
    slow = [x * 1.3 for x in ref]
    e = stats.estimate(rounds_of(ref, same=same, fast=fast, slow=slow),
                       ["ref", "same", "fast", "slow"], "ref", None, False)
    assert e["ref"].verdict == stats.REFERENCE and e["ref"].speedup == 1.0
    s = e["same"]
    assert s.lo is not None and s.hi is not None and s.lo < 1.0 < s.hi
    assert s.verdict == "indistinguishable from all-slow"
    assert e["fast"].verdict == stats.FASTER and e["fast"].speedup == pytest.approx(1.5)
    assert e["slow"].verdict == stats.SLOWER and e["slow"].speedup == pytest.approx(1 / 1.3)
    assert all(x.share is None for x in e.values())       # no upper bound given


def test_one_round_is_unsupported() -> None:
    e = stats.estimate([{"ref": 2.0, "v": 1.0, "top": 0.8}], ["ref", "v", "top"], "ref",
                       "top", False)
    v = e["v"]
    assert v.speedup == 2.0 and v.lo is None and v.hi is None
    assert v.verdict == stats.UNSUPPORTED and v.halfwidth == math.inf
    assert v.share == pytest.approx(1.0 / 1.5)


def test_share_of_gain() -> None:
    """(S - 1) / (S_all - 1): exact rounds give exact shares; the upper bound's share is
    1, the reference's 0; no share when the upper bound is itself indistinguishable."""
    ref = [10.0, 20.0, 15.0, 12.0, 18.0]
    e = stats.estimate(rounds_of(ref, v=[x / 1.2 for x in ref], top=[x / 1.5 for x in ref]),
                       ["ref", "v", "top"], "ref", "top", False)
    assert e["v"].share == pytest.approx(0.4)
    assert e["v"].share_lo == pytest.approx(0.4) and e["v"].share_hi == pytest.approx(0.4)
    assert e["top"].share == 1.0 and e["top"].share_lo == 1.0 and e["ref"].share == 0.0
    flat = [10.2, 19.5, 15.3, 12.1, 17.7]              # "all-fast" no faster than all-slow
    e = stats.estimate(rounds_of(ref, v=[x / 1.2 for x in ref], top=flat),
                       ["ref", "v", "top"], "ref", "top", False)
    assert e["top"].verdict == stats.SAME
    assert e["v"].share is None and e["v"].share_lo is None


def run_row(fom: float) -> dict[str, str]:
    return {**dict.fromkeys(measure.RUNS_FIELDS, "0"), "fom": str(fom)}


def test_split_objects_over_their_whole_objects_twin() -> None:
    """tables.split_over_whole pairs each strategy with its `-whole` twin at the same
    capacity, round by round (a time: the twin's FOM over the strategy's), and leaves
    out strategies without a twin and the twins themselves."""
    rng = random.Random(3)
    names = ["all-slow", "ilp@4M", "ilp-whole@4M", "ilp@8M", "ilp-whole@8M", "density@8M",
             "all-fast"]
    rows: measure.Rows = {}
    for r in range(12):
        host = rng.uniform(0.8, 1.25)             # the host's speed drifts between rounds
        for n, t in (("all-slow", 10.0), ("ilp@4M", 8.0), ("ilp-whole@4M", 10.0),
                     ("ilp@8M", 8.0), ("ilp-whole@8M", 8.0), ("density@8M", 9.0),
                     ("all-fast", 7.5)):
            rows[(n, r)] = run_row(t * host * rng.uniform(0.98, 1.02))
    summary = tables.summarize(rows, names, "all-fast", False)
    got = tables.split_over_whole(summary, rows, names[1:-1], "-whole", False)
    assert [(v.mine, v.other) for v in got] == [("ilp@4M", "ilp-whole@4M"),
                                                ("ilp@8M", "ilp-whole@8M")]
    at4, at8 = got
    assert at4.est.speedup == pytest.approx(1.25, rel=0.02) and at4.word == "ilp@4M is ahead"
    assert at8.est.lo is not None and at8.est.hi is not None
    assert at8.est.lo < 1.0 < at8.est.hi and at8.word == "indistinguishable"
    # one capacity: names without a tag
    one = ["all-slow", "ilp", "ilp-whole"]
    rows1 = {(n, r): run_row(v) for r in range(3)
             for n, v in (("all-slow", 2.0), ("ilp", 1.0 + 0.01 * r), ("ilp-whole", 2.0))}
    got = tables.split_over_whole(tables.summarize(rows1, one, None, False), rows1,
                                  one[1:], "-whole", False)
    assert [(v.mine, v.other) for v in got] == [("ilp", "ilp-whole")]
    assert got[0].est.speedup == pytest.approx(2.0 / 1.01, rel=0.01)


def test_lower_and_higher_is_better() -> None:
    """A speedup is always how many times faster: a time that halves and a rate that
    doubles are both 2x; the FOM gained per MiB is positive exactly when faster."""
    assert stats.speedup_of(10.0, 5.0, higher=False) == 2.0
    assert stats.speedup_of(100.0, 200.0, higher=True) == 2.0
    assert stats.speedup_of(10.0, 20.0, higher=False) == 0.5
    times = stats.estimate(rounds_of([10.0, 11.0], v=[5.0, 5.5]), ["ref", "v"], "ref",
                           None, False)
    rates = stats.estimate(rounds_of([100.0, 110.0], v=[200.0, 220.0]), ["ref", "v"],
                           "ref", None, True)
    assert times["v"].speedup == pytest.approx(2.0) == rates["v"].speedup
    assert stats.gain_per_mib(10.0, 2.0, 5.0, higher=False) == pytest.approx(1.0)  # 5 s saved
    assert stats.gain_per_mib(100.0, 2.0, 50.0, higher=True) == pytest.approx(2.0)
    for higher in (False, True):
        assert stats.gain_per_mib(10.0, 1.1, 3.0, higher) > 0
        assert stats.gain_per_mib(10.0, 0.9, 3.0, higher) < 0
        assert math.isnan(stats.gain_per_mib(10.0, 1.1, 0.0, higher))


# ---- --repeats auto ----

def test_stop_rule() -> None:
    rule = {"target": 0.03, "budget": 600.0, "min_rounds": 5}
    assert stats.stop_reason(4, 0.01, 10, 5, **rule) is None           # too few rounds
    assert stats.stop_reason(5, 0.01, 10, 5, **rule) == "target"
    assert stats.stop_reason(5, 0.031, 10, 5, **rule) is None
    assert stats.stop_reason(9, 0.05, 590, 20, **rule) == "budget"      # would end late
    assert stats.stop_reason(9, 0.05, 570, 20, **rule) is None
    assert stats.stop_reason(1, math.inf, 900, 100, **rule) is None     # two at least
    assert stats.stop_reason(2, math.inf, 900, 100, **rule) == "budget"


def fake_runs(monkeypatch: pytest.MonkeyPatch, fom: dict[str, float], noise: float = 0.0,
              rc: dict[str, int] | None = None) -> list[tuple[str, str]]:
    """measure.one_run replaced: variant name's FOM times seeded noise, exit status rc;
    returns the list of (variant, tag) it was called with."""
    calls: list[tuple[str, str]] = []
    rng = random.Random(3)

    def one_run(v: Variant, tag: str, app: list[str], work: Path, fom_re: object,
                plan: Plan, target: str | None, judge: object = None) -> dict[str, str] | str:
        calls.append((v.name, tag))
        code = (rc or {}).get(v.name, 0)
        problem = judge(code) if callable(judge) else None
        if problem:
            return str(problem)
        f = fom[v.name] * math.exp(rng.gauss(0, noise))
        return {"variant": v.name, "repeat": tag, "fom": f"{f:.9g}", "rc": str(code),
                "wall_s": "1.0", "user_s": "0.9", "sys_s": "0.1", "minflt": "1000",
                "majflt": "0", "maxrss_kib": "2048", "hugepages": "0", "fast_bytes": "0",
                "fast_bytes_intended": "0", "not_fitting": "0", "map_failed": "0"}

    monkeypatch.setattr(measure, "one_run", one_run)
    monkeypatch.setattr(measure, "targets", lambda variants, app, stage=None: {})
    return calls


def work(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


VARIANTS = [Variant("all-slow", None), Variant("a", Path("a.txt")), Variant("top", Path("t"))]


def test_auto_stops_at_the_target(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Noise-free runs: every interval has width 0 once there are min_rounds rounds."""
    calls = fake_runs(monkeypatch, {"all-slow": 2.0, "a": 1.0, "top": 0.5})
    out = measure.measure(VARIANTS, Plan(None, min_rounds=4), ["app"], tmp_path, None, "t",
                          {}, "top")
    assert out is not None and out.stopped_by == "target" and out.ran == 12
    assert measure.complete_rounds(out.rows, ["all-slow", "a", "top"]) == [0, 1, 2, 3]
    # interleaved: the reference in the middle, the upper bound next to it, odd rounds
    # mirrored; the first round starts with the reference (its exit status judges the
    # others' runs)
    assert [n for n, t in calls if t == "0"] == ["all-slow", "top", "a"]
    assert [n for n, t in calls if t == "1"] == ["a", "all-slow", "top"]
    assert [n for n, t in calls if t == "2"] == ["top", "all-slow", "a"]
    assert measure.read_runs(tmp_path / "runs.csv") == out.rows
    summary = tables.summarize(out.rows, ["all-slow", "a", "top"], "top", False)
    msg = tables.stop_message(out, Plan(None, min_rounds=4), summary)
    assert msg.startswith("stopped after 4 rounds: every speedup's 95 % interval is within")
    # again: the runs are there and meet the target: nothing runs
    calls.clear()
    again = measure.measure(VARIANTS, Plan(None, min_rounds=4), ["app"], tmp_path, None, "t",
                            measure.read_runs(tmp_path / "runs.csv"), "top")
    assert again is not None and again.ran == 0 and calls == []


def test_round_order_keeps_every_variant_near_the_reference() -> None:
    """Ten variants: the reference twice, about a quarter of the others before its first
    run, half between its runs (the upper bound next to the first) and a quarter after
    the second, so every other variant is at most three runs from a reference run;
    neighbours in the list (a strategy and its -whole twin) neighbours in the round; odd
    rounds mirrored; every variant once a round."""
    vs = [Variant("all-slow", None)] + [Variant(f"v{i}", Path(f"{i}.txt")) for i in range(1, 9)]
    vs.append(Variant("all-fast", Path("t")))
    for r in (0, 1, 2, 3):
        got = measure.round_order(vs, r, "all-fast")
        order = [v.name for v in got]
        assert sorted(order) == sorted([v.name for v in vs] + ["all-slow" + measure.SECOND])
        second = got[order.index("all-slow" + measure.SECOND)]
        assert second.placement is None and second.baseline == ""
        refs = [i for i, n in enumerate(order) if n.startswith("all-slow")]
        dist = {n: min(abs(i - k) for k in refs) for i, n in enumerate(order)}
        assert max(dist.values()) == 3 and dist["all-fast"] == 1
        first = refs[0] if r % 2 == 0 else refs[1]
        assert abs(order.index("all-fast") - first) == 1
        assert sorted((refs[0], len(order) - 1 - refs[1])) == [2, 2]
        for i in (1, 3, 5, 7):
            assert abs(order.index(f"v{i}") - order.index(f"v{i + 1}")) == 1
        even = [v.name for v in measure.round_order(vs, r - r % 2, "all-fast")]
        assert order == (even if r % 2 == 0 else even[::-1])
    # three others: the reference twice, one variant between; two: once, in the middle
    order = [v.name for v in measure.round_order(vs[:4], 0)]
    assert order == ["v2", "all-slow", "v1", "all-slow" + measure.SECOND, "v3"]
    assert [v.name for v in measure.round_order(vs[:3], 0)] == ["v1", "all-slow", "v2"]
    assert [v.name for v in measure.round_order(vs[:1], 1)] == ["all-slow"]


def test_a_round_with_two_reference_runs_is_paired_with_their_geometric_mean() -> None:
    """Each ratio of round r is to the geometric mean of the reference's runs there;
    a round with one reference run (an earlier hmtune's, or cut short) uses that one."""
    def row(v: str, rep: int, fom: float) -> dict[str, str]:
        return {"variant": v, "repeat": str(rep), "fom": str(fom), "fast_bytes": "0",
                "wall_s": str(fom)}
    rows = {(k[0], k[1]): row(k[0], k[1], f) for k, f in {
        ("all-slow", 0): 2.0, ("all-slow" + measure.SECOND, 0): 8.0, ("a", 0): 2.0,
        ("all-slow", 1): 3.0, ("a", 1): 1.5,
        ("all-slow", 2): 4.0, ("all-slow" + measure.SECOND, 2): 1.0, ("a", 2): 1.0,
        ("a", 3): 1.0}.items()}
    table = measure.fom_table(rows, ["all-slow", "a"])
    assert table == [{"all-slow": 4.0, "a": 2.0}, {"all-slow": 3.0, "a": 1.5},
                     {"all-slow": 2.0, "a": 1.0}]
    summary = tables.summarize(rows, ["all-slow", "a"], None, False)
    assert summary[1].est.rounds == 3 and summary[1].est.speedup == pytest.approx(2.0)
    # the reference's resources: the median over all five of its runs (1, 2, 3, 4, 8)
    assert summary[0].resources["wall_s"] == 3.0 and summary[1].resources["wall_s"] == 1.5


def test_auto_stops_when_the_budget_runs_out(monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    fake_runs(monkeypatch, {"all-slow": 2.0, "a": 1.9, "top": 1.0}, noise=0.2)
    plan = Plan(None, target=0.001, budget=1e-9)
    out = measure.measure(VARIANTS, plan, ["app"], tmp_path, None, "t", {}, "top")
    assert out is not None and out.stopped_by == "budget" and out.ran == 6   # two rounds
    summary = tables.summarize(out.rows, ["all-slow", "a", "top"], "top", False)
    msg = tables.stop_message(out, plan, summary)
    assert "budget ran out" in msg and "fewer than the 5 the target needs" in msg


def test_fixed_repeats_complete_missing_runs(monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    calls = fake_runs(monkeypatch, {"all-slow": 2.0, "a": 1.0, "top": 0.5})
    out = measure.measure(VARIANTS[:2], Plan(3), ["app"], tmp_path, None, "t", {}, None)
    assert out is not None and out.ran == 6
    calls.clear()                       # a variant added: only its runs are made
    out = measure.measure(VARIANTS, Plan(3), ["app"], tmp_path, None, "t", out.rows, "top")
    assert out is not None and calls == [("top", "0"), ("top", "1"), ("top", "2")]


def test_exit_status_against_the_reference(monkeypatch: pytest.MonkeyPatch,
                                           tmp_path: Path) -> None:
    """Every run must exit as all-slow's first run did (3 here), unless --ok-rc."""
    fake_runs(monkeypatch, {"all-slow": 2.0, "a": 1.0, "top": 0.5}, rc={"all-slow": 3,
                                                                         "a": 3, "top": 3})
    out = measure.measure(VARIANTS, Plan(2), ["app"], work(tmp_path / "same"), None, "t", {}, "top")
    assert out is not None and {r["rc"] for r in out.rows.values()} == {"3"}
    fake_runs(monkeypatch, {"all-slow": 2.0, "a": 1.0, "top": 0.5}, rc={"a": 1})
    assert measure.measure(VARIANTS, Plan(2), ["app"], work(tmp_path / "differs"), None, "t", {},
                           "top") is None
    # the runs before a's are kept: all-slow's and the upper bound's (round 0's order)
    assert set(measure.read_runs(tmp_path / "differs" / "runs.csv")) == \
        {("all-slow", 0), ("top", 0)}
    fake_runs(monkeypatch, {"all-slow": 2.0, "a": 1.0, "top": 0.5}, rc={"a": 1})
    out = measure.measure(VARIANTS, Plan(2, ok_rc=frozenset({1})), ["app"], work(tmp_path / "ok"),
                          None, "t", {}, "top")
    assert out is not None


def test_rc_problem() -> None:
    ok = frozenset({5})
    assert measure.rc_problem(0, None, frozenset(), "all-slow") is None
    assert measure.rc_problem(3, None, frozenset(), "all-slow") is not None  # no reference
    assert measure.rc_problem(3, 3, frozenset(), "all-slow") is None
    assert measure.rc_problem(5, 0, ok, "all-slow") is None
    why = measure.rc_problem(4, 0, ok, "all-slow")
    assert why == "exit status 4 where all-slow exited 0 (--ok-rc 4 accepts it)"
    assert measure.rc_problem(-11, -11, frozenset(), "all-slow") == "killed by SIGSEGV"
    assert measure.rc_problem(7, None, frozenset(), "all-slow", first=True) is None
    assert measure.rc_problem(-9, None, frozenset(), "all-slow", first=True) == \
        "killed by SIGKILL"


# ---- options ----

def test_option_parsers() -> None:
    assert measure.repeats_arg("auto") is None and measure.repeats_arg("3") == 3
    assert measure.duration_arg("20m") == 1200 and measure.duration_arg("1h30m") == 5400
    assert measure.duration_arg("90") == 90 and measure.duration_arg("1.5h") == 5400
    assert measure.duration_arg("0.5s") == 0.5
    assert measure.target_arg("3") == pytest.approx(0.03)
    assert measure.target_arg("2.5%") == pytest.approx(0.025)
    assert measure.rcs_arg("0,3") == frozenset({0, 3})
    assert measure.cpus_arg("0") == frozenset({0})
    for parse, bad in [(measure.repeats_arg, "0"), (measure.repeats_arg, "x"),
                       (measure.duration_arg, "0"), (measure.duration_arg, "20x"),
                       (measure.duration_arg, "m"), (measure.duration_arg, ""),
                       (measure.target_arg, "0"), (measure.target_arg, "100"),
                       (measure.target_arg, "nan"), (measure.rcs_arg, "256"),
                       (measure.rcs_arg, "a"), (measure.cpus_arg, "9999"),
                       (measure.cpus_arg, "1-0")]:
        with pytest.raises(argparse.ArgumentTypeError):
            parse(bad)


# ---- runs.csv, the summary ----

def test_old_runs_csv_is_refused(tmp_path: Path) -> None:
    old = tmp_path / "runs.csv"
    old.write_text("variant,repeat,fom,wall_s,fast_bytes,fast_bytes_intended\n"
                   "all-slow,0,1.5,1.6,0,0\n")
    with pytest.raises(measure.RunsFormatError, match="earlier hmtune"):
        measure.read_runs(old)


def test_runs_csv_before_the_refusal_columns_resumes(tmp_path: Path) -> None:
    """A runs.csv written before not_fitting/map_failed were recorded is resumed; those
    read as unknown, and short_of_tier says nothing of them."""
    old = tmp_path / "runs.csv"
    old.write_text(",".join(measure.RUNS_REQUIRED) + "\n"
                   "all-fast,0,1.5,0,1.6,1.5,0.1,100,0,2048,3,6291456,6291456\n")
    rows = measure.read_runs(old)
    assert rows[("all-fast", 0)]["hugepages"] == "3"
    assert rows[("all-fast", 0)]["not_fitting"] == "" == rows[("all-fast", 0)]["map_failed"]
    assert tables.short_of_tier(rows, ["all-fast"], {"all-fast"}) == []


def test_short_of_tier() -> None:
    """Refused mappings are reported for every variant; blocks the capacity refused only
    for placements meant to fit whole (not the baselines, which fill and stop)."""
    def r(name: str, rep: int, nf: int, mf: int) -> dict[str, str]:
        return row(name, rep, 1.0, not_fitting=str(nf), map_failed=str(mf))

    rows = {("all-slow", 0): r("all-slow", 0, 0, 0), ("all-slow", 1): r("all-slow", 1, 0, 0),
            ("first-come", 0): r("first-come", 0, 40, 0),
            ("first-come", 1): r("first-come", 1, 40, 0),
            ("ilp", 0): r("ilp", 0, 0, 0), ("ilp", 1): r("ilp", 1, 3, 0),
            ("all-fast", 0): r("all-fast", 0, 2216, 2216),
            ("all-fast", 1): r("all-fast", 1, 2000, 1990),
            ("size-window", 0): r("size-window", 0, 9, 5),
            ("size-window", 1): r("size-window", 1, 2, 0)}
    names = ["all-slow", "first-come", "ilp", "size-window", "all-fast"]
    got = {x.name: x for x in tables.short_of_tier(rows, names, {"ilp", "all-fast"})}
    assert set(got) == {"ilp", "size-window", "all-fast"}
    assert (got["ilp"].runs, got["ilp"].of, got["ilp"].not_fitting,
            got["ilp"].map_failed) == (1, 2, 3, 0)
    assert (got["size-window"].runs, got["size-window"].map_failed) == (1, 5)
    assert (got["all-fast"].runs, got["all-fast"].not_fitting,
            got["all-fast"].map_failed) == (2, 2108, 2103)


def row(name: str, rep: int, fom: float, **extra: str) -> dict[str, str]:
    base = {"variant": name, "repeat": str(rep), "fom": str(fom), "rc": "0", "wall_s": "1",
            "user_s": "1", "sys_s": "0.1", "minflt": "2720000", "majflt": "0",
            "maxrss_kib": "10240", "hugepages": "0", "fast_bytes": "0",
            "fast_bytes_intended": "0"}
    return base | extra


def test_summary_uses_complete_rounds_and_medians() -> None:
    rows = {("all-slow", 0): row("all-slow", 0, 2.0), ("v", 0): row("v", 0, 1.0,
                                                                      minflt="230000",
                                                                      hugepages="100",
                                                                      fast_bytes="209715200"),
            ("all-slow", 1): row("all-slow", 1, 2.2), ("v", 1): row("v", 1, 1.1,
                                                                      minflt="250000",
                                                                      hugepages="100",
                                                                      fast_bytes="209715200"),
            ("all-slow", 2): row("all-slow", 2, 9.9)}        # round 2 is incomplete
    s = tables.summarize(rows, ["all-slow", "v"], None, False)
    assert [x.runs for x in s] == [2, 2] and s[0].max_fom == 2.2
    v = s[1]
    assert v.est.speedup == pytest.approx(2.0) and v.resources["minflt"] == 240000
    assert v.resources["hugepages"] == 100 and v.fast_bytes == 209715200
    assert v.gain_per_mib == pytest.approx(2.1 * 0.5 / 200)       # seconds saved per MiB
    c = tables.csv_columns(v)
    assert c["minflt"] == "240000" and c["maxrss_mib"] == "10.0" and c["verdict"] == "faster"
    assert list(c) == tables.SHARED_COLUMNS
    assert tables.fmt_count(2.72e6) == "2.72 M" and tables.fmt_count(230000) == "230 k"
    table = list(tables.resource_table(s))
    assert "minor faults" in table[0] and "2.72 M" in table[1] and "240 k" in table[2]


# ---- a busy machine ----

def test_load_average(tmp_path: Path) -> None:
    f = tmp_path / "loadavg"
    f.write_text("1.50 0.80 0.50 2/100 1234\n")
    assert busy.loadavg_note(2, f) == "1-minute load average 1.50 on 2 CPUs"
    assert busy.loadavg_note(4, f) == ""


def test_other_processes_on_the_cores() -> None:
    before = {1: ("stress", 100, 0), 2: ("idle", 50, 1), 3: ("me", 0, 0)}
    after = {1: ("stress", 190, 0), 2: ("idle", 51, 1), 3: ("me", 100, 0),
             4: ("new", 500, 0)}                     # started since: not counted
    note = busy.busy_note(before, after, 1.0, None, frozenset({3}), tick=100)
    assert note.startswith("other processes used 91 % of a CPU") and "stress (pid 1) 90 %" \
        in note and "new" not in note and "me" not in note
    assert busy.busy_note(before, after, 1.0, frozenset({1}), frozenset({3}), tick=100) \
        == ""                                        # pinned to CPU 1: stress is elsewhere
    quiet = {1: ("stress", 110, 0)}
    assert busy.busy_note(before, quiet, 1.0, tick=100) == ""
    assert busy.cpu_snapshot()                    # this machine's /proc reads
