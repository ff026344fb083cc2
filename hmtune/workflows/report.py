"""`hmtune report`: one page (DIR/report/report.md with PNG plots next to it) gathering
what the stage directory holds: the top sites of the trace, the advisor's capacity
curve and placements (DIR/placement.txt and those hmtune compare and hmtune explore had
hmtune advise write), the comparison of placements (`hmtune compare`: bars of the
speedup over all-slow with its interval or min-max spread, and dFOM/MiB), and the
exhaustive exploration when there is one. Sites are named by their short labels
(hmtune.analyze.shortlabels), as in hmtune analyze's table and advise's report.txt. Sections
whose inputs are missing say which command makes them."""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import sys
from pathlib import Path

from hmtune.core import paths
from hmtune.core.errors import Failure
from hmtune.core.placement import PlacementFormatError, read_placement
from hmtune.core.sitesfile import SitesFormatError, read_rows
from hmtune.core.stage import CURVE, PLACEMENT, SITES, Stage
from hmtune.core.units import human, human_ranges

TOP = 10


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report",
        help="write a one-page Markdown report with plots from a stage directory",
        description="Write DIR/report/report.md, one page with PNG plots beside it: the "
                    "top sites of the trace, the advisor's capacity curve and placements, "
                    "the comparison of placements (hmtune compare) and the exhaustive "
                    "exploration (hmtune explore) when the stage has them; a section "
                    "whose inputs are missing says which command makes them.",
    )
    p.add_argument("dir", nargs="?", default=None, metavar="DIR",
                   help="stage directory (default: the newest hmtune-out/*/)")
    p.set_defaults(func=run)


def _number_or_dash(text: str) -> str:
    """A table cell's number as written, `-` for none (empty, nan: e.g. dFOM/MiB of a
    variant with nothing in the fast tier)."""
    return "-" if text.strip().lower() in ("", "nan", "inf", "-inf") else text


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def _cell(text: str) -> str:
    """text in a Markdown table cell (a `|` of a C++ operator would end the cell)."""
    return text.replace("|", "\\|")


def site_labels(d: Path) -> tuple[dict[int, str], dict[str, str]]:
    """Short labels of the stage's sites (hmtune.analyze.shortlabels: sites.csv's `label`,
    made from the chains for an older sites.csv), by site id and by callstack_raw."""
    from hmtune.advisor.inputs import InputError, load_sites

    try:
        s = load_sites(Stage(d).sites)
    except InputError:
        return {}, {}
    by_id: dict[int, str] = {}
    by_chain: dict[str, str] = {}
    for t in (s.table, s.unplaceable):
        for sid, raw, label in zip(t["site_id"], t["callstack_raw"], t["label"], strict=True):
            by_id[int(sid)] = str(label)
            if raw:
                by_chain.setdefault(str(raw), f"{label} (site {int(sid)})")
    for merged, kept in s.merged.items():
        by_id.setdefault(merged, by_id.get(kept, ""))
    return by_id, by_chain


def sites_section(d: Path) -> list[str]:
    from hmtune.advisor.inputs import InputError, load_sites

    try:
        s = load_sites(Stage(d).sites)
    except InputError as e:
        return ["## Top sites", "", f"sites.csv cannot be read: {e}", ""]
    t = s.table.sort_values("weight", ascending=False, kind="stable").head(TOP)
    total = s.total_weight
    static = s.table["kind"] == "static"

    def pct(w: float) -> str:
        return f"{100 * w / total:.1f} %" if total else "n/a"

    out = ["## Top sites (by sampled weight)", "",
           f"{len(s.table)} placeable sites ({int(static.sum())} of them static variables); "
           f"total sampled weight {total:g}.", "",
           f"What a placement can act on: {pct(float(s.table['weight'].sum()))} of the "
           f"sampled weight ({pct(float(s.table['weight'][~static].sum()))} in allocation "
           f"sites, {pct(float(s.table['weight'][static].sum()))} in static variables; "
           f"unplaceable sites {pct(float(s.unplaceable['weight'].sum()))}).", ""]
    if s.split is not None:
        out += [f"The sampled weight by address: {s.split.describe()}.", ""]
    out += ["| site | call site | kind | max request | peak live | share of weight |",
            "|---:|---|---|---:|---:|---:|"]
    for _, r in t.iterrows():
        share = r["weight"] / total if total else 0.0
        out.append(f"| {int(r['site_id'])} | `{_cell(str(r['label']))}` | {r['kind']} | "
                   f"{human(int(r['max_size']))} | {human(int(r['peak_live_bytes']))} | "
                   f"{100 * share:.1f} % |")
    return out + [""]


