"""The per-site table of `sites.csv` (DESIGN.md §4) from the scanner's outputs.

Per process (task) first: the scanner's `sites.tsv` (analyze.scan_io) has, per
(task, site), the lifetime facts it computed while streaming the trace and the sampled
accesses. Then across processes, unless one row per (site, rank) is asked for:
counts, bytes requested and weights are summed; `max_size`, `peak_live_bytes`
and `live_ns` are the maximum over processes (tier capacity is per process, and a
per-process time summed over ranks would exceed the run); `first_alloc_ns` is the
earliest and `last_free_ns` the latest.

Rows: every site that allocated at least one block (per process: a site's samples in
a process where it allocated nothing are not counted). Samples that fall outside every
allocation site (site 0: stack, untraced memory, no address; static variables, which
have ids of their own but no allocations) get no row, but their weight stays in the
denominator of `share` (scan.json's total_weight).

share = weight / total weight of the trace (0 when the trace has none).
density = weight per MiB of peak_live_bytes (0 when the peak is 0).
Rows are sorted by weight (descending), then site_id (then rank).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from analyze.labels import SiteLabels
from analyze.scan_io import Row, Scan
from analyze.shortlabels import short_labels
from analyze.sites_io import LABEL_COLUMN, SITES_WRITTEN

MIB = 1 << 20
SUMMED = ["n_allocs", "total_bytes", "samples", "loads", "stores", "misses", "weight",
          "sampled_blocks"]
MAXED = ["max_size", "peak_live_bytes", "last_free_ns", "live_ns"]
MINNED = ["first_alloc_ns"]


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


def per_task_table(scan: Scan) -> list[Row]:
    """One row per (task, site) that allocated: lifetimes plus sampled accesses."""
    return [dict(r) for r in scan.sites if r["n_allocs"] > 0]


def _across_tasks(rows: list[Row]) -> list[Row]:
    out: dict[int, Row] = {}
    for r in rows:
        acc = out.get(r["site_id"])
        if acc is None:
            out[r["site_id"]] = {k: v for k, v in r.items() if k != "task"}
            continue
        for k in SUMMED:
            acc[k] += r[k]
        for k in MAXED:
            acc[k] = max(acc[k], r[k])
        for k in MINNED:
            acc[k] = min(acc[k], r[k])
    return [out[k] for k in sorted(out)]


def site_table(scan: Scan, labels: SiteLabels, per_rank: bool = False) -> SiteTable:
    """The sites.csv rows: SITES_WRITTEN (the short labels of analyze.shortlabels, told
    apart among this table's sites, last), plus `rank` after `site_id` when per_rank."""
    rows = per_task_table(scan)
    if per_rank:
        for r in rows:
            r["rank"] = rank_of_task(r.pop("task"))
    else:
        rows = _across_tasks(rows)
    total = scan.total_weight
    short = short_labels({int(r["site_id"]): labels.chain(int(r["site_id"])) for r in rows})
    for r in rows:
        r[LABEL_COLUMN] = short[int(r["site_id"])]
        r["callstack"] = labels.symbolized(int(r["site_id"]))
        r["callstack_raw"] = labels.raw(int(r["site_id"]))
        r["share"] = r["weight"] / total if total > 0 else 0.0
        peak = float(r["peak_live_bytes"])
        r["density"] = r["weight"] / (peak / MIB) if peak > 0 else 0.0
    rows.sort(key=lambda r: (-r["weight"], r["site_id"], r.get("rank", 0)))
    columns = list(SITES_WRITTEN)
    if per_rank:
        columns.insert(1, "rank")
    return SiteTable(columns, [{c: r[c] for c in columns} for r in rows])


def unplaced_weight(scan: Scan, sites: SiteTable) -> float:
    """Sampled weight that no row of `sites` holds (stack, statics, untraced memory)."""
    return max(0.0, scan.total_weight - float(sum(sites.column("weight"))))
