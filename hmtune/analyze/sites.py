"""The per-site table of `sites.csv` (DESIGN.md §4) from the scanner's outputs.

Per process (task) first: the scanner's `sites.tsv` (hmtune.analyze.scan_io) has, per
(task, site), the lifetime facts it computed while streaming the trace and the sampled
accesses. Then across processes, unless one row per (site, rank) is asked for:
counts, bytes requested and weights are summed; `max_size`, `peak_live_bytes`
and `live_ns` are the maximum over processes (tier capacity is per process, and a
per-process time summed over ranks would exceed the run); `first_alloc_ns` is the
earliest and `last_free_ns` the latest.

Rows: every site that allocated at least one block (per process: a site's samples in
a process where it allocated nothing are not counted), kind `heap`; and every static
variable that was sampled (an object id of its own that allocated nothing; its
labels say where it is, hmtune.analyze.labels), kind `static`: one object per process, so
`n_allocs` is 1 and `max_size`, `peak_live_bytes` and `total_bytes` are its size (0
when the trace does not know it), live from 0 to the end of the trace, in every form
of the table; the statics under a page (no tier can move them: tiers move whole
pages) are one row, site id 2, whatever their number (FOLDED_STATICS). Samples outside
every site and static (site 0: stack, untraced memory,
no address) get no row, but their weight stays in the denominator of `share`
(scan.json's total_weight).

share = weight / total weight of the trace (0 when the trace has none).
density = weight per MiB of peak_live_bytes (0 when the peak is 0).
faults = the sampled minor page faults in the site's blocks, each sample counted as
the faults of its sampling period (the estimator: with one sample per P faults of a
thread, a site's faults are P times its samples, give or take P per thread);
bytes_touched = faults x 4 KiB, the bytes those faults mapped when each maps one
base page; allocs_per_s = n_allocs per second of live_ns (0 when live_ns is 0),
computed on the row's own (summed or per-rank) counts.
Rows are sorted by weight (descending), then site_id (then rank).

`weight_split` gives the sampled weight by address class (heap objects, statics,
stack, unknown memory, no address) that analyze prints and writes into sites.csv's
version line.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from hmtune.analyze.labels import SiteLabels, StaticObject, looks_static
from hmtune.analyze.scan_io import Row, Scan
from hmtune.analyze.shortlabels import short_labels
from hmtune.analyze.sites_io import (
    ACCESS_KIND_COLUMNS,
    CLASS_VALUES,
    CLASSES,
    KIND_COLUMN,
    KIND_HEAP,
    KIND_STATIC,
    LABEL_COLUMN,
    SITES_WRITTEN,
    Split,
)
from hmtune.core.units import MIB

BASE_PAGE = 4096          # bytes one minor fault maps (x86-64's base page)
SUMMED = ["n_allocs", "total_bytes", "samples", "loads", "stores", "misses", "weight",
          "fault_samples", "faults", "sampled_blocks", *ACCESS_KIND_COLUMNS]
MAXED = ["max_size", "peak_live_bytes", "last_free_ns", "live_ns"]
MINNED = ["first_alloc_ns"]
PER_OBJECT = ["n_allocs", "total_bytes"]    # a static's: one object per process, not summed
# The row of the sampled statics under a page (the trace's id for statics it cannot
# name, 32000009's value 2): n_allocs counts them, peak_live_bytes and total_bytes are
# their sizes' sum, max_size the largest; no call stack, so no tier is offered it.
FOLDED_STATICS = 2


@dataclass
class SiteTable:
    """sites.csv's rows (dicts keyed by `columns`), in their order."""

    columns: list[str]
    rows: list[Row] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.rows)

    def column(self, name: str) -> list[Any]:
        return [r[name] for r in self.rows]


def rank_of_task(task: int) -> int:
    """Paraver tasks are 1-based and ordered by MPI rank: rank = task - 1.

    Without MPI the same number is the process's index in the trace.
    """
    return int(task) - 1


