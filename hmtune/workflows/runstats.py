"""The statistics files of `hmtune run` (libhmalloc.so's HMTUNE_STATS, docs/formats.md
§6): the names the library gives them per rank (hmi_report_exit.c), which of them exist
and which a run wrote, whether a file is one (only those are ever removed or replaced),
and the one summary over all ranks' files that `hmtune run --mpirun` prints."""

from __future__ import annotations

import json
import re
import sys
from glob import escape as glob_escape
from glob import glob
from pathlib import Path

from hmtune.core.backends import uses_hugetlb
from hmtune.core.units import human

RANK = "%r"                          # HMTUNE_STATS: replaced by the rank (hmi_report_exit.c)
MPI_STATS = f"run-stats.{RANK}.json"
SINGLE_STATS = "run-stats.json"
LISTED_FILES = 8                     # per-rank statistics files named in the MPI summary


def _say(msg: str) -> None:
    print(f"hmtune run: {msg}", file=sys.stderr)


def stats_files(pattern: Path) -> dict[int | None, Path]:
    """The statistics files the library writes for HMTUNE_STATS=pattern: the file itself
    (rank None) and its per-rank names (hmi_report_exit.c: the first %r replaced by the rank,
    else .RANK appended)."""
    text = str(pattern)
    found: dict[int | None, Path] = {}
    if RANK in text:
        head, _, tail = text.partition(RANK)
        rx = re.compile(re.escape(head) + r"(\d+)" + re.escape(tail))
        candidates = glob(glob_escape(head) + "*" + glob_escape(tail))
    else:
        if pattern.is_file():
            found[None] = pattern
        rx = re.compile(re.escape(text) + r"\.(\d+)")
        candidates = glob(glob_escape(text) + ".*")
    for c in candidates:
        m = rx.fullmatch(c)
        if m and Path(c).is_file():
            found[int(m.group(1))] = Path(c)
    return found


RANK_VARS = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID")


def env_rank(environ: dict[str, str]) -> int | None:
    """The rank the library will see in this environment (common/hm_env.c: the first of
    RANK_VARS that is a decimal number), None outside MPI."""
    for var in RANK_VARS:
        value = environ.get(var, "")
        if value.isascii() and value.isdigit() and len(value) <= 9:
            return int(value)
    return None


def stats_path(pattern: Path, rank: int | None) -> Path:
    """The file the library writes for HMTUNE_STATS=pattern in a process of this rank
    (hmi_report_exit.c's stats_path)."""
    text = str(pattern)
    if rank is None:
        return pattern
    if RANK in text:
        head, _, tail = text.partition(RANK)
        return Path(f"{head}{rank}{tail}")
    return Path(f"{text}.{rank}")


STATS_MAX = 256 << 20                # larger: not a statistics file


def is_hmalloc_stats(path: Path) -> bool:
    """Whether path is a statistics file written by libhmalloc.so: a regular file (never
    opened otherwise: a FIFO would block) holding a JSON object with its version and
    keys (hmi_report_exit.c's write_json)."""
    try:
        if not path.is_file() or path.stat().st_size > STATS_MAX:
            return False
        with open(path, "rb") as f:
            if f.read(1) != b"{":
                return False
            f.seek(0)
            data = json.load(f)
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("version") == 1 \
        and isinstance(data.get("tiers"), list) and isinstance(data.get("sites"), list) \
        and "pid" in data and "placement" in data


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and a.samefile(b))
    except OSError:
        return False


def stats_files_rx(pattern: Path) -> re.Pattern[str]:
    """The names of every rank's statistics file for HMTUNE_STATS=pattern."""
    text = str(pattern)
    if RANK in text:
        head, _, tail = text.partition(RANK)
        return re.compile(re.escape(head) + r"\d+" + re.escape(tail))
    return re.compile(re.escape(text) + r"(\.\d+)?")


