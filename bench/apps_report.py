"""The page `make bench-apps` writes (bench/bench_apps.py measures): per code, the
tracer's overhead, where the samples fell and the footprint; per capacity, each
variant's speedup over all-slow, its share of every-site-fast's gain and the
prediction, each with its 95 % interval, and whether the advisor meets issue 15's
targets; a summary line per code; and the plot of the speedups.

A result (bench_apps.load_result) is a dict: app (its name, fom, higher_is_better),
command (its argv), bare_s, analyze, trace (overhead and samples), and compares:
capacity fraction -> dir, rows (summary.csv), checked, bad (correctness)."""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import subprocess
import sys
from pathlib import Path

from benchlib import HMTUNE, ROOT

RESULTS = ROOT / "bench" / "results"

ADVISOR = ("ilp-lifetime", "ilp-lifetime-whole")    # split objects on, and whole objects
VARIANTS = ("all-fast", *ADVISOR, "first-come", "size-window")


def _f(x: str | None, fmt: str = "{:.2f}") -> str:
    return fmt.format(float(x)) if x not in (None, "") else "–"


def _speedup(row: dict[str, str]) -> str:
    if not row.get("speedup"):
        return "–"
    if not row.get("speedup_lo"):
        return f"{_f(row['speedup'])}x (no interval)"
    return f"{_f(row['speedup'])}x [{_f(row['speedup_lo'])}, {_f(row['speedup_hi'])}]"


def _share(row: dict[str, str]) -> str:
    if not row.get("share_of_gain"):
        return "–"
    lo, hi = row.get("share_lo"), row.get("share_hi")
    inner = f" [{_f(lo, '{:.0%}')}, {_f(hi, '{:.0%}')}]" if lo and hi else ""
    return f"{float(row['share_of_gain']):.0%}{inner}"


def _paired(x: dict) -> str:
    """result.json's paired comparison (split_over_whole): `1.06x [1.03, 1.08]`."""
    ci = f" [{x['lo']:.2f}, {x['hi']:.2f}]" if x.get("lo") is not None else ""
    return f"{x['speedup']:.2f}x{ci}"


# issue 15's targets: the advisor's share of every-site-fast's gain, where that gain is
# real (its interval excludes 1), per capacity; predictions within 5 points of measured
SHARE_TARGET = {0.25: 0.60, 0.5: 0.80}
PREDICTION_POINTS = 0.05


def target_verdict(frac: float, ilp: dict[str, str], top: dict[str, str],
                   pred: list[float] | None) -> str:
    """Whether the advisor's row meets issue 15's targets at this capacity, in words."""
    out = []
    if ilp.get("verdict") == "slower":
        out.append("MISSED: measurably slower than all-slow")
    lo = top.get("speedup_lo")
    if not lo or float(lo) <= 1.0:
        out.append("no real gain to share (every site fast is not measurably faster)")
    elif ilp.get("share_of_gain"):
        want = SHARE_TARGET.get(frac)
        got = float(ilp["share_of_gain"])
        if want is not None:
            out.append(f"share {got:.0%} {'meets' if got >= want else 'MISSES'} "
                       f"the {want:.0%} target")
    if pred and ilp.get("speedup"):
        off = pred[0] - float(ilp["speedup"])
        out.append(f"predicted {pred[0]:.2f}x, {abs(off) * 100:.0f} points "
                   f"{'within' if abs(off) <= PREDICTION_POINTS else 'OUTSIDE'} 5")
    return ", ".join(out) or "no verdict"


def _pct(x: float) -> str:
    return f"{x:.0%}"


def suffixed(stem: Path, suffix: str) -> Path:
    """stem with suffix added (a host name may hold dots: not Path.with_suffix)."""
    return stem.parent / (stem.name + suffix)


def free_stem(results: Path, day: str, rest: str) -> Path:
    """results/apps-DAY-REST, or with the first letter b, c, ... after DAY whose .md and
    .png do not exist yet: a second run on one day keeps the first one's files."""
    for mark in ["", *"bcdefghijklmnopqrstuvwxyz"]:
        stem = results / f"apps-{day}{mark}{rest}"
        if not suffixed(stem, ".md").exists() and not suffixed(stem, ".png").exists():
            return stem
    sys.exit(f"bench-apps: 26 results of {day} in {results} already: move some away")


