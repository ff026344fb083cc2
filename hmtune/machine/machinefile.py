"""Machine files (`configs/machines/*.toml`, docs/formats.md §5): reading and checking
one, writing the one a detected host implies, and `--mem` on one.

A machine file names the machine and lists its tiers fastest first; the last tier is
the fallback, where everything not placed stays, and must be unlimited:

    name = "xeon-max-9468-flat-snc4"
    [[tier]]
    name = "hbm"
    capacity = "16G"                 # K/M/G/T, KiB..TiB, bytes, or "unlimited"
    backend = "numa:8-15"            # memkind:KIND, numa:NODES, hugetlb, thp, default
    load_cost = 1.0                  # relative cost of a sampled access served here
    store_cost = 1.0
    per = "process"                  # optional: "process" (default) or "node"
    page = "4K"                      # optional: default 2M for hugetlb, 4K otherwise
    speeds_up = ["access"]           # optional: what the tier speeds up, of "access"
                                     # (sampled access stalls, the costs above; the
                                     # default) and "first_touch" (page faults)
    fault_cost_ns = 1200.0           # first_touch: ns saved per minor fault avoided
    faults_kept = 0.001953125        # first_touch: fraction of the faults still taken
                                     # here (default 4K / page for hugetlb; needed
                                     # for every other backend)
    alloc_cost_ns = 100.0            # optional: ns placing adds per allocation (the
                                     # interposer's path and free), charged against a
                                     # site's value per allocation call (default 100;
                                     # 0 on a "default" tier, which places nothing)
    access_min_span = "256K"         # optional: sites whose peak live bytes are at
                                     # most this gain nothing on access here (default
                                     # 256 KiB on hugetlb, thp and hugepage kinds: the
                                     # TLB holds that span anyway; 0 elsewhere)
    streaming_cost = 5.3             # optional: the relative cost of a streamed
    scattered_cost = 1.0             # (bandwidth-bound), scattered (latency-bound) or
    sync_cost = 1.0                  # synchronization access here, where sites.csv says
                                     # which kind each sampled access was (default:
                                     # load_cost). A fast tier's gain for a kind is
                                     # 1 - its cost / the fallback's
    bandwidth_bound_gbs = 1.3        # optional, the fallback (last) tier only: GB/s
                                     # (1e9 bytes/s) per thread of last-level misses
                                     # served from this tier from which counters.csv
                                     # calls a site bandwidth-bound (default 2.0,
                                     # hmtune/advisor/counted.py)

Every problem is reported as one line `FILE: ...` naming the tier and key at fault
(TierFileError). `--mem SIZE` alone stands for this host's tiers (hmtune/machine/choice.py,
`hmtune machine`); with a machine file it resizes the machine's fastest tier
(`with_fast_capacity`).
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from hmtune.core.backends import grammar_problem
from hmtune.core.units import GIB, KIB, MIB, human, parse_size
from hmtune.machine.tiers import KINDS, SPEEDS_UP, Machine, Tier

if TYPE_CHECKING:
    from hmtune.machine.host import Host

_KEYS = {"name", "capacity", "backend", "load_cost", "store_cost", "per", "page",
         "speeds_up", "fault_cost_ns", "faults_kept", "alloc_cost_ns", "access_min_span",
         "bandwidth_bound_gbs", *(f"{k}_cost" for k in KINDS)}
_FIRST_TOUCH_KEYS = ("fault_cost_ns", "faults_kept")
_REQUIRED = ("name", "capacity", "backend", "load_cost", "store_cost")
# ASCII only and \Z, not $ (which also matches before a final newline): a backend or
# tier name is written into placement.txt, whose C reader takes exactly these.
_TIER_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}\Z")


class TierFileError(ValueError):
    """A machine file or tier setting hmtune cannot use; str() names the file and key."""


def parse_capacity(value: object, where: str) -> int | None:
    """Bytes for a capacity value (None: unlimited). Refuses 0 and non-sizes."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise TierFileError(f"{where}: capacity must be a size string such as \"16G\" "
                            "or \"unlimited\"")
    if isinstance(value, str) and value.strip().lower() == "unlimited":
        return None
    try:
        size = parse_size(str(value))
    except ValueError as e:
        raise TierFileError(f"{where}: capacity {e}") from None
    if size <= 0:
        raise TierFileError(f"{where}: capacity is 0; a tier must hold something "
                            "(leave it out instead)")
    return size