def static_objects(scan: Scan, labels: SiteLabels) -> dict[int, StaticObject]:
    """The statics of the trace: the objects its labels call static (hmtune), or, in a
    trace without hmtune's tables, sampled objects that allocated nothing and whose
    label is a symbol name (Extrae's form)."""
    allocated = {int(r["site_id"]) for r in scan.sites if r["n_allocs"] > 0}
    out = {sid: s for sid, s in labels.statics.items() if sid not in allocated}
    if not labels.statics:
        for r in scan.sites:
            sid = int(r["site_id"])
            if (sid > 2 and sid not in allocated and r["samples"] > 0 and sid not in out
                    and looks_static(labels.callstack.get(sid, ""))):
                out[sid] = StaticObject(labels.callstack[sid].strip())
    return out


def _static_row(r: Row, size: int, end_ns: int) -> Row:
    """A (task, static) row of sites.tsv as a site row: one object of its size, live
    for the whole run."""
    out = dict(r)
    out.update(n_allocs=1, max_size=size, peak_live_bytes=size, total_bytes=size,
               first_alloc_ns=0, last_free_ns=end_ns, live_ns=end_ns)
    out[KIND_COLUMN] = KIND_STATIC
    return out


def per_task_table(scan: Scan, statics: dict[int, StaticObject] | None = None) -> list[Row]:
    """One row per (task, site) that allocated, and per (task, static) sampled there:
    lifetimes plus sampled accesses; the statics under a page, which no tier can take
    (a tier moves whole pages), in one row per task (FOLDED_STATICS)."""
    statics = statics or {}
    end = int(scan.meta.get("end_time_ns", 0))
    rows: list[Row] = []
    folded: dict[int, Row] = {}
    for r in scan.sites:
        sid = int(r["site_id"])
        if r["n_allocs"] > 0:
            rows.append(dict(r) | {KIND_COLUMN: KIND_HEAP})
        elif sid in statics and r["samples"] > 0:
            size = statics[sid].size
            if 0 < size < BASE_PAGE:
                _fold(folded, r, size, end)
            else:
                rows.append(_static_row(r, size, end))
    return rows + [folded[t] for t in sorted(folded)]


def _fold(folded: dict[int, Row], r: Row, size: int, end_ns: int) -> None:
    """Add the static of row r (size bytes, under a page) to its task's folded row."""
    acc = folded.get(r["task"])
    if acc is None:
        acc = _static_row(r, size, end_ns)
        acc["site_id"] = FOLDED_STATICS
        folded[r["task"]] = acc
        return
    for k in SUMMED:
        if k not in PER_OBJECT:
            acc[k] += r[k]
    acc["n_allocs"] += 1
    acc["max_size"] = max(acc["max_size"], size)
    acc["peak_live_bytes"] += size
    acc["total_bytes"] += size


def _across_tasks(rows: list[Row]) -> list[Row]:
    out: dict[int, Row] = {}
    for r in rows:
        acc = out.get(r["site_id"])
        if acc is None:
            out[r["site_id"]] = {k: v for k, v in r.items() if k != "task"}
            continue
        static = r[KIND_COLUMN] == KIND_STATIC
        for k in SUMMED:
            acc[k] = max(acc[k], r[k]) if static and k in PER_OBJECT else acc[k] + r[k]
        for k in MAXED:
            acc[k] = max(acc[k], r[k])
        for k in MINNED:
            acc[k] = min(acc[k], r[k])
    return [out[k] for k in sorted(out)]


def _static_labels(statics: dict[int, StaticObject], labels: SiteLabels,
                   ids: list[int]) -> dict[int, str]:
    """Short labels of statics: `symbol [static, module]` (the trace's own label), with
    `@ module+0xOFF` where two read the same (file-local statics of one name)."""
    text = {sid: labels.symbolized(sid) for sid in ids}
    same = Counter(text.values())
    for sid in ids:
        st = statics[sid]
        if same[text[sid]] > 1:
            where = f"{st.module.rsplit('/', 1)[-1]}+0x{st.offset:x}" if st.offset >= 0 \
                else f"site {sid}"
            text[sid] += f" @ {where}"
    return text