def stats_conflict(pattern: Path, planned: list[Path] | None,
                   inputs: dict[str, Path]) -> str | None:
    """Why the statistics cannot be written where asked (they would replace an input of
    the run, or a file hmtune did not write), or None."""
    targets = planned if planned is not None else list(stats_files(pattern).values())
    for f in targets:
        for what, inp in inputs.items():
            if _same_file(f, inp):
                return (f"--stats {pattern} would overwrite the {what} {inp}: give the "
                        "statistics another file name")
    if planned is None:                 # any rank: every name of the pattern
        rx = stats_files_rx(pattern)
        for what, inp in inputs.items():
            if rx.fullmatch(str(inp.absolute())) or rx.fullmatch(str(inp.resolve())):
                return (f"--stats {pattern} would overwrite the {what} {inp}: give the "
                        "statistics another file name")
        return None
    for f in planned:
        if f.exists() and not is_hmalloc_stats(f):
            return (f"{f} exists and is not a statistics file of hmtune: give --stats "
                    "another file name, or move that file away")
    return None


def _stamp(f: Path) -> tuple[int, int] | None:
    try:
        st = f.stat()
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns


def stamps(pattern: Path) -> dict[Path, tuple[int, int] | None]:
    """Each statistics file there is now for HMTUNE_STATS=pattern, with what tells a
    replaced one (inode, mtime): fresh_stats's `before`."""
    return {f: _stamp(f) for f in stats_files(pattern).values()}


def fresh_stats(pattern: Path, before: dict[Path, tuple[int, int] | None],
                planned: list[Path] | None) -> dict[int | None, Path]:
    """The statistics files this run wrote: of the planned ones (any rank when unknown),
    those that did not exist before the run or were replaced since (the library
    renames a new file over the old one)."""
    ok = None if planned is None else set(planned)
    return {r: f for r, f in stats_files(pattern).items()
            if (ok is None or f in ok) and (f not in before or _stamp(f) != before[f])}


def read_stats(files: dict[int | None, Path]) -> dict[int | None, dict]:
    out: dict[int | None, dict] = {}
    for rank, f in sorted(files.items(), key=lambda kv: -1 if kv[0] is None else kv[0]):
        try:
            data = json.loads(f.read_text())
        except (OSError, ValueError) as e:
            _say(f"cannot read {f}: {e}")
            continue
        if isinstance(data, dict) and data.get("version") == 1 and "tiers" in data:
            out[rank] = data
        else:
            _say(f"{f} is not an hmalloc statistics file (version 1); left out")
    return out


def _ranks(ranks: list[int | None]) -> str:
    return ", ".join("?" if r is None else str(r) for r in ranks)


