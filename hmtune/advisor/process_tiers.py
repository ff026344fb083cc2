"""The tiers of the placement problem: a machine's tiers with the capacities one process
has (the advisor works per process; hmtune/machine/tiers.py has the machine's own)."""

from __future__ import annotations

from dataclasses import replace

from hmtune.core.units import human
from hmtune.machine.tiers import Machine, Tier


def per_process(machine: Machine, nprocs: int | None, node_procs: int | None = None,
                nnodes: int = 1) -> tuple[list[Tier], list[str]]:
    """Tiers with per-node capacities split evenly over the processes of a node.

    The solver works per process; a tier shared by a node's ranks (per = "node") gives
    each of the processes on the fullest node (node_procs, from the trace's task-to-node
    map over nnodes nodes; else all `nprocs` processes the trace saw) an equal part.
    Without a process count the whole node capacity is assumed to serve one process,
    and a note says so.
    """
    out: list[Tier] = []
    notes: list[str] = []
    for t in machine.tiers:
        if not t.per_node or t.unlimited:
            out.append(replace(t, per_node=False))
            continue
        assert t.capacity is not None
        n = node_procs or nprocs or 1
        share = max(t.capacity // n, 1)
        out.append(replace(t, capacity=share, per_node=False))
        if nprocs is None and node_procs is None:
            notes.append(f"tier '{t.name}' is shared per node ({human(t.capacity)}); no "
                         "allocs.csv to count the processes, so one process is assumed")
        elif n > 1 and nnodes > 1:
            notes.append(f"tier '{t.name}': {human(t.capacity)} per node shared by the {n} "
                         f"traced processes of the fullest of {nnodes} nodes: "
                         f"{human(share)} each")
        elif n > 1:
            notes.append(f"tier '{t.name}': {human(t.capacity)} per node shared by the {n} "
                         f"traced processes: {human(share)} each")
    return out, notes