def advised_placements(d: Path) -> list[Path]:
    """The placements hmtune advise wrote for this stage: DIR/placement.txt, then those
    hmtune compare (DIR/compare/STRATEGY/) and hmtune explore (DIR/explore/advisor/)
    had it write; a placement of another origin (baselines, explored masks, the
    all-fast bound) is not advised."""
    found = [Stage(d).placement, *sorted(Stage(d).compare.glob("*/placement.txt")),
             Stage(d).explore / "advisor" / PLACEMENT]
    out = []
    for p in found:
        try:
            with p.open(errors="replace") as f:
                head = [f.readline() for _ in range(3)]
        except OSError:
            continue
        if any(h.startswith("# generated by: hmtune advise") for h in head):
            out.append(p)
    return out


def _curve_lines(d: Path, placements: list[Path]) -> list[str]:
    """The capacity curve's 90 % figure and plot, from the first advised placement's
    directory that has one (every strategy's curve is the same: the best placement
    per capacity)."""
    for p in placements:
        curve = p.parent / CURVE
        if not curve.is_file():
            continue
        try:
            rows = _csv(curve)
            cap90 = next((int(r["capacity_bytes"]) for r in rows
                          if float(r["share_of_capturable"]) >= 0.9), None)
        except (OSError, KeyError, ValueError):
            continue
        out = []
        if cap90 is not None:
            out.append(f"90 % of the capturable weight needs {human(cap90)} of fast memory "
                       f"per process (`{curve.relative_to(d)}`).")
        png = curve.with_suffix(".png")
        if png.is_file():
            out += ["", f"![capacity curve](../{png.relative_to(d).as_posix()})"]
        return out + [""]
    return []


def _made_by(generated_by: str) -> str:
    """`hmtune advise --strategy ilp --mem 8M` from a placement's `generated by:` line
    (the options that decide the placement; the whole line when they are not there)."""
    words = generated_by.split()
    opts = {k: v for k, v in zip(words, words[1:], strict=False)
            if k in ("--strategy", "--mem", "--machine")}
    if "--strategy" not in opts:
        return f"Made by `{generated_by or 'hmtune advise'}`"
    if "--machine" in opts:
        opts["--machine"] = Path(opts["--machine"]).name
    return "Made by `hmtune advise " + " ".join(f"{k} {v}" for k, v in opts.items()) + "`"


def advisor_section(d: Path) -> list[str]:

    out = ["## Capacity and placement", ""]
    placements = advised_placements(d)
    if not placements:
        return out + ["Not advised yet: run `hmtune advise` (`make advise MEM=...`), or "
                      "`hmtune compare`, which advises for each strategy.", ""]
    out += _curve_lines(d, placements)
    _, by_chain = site_labels(d)
    shown: dict[frozenset[tuple[str, str]], str] = {}
    for p in placements:
        rel = p.relative_to(d).as_posix()
        try:
            pf = read_placement(p)
        except PlacementFormatError as e:
            out += [f"### `{rel}`", "", f"cannot be read: {e}", ""]
            continue
        tiers = [f"`{t.name}` ({t.backend}, "
                 f"{'unlimited' if t.capacity is None else human(t.capacity)})"
                 for t in pf.tiers]
        statics = f" and {len(pf.statics)} static variable(s)" if pf.statics else ""
        out += [f"### `{rel}`", "", f"{_made_by(pf.generated_by)}; tiers "
                f"{', '.join(tiers)}; {len(pf.sites)} site(s){statics} placed"]
        placed = [(x.tier, x.chain, x.comment) for x in pf.sites] + \
            [(x.tier, x.raw, x.comment) for x in pf.statics]
        ranges = {x.chain: x.ranges for x in pf.sites if x.ranges} | \
            {x.raw: x.ranges for x in pf.statics if x.ranges}
        key = frozenset((t, c, ranges.get(c, ())) for t, c, _ in placed)
        if key in shown:
            out[-1] += f": the same as `{shown[key]}`."
            out.append("")
            continue
        shown[key] = rel
        out[-1] += ":" if placed else "."
        out.append("")
        out += [f"- `{t}`: {by_chain.get(c) or comment or c}"
                + (f" (ranges {human_ranges(ranges[c])})"
                   if c in ranges else "")
                for t, c, comment in placed]
        out.append("")
    return out


