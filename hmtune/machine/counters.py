"""The PAPI counters a trace records on this host (`hmtune-probe --counters`, the tracer's
own choice, collect/hmc_papi.c): what `hmtune machine` lists and `hmtune trace
--counters` would record."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Counter:
    name: str                       # PAPI_TOT_CYC, perf::TASK-CLOCK
    code: int                       # PAPI's event code
    type: int                       # the Paraver event type (42000000 + ..., Extrae's)
    descr: str


@dataclass
class Counters:
    recorded: list[Counter] = field(default_factory=list)
    software: bool = False          # none asked for could be counted: software events
    unavailable: str = ""           # "NAME (why), ..." of those asked for and not counted
    error: str = ""                 # PAPI could not run at all


def parse(text: str) -> Counters:
    """hmtune-probe --counters' output."""
    out = Counters()
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key == "counter":
            f = dict(part.partition("=")[::2] for part in line.split("\t"))
            out.recorded.append(Counter(f.get("counter", ""), int(f.get("code", "0"), 16),
                                        int(f.get("type", "0")), f.get("descr", "")))
        elif key == "software":
            out.software = value == "1"
        elif key == "unavailable":
            out.unavailable = value
        elif key == "error":
            out.error = value
    return out


def probe(names: str = "default") -> Counters:
    """The counters of names (`--counters LIST`) a trace would record here."""
    from hmtune.core.paths import probe_bin

    try:
        r = subprocess.run([str(probe_bin()), "--counters", names], capture_output=True,
                           text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return Counters(error=f"hmtune-probe could not run ({e}); run make build")
    got = parse(r.stdout)
    if not got.recorded and not got.error:
        got.error = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "none"
    return got


def line(c: Counters) -> str:
    """`hmtune machine`'s line."""
    if c.error:
        return f"counters: none ({c.error})"
    names = ", ".join(f"{k.name} ({k.type})" for k in c.recorded)
    if c.software:
        return (f"counters: no hardware counters ({c.unavailable}); hmtune trace --counters "
                f"records PAPI's software events: {names}")
    tail = f"; not available: {c.unavailable}" if c.unavailable else ""
    return f"counters: hmtune trace --counters records {names}{tail}"
