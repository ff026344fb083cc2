"""Everything `hmtune advise` writes, built in memory first and then written atomically.

`render` turns the solved problem into the files' contents: placement.txt, report.txt,
capacity_curve.csv/.png and, with `--format flexmalloc`, FlexMalloc's definitions and
locations. `write_all` writes them (temporary name + rename), placement.txt last.

placement.txt's `depth` is the number of frames of the longest placed call stack (of
any placeable site when none is placed). Its `size-window MIN MAX` bounds the requests
of the placed sites, so an interposer may skip the call-stack lookup outside it: MAX is
the largest `max_size` (largest single request) of a placed site, MIN the smallest
request of a placed site in allocs.csv — or 0 without allocs.csv, since sites.csv holds
no smallest request. `peak_live_bytes` is not a request size and is not used for it.
Placed static variables are `static` lines (`static-split` for parts of one); they take
no part in `depth` and `size-window`, which are about allocation calls. FlexMalloc's
files cannot name a static variable: they are left out of them, with a note.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd

from hmtune.advisor import split
from hmtune.advisor.flexmalloc import FlexMallocError, flexmalloc_files
from hmtune.advisor.inputs import Sites
from hmtune.advisor.model import Placement, Problem
from hmtune.advisor.program_line import traced_program
from hmtune.advisor.report import (
    Curve,
    curve_csv,
    curve_png,
    reach,
    report_text,
    terminal_summary,
    tier_use,
)
from hmtune.core.errors import Failure
from hmtune.core.placement import (
    PlacementFile,
    SiteLine,
    StaticLine,
    TierLine,
    format_placement,
    frames,
    static_line,
)
from hmtune.core.units import human
from hmtune.core.version import version
from hmtune.machine.tiers import Machine


@dataclass
class Files:
    placement: Path
    contents: dict[Path, str | bytes]          # everything but placement.txt
    placement_text: str
    summary_lines: str = ""
    notes: list[str] = field(default_factory=list)
    curve: Curve | None = None                  # what capacity_curve.csv/.png show


def _pow2_floor(n: int) -> int:
    return 1 << (max(int(n), 1).bit_length() - 1)


def _pow2_ceil_below(n: int) -> int:
    """The largest request below the power of two above n: 1990 -> 2047."""
    return (1 << max(int(n), 1).bit_length()) - 1


def size_window(placed: pd.DataFrame, allocs: pd.DataFrame | None) -> tuple[int, int]:
    """placement.txt's size-window for the placed sites' rows of sites.csv: (0, 0) for
    none; else the smallest request of a placed site in allocs.csv (0 without it) and the
    largest `max_size`. A site with blocks of small-call sampling (allocs.csv `scale` > 1,
    sites.csv `sampled_blocks` > 0) had about 1 in N of its requests seen, so its smallest
    and largest requests are likely beyond those seen: its bounds are widened to the powers
    of two around them (a smallest seen of 230 bytes gives 128, a largest of 1990 gives
    2047)."""
    if not len(placed):
        return 0, 0
    hi = int(placed["max_size"].max())
    rows = (allocs[allocs["site_id"].isin(set(placed["site_id"].tolist()))]
            if allocs is not None else None)
    if rows is None or not len(rows):
        if "sampled_blocks" in placed.columns:
            est = placed[placed["sampled_blocks"] > 0]
            if len(est):
                hi = max(hi, _pow2_ceil_below(int(est["max_size"].max())))
        return 0, hi
    lo = int(rows["size"].min())
    if "scale" in rows.columns:
        sampled = rows[rows["scale"] > 1]
        if len(sampled):
            lo = min(lo, _pow2_floor(int(sampled["size"].min())))
            hi = max(hi, _pow2_ceil_below(int(sampled["size"].max())))
    return lo, hi


def _placement_file(sites: Sites, problem: Problem, placement: Placement,
                    allocs: pd.DataFrame | None, command: str) -> PlacementFile:
    table = sites.table
    last = len(problem.tiers) - 1
    static = (table["kind"] == "static").to_numpy()
    placed_all = np.flatnonzero(placement.tier_of != last)
    placed = placed_all[~static[placed_all]]            # allocation sites (or pieces)
    heap_tier = np.where(static, last, placement.tier_of)
    site_lines = []
    for s in split.placed_sites(table, heap_tier, last):
        label = f"{s.label(table)} (site {s.parent_id})"
        if s.ranges:
            label += f" {human(s.placed_bytes)} of {human(s.object_bytes)}"
        site_lines.append(SiteLine(problem.tiers[s.tier].name,
                                   str(table["callstack_raw"].iloc[s.row]), label, s.ranges))
    static_lines: list[StaticLine] = []
    static_tier = np.where(static, placement.tier_of, last)
    for s in split.placed_sites(table, static_tier, last):
        label = f"{s.label(table)} (site {s.parent_id})"
        if s.ranges:                        # parts of it: a static-split line
            label += f" {human(s.placed_bytes)} of {human(s.object_bytes)}"
        line = static_line(problem.tiers[s.tier].name, str(table["callstack_raw"].iloc[s.row]),
                           label)
        if line is not None:                # load_sites placed only well-formed ones
            static_lines.append(replace(line, ranges=s.ranges))
    depth_of = [len(frames(c)) for c, s in zip(table["callstack_raw"], static, strict=True)
                if not s]
    heap_index = np.cumsum(~static) - 1                 # row -> index into depth_of
    depth = max([depth_of[heap_index[i]] for i in placed] or depth_of or [1])
    parents = table.iloc[placed]
    if "parent_id" in parents.columns:  # pieces: their sites' own rows and blocks
        parents = parents.assign(site_id=parents["parent_id"])
    lo, hi = size_window(parents, allocs)
    stamp = time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime())
    window_note = ("smallest and largest request of any placed site" if allocs is not None
                   else "largest request of any placed site; no allocs.csv for the smallest")
    return PlacementFile(
        tiers=[TierLine(t.name, t.backend, t.capacity) for t in problem.tiers],
        depth=depth, size_window=(lo, hi), sites=site_lines,
        generated_by=f"{command} (hmtune {version()}, {stamp})",
        comments={"depth": "frames in the longest placed call stack",
                  "size-window": window_note},
        program=traced_program(sites.path, str(sites.meta.get("trace", ""))),
        statics=static_lines)


def _curve(problem: Problem, strategies: ModuleType, whole: Problem | None = None) -> Curve:
    """The strategies' curve (columns capacity_bytes and weight: the sampled weight the
    best placement at that capacity captures, of the split problem or of `whole`, the
    same sites uncut) as shares of the capturable weight, the most the curve captures,
    which is what capacity_for_share measures against."""
    total = problem.total_weight
    if problem.n == 0:
        return Curve(pd.DataFrame({"capacity": [0], "share": [0.0]}), 0, 0.0)
    raw = strategies.capacity_curve(problem, whole=whole)
    weight = raw["weight"].to_numpy(dtype=float)
    most = float(weight.max()) if len(weight) else 0.0
    table = pd.DataFrame({"capacity": raw["capacity_bytes"].astype(np.int64),
                          "share": weight / most if most > 0 else 0.0})
    cap90 = int(strategies.capacity_for_share(raw, 0.9))
    return Curve(table.reset_index(drop=True), cap90, most / total if total > 0 else 0.0)


def render(fmt: str, sites: Sites, machine: Machine, problem: Problem,
           placement: Placement, allocs: pd.DataFrame | None, notes: list[str],
           command: str, out: Path, strategies: ModuleType,
           forecast: list[str] | None = None, whole: Problem | None = None) -> Files:
    """The files of one advice in memory: placement.txt (generated by `command`), its
