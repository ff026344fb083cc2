"""`hmtune explore`: the exhaustive method of "Heterogeneous Memory Pool Tuning": the K
sites with the most sampled weight, plus one group holding every other site, and each
of the 2^(K+1) ways of putting these groups in the fast tier measured (--repeats runs
each, interleaved, resumable like compare). Results in DIR/explore/: placements.csv,
runs.csv, summary.csv, result.json and summary.png (speedup over the placement with
nothing in the fast tier, against the fraction of the footprint in the fast tier, with
the maximum and 90 %-of-maximum lines), and how close the advisor's own placement at
the --mem/--fraction capacity comes to the best placement that fits the same capacity."""

from __future__ import annotations

import argparse
import csv
import io
import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from workflows import compare, launch
from workflows.fileio import write_atomic
from workflows.units import human

if TYPE_CHECKING:   # advisor.placement imports pandas: not at every CLI start
    from advisor.placement import PlacementFile, TierLine

MAX_TOP = 10                        # 2^11 placements: beyond that, days of runs


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "explore",
        help="measure every placement of the top K sites (plus one group for the rest) "
             "and compare the advisor's choice with the best of them",
        description="The exhaustive method of \"Heterogeneous Memory Pool Tuning\": the top K "
                    "sites by sampled weight plus one group for the rest, every one of the "
                    "2^(K+1) placements of these groups in the fast tier measured REPEATS "
                    "times (interleaved, resumable), the best placement, the fast-tier "
                    "fraction that reaches 90 % of it, and the advisor's placement against "
                    "the best that fits the same capacity. Results in DIR/explore/ "
                    "(docs/formats.md §9).",
        epilog="example: hmtune explore -k 5 --fom 'kernel_time_s=([0-9.]+)' "
               "--reserve-hugepages -- ./build/examples/latency -s 512 -n 1",
    )
    p.add_argument("-k", "--top", type=int, default=7, metavar="K",
                   help=f"sites explored one by one, by sampled weight (default 7, at most "
                        f"{MAX_TOP}); the others form one more group")
    compare.add_run_options(p, "explore")
    p.add_argument("--strategy", choices=compare.STRATEGIES, default="ilp",
                   help="the advisor strategy measured against the exhaustive best "
                        "(default ilp)")
    p.add_argument("app", nargs=argparse.REMAINDER, help="-- APP [ARGS...]")
    p.set_defaults(func=run)


@dataclass
class Group:
    label: str                      # "site 8" or "rest (3 sites)"
    chains: list[str]               # callstack_raw of its sites
    site_ids: list[int]
    sizes: list[int]                # each site's peak live bytes
    nbytes: int                     # their sum
    max_size: int                   # largest request


@dataclass
class _Site:
    chain: str
    weight: float = 0.0
    peak: int = 0
    max_size: int = 0


def load_groups(sites_csv: Path, k: int) -> tuple[list[Group], int]:
    """The top-k sites by weight (ties: lower site id first), one group each, then the
    rest as one group when there is any; and the footprint (bytes). Per-rank rows are
    folded: weights add up, the peak is the largest of any rank. Site ids that share a
    callstack_raw are one site (the lowest id; weights and peaks added). Sites without a
    callstack_raw cannot be named in a placement and are left out."""
    per: dict[int, _Site] = {}
    with sites_csv.open(newline="") as f:
        for r in csv.DictReader(line for line in f if not line.startswith("#")):
            if not r["callstack_raw"]:
                continue
            s = per.setdefault(int(r["site_id"]), _Site(r["callstack_raw"]))
            s.weight += float(r["weight"])
            s.peak = max(s.peak, int(r["peak_live_bytes"]))
            s.max_size = max(s.max_size, int(r["max_size"]))
    first: dict[str, int] = {}          # one site per chain: the interposer cannot tell
    for sid in sorted(per):             # apart site ids with one callstack_raw
        keep = first.setdefault(per[sid].chain, sid)
        if keep != sid:
            gone, into = per.pop(sid), per[keep]
            into.weight += gone.weight
            into.peak += gone.peak      # an upper bound: they may be live together
            into.max_size = max(into.max_size, gone.max_size)
    order = sorted(per, key=lambda sid: (-per[sid].weight, sid))

    def group(label: str, ids: list[int]) -> Group:
        sizes = [per[i].peak for i in ids]
        return Group(label, [per[i].chain for i in ids], ids, sizes, sum(sizes),
                     max(per[i].max_size for i in ids))

    groups = [group(f"site {sid}", [sid]) for sid in order[:k]]
    rest = order[k:]
    if rest:
        groups.append(group(f"rest ({len(rest)} site{'s' if len(rest) > 1 else ''})", rest))
    return groups, sum(g.nbytes for g in groups)


