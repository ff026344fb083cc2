"""`hmtune explore`: the exhaustive method of "Heterogeneous Memory Pool Tuning": the K
sites with the most sampled weight, plus one group holding every other site, and each
of the 2^(K+1) ways of putting these groups in the fast tier measured in interleaved
rounds (hmtune/workflows/measure.py: a fixed number, or until every speedup's 95 % interval is
narrow enough or the time budget is spent; resumable like compare). The placement with
every group in the fast tier is the upper bound (all-fast); each placement's speedup
over the one with nothing in the fast tier comes with its interval, verdict and share
of the upper bound's gain (hmtune/workflows/stats.py). Results in DIR/explore/:
placements.csv, runs.csv, summary.csv, result.json and summary.png (speedup with its
interval against the fraction of the footprint in the fast tier, with the maximum and
90 %-of-maximum lines), and how close the advisor's own placement at the
--mem/--fraction capacity comes to the best placement that fits the same capacity."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import io
import json
import sys
from pathlib import Path

from hmtune.core.errors import Failure
from hmtune.core.files import write_atomic
from hmtune.core.placement import TierLine, read_placement, write_placement
from hmtune.core.stage import PLACEMENT, Stage
from hmtune.core.units import human
from hmtune.workflows import harness, measure, tables
from hmtune.workflows.measure import Variant, write_csv
from hmtune.workflows.sitegroups import Group, load_groups, placement_for, room_for_all
from hmtune.workflows.tables import Summary

__all__ = ["Group", "load_groups", "name_of", "placement_for"]

MAX_TOP = 10                        # 2^11 placements: beyond that, days of runs


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "explore",
        help="measure every placement of the top K sites (plus one group for the rest) "
             "and compare the advisor's choice with the best of them",
        description="The exhaustive method of \"Heterogeneous Memory Pool Tuning\": the top K "
                    "sites by sampled weight plus one group for the rest, every one of the "
                    "2^(K+1) placements of these groups in the fast tier measured in "
                    "interleaved rounds (resumable) with 95 % intervals, the best "
                    "placement and its share of the gain of every group in the fast tier, "
                    "the fast-tier fraction that reaches 90 % of it, and the advisor's "
                    "placement against the best that fits the same capacity. Results in "
                    "DIR/explore/ (docs/formats.md §9).",
        epilog="example: hmtune explore -k 5 --fom 'kernel_time_s=([0-9.]+)' "
               "--budget 30m --reserve-hugepages -- ./build/examples/latency -s 512 -n 1",
    )
    p.add_argument("-k", "--top", type=int, default=7, metavar="K",
                   help=f"sites explored one by one, by sampled weight (default 7, at most "
                        f"{MAX_TOP}); the others form one more group")
    harness.add_run_options(p, "explore")
    p.add_argument("--strategy", choices=harness.STRATEGIES, default=None,
                   help="the advisor strategy measured against the exhaustive best "
                        "(default: hmtune advise's, ilp-lifetime with allocs.csv, else ilp)")
    p.add_argument("app", nargs=argparse.REMAINDER, help="-- APP [ARGS...]")
    p.set_defaults(func=run)


def name_of(mask: int, width: int) -> str:
    """m + the groups in the fast tier as bits, group 0 (the heaviest site) leftmost."""
    return "m" + "".join("1" if mask >> i & 1 else "0" for i in range(width))


def advisor_bytes(placement: Path, groups: list[Group]) -> tuple[int, int | None]:
    """Peak live bytes of the sites the advisor's placement lists, and the mask of the
    explored placement with the same sites (None when it splits the rest group)."""

    pf = read_placement(placement)
    placed = {s.chain for s in pf.sites} | {s.raw for s in pf.statics}
    split = {s.chain: sum(b - a for a, b in s.ranges) for s in pf.sites if s.ranges}
    split |= {s.raw: sum(min(b, s.size) - a for a, b in s.ranges)    # parts of statics
              for s in pf.statics if s.ranges}
    nbytes = sum(min(n, split.get(c, n)) for g in groups
                 for c, n in zip(g.chains, g.sizes, strict=True) if c in placed)
    if split:                   # ranges of objects: not one of the explored placements
        return nbytes, None
    mask = 0
    for i, g in enumerate(groups):
        inside = [c in placed for c in g.chains]
        if all(inside):
            mask |= 1 << i
        elif any(inside):
            return nbytes, None
    return nbytes, mask


def summary_rows(summary: list[Summary], planned: dict[str, int], labels: dict[str, str],
                 foot: int) -> list[dict[str, str]]:
    """summary.csv's rows (docs/formats.md §9)."""
    out = []
    for s in summary:
        c = tables.csv_columns(s, ".4f")
        out.append({"variant": s.name, "groups": labels[s.name],
                    "planned_bytes": str(planned[s.name]),
                    "fraction": f"{planned[s.name] / foot:.4f}" if foot else "0",
                    **{k: c[k] for k in tables.SHARED_COLUMNS[:12]},
                    "fast_bytes": str(int(s.fast_bytes)),
                    **{k: c[k] for k in tables.SHARED_COLUMNS[12:]}})
    return out


