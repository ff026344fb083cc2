"""`hmtune machine`: what this host offers as fast memory, and the machine file it implies."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hmtune.core.errors import Failure
from hmtune.core.files import write_atomic


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "machine", help="what fast memory this host has (and a machine file for it)",
        description="Print what this host offers: NUMA nodes with their kind (DRAM, HBM, "
                    "MCDRAM, CXL-DRAM, NVM, ...), size, free memory, distances, published "
                    "bandwidth and latency, kernel and hwloc memory tiers, hugepage pools, "
                    "THP, what memkind can reach, which sampler the tracer will use, and "
                    "the fast tier 'hmtune advise --mem SIZE' picks. Kinds come from hwloc, "
                    "then sysfs (device-DAX kmem, HMAT, kernel memory tiers); a machine file "
                    "given to advise always wins.",
        epilog="examples: hmtune machine; hmtune machine --toml -o configs/machines/here.toml")
    p.add_argument("--toml", action="store_true",
                   help="print the machine file (docs/formats.md §5) for this host instead")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="with --toml: write it to FILE (refused if FILE exists, unless --force)")
    p.add_argument("--force", action="store_true", help="with -o: replace FILE")
    p.add_argument("--root", metavar="DIR", default=None,
                   help="read a recorded topology (DIR/sys, DIR/proc, DIR/hwloc.xml) instead "
                        "of this host (default: $HMTUNE_HOST_ROOT, else /)")
    p.add_argument("--hwloc-xml", metavar="FILE", default=None,
                   help="take hwloc's view from FILE (lstopo --of xml) instead of running "
                        "lstopo")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from hmtune.machine.choice import fast_tier
    from hmtune.machine.host import HostError, detect, env_root
    from hmtune.machine.machinefile import machine_toml
    from hmtune.machine.page import describe

    if args.output and not args.toml:
        raise Failure("-o needs --toml (the page goes to stdout)", 2)
    root = Path(args.root) if args.root else env_root()
    hwloc_xml = Path(args.hwloc_xml) if args.hwloc_xml else None
    try:
        if not args.toml:
            sys.stdout.write(describe(detect(root, hwloc_xml)))
            return 0
        choice = fast_tier(root, hwloc_xml)
        text = machine_toml(choice.host, choice.why, choice.machine)
    except HostError as e:
        raise Failure(str(e), 1) from None
    if not args.output:
        sys.stdout.write(text)
        return 0
    out = Path(args.output)
    if out.exists() and not args.force:
        raise Failure(f"{out} exists; give --force to replace it", 2)
    try:
        write_atomic(out, text)
    except OSError as e:
        raise Failure(f"cannot write {out}: {e.strerror or e}", 1) from None
    print(f"hmtune machine: wrote {out}", file=sys.stderr)
    return 0