def write_results(results: list[dict], args: argparse.Namespace) -> Path:
    """bench/results/apps-DATE-HOST.md and .png; one summary line per code on stdout.
    Returns their path without the suffix."""
    # bench_apps put the repository on sys.path
    from hmtune.workflows.tables import Short

    RESULTS.mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now(dt.UTC)
    host = platform.node() or "host"
    only = "-" + args.only.replace(",", "-") if args.only else ""
    stem = free_stem(RESULTS, f"{now:%Y-%m-%d}", f"-{host}{only}"
                     f"{'-quick' if args.quick else ''}")
    commit = args.commit or subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
        capture_output=True, text=True).stdout.strip() or "?"
    machine = subprocess.run([str(HMTUNE), "machine"], capture_output=True, text=True).stdout
    fast = next((ln for ln in machine.splitlines() if ln.startswith("fast tier")), "?")
    md = [f"# hmtune on real applications ({now:%Y-%m-%d %H:%M} UTC, {host})", "",
          f"`make bench-apps` at commit {commit}; {os.cpu_count()} CPUs, Linux "
          f"{platform.release()}; {fast}. Speedups are over all-slow (times: how many times "
          "faster), geometric means of interleaved paired rounds with 95 % bootstrap "
          "intervals (docs/formats.md §7); share of gain = (S-1)/(S_all-fast-1). "
          "Both capacities are measured in one comparison (one all-slow and one all-fast "
          f"per round). Budget per code: {args.budget}"
          f"{'; quick inputs (a smoke test)' if args.quick else ''}.",
          "", "| code | bare run | trace overhead [95 %] | samples: heap / static / stack / "
          "unknown / no address | sites | footprint per process: at once / sum of site peaks |",
          "|---" * 6 + "|"]
    for r in results:
        t, s = r["trace"], r["trace"]["samples"]
        total = sum(s.values()) or 1
        split = " / ".join(_pct(s.get(k, 0) / total) for k in
                           ("heap", "static", "stack", "unknown", "no_address"))
        ci = (f"[{t['overhead_lo']:.2f}, {t['overhead_hi']:.2f}]" if t["overhead_lo"]
              else "(no interval)")
        md.append(f"| {r['app'].name} | {r['bare_s']:.1f} s | {t['overhead']:.2f}x "
                  f"{ci} ({t['rounds']} rounds) | "
                  f"{split} ({total} samples) | {r['analyze']['sites']} | "
                  f"{r['analyze'].get('at_once', 0) / 2**20:.0f} MiB / "
                  f"{r['analyze']['footprint'] / 2**20:.0f} MiB |")
    lines: list[str] = []
    for r in results:
        app = r["app"]
        md += ["", f"## {app.name}", "", f"`{' '.join(r['command'])}` in "
               f"bench/work/{app.name}/; FOM {' × '.join(f'`{x}`' for x in app.foms)}"
               f"{' (geometric mean)' if len(app.foms) > 1 else ''} "
               f"({'higher' if app.higher_is_better else 'lower'} is better).", ""]
        md += ["| capacity | variant | speedup [95 %] | verdict | share of gain [95 %] | "
               "predicted [95 %] | fast MiB | wall s | minor faults | hugepages |",
               "|---" * 10 + "|"]
        summary = [app.name + ":"]
        for frac, c in r["compares"].items():
            cap = f"{frac:.0%} ({c['mem'] / 2**20:.0f} MiB)"
            rows = {row["variant"]: row for row in c["rows"]}
            res = c["result"]
            pred = res.get("predicted") or {}
            for v in VARIANTS:
                row = rows.get(v)
                if row is None:
                    continue
                p = pred.get(v)
                ptext = f"{p[0]:.2f}x [{p[1]:.2f}, {p[2]:.2f}]" if p else \
                    ("(calibrated here)" if v == "all-fast" and pred else "–")
                md.append(f"| {cap} | {v} | {_speedup(row)} | {row.get('verdict', '')} | "
                          f"{_share(row) if v != 'all-fast' else '(the bound)'} | {ptext} | "
                          f"{_f(row.get('fast_mib'), '{:.0f}')} | {_f(row.get('wall_s'))} | "
                          f"{_f(row.get('minflt'), '{:.0f}')} | "
                          f"{_f(row.get('hugepages'), '{:.0f}')} |")
            ok = "all equal to the bare run's" if not c["bad"] else \
                f"{len(c['bad'])} differ: {', '.join(c['bad'][:5])}"
            sows = [x for x in res.get("split_over_whole") or [] if x.get("mem") == c["mem"]]
            for x in sows:
                md.append(f"| {cap} | split over whole objects, per round | "
                          f"{_paired(x)} | {x['verdict']} | | | | | | |")
            md.append(f"| {cap} | | {res.get('rounds', '?')} rounds, ended by "
                      f"{res.get('stopped_by', '?')} | correctness: {c['checked']} runs, {ok} "
                      "| | | | | | |")
            top = rows.get("all-fast", {})
            summary.append(f"{frac:.0%}: all-fast {_speedup(top)};")
            for name in ADVISOR:
                adv = rows.get(name, {})
                if adv:
                    summary.append(f"{name} {_speedup(adv)} ({adv.get('verdict', '?')}; "
                                   f"share {_share(adv)}; "
                                   f"{target_verdict(frac, adv, top, pred.get(name))});")
            for x in sows:
                summary.append(f"split over whole {_paired(x)} ({x['verdict']});")
        short = list(dict.fromkeys(Short(**x).line() for c in r["compares"].values()
                                   for x in c["result"].get("short_of_tier") or []))
        md += ["", *[f"Fast tier short: {x}." for x in short]] if short else []
        summary += [f"fast tier short in {len(short)} variant(s);"] if short else []
        summary.append(f"trace overhead {r['trace']['overhead']:.2f}x; correctness "
                       f"{r['checked'] - len(r['bad'])}/{r['checked']} runs equal")
        lines.append(" ".join(summary))
    md += ["", "## Summary", "", *[f"- {ln}" for ln in lines], "",
           f"![speedups]({stem.name}.png)", ""]
    suffixed(stem, ".md").write_text("\n".join(md))
    plot(results, suffixed(stem, ".png"))
    for ln in lines:
        print(ln)
    return stem