def said(s: Summary) -> str:
    """`1.81x [1.70-1.93], 94 % [88-99 %] of the achievable gain` (or the verdict)."""
    e = s.est
    text = tables.fmt_speedup(e)
    if e.verdict in (measure.stats.SAME, measure.stats.UNSUPPORTED):
        text += f", {e.verdict}"
    if e.share is not None:
        text += f", {tables.fmt_share(e)} of the achievable gain"
    return text


def plot(summary: list[dict[str, str]], result: dict[str, object]) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = [r for r in summary if r["variant"] != "advisor"]
    fig, ax = plt.subplots(figsize=(7.5, 4.8), dpi=110)
    xs = [100 * float(r["fraction"]) for r in pts]
    ys = [float(r["speedup"]) for r in pts]
    if all(r["speedup_lo"] and r["speedup_hi"] for r in pts):
        err = [[max(0.0, y - float(r["speedup_lo"])) for y, r in zip(ys, pts, strict=True)],
               [max(0.0, float(r["speedup_hi"]) - y) for y, r in zip(ys, pts, strict=True)]]
        ax.errorbar(xs, ys, yerr=err, fmt="none", ecolor="tab:blue", alpha=0.4, lw=0.8,
                    zorder=2)
    ax.scatter(xs, ys, s=18, color="tab:blue", zorder=3,
               label=f"the {len(pts)} placements (bars: 95 % intervals)")
    best = float(result["best_speedup"])                              # type: ignore[arg-type]
    ax.axhline(best, color="tab:green", lw=1, label=f"maximum {best:.2f}x")
    ax.axhline(0.9 * best, color="tab:orange", lw=1, ls="--",
               label=f"90 % of maximum {0.9 * best:.2f}x")
    f90 = 100 * float(result["fraction_for_90"])                      # type: ignore[arg-type]
    ax.axvline(f90, color="tab:orange", lw=1, ls=":")
    ax.annotate(f"{f90:.1f} % of the data\nreaches 90 %", (f90, 0.9 * best),
                textcoords="offset points", xytext=(8, -28), fontsize=8, color="tab:orange")
    ax.axhline(1.0, color="black", lw=0.6)
    adv = [r for r in summary if r["variant"] == "advisor"]
    if adv:
        ax.scatter([100 * float(adv[0]["fraction"])], [float(adv[0]["speedup"])], marker="*",
                   s=160, color="tab:red", zorder=4,
                   label=f"advisor ({result['strategy']}): {float(adv[0]['speedup']):.2f}x")
    cap = 100 * float(result["capacity_fraction"])                    # type: ignore[arg-type]
    ax.axvline(cap, color="grey", lw=0.8, ls="-.", label=f"advisor's capacity {cap:.0f} %")
    ax.set_xlabel("footprint in the fast tier (%)")
    ax.set_ylabel("speedup over nothing in the fast tier")
    ax.set_xlim(-3, 103)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title(f"every placement of the top {result['top']} sites"
                 f"{' + the rest' if result['rest_group'] else ''}", fontsize=10)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def conclude(summary: list[dict[str, str]], mem: int, foot: int, strategy: str, k: int,
             rest: bool, advisor_as: str | None, upper: str) -> dict[str, object]:
    pts = [r for r in summary if r["variant"] != "advisor"]
    by = {r["variant"]: r for r in summary}
    best = max(pts, key=lambda r: float(r["speedup"]))
    top = float(best["speedup"])
    reach = [r for r in pts if float(r["speedup"]) >= 0.9 * top]
    r90 = min(reach, key=lambda r: (int(r["planned_bytes"]), -float(r["speedup"])))
    fits = [r for r in pts if int(r["planned_bytes"]) <= mem]
    cap_best = max(fits, key=lambda r: float(r["speedup"]))

    def num(r: dict[str, str], key: str) -> float | None:
        return float(r[key]) if r.get(key) else None

    res: dict[str, object] = {
        "top": k, "rest_group": rest, "strategy": strategy, "placements": len(pts),
        "capacity_bytes": mem, "capacity_fraction": mem / foot if foot else 0.0,
        "footprint_bytes": foot,
        "best": best["variant"], "best_groups": best["groups"], "best_speedup": top,
        "best_speedup_lo": num(best, "speedup_lo"), "best_speedup_hi": num(best, "speedup_hi"),
        "best_verdict": best["verdict"], "best_share": num(best, "share_of_gain"),
        "best_fraction": float(best["fraction"]),
        "fraction_for_90": float(r90["fraction"]), "variant_for_90": r90["variant"],
        "best_within_capacity": cap_best["variant"],
        "best_within_capacity_speedup": float(cap_best["speedup"]),
        "all_fast": upper, "all_fast_speedup": float(by[upper]["speedup"]),
        "all_fast_speedup_lo": num(by[upper], "speedup_lo"),
        "all_fast_speedup_hi": num(by[upper], "speedup_hi"),
        "all_fast_verdict": by[upper]["verdict"]}
    adv = by.get("advisor")
    if adv:
        s = float(adv["speedup"])
        res["advisor_speedup"] = s
        res["advisor_speedup_lo"] = num(adv, "speedup_lo")
        res["advisor_speedup_hi"] = num(adv, "speedup_hi")
        res["advisor_verdict"] = adv["verdict"]
        res["advisor_share"] = num(adv, "share_of_gain")
        res["advisor_ratio"] = s / float(cap_best["speedup"])
        res["advisor_placement"] = advisor_as
    return res