def placement_for(mask: int, groups: list[Group], fast: TierLine, slow: TierLine,
                  label: str) -> PlacementFile:
    from advisor.placement import PlacementFile, SiteLine, frames

    chosen = [g for i, g in enumerate(groups) if mask >> i & 1]
    chains = [(c, sid) for g in chosen for c, sid in zip(g.chains, g.site_ids, strict=True)]
    sites = [SiteLine(fast.name, c, f"site {sid}") for c, sid in chains]
    return PlacementFile(
        tiers=[fast, slow],
        depth=max([len(frames(c)) for c, _ in chains] or [1]),
        size_window=(0, max([g.max_size for g in chosen] or [0])),
        sites=sites, generated_by=f"hmtune explore ({label})")


def name_of(mask: int, width: int) -> str:
    """m + the groups in the fast tier as bits, group 0 (the heaviest site) leftmost."""
    return "m" + "".join("1" if mask >> i & 1 else "0" for i in range(width))


def advisor_bytes(placement: Path, groups: list[Group]) -> tuple[int, int | None]:
    """Peak live bytes of the sites the advisor's placement lists, and the mask of the
    explored placement with the same sites (None when it splits the rest group)."""
    from advisor.placement import read_placement

    placed = {s.chain for s in read_placement(placement).sites}
    nbytes = sum(n for g in groups for c, n in zip(g.chains, g.sizes, strict=True)
                 if c in placed)
    mask = 0
    for i, g in enumerate(groups):
        inside = [c in placed for c in g.chains]
        if all(inside):
            mask |= 1 << i
        elif any(inside):
            return nbytes, None
    return nbytes, mask


def summary_rows(rows: dict[tuple[str, int], dict[str, str]], names: list[str],
                 planned: dict[str, int], labels: dict[str, str], foot: int,
                 higher: bool) -> list[dict[str, str]]:
    base = statistics.median(float(r["fom"]) for (v, _), r in rows.items() if v == names[0])
    out = []
    for n in names:
        st = compare.variant_stats(rows, n, base, higher)
        if st is None:
            continue
        out.append({"variant": n, "groups": labels[n], "planned_bytes": str(planned[n]),
                    "fraction": f"{planned[n] / foot:.4f}" if foot else "0",
                    "runs": str(st.runs), "median_fom": f"{st.median:.6g}",
                    "min_fom": f"{st.lo:.6g}", "max_fom": f"{st.hi:.6g}",
                    "speedup": f"{st.speedup or 0:.4f}",
                    "fast_bytes": str(int(st.fast_bytes)),
                    "dfom_per_mib": f"{st.dfom_per_mib:.6g}"})
    return out


def spread(row: dict[str, str], base: float, higher: bool) -> str:
    lo, hi = float(row["min_fom"]), float(row["max_fom"])
    a, b = (lo / base, hi / base) if higher else (base / hi, base / lo)
    return f"{row['runs']} run{'s' if row['runs'] != '1' else ''}, {a:.2f}-{b:.2f}x"


def plot(summary: list[dict[str, str]], result: dict[str, object]) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = [r for r in summary if r["variant"] != "advisor"]
    fig, ax = plt.subplots(figsize=(7.5, 4.8), dpi=110)
    ax.scatter([100 * float(r["fraction"]) for r in pts], [float(r["speedup"]) for r in pts],
               s=18, color="tab:blue", label=f"the {len(pts)} placements", zorder=3)
    best = float(result["best_speedup"])                              # type: ignore[arg-type]
    ax.axhline(best, color="tab:green", lw=1, label=f"maximum {best:.2f}x")
    ax.axhline(0.9 * best, color="tab:orange", lw=1, ls="--",
               label=f"90 % of maximum {0.9 * best:.2f}x")
    f90 = 100 * float(result["fraction_for_90"])                      # type: ignore[arg-type]
    ax.axvline(f90, color="tab:orange", lw=1, ls=":")
    ax.annotate(f"{f90:.1f} % of the data\nreaches 90 %", (f90, 0.9 * best),
                textcoords="offset points", xytext=(8, -28), fontsize=8, color="tab:orange")
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
             rest: bool, advisor_as: str | None) -> dict[str, object]:
    pts = [r for r in summary if r["variant"] != "advisor"]
    best = max(pts, key=lambda r: float(r["speedup"]))
    top = float(best["speedup"])
    reach = [r for r in pts if float(r["speedup"]) >= 0.9 * top]
    r90 = min(reach, key=lambda r: (int(r["planned_bytes"]), -float(r["speedup"])))
    fits = [r for r in pts if int(r["planned_bytes"]) <= mem]
    cap_best = max(fits, key=lambda r: float(r["speedup"]))
    res: dict[str, object] = {
        "top": k, "rest_group": rest, "strategy": strategy, "placements": len(pts),
        "capacity_bytes": mem, "capacity_fraction": mem / foot if foot else 0.0,
        "footprint_bytes": foot,
        "best": best["variant"], "best_groups": best["groups"], "best_speedup": top,
        "best_fraction": float(best["fraction"]),
        "fraction_for_90": float(r90["fraction"]), "variant_for_90": r90["variant"],
        "best_within_capacity": cap_best["variant"],
        "best_within_capacity_speedup": float(cap_best["speedup"])}
    adv = [r for r in summary if r["variant"] == "advisor"]
    if adv:
        s = float(adv[0]["speedup"])
        res["advisor_speedup"] = s
        res["advisor_ratio"] = s / float(cap_best["speedup"])
        res["advisor_placement"] = advisor_as
    return res