def _cost(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TierFileError(f"{where} must be a number, not {value!r}")
    cost = float(value)
    if not math.isfinite(cost) or cost <= 0:
        raise TierFileError(f"{where} must be a finite number > 0, not {value!r}")
    return cost


def _ns(value: object, where: str) -> float:
    """A time in ns that may be 0 (at most a second: anything larger is a unit slip)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TierFileError(f"{where} must be a number of ns, not {value!r}")
    ns = float(value)
    if not math.isfinite(ns) or ns < 0 or ns > 1e9:
        raise TierFileError(f"{where} must be a number of ns from 0 to 1e9, not {value!r}")
    return ns


def _page(value: object, where: str) -> int:
    try:
        page = parse_size(str(value)) if isinstance(value, str | int) and \
            not isinstance(value, bool) else 0
    except ValueError as e:
        raise TierFileError(f"{where}: page {e}") from None
    if page < 1 or page & (page - 1):
        raise TierFileError(f"{where}: page must be a power-of-two size such as \"4K\" "
                            f"or \"2M\", not {value!r}")
    return page


def _span(value: object, where: str) -> int:
    """access_min_span: a size ("256K", bytes as a number), 0 to 1 TiB."""
    try:
        span = parse_size(str(value)) if isinstance(value, str | int) and \
            not isinstance(value, bool) else -1
    except ValueError:
        span = -1
    if not 0 <= span <= 1 << 40:
        raise TierFileError(f"{where}: access_min_span must be a size from 0 to 1T (sites "
                            f"whose peak is at most this gain nothing on access here, "
                            f"e.g. \"256K\"), not {value!r}")
    return span


def _gbs(value: object, where: str) -> float:
    """bandwidth_bound_gbs: GB/s per thread, above 0 and at most 1000 (a thread's
    misses move far less; more is a unit slip, bytes/s for GB/s) → bytes/s."""
    if isinstance(value, bool) or not isinstance(value, int | float) or \
            not math.isfinite(float(value)) or not 0 < float(value) <= 1000:
        raise TierFileError(f"{where}: bandwidth_bound_gbs must be a number of GB/s per "
                            f"thread above 0 and at most 1000 (e.g. 1.3), not {value!r}")
    return float(value) * 1e9


def _speeds_up(value: object, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or \
            not all(isinstance(v, str) for v in value):
        raise TierFileError(f"{where}: speeds_up must be a list of names such as "
                            f"[\"access\", \"first_touch\"] (known: {', '.join(SPEEDS_UP)})")
    unknown = [v for v in value if v not in SPEEDS_UP]
    if unknown:
        raise TierFileError(f"{where}: speeds_up: unknown {unknown[0]!r} (known: "
                            f"{', '.join(SPEEDS_UP)})")
    if len(set(value)) != len(value):
        raise TierFileError(f"{where}: speeds_up names {value!r}: each at most once")
    return tuple(v for v in SPEEDS_UP if v in value)


def _faults_kept(raw: dict, backend: str, page: int, where: str) -> float:
    """The fraction of a site's faults still taken in the tier: the file's, else one
    fault per page of a hugetlb tier instead of one per 4 KiB."""
    if "faults_kept" not in raw:
        if backend == "hugetlb":
            return 4 * KIB / page
        raise TierFileError(f"{where}: speeds_up has \"first_touch\" but no faults_kept: "
                            f"give the fraction of a site's page faults still taken in this "
                            f"tier (0 to below 1; the default is 4K / page for hugetlb only)")
    value = raw["faults_kept"]
    if isinstance(value, bool) or not isinstance(value, int | float) or \
            not math.isfinite(float(value)) or not 0 <= float(value) < 1:
        raise TierFileError(f"{where}: faults_kept must be a number from 0 to below 1 (the "
                            f"fraction of page faults still taken here), not {value!r}")
    return float(value)


def parse_tier(raw: object, where: str) -> Tier:
    """One `[[tier]]` table → Tier."""
    if not isinstance(raw, dict):
        raise TierFileError(f"{where} is not a table")
    unknown = sorted(set(raw) - _KEYS)
    if unknown:
        raise TierFileError(f"{where}: unknown key(s) {', '.join(unknown)} "
                            f"(known: {', '.join(sorted(_KEYS))})")
    missing = [k for k in _REQUIRED if k not in raw]
    if missing:
        raise TierFileError(f"{where}: missing key(s) {', '.join(missing)}")
    name = raw["name"]
    if not isinstance(name, str) or not _TIER_NAME.match(name):
        raise TierFileError(f"{where}: name must be 1-64 letters, digits, '_', '.' or '-', "
                            f"not {name!r}")
    where = f"{where} ('{name}')"
    backend = raw["backend"]
    if not isinstance(backend, str):
        raise TierFileError(f"{where}: backend must be a string")
    problem = grammar_problem(backend)
    if problem:
        raise TierFileError(f"{where}: backend {problem}")
    per = raw.get("per", "process")
    if per not in ("process", "node"):
        raise TierFileError(f"{where}: per must be \"process\" or \"node\", not {per!r}")
    default_page = 2 * MIB if backend == "hugetlb" else 4 * KIB
    page = _page(raw["page"], where) if "page" in raw else default_page
    speeds = _speeds_up(raw["speeds_up"], where) if "speeds_up" in raw else ("access",)
    fault_cost, kept = 0.0, 1.0
    if "first_touch" in speeds:
        if "fault_cost_ns" not in raw:
            raise TierFileError(f"{where}: speeds_up has \"first_touch\" but no fault_cost_ns "
                                "(ns saved per page fault avoided)")
        fault_cost = _cost(raw["fault_cost_ns"], f"{where}: fault_cost_ns")
        kept = _faults_kept(raw, backend, page, where)
    else:
        extra = [k for k in _FIRST_TOUCH_KEYS if k in raw]
        if extra:
            raise TierFileError(f"{where}: {', '.join(extra)} without \"first_touch\" in "
                                "speeds_up (add it, or remove the key)")
    alloc_cost = None
    if "alloc_cost_ns" in raw:
        alloc_cost = _ns(raw["alloc_cost_ns"], f"{where}: alloc_cost_ns")
    min_span = _span(raw["access_min_span"], where) if "access_min_span" in raw else None
    kinds = tuple((k, _cost(raw[f"{k}_cost"], f"{where}: {k}_cost")) for k in KINDS
                  if f"{k}_cost" in raw)
    bound = _gbs(raw["bandwidth_bound_gbs"], where) if "bandwidth_bound_gbs" in raw else None
    return Tier(name=name, capacity=parse_capacity(raw["capacity"], where), backend=backend,
                load_cost=_cost(raw["load_cost"], f"{where}: load_cost"),
                store_cost=_cost(raw["store_cost"], f"{where}: store_cost"),
                page_size=page, per_node=per == "node", speeds_up=speeds,
                fault_cost_ns=fault_cost, faults_kept=kept, alloc_cost_ns=alloc_cost,
                access_min_span=min_span, kind_costs=kinds, bandwidth_bound=bound)


def check_tiers(tiers: list[Tier], where: str) -> list[str]:
    """Refuse tier lists the advisor cannot use; return notes about odd but legal ones."""
    if not tiers:
        raise TierFileError(f"{where}: no tiers ([[tier]] tables) defined")
    names = [t.name for t in tiers]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise TierFileError(f"{where}: tier name(s) {', '.join(dup)} used more than once")
    if len(tiers) < 2:
        raise TierFileError(f"{where}: only one tier ('{tiers[0].name}'): there is nothing "
                            "to choose; list the fast tier(s) first and the fallback last")
    if not tiers[-1].unlimited:
        raise TierFileError(f"{where}: the last tier ('{tiers[-1].name}') is the fallback and "
                            "must have capacity = \"unlimited\"")
    for t in tiers[:-1]:
        if t.unlimited:
            raise TierFileError(f"{where}: tier '{t.name}' is unlimited but not last; only "
                                "the fallback (last) tier may be unlimited")
        if t.bandwidth_bound is not None:
            raise TierFileError(f"{where}: tier '{t.name}' has bandwidth_bound_gbs, which is "
                                f"the fallback's ('{tiers[-1].name}', where the traced run's "
                                "data was): move it there")
    fb = tiers[-1]
    return [f"tier '{t.name}' is no faster than the fallback '{fb.name}' (costs "
            f"{t.load_cost:g}/{t.store_cost:g} vs {fb.load_cost:g}/{fb.store_cost:g}): "
            "nothing gains from being placed there"
            for t in tiers[:-1] if "first_touch" not in t.speeds_up and
            ("access" not in t.speeds_up or
             (t.load_cost >= fb.load_cost and t.store_cost >= fb.store_cost and
              all(t.kind_cost(k) >= fb.kind_cost(k) for k in KINDS)))]


def load_machine(path: str | Path) -> Machine:
    """Read and check a machine file. Raises TierFileError (also for I/O problems)."""
    p = Path(path)
    try:
        text = p.read_bytes().decode("utf-8")
    except OSError as e:
        raise TierFileError(f"{p}: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise TierFileError(f"{p}: not UTF-8 text") from None
    if not text.strip():
        raise TierFileError(f"{p}: empty file (expected name = ... and [[tier]] tables)")
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise TierFileError(f"{p}: TOML syntax error: {e}") from None
    unknown = sorted(set(doc) - {"name", "tier"})
    if unknown:
        raise TierFileError(f"{p}: unknown top-level key(s) {', '.join(unknown)} "
                            "(known: name, tier)")
    name = doc.get("name")
    if not isinstance(name, str) or not name.strip():
        raise TierFileError(f"{p}: missing key name (what machine the file describes)")
    raw = doc.get("tier", [])
    if not isinstance(raw, list):
        raise TierFileError(f"{p}: tier must be an array of tables ([[tier]])")
    tiers = [parse_tier(t, f"{p}: tier {i + 1}") for i, t in enumerate(raw)]
    notes = check_tiers(tiers, str(p))
    return Machine(name=name, tiers=tiers, source=str(p), notes=notes)


def with_fast_capacity(machine: Machine, size: int) -> Machine:
    """The machine with its fastest tier resized to SIZE bytes per process (`--mem`)."""
    if size <= 0:
        raise TierFileError("--mem: the fast tier needs a size > 0")
    first = replace(machine.tiers[0], capacity=size, per_node=False)
    note = (f"--mem sets tier '{first.name}' to {human(size)} per process "
            f"(the machine file says {_describe(machine.tiers[0])})")
    return Machine(name=machine.name, tiers=[first, *machine.tiers[1:]],
                   source=machine.source, notes=[*machine.notes, note])


def _describe(t: Tier) -> str:
    if t.unlimited:
        return "unlimited"
    return f"{human(t.capacity)} per {'node' if t.per_node else 'process'}"


# ---- writing one ----------------------------------------------------------------------------

def _capacity(nbytes: int) -> str:
    """A capacity for a machine file: whole GiB as G, else MiB as M."""
    if nbytes >= GIB and nbytes % GIB == 0:
        return f"{nbytes // GIB}G"
    return f"{max(nbytes // MIB, 1)}M"


def machine_toml(host: Host, why: str, machine: Machine) -> str:
    """A machine file (docs/formats.md §5) for a host and the tiers chosen for it (why:
    the choice's reason, hmtune/machine/choice.py), with where each value came from."""
    def comment(text: str) -> str:
        return "# " + " ".join(text.split())          # one line whatever the text holds

    lines = [comment(f"{host.name}: written by hmtune machine --toml from {host.source}"),
             comment(f"({host.hwloc or 'no hwloc'}; {why})."),
             comment(f"{machine.notes[0]}.") if machine.notes else "#",
             f'name = "{host.name}"', ""]
    for t in machine.tiers:
        lines += ["[[tier]]", f'name = "{t.name}"',
                  f'capacity = "{"unlimited" if t.capacity is None else _capacity(t.capacity)}"',
                  f'backend = "{t.backend}"', f"load_cost = {float(t.load_cost)!r}",
                  f"store_cost = {float(t.store_cost)!r}"]
        if t.capacity is not None:
            lines.append(f'per = "{"node" if t.per_node else "process"}"')
        if t.backend in ("hugetlb", "thp"):
            lines.append(f'page = "{_capacity(t.page_size)}"')
        if t.capacity is not None:
            lines.append("speeds_up = [" + ", ".join(f'"{s}"' for s in t.speeds_up) + "]")
        if "first_touch" in t.speeds_up:
            lines += [f"fault_cost_ns = {float(t.fault_cost_ns)!r}",
                      f"faults_kept = {float(t.faults_kept)!r}"]
        if t.backend != "default":
            lines.append(f"alloc_cost_ns = {float(t.call_cost_ns)!r}")
        lines += [f"{k}_cost = {float(c)!r}" for k, c in t.kind_costs]
        if t.min_span:
            span = t.min_span
            lines.append(f'access_min_span = "{span // 1024}K"' if span % 1024 == 0 else
                         f"access_min_span = {span}")
        lines.append("")
    return "\n".join(lines)