def site_table(scan: Scan, labels: SiteLabels, per_rank: bool = False,
               nodes: dict[int, str] | None = None) -> SiteTable:
    """The sites.csv rows: SITES_WRITTEN (the short labels of hmtune.analyze.shortlabels, told
    apart among this table's sites, and the kind, last), plus `rank` and `node` (the
    rank's node, from nodes: task -> name; empty when unknown) after `site_id` when
    per_rank."""
    statics = static_objects(scan, labels)
    rows = per_task_table(scan, statics)
    if per_rank:
        for r in rows:
            task = r.pop("task")
            r["rank"] = rank_of_task(task)
            r["node"] = (nodes or {}).get(int(task), "")
    else:
        rows = _across_tasks(rows)
    total = scan.total_weight
    heap_ids = {int(r["site_id"]) for r in rows if r[KIND_COLUMN] == KIND_HEAP}
    short = short_labels({sid: labels.chain(sid) for sid in heap_ids})
    short.update(_static_labels(statics, labels, sorted({int(r["site_id"]) for r in rows}
                                                        - heap_ids - {FOLDED_STATICS})))
    short[FOLDED_STATICS] = "statics under a page [static]"
    for r in rows:
        sid = int(r["site_id"])
        r[LABEL_COLUMN] = short[sid]
        folded = sid == FOLDED_STATICS
        r["callstack"] = (f"{r['n_allocs']} static variable(s) under a page [static]"
                          if folded else labels.symbolized(sid))
        r["callstack_raw"] = "" if folded else labels.raw(sid)
        r["share"] = r["weight"] / total if total > 0 else 0.0
        peak = float(r["peak_live_bytes"])
        r["density"] = r["weight"] / (peak / MIB) if peak > 0 else 0.0
        r["bytes_touched"] = int(r["faults"]) * BASE_PAGE
        live = float(r["live_ns"])
        r["allocs_per_s"] = round(r["n_allocs"] * 1e9 / live, 3) if live > 0 else 0.0
    rows.sort(key=lambda r: (-r["weight"], r["site_id"], r.get("rank", 0)))
    columns = list(SITES_WRITTEN)
    if per_rank:
        columns[1:1] = ["rank", "node"]
    return SiteTable(columns, [{c: r[c] for c in columns} for r in rows])


def unplaced_weight(scan: Scan, sites: SiteTable) -> float:
    """Sampled weight that no row of `sites` holds (stack, untraced memory, no address,
    statics the trace cannot name)."""
    return max(0.0, scan.total_weight - float(sum(sites.column("weight"))))


def weight_split(scan: Scan, labels: SiteLabels) -> Split | None:
    """The trace's sampled accesses and weight by address class (CLASSES), adding up to
    the scan's totals: the trace's own classes (hmtune's event 41000023); for samples
    without one (Extrae), what the scanner derived (in an object, an address in none,
    no address), the statics' samples moved from objects to statics. None when the
    scanner did not count classes."""
    counts, weights = scan.meta.get("classes"), scan.meta.get("class_weight")
    if not isinstance(counts, dict) or not isinstance(weights, dict):
        return None
    samples = {c: int(counts.get(str(CLASS_VALUES[c]), 0)) for c in CLASSES}
    weight = {c: float(weights.get(str(CLASS_VALUES[c]), 0)) for c in CLASSES}
    if int(scan.meta.get("class_events", 0)) == 0:
        statics = static_objects(scan, labels)
        rows = [r for r in scan.sites if int(r["site_id"]) in statics]
        moved_n = min(samples["heap"], sum(int(r["samples"]) for r in rows))
        moved_w = min(weight["heap"], float(sum(r["weight"] for r in rows)))
        samples["heap"] -= moved_n
        samples["static"] += moved_n
        weight["heap"] -= moved_w
        weight["static"] += moved_w
    return Split(samples, weight)