def run(args: argparse.Namespace) -> int:
    who = "hmtune explore"
    if not 1 <= args.top <= MAX_TOP:
        return launch.fail("explore", f"-k/--top must be 1 to {MAX_TOP} (2^(K+1) placements)")
    setup = compare.prepare(args, "explore")
    if isinstance(setup, int):
        return setup
    work = setup.work
    groups, foot = load_groups(setup.stage / "sites.csv", args.top)
    if not groups:
        return launch.fail("explore", f"{setup.stage / 'sites.csv'} lists no site")
    rest = len(groups) > args.top
    k = min(args.top, len(groups))
    setup.config.update({"top": args.top, "strategy": args.strategy})
    rc = compare.open_runs(setup, "explore", args.force)
    if rc is not None:
        return rc

    from advisor.placement import TierLine, write_placement

    page = 2 << 20
    whole = sum(-(-g.nbytes // page) * page for g in groups) + page * sum(
        len(g.chains) for g in groups)
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
        write_placement(d / "placement.txt", placement_for(mask, groups, fast, slow, n))
        names.append(n)
        table.append({"variant": n, "mask": str(mask), "groups": labels[n],
                      "planned_bytes": str(planned[n])})
    compare.write_csv(work / "placements.csv", list(table[0]), table)
    variants = [compare.Variant(n, work / n / "placement.txt") for n in names]
    advisor_as: str | None = None
    why = compare.advise(setup.stage, work / "advisor", setup.machine, setup.mem,
                         args.strategy)
    if why:
        print(f"{who}: the advisor ({args.strategy}) gave no placement: {why}",
              file=sys.stderr)
    else:
        variants.append(compare.Variant("advisor", work / "advisor" / "placement.txt"))
        names.append("advisor")
        planned["advisor"], same = advisor_bytes(work / "advisor" / "placement.txt", groups)
        advisor_as = None if same is None else name_of(same, width)
        labels["advisor"] = f"{args.strategy} at {human(setup.mem)}"
    print(f"{who}: {len(names) - (0 if why else 1)} placements of "
          f"{'the top ' + str(k) + ' sites + the rest' if rest else 'all ' + str(k) + ' sites'}"
          f" ({human(foot)} in all), fast tier {first.name} "
          f"({setup.machine.name}); {args.repeats} run(s) each, interleaved", file=sys.stderr)

    done = compare.read_runs(work / "runs.csv")
    reserve = args.reserve_hugepages and compare.pending(variants, args.repeats, done)
    with compare.fast_tier_pool(first, whole, reserve, who):
        rows = compare.run_all(variants, args.repeats, setup.app, work, setup.fom_re, who,
                               done)
    if rows is None:
        return 1
    summary = summary_rows(rows, names, planned, labels, foot, args.higher_is_better)
    compare.write_csv(work / "summary.csv", list(summary[0]), summary)
    res = conclude(summary, setup.mem, foot, args.strategy, k, rest, advisor_as)
    write_atomic(work / "result.json", json.dumps(res, indent=1) + "\n")
    (work / "summary.png").write_bytes(plot(summary, res))
    base = float(summary[0]["median_fom"])
    by = {r["variant"]: r for r in summary}
    h = args.higher_is_better
    best = by[str(res["best"])]
    print(f"best placement: {best['variant']} ({best['groups']}): "
          f"{float(best['speedup']):.2f}x with {100 * float(best['fraction']):.1f} % of the "
          f"footprint in the fast tier ({spread(best, base, h)})")
    r90 = by[str(res["variant_for_90"])]
    print(f"90 % of the best ({0.9 * float(best['speedup']):.2f}x) needs "
          f"{100 * float(res['fraction_for_90']):.1f} % of the footprint in the fast tier: "
          f"{r90['variant']} ({r90['groups']}) {float(r90['speedup']):.2f}x")
    cb = by[str(res["best_within_capacity"])]
    print(f"best within {human(setup.mem)} ({100 * float(res['capacity_fraction']):.0f} %): "
          f"{cb['variant']} ({cb['groups']}) {float(cb['speedup']):.2f}x ({spread(cb, base, h)})")
    if "advisor" in by:
        a = by["advisor"]
        same = (f"the same sites as {advisor_as}" if advisor_as
                else "sites that split the rest group")
        twice = (" (the same placement measured twice: the ratio is run-to-run spread)"
                 if advisor_as == cb["variant"] else "")
        print(f"advisor ({args.strategy}, {human(setup.mem)}): {same}, "
              f"{float(a['speedup']):.2f}x ({spread(a, base, h)}); advisor / exhaustive best "
              f"at the same capacity: {float(res['advisor_ratio']):.2f}{twice}")
    print(f"{who}: runs in {work / 'runs.csv'}, table in {work / 'summary.csv'}, plot in "
          f"{work / 'summary.png'}", file=sys.stderr)
    return 0