def run(args: argparse.Namespace) -> int:
    who = "hmtune explore"
    if not 1 <= args.top <= MAX_TOP:
        raise Failure(f"-k/--top must be 1 to {MAX_TOP} (2^(K+1) placements)", 2)
    setup = harness.prepare(args, "explore")
    work, plan = setup.work, setup.plan
    groups, foot = load_groups(Stage(setup.stage).sites, args.top)
    if not groups:
        raise Failure(f"{Stage(setup.stage).sites} lists no site", 2)
    rest = len(groups) > args.top
    k = min(args.top, len(groups))
    if args.strategy is None:
        from hmtune.advisor.advise import default_strategy

        args.strategy = default_strategy(Stage(setup.stage).allocs.is_file())
    setup.config.update({"top": args.top, "strategy": args.strategy})
    done = harness.open_runs(setup, "explore", args.force)


    whole = room_for_all(groups)
    first, last = setup.tiers[0], setup.tiers[-1]
    fast = TierLine(first.name, first.backend, whole)
    slow = TierLine(last.name, last.backend, last.capacity)
    width = len(groups)
    names: list[str] = []
    planned: dict[str, int] = {}
    labels: dict[str, str] = {}
    table: list[dict[str, str]] = []
    for mask in range(1 << width):
        n = name_of(mask, width)
        chosen = [g.label for i, g in enumerate(groups) if mask >> i & 1]
        labels[n] = "+".join(chosen) or "none"
        planned[n] = sum(g.nbytes for i, g in enumerate(groups) if mask >> i & 1)
        d = work / n
        d.mkdir(exist_ok=True)
        write_placement(d / PLACEMENT,
                        placement_for(mask, groups, fast, slow, f"explore ({n})"))
        names.append(n)
        table.append({"variant": n, "mask": str(mask), "groups": labels[n],
                      "planned_bytes": str(planned[n])})
    write_csv(work / "placements.csv", list(table[0]), table)
    upper = names[-1]                       # every group in the fast tier
    variants = [Variant(n, work / n / PLACEMENT) for n in names]
    advisor_as: str | None = None
    why = harness.advise(setup.stage, work / "advisor", setup.spec, setup.mem, args.strategy)
    if why:
        print(f"{who}: the advisor ({args.strategy}) gave no placement: {why}",
              file=sys.stderr)
    else:
        variants.append(Variant("advisor", work / "advisor" / PLACEMENT))
        names.append("advisor")
        planned["advisor"], same = advisor_bytes(work / "advisor" / PLACEMENT, groups)
        advisor_as = None if same is None else name_of(same, width)
        labels["advisor"] = f"{args.strategy} at {human(setup.mem)}"
    rounds = "auto" if plan.repeats is None else str(plan.repeats)
    print(f"{who}: {len(names) - (0 if why else 1)} placements of "
          f"{'the top ' + str(k) + ' sites + the rest' if rest else 'all ' + str(k) + ' sites'}"
          f" ({human(foot)} in all), fast tier {first.name} "
          f"({setup.machine.name}); rounds: {rounds}, every placement once a round, "
          "interleaved", file=sys.stderr)

    checked = [work / upper / PLACEMENT] + ([] if why else [work / "advisor" / PLACEMENT])
    need = whole * setup.procs
    if args.reserve_hugepages:
        need = harness.pool_need(checked, setup.stage, setup.procs, need)
    pools = functools.partial(harness.pools, setup, checked, need, args.reserve_hugepages, who)
    try:
        out = measure.measure(variants, plan, setup.app, work, setup.fom_re, who, done,
                              upper, pools)
    except harness.Refused as e:
        raise Failure(str(e), 2) from None
    if out is None:
        return 1
    summary = tables.summarize(out.rows, names, upper, plan.higher)
    if not summary:
        raise Failure("no complete round to summarize", 1)
    rows = summary_rows(summary, planned, labels, foot)
    write_csv(work / "summary.csv", list(rows[0]), rows)
    res = conclude(rows, setup.mem, foot, args.strategy, k, rest, advisor_as, upper)
    stop = tables.stop_message(out, plan, summary)
    short = tables.short_of_tier(out.rows, names, set(names))   # each sized to fit whole
    res.update({"rounds": summary[0].runs, "stopped_by": out.stopped_by, "stop": stop,
                "repeats": rounds, "target": plan.target, "budget_s": plan.budget,
                "method": tables.method_note(summary[0].runs),
                "load_warning": out.load_warning,
                "short_of_tier": [dataclasses.asdict(x) for x in short]})
    write_atomic(work / "result.json", json.dumps(res, indent=1) + "\n")
    (work / "summary.png").write_bytes(plot(rows, res))
    by = {s.name: s for s in summary}
    frac = {r["variant"]: float(r["fraction"]) for r in rows}
    best = by[str(res["best"])]
    print(f"best placement: {best.name} ({labels[best.name]}): {said(best)}, with "
          f"{100 * frac[best.name]:.1f} % of the footprint in the fast tier")
    up = by[upper]
    print(f"all-fast ({upper}, every group in the fast tier): {said(up)}")
    r90 = by[str(res["variant_for_90"])]
    print(f"90 % of the best ({0.9 * best.est.speedup:.2f}x) needs "
          f"{100 * float(res['fraction_for_90']):.1f} % of the footprint in the fast tier: "
          f"{r90.name} ({labels[r90.name]}) {said(r90)}")
    cb = by[str(res["best_within_capacity"])]
    print(f"best within {human(setup.mem)} ({100 * float(res['capacity_fraction']):.0f} %): "
          f"{cb.name} ({labels[cb.name]}) {said(cb)}")
    if "advisor" in by:
        a = by["advisor"]
        same = (f"the same sites as {advisor_as}" if advisor_as
                else "sites that split the rest group")
        twice = (" (the same placement measured twice: the ratio is run-to-run spread)"
                 if advisor_as == cb.name else "")
        print(f"advisor ({args.strategy}, {human(setup.mem)}): {same}, {said(a)}; advisor / "
              f"exhaustive best at the same capacity: {float(res['advisor_ratio']):.2f}{twice}")
    print()
    print("medians per run:")
    shown = list(dict.fromkeys([names[0], best.name, cb.name, upper]
                               + (["advisor"] if "advisor" in by else [])))
    for line in tables.resource_table([by[n] for n in shown], max(14, len(upper))):
        print(line)
    print()
    print(stop[0].upper() + stop[1:] + ".")
    note = tables.method_note(summary[0].runs)
    if note:
        print(note + "; speedups over " + names[0] + " (nothing in the fast tier).")
    for x in short:
        print(f"note: {x.line()}.")
    if out.load_warning:
        print(f"warning: the machine was busy ({out.load_warning}).")
    print(f"{who}: runs in {work / 'runs.csv'}, table in {work / 'summary.csv'}, plot in "
          f"{work / 'summary.png'}", file=sys.stderr)
    return 0
