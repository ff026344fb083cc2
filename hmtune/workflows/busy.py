"""Whether the machine was busy while compare and explore measured: the load average
before a round, and which other processes used a CPU during it (/proc), so that a
noisy result says why."""

from __future__ import annotations

import os
from pathlib import Path

BUSY = 0.25                         # CPUs other processes may use before a warning


def loadavg_note(ncpu: int | None = None, path: Path = Path("/proc/loadavg")) -> str:
    """Why the machine looks loaded (1-minute load average above its CPUs minus one), or
    ''."""
    ncpu = ncpu or os.cpu_count() or 1
    try:
        load = float(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return ""
    if load > ncpu - 1:
        return f"1-minute load average {load:.2f} on {ncpu} CPU{'s' if ncpu > 1 else ''}"
    return ""


CpuSnapshot = dict[int, tuple[str, int, int]]      # pid -> (command, CPU ticks, last CPU)


def cpu_snapshot(proc: Path = Path("/proc")) -> CpuSnapshot:
    """Every process's CPU time so far (user + system, clock ticks) and last CPU."""
    out: CpuSnapshot = {}
    for p in proc.iterdir():
        if not p.name.isdigit():
            continue
        try:
            text = (p / "stat").read_text()
        except OSError:
            continue
        head, _, tail = text.rpartition(")")
        f = tail.split()
        try:                 # fields 14, 15 and 39 of proc(5); f[0] is field 3
            out[int(p.name)] = (head.partition("(")[2], int(f[11]) + int(f[12]), int(f[36]))
        except (ValueError, IndexError):
            continue
    return out


def busy_note(before: CpuSnapshot, after: CpuSnapshot, seconds: float,
              cpus: frozenset[int] | None = None, own: frozenset[int] = frozenset(),
              tick: int | None = None) -> str:
    """What else ran between two snapshots `seconds` apart (processes that lived through
    both, not in own, last seen on cpus when given), when together they used more than
    BUSY of a CPU; else ''."""
    if seconds <= 0:
        return ""
    tick = tick or os.sysconf("SC_CLK_TCK")
    use: list[tuple[float, int, str]] = []
    for pid, (comm, ticks, cpu) in after.items():
        old = before.get(pid)
        if old is None or old[0] != comm or pid in own or (cpus and cpu not in cpus):
            continue
        share = (ticks - old[1]) / tick / seconds
        if share > 0:
            use.append((share, pid, comm))
    total = sum(s for s, _, _ in use)
    if total <= BUSY:
        return ""
    top = sorted(use, reverse=True)[:3]
    return (f"other processes used {100 * total:.0f} % of a CPU during a round: "
            + ", ".join(f"{comm} (pid {pid}) {100 * s:.0f} %" for s, pid, comm in top))
