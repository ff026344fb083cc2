"""`hmtune report`: one page (DIR/report/report.md with PNG plots next to it) gathering
what the stage directory holds: the top sites of the trace, the advisor's capacity
curve and placement, the comparison of placements (`hmtune compare`: bars of the
speedup over all-slow with the min-max spread, and dFOM/MiB), and the exhaustive
exploration when there is one. Sections whose inputs are missing say which command
makes them."""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import sys
from pathlib import Path

from workflows import launch
from workflows.units import human

TOP = 10


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report",
        help="write a one-page Markdown report with plots from a stage directory",
        description=__doc__.splitlines()[0],
    )
    p.add_argument("dir", nargs="?", default=None, metavar="DIR",
                   help="stage directory (default: the newest hmtune-out/*/)")
    p.set_defaults(func=run)


def _newest_stage() -> Path | None:
    dirs = [d for d in Path("hmtune-out").glob("*/") if (d / "sites.csv").is_file()]
    return max(dirs, key=lambda d: d.stat().st_mtime) if dirs else None


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def _short(chain: str, n: int = 2) -> str:
    frames = [f.strip() for f in chain.split(" > ") if f.strip()]
    return " > ".join(Path(f).name for f in frames[:n]) + (" > ..." if len(frames) > n else "")


def sites_section(d: Path) -> list[str]:
    from advisor.inputs import InputError, load_sites

    try:
        s = load_sites(d / "sites.csv")
    except InputError as e:
        return ["## Top sites", "", f"sites.csv cannot be read: {e}", ""]
    t = s.table.sort_values("weight", ascending=False).head(TOP)
    out = ["## Top sites (by sampled weight)", "",
           f"{len(s.table)} placeable sites; total sampled weight {s.total_weight:g}.", "",
           "| site | call site | max request | peak live | share of weight |",
           "|---:|---|---:|---:|---:|"]
    for _, r in t.iterrows():
        share = r["weight"] / s.total_weight if s.total_weight else 0.0
        label = str(r["callstack"]).split(" > ")[0] or _short(str(r["callstack_raw"]))
        out.append(f"| {int(r['site_id'])} | `{label}` | {human(int(r['max_size']))} | "
                   f"{human(int(r['peak_live_bytes']))} | {100 * share:.1f} % |")
    return out + [""]


def advisor_section(d: Path) -> list[str]:
    out = ["## Capacity and placement", ""]
    curve, placement = d / "capacity_curve.csv", d / "placement.txt"
    if not curve.is_file() or not placement.is_file():
        return out + ["Not advised yet: run `hmtune advise` (`make advise MEM=...`).", ""]
    rows = _csv(curve)
    cap90 = next((int(r["capacity_bytes"]) for r in rows
                  if float(r["share_of_capturable"]) >= 0.9), None)
    if cap90 is not None:
        out.append(f"90 % of the capturable weight needs {human(cap90)} of fast memory per "
                   "process.")
    if (d / "capacity_curve.png").is_file():
        out += ["", "![capacity curve](../capacity_curve.png)"]
    tiers, sites = [], []
    for line in placement.read_text().splitlines():
        f = line.split("#")[0].split()
        if f[:1] == ["tier"] and len(f) == 4:
            tiers.append(f"`{f[1]}` ({f[2]}, {f[3] if f[3] == 'unlimited' else human(int(f[3]))})")
        elif f[:1] == ["site"] and len(f) >= 3:
            sites.append((f[1], line.split("#", 1)[1].strip() if "#" in line else _short(
                line.split(None, 2)[2])))
    out += ["", f"placement.txt: tiers {', '.join(tiers)}; {len(sites)} site(s) placed:", ""]
    out += [f"- `{tier}`: {label}" for tier, label in sites]
    return out + [""]