def _num(row: dict[str, str], key: str) -> float | None:
    try:
        return float(row[key])
    except (KeyError, TypeError, ValueError):
        return None


def compare_png(summary: list[dict[str, str]], higher: bool) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in summary if _num(r, "speedup") is not None]
    names = [r.get("variant", "?") for r in rows]
    med = [_num(r, "speedup") or 0.0 for r in rows]
    base = (_num(summary[0], "median_fom") if summary else None) or 1.0
    lo, hi = [], []
    for r, m in zip(rows, med, strict=True):
        a, b = _num(r, "speedup_lo"), _num(r, "speedup_hi")
        if a is None or b is None:      # the spread of the FOMs as speedups
            mn, mx = _num(r, "min_fom"), _num(r, "max_fom")
            if mn and mx:
                a, b = (mn / base, mx / base) if higher else (base / mx, base / mn)
            else:
                a = b = m
        lo.append(a)
        hi.append(b)
    # (summary.csv rounds the speedup: clamp the rounding away)
    err = [[max(0.0, m - a) for m, a in zip(med, lo, strict=True)],
           [max(0.0, b - m) for m, b in zip(med, hi, strict=True)]]
    interval = any(r.get("speedup_lo") for r in rows)
    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    ax.bar(names, med, yerr=err, capsize=4,
           color=["tab:gray" if n == "all-slow" else "tab:blue" for n in names])
    ax.axhline(1.0, color="black", lw=0.8)
    ax.set_ylabel("speedup over all-slow (bars: 95 % interval)" if interval else
                  "speedup over all-slow (median; bars: min-max)")
    ax.tick_params(axis="x", rotation=20)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def _speedup(r: dict[str, str]) -> str:
    """`1.81x`, with its interval `[1.70-1.93]` when summary.csv has one."""
    s = _num(r, "speedup")
    if s is None:
        return r.get("speedup", "") or "?"
    lo, hi = _num(r, "speedup_lo"), _num(r, "speedup_hi")
    return f"{s:.2f}x" + (f" [{lo:.2f}-{hi:.2f}]" if lo is not None and hi is not None else "")