def mpi_summary(stats: dict[int | None, dict], files: dict[int | None, Path],
                expected: int | None, pattern: Path) -> list[str]:
    """The per-tier summary over all ranks' statistics."""
    if not stats:
        return ["no rank wrote statistics (see the messages above: a placement the "
                "ranks could not use, or ranks that died)"]
    first = next(iter(stats.values()))
    lines = [f"{len(stats)} rank(s) wrote statistics; placement {first.get('placement', '?')}"]
    if expected is not None and len(stats) < expected:
        lines.append(f"only {len(stats)} of {expected} ranks wrote statistics (a rank that "
                     "was killed or crashed writes none)")
    for i, tier in enumerate(first["tiers"]):
        per = {r: s["tiers"][i] for r, s in stats.items() if i < len(s["tiers"])}
        name, backend = tier["name"], tier["backend"]
        if backend == "default":
            lines.append(f"tier {name} ({backend}): the default allocator")
            continue
        down = [r for r, t in per.items() if not t["available"]]
        up = {r: t for r, t in per.items() if t["available"]}
        if down:
            hosts = sorted({str(stats[r]["host"]) for r in down if stats[r].get("host")})
            on = f" on node(s) {', '.join(hosts)}" if hosts else ""
            lines.append(f"tier {name} ({backend}): unavailable in rank(s) {_ranks(down)}"
                         f"{on}, whose sites went to the default allocator")
        if not up:
            continue
        caps = {t["capacity"] for t in up.values()}
        cap = ("unlimited" if caps == {None} else
               "/".join(human(c) for c in sorted(c for c in caps if c is not None))
               + " per process")
        hw_rank, hw = max(up.items(), key=lambda kv: kv[1]["high_water_bytes"])
        full = [r for r, t in up.items() if t["not_fitting"]]
        where = (f" (rank(s) {_ranks(full)})" if len(full) <= LISTED_FILES
                 else f" (in {len(full)} ranks)") if full else ""
        lines.append(
            f"tier {name} ({backend}, {cap}): {sum(t['placed_blocks'] for t in up.values())} "
            f"blocks placed ({human(sum(t['placed_bytes'] for t in up.values()))}) in "
            f"{len(up)} rank(s), largest high-water {human(hw['high_water_bytes'])} "
            f"(rank {_ranks([hw_rank])}), {sum(t['not_fitting'] for t in up.values())} "
            f"not fitting{where}")
        lines += refusals(name, backend, up)
        lines += pool_short(name, backend, stats, up)
    nsites = len(first.get("sites", []))
    matched = {i for s in stats.values() for i, site in enumerate(s.get("sites", []))
               if site["matches"]}
    unmatched = sum(s.get("unmatched_in_window", 0) for s in stats.values())
    lines.append(f"sites: {len(matched)} of {nsites} matched in some rank; {unmatched} calls "
                 "in the size window matched none")
    listed = [str(files[r]) for r in stats][:LISTED_FILES]
    more = len(stats) - len(listed)
    lines.append("statistics per rank: " + ", ".join(listed)
                 + (f", and {more} more ({pattern})" if more else ""))
    return lines


# run-stats.json's not_fitting_reasons (hmi_report_exit.c): key -> what the summary says
REFUSALS = {"capacity": "over its capacity", "kernel": "the kernel could not map",
            "chunk_table": "the arena's chunk table full",
            "alignment": "an alignment not a power of two", "umf": "UMF had no memory",
            "split": "split objects with no range placed", "other": "too large for the page map"}


def refusal_counts(up: dict[int | None, dict]) -> dict[str, int]:
    """The ranks' not_fitting_reasons of one tier added up (a file written before the
    field counts nothing)."""
    reasons = [t.get("not_fitting_reasons") or {} for t in up.values()]
    return {k: sum(int(r.get(k, 0)) for r in reasons) for k in REFUSALS}


def refusals(name: str, backend: str, up: dict[int | None, dict]) -> list[str]:
    """Why the tier's requests did not fit, over the ranks: one line, or none when
    every request fit (or the files do not say)."""
    total = sum(t["not_fitting"] for t in up.values())
    said = [f"{n} {REFUSALS[k]}" for k, n in refusal_counts(up).items() if n]
    if not total or not said:
        return []
    return [f"tier {name} ({backend}): {total} not fitting: {', '.join(said)}"]


def pool_short(name: str, backend: str, stats: dict[int | None, dict],
               up: dict[int | None, dict]) -> list[str]:
    """Per node (the statistics' host), the mappings the kernel refused within the
    tier's capacity (`map_failed`): a hugepage pool, or the nodes' memory, ran out
    there. The pool is per node, so this names the node that needs more pages."""
    by_host: dict[str, list[int | None]] = {}
    for r, t in up.items():
        if t.get("map_failed"):
            by_host.setdefault(str(stats[r].get("host") or "an unnamed node"), []).append(r)
    why = ("its hugepage pool ran out: reserve more pages on that node (as root, echo N > "
           "/proc/sys/vm/nr_hugepages, e.g. in a job prolog)" if uses_hugetlb(backend)
           else "its memory ran out")
    return [f"tier {name} ({backend}): node {host}: the kernel refused "
            f"{sum(up[r]['map_failed'] for r in ranks)} mapping(s) within the capacity in "
            f"rank(s) {_ranks(ranks)}: {why}"
            for host, ranks in sorted(by_host.items())]