def plot(results: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bars = [("all-fast", 0.5), ("ilp-lifetime", 0.5), ("ilp-lifetime-whole", 0.5),
            ("ilp-lifetime", 0.25), ("ilp-lifetime-whole", 0.25),
            ("first-come", 0.5), ("size-window", 0.5)]
    fig, ax = plt.subplots(figsize=(max(6.0, 2.2 * len(results)), 4))
    width = 0.8 / len(bars)
    ends: list[float] = [1.0]
    for j, (v, frac) in enumerate(bars):
        xs, ys, err = [], [], [[], []]
        for i, r in enumerate(results):
            row = {x["variant"]: x for x in r["compares"].get(frac, {}).get("rows", [])}.get(v)
            if not row or not row.get("speedup"):
                continue
            y = float(row["speedup"])
            lo = float(row["speedup_lo"] or y)
            hi = float(row["speedup_hi"] or y)
            xs.append(i + (j - len(bars) / 2 + 0.5) * width)
            ys.append(y)
            err[0].append(y - lo)
            err[1].append(hi - y)
            ends += [lo, hi]
        label = v if v == "all-fast" else f"{v} at {frac:.0%}"
        ax.bar(xs, ys, width, yerr=err, capsize=3, label=label)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_ylim(min(ends) - 0.03, max(ends) + 0.03)      # bars start below: differences show
    ax.set_xticks(range(len(results)), [r["app"].name for r in results])
    ax.set_ylabel("speedup over all-slow (95 % interval)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