report and curve next to `out`, and with fmt "flexmalloc" FlexMalloc's two files."""
    pf = _placement_file(sites, problem, placement, allocs, command)
    if allocs is None and len(pf.sites):
        notes = [*notes, "no allocs.csv: size-window starts at 0 (every request is looked up)"]
    outdir = out.parent
    contents: dict[Path, str | bytes] = {}
    if fmt == "flexmalloc":
        fallback_bytes = int(problem.sizes.sum() + sites.unplaceable["peak_live_bytes"].sum())
        try:
            fm = flexmalloc_files(pf.tiers, pf.sites, fallback_bytes)
        except FlexMallocError as e:
            raise Failure(str(e), 2) from None
        contents[outdir / "flexmalloc-definitions.txt"] = fm.definitions
        contents[outdir / "flexmalloc-locations.txt"] = fm.locations
        notes = [*notes, *fm.notes]
        if pf.statics:
            notes.append(f"{len(pf.statics)} static variable(s) placed in placement.txt are "
                         "not in FlexMalloc's files: FlexMalloc places allocations only")
    uses = tier_use(sites, problem, placement)
    curve = _curve(problem, strategies, whole)
    header = [("hmtune", version()),
              ("input", f"{sites.path} (trace {sites.meta.get('trace', '?')}, sampler "
                        f"{sites.meta.get('sampler', '?')}, labels "
                        f"{sites.meta.get('label_form', '?')})"),
              ("machine", f"{machine.name} ({machine.source})"),
              ("command", command)]
    text = report_text(sites, problem, placement, uses, curve, header, notes, forecast or [])
    contents[outdir / "report.txt"] = text
    contents[outdir / "capacity_curve.csv"] = curve_csv(curve)
    fast = problem.tiers[0].capacity if len(problem.tiers) > 1 else None
    contents[outdir / "capacity_curve.png"] = curve_png(curve, fast)
    files = Files(out, contents, format_placement(pf), notes=[*placement.notes, *notes],
                  curve=curve)
    names = [out.name, *(p.name for p in contents)]
    files.summary_lines = terminal_summary(uses, placement, curve, names, forecast or [],
                                           reach(sites, problem))
    return files


def placed_lines(text: str) -> int:
    """The objects a placement.txt text places: its site, split and static lines."""
    return sum(1 for line in text.splitlines() if line.split(" ", 1)[0] in PLACING_KEYWORDS)


PLACING_KEYWORDS = ("site", "split", "static")


def _keep_previous(files: Files) -> None:
    """A placement that places nothing does not silently replace one that placed
    something: the old one moves to placement.txt.prev, and a note says so."""
    try:
        old = files.placement.read_text(errors="replace")
    except OSError:
        return
    before = placed_lines(old)
    if before and not placed_lines(files.placement_text):
        prev = files.placement.with_name(files.placement.name + ".prev")
        files.placement.replace(prev)
        files.notes.append(f"this placement places nothing; the previous {files.placement.name}"
                           f", which placed {before} object(s), is now {prev}")


def write_all(files: Files) -> list[Path]:
    from hmtune.core.files import write_atomic

    written = []
    try:
        for path, data in files.contents.items():
            write_atomic(path, data)
            written.append(path)
        _keep_previous(files)
        write_atomic(files.placement, files.placement_text)
    except OSError as e:
        raise Failure(f"cannot write {e.filename or files.placement}: "
                      f"{e.strerror or e}", 1) from None
    return [*written, files.placement]


def summary(files: Files) -> str:
    return files.summary_lines + f"\nhmtune advise: in {files.placement.parent}/"