def compare_png(summary: list[dict[str, str]], higher: bool) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r["variant"] for r in summary]
    med = [float(r["speedup"]) for r in summary]
    base = float(summary[0]["median_fom"]) if summary else 1.0
    # the spread of each variant's FOM, as speedups (a time: min FOM = best speedup)
    if higher:
        lo = [float(r["min_fom"]) / base for r in summary]
        hi = [float(r["max_fom"]) / base for r in summary]
    else:
        lo = [base / float(r["max_fom"]) for r in summary]
        hi = [base / float(r["min_fom"]) for r in summary]
    # (summary.csv rounds the speedup: clamp the rounding away)
    err = [[max(0.0, m - a) for m, a in zip(med, lo, strict=True)],
           [max(0.0, b - m) for m, b in zip(med, hi, strict=True)]]
    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    ax.bar(names, med, yerr=err, capsize=4,
           color=["tab:gray" if n == "all-slow" else "tab:blue" for n in names])
    ax.axhline(1.0, color="black", lw=0.8)
    ax.set_ylabel("speedup over all-slow (median; bars: min-max)")
    ax.tick_params(axis="x", rotation=20)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def compare_section(d: Path, out_dir: Path) -> list[str]:
    out = ["## Placements compared", ""]
    summary_csv = d / "compare" / "summary.csv"
    if not summary_csv.is_file():
        return out + ["Not compared yet: run `hmtune compare` (`make compare APP=...`).", ""]
    summary = _csv(summary_csv)
    cfg = d / "compare" / "config.json"
    higher = cfg.is_file() and bool(json.loads(cfg.read_text()).get("higher_is_better"))
    (out_dir / "compare.png").write_bytes(compare_png(summary, higher))
    out += ["![speedups](compare.png)", "",
            "| variant | runs | median FOM | min-max | speedup | fast tier | dFOM/MiB |",
            "|---|---:|---:|---:|---:|---:|---:|"]
    for r in summary:
        out.append(f"| {r['variant']} | {r['runs']} | {r['median_fom']} | "
                   f"{r['min_fom']}-{r['max_fom']} | {float(r['speedup']):.2f}x | "
                   f"{r['fast_mib']} MiB | {r['dfom_per_mib']} |")
    return out + ["", "dFOM/MiB = (median FOM - all-slow's) / MiB in the fast tier.", ""]


def explore_section(d: Path) -> list[str]:
    head = ["## Exhaustive exploration", ""]
    if not (d / "explore" / "summary.png").is_file():
        return head + ["Not explored (`make explore K=7`).", ""]
    out = head + ["![explore](../explore/summary.png)", ""]
    try:
        res = json.loads((d / "explore" / "result.json").read_text())
        out += [f"{res['placements']} placements measured. Best: `{res['best']}` "
                f"({res['best_groups']}) {res['best_speedup']:.2f}x with "
                f"{100 * res['best_fraction']:.1f} % of the footprint in the fast tier; "
                f"90 % of that from {100 * res['fraction_for_90']:.1f} %."]
        if "advisor_ratio" in res:
            out += ["", f"The advisor ({res['strategy']}) at {100 * res['capacity_fraction']:.0f} "
                        f"% of the footprint: {res['advisor_speedup']:.2f}x, "
                        f"{res['advisor_ratio']:.2f} of the best placement that fits the same "
                        f"capacity (`{res['best_within_capacity']}`, "
                        f"{res['best_within_capacity_speedup']:.2f}x); its sites are those of "
                        f"`{res.get('advisor_placement') or 'no explored placement'}`."]
        out.append("")
    except (OSError, ValueError, KeyError) as e:
        out += [f"(explore/result.json unreadable: {e})", ""]
    try:
        with (d / "explore" / "summary.csv").open(newline="") as f:
            rows = sorted(csv.DictReader(f), key=lambda r: -float(r["speedup"]))
    except (OSError, ValueError, KeyError):
        return out
    out += ["The ten fastest placements (dFOM/MiB against nothing in the fast tier):", "",
            "| placement | sites in the fast tier | fraction | runs | median FOM | min-max | "
            "speedup | dFOM/MiB |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows[:10]:
        out.append(f"| {r['variant']} | {r['groups']} | {100 * float(r['fraction']):.1f} % | "
                   f"{r['runs']} | {r['median_fom']} | {r['min_fom']}-{r['max_fom']} | "
                   f"{float(r['speedup']):.2f}x | {r.get('dfom_per_mib', '')} |")
    return out + [""]


def run(args: argparse.Namespace) -> int:
    d = Path(args.dir) if args.dir else _newest_stage()
    if d is None or not (d / "sites.csv").is_file():
        return launch.fail("report", f"{d or 'hmtune-out/*/'}: no sites.csv (run hmtune trace "
                                     "and hmtune analyze first)")
    out_dir = d / "report"
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        return launch.fail("report", f"cannot write to {out_dir}: {e.strerror}")
    lines = [f"# hmtune report: {d.resolve().name}", "",
             f"Stage directory `{d.resolve()}`.", ""]
    lines += sites_section(d) + advisor_section(d) + compare_section(d, out_dir)
    lines += explore_section(d)
    dst = out_dir / "report.md"
    tmp = dst.with_name(dst.name + ".tmp")
    tmp.write_text("\n".join(lines))
    os.replace(tmp, dst)
    print(f"hmtune report: {dst}", file=sys.stderr)
    return 0