def compare_section(d: Path, out_dir: Path) -> list[str]:
    out = ["## Placements compared", ""]
    summary_csv = Stage(d).compare / "summary.csv"
    if not summary_csv.is_file():
        return out + ["Not compared yet: run `hmtune compare` (`make compare APP=...`).", ""]
    try:
        summary = _csv(summary_csv)
    except (OSError, csv.Error) as e:
        return out + [f"compare/summary.csv cannot be read: {e}", ""]
    cfg = Stage(d).compare / "config.json"
    try:
        higher = cfg.is_file() and bool(json.loads(cfg.read_text()).get("higher_is_better"))
    except (OSError, ValueError, AttributeError):
        higher = False
    if any(_num(r, "speedup") is not None for r in summary):
        (out_dir / "compare.png").write_bytes(compare_png(summary, higher))
        out += ["![speedups](compare.png)", ""]
    predicted = _predicted(Stage(d).compare / "result.json")
    out += ["| variant | runs | median FOM | min-max | speedup | predicted | fast tier | "
            "dFOM/MiB |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in summary:
        g = r.get
        p = predicted.get(g("variant", ""))
        pred = f"{p[0]:.2f}x [{p[1]:.2f}-{p[2]:.2f}]" if p else ""
        out.append(f"| {g('variant', '?')} | {g('runs', '')} | {g('median_fom', '')} | "
                   f"{g('min_fom', '')}-{g('max_fom', '')} | {_speedup(r)} | {pred} | "
                   f"{g('fast_mib', '')} MiB | {_number_or_dash(g('dfom_per_mib', ''))} |")
    out += ["", "dFOM/MiB = (median FOM - all-slow's) / MiB in the fast tier."]
    if predicted:
        out += ["predicted: the advisor's model (hmtune/advisor/predict.py) calibrated on "
                "the speedups measured in this comparison, each placement's from all-fast's "
                "and the other placements' (DIR/calibration.json holds the fit on all)."]
    return out + [""] + _short(Stage(d).compare / "result.json")


def _short(result: Path) -> list[str]:
    """The variants whose fast tier left blocks out (result.json short_of_tier, as
    compare and explore print them), a paragraph; [] without."""
    from hmtune.workflows.tables import Short

    try:
        got = json.loads(result.read_text()).get("short_of_tier") or []
        lines = [Short(**x).line() for x in got]
    except (OSError, ValueError, AttributeError, TypeError):
        return []
    return ["Short of the fast tier (their speedups understate their placements):", "",
            *[f"- {x}." for x in lines], ""] if lines else []


def _predicted(result: Path) -> dict[str, list[float]]:
    """compare's predicted speedups per advisor variant (result.json), {} without."""
    try:
        got = json.loads(result.read_text()).get("predicted") or {}
    except (OSError, ValueError, AttributeError):
        return {}
    return {k: v for k, v in got.items() if isinstance(v, list) and len(v) == 3
            and all(isinstance(x, int | float) for x in v)}


def _group_legend(groups: list[str], by_id: dict[int, str]) -> list[str]:
    """The sites that explore's groups name (`site 8`), with their labels."""
    ids = sorted({int(m) for g in groups for m in re.findall(r"\bsite (\d+)", g)})
    named = [f"- site {i}: `{by_id[i]}`" for i in ids if by_id.get(i)]
    return ["Sites named above:", "", *named, ""] if named else []


def explore_section(d: Path) -> list[str]:
    head = ["## Exhaustive exploration", ""]
    if not (Stage(d).explore / "summary.png").is_file():
        return head + ["Not explored (`make explore K=7`).", ""]
    out = head + ["![explore](../explore/summary.png)", ""]
    try:
        res = json.loads((Stage(d).explore / "result.json").read_text())
        out += [f"{res['placements']} placements measured. Best: `{res['best']}` "
                f"({res['best_groups']}) {res['best_speedup']:.2f}x with "
                f"{100 * res['best_fraction']:.1f} % of the footprint in the fast tier; "
                f"90 % of that from {100 * res['fraction_for_90']:.1f} %."]
        if "advisor_ratio" in res:
            same = res.get("advisor_placement")
            which = (f"it places the same sites as the explored placement `{same}`" if same
                     else "it places a set of sites that no explored placement has (part "
                          "of a group, such as some of the rest)")
            out += ["", f"The advisor ({res['strategy']}) at {100 * res['capacity_fraction']:.0f} "
                        f"% of the footprint: {res['advisor_speedup']:.2f}x, "
                        f"{res['advisor_ratio']:.2f} of the best placement that fits the same "
                        f"capacity (`{res['best_within_capacity']}`, "
                        f"{res['best_within_capacity_speedup']:.2f}x); {which}."]
        out.append("")
    except (OSError, ValueError, KeyError, TypeError) as e:
        out += [f"(explore/result.json unreadable: {e})", ""]
    out += _short(Stage(d).explore / "result.json")
    try:
        with (Stage(d).explore / "summary.csv").open(newline="") as f:
            rows = sorted(csv.DictReader(f), key=lambda r: -(_num(r, "speedup") or 0.0))
    except (OSError, ValueError, csv.Error):
        return out
    out += ["The ten fastest placements (dFOM/MiB against nothing in the fast tier):", "",
            "| placement | sites in the fast tier | fraction | runs | median FOM | min-max | "
            "speedup | dFOM/MiB |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows[:10]:
        g = r.get
        frac = _num(r, "fraction")
        out.append(f"| {g('variant', '?')} | {g('groups', '')} | "
                   f"{'' if frac is None else f'{100 * frac:.1f} %'} | {g('runs', '')} | "
                   f"{g('median_fom', '')} | {g('min_fom', '')}-{g('max_fom', '')} | "
                   f"{_speedup(r)} | {g('dfom_per_mib', '')} |")
    out.append("")
    by_id, _ = site_labels(d)
    return out + _group_legend([r.get("groups", "") for r in rows[:10]], by_id)


def run(args: argparse.Namespace) -> int:
    d = Path(args.dir) if args.dir else paths.newest_stage(SITES)
    if d is None or not Stage(d).sites.is_file():
        raise Failure(f"{d or 'hmtune-out/*/'}: no sites.csv (run hmtune trace "
                      "and hmtune analyze first)", 2)
    try:                # its version checked before anything is written
        read_rows(Stage(d).sites, "sites")
    except SitesFormatError as e:
        raise Failure(str(e), 2) from None
    out_dir = d / "report"
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise Failure(f"cannot write to {out_dir}: {e.strerror}", 2) from None
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
