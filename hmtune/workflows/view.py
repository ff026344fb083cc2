"""`hmtune view`: how to open a trace in Paraver with the shipped configurations
(configs/paraver/). It prints the commands, with absolute paths, and says which of
wxparaver and paramedir this machine has; it opens nothing itself."""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from hmtune.core import paths
from hmtune.core.errors import Failure
from hmtune.core.stage import TRACE

CFG_DIR = paths.configs_dir() / "paraver"


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "view",
        help="print how to open a trace in Paraver with hmtune's configurations",
        description="Print the wxparaver and paramedir commands for TRACE (a .prv file, "
                    "or a stage directory holding trace.prv) and each configuration "
                    "in configs/paraver/.",
    )
    p.add_argument("trace", metavar="TRACE|DIR", nargs="?", default=None,
                   help="trace.prv, or the directory holding it (default: the newest "
                        "hmtune-out/*/ with a trace.prv)")
    p.set_defaults(func=run)


def commands(prv: Path) -> list[str]:
    """One wxparaver line per configuration, then one paramedir line per configuration
    writing NAME.csv next to the trace."""
    cfgs = sorted(CFG_DIR.glob("*.cfg"))
    lines = [f"wxparaver {prv} {cfg}" for cfg in cfgs]
    lines += [f"paramedir {prv} {cfg} -o {prv.parent / (cfg.stem + '.csv')}" for cfg in cfgs]
    return lines


def run(args: argparse.Namespace) -> int:
    t = Path(args.trace) if args.trace else paths.newest_stage(TRACE)
    if t is None:
        raise Failure("hmtune-out/*/: no trace.prv (run hmtune trace first, or give "
                      "TRACE|DIR)", 2)
    prv = t / TRACE if t.is_dir() else t
    if not prv.is_file():
        raise Failure(f"{prv}: no trace there (run hmtune trace first)", 2)
    if prv.suffix != ".prv":
        raise Failure(f"{prv}: not a Paraver trace (.prv); a gzip'ed one must be "
                      "unpacked for Paraver", 2)
    missing = [s for s in (".pcf", ".row") if not prv.with_suffix(s).is_file()]
    if missing:
        print(f"hmtune view: note: {prv.with_suffix(missing[0])} is missing; Paraver shows "
              "numbers instead of names", file=sys.stderr)
    prv = prv.resolve()
    have = [tool for tool in ("wxparaver", "paramedir") if shutil.which(tool)]
    print(f"# {prv}: configurations in {CFG_DIR} (what each shows: {CFG_DIR / 'README.md'})")
    print("# " + (f"found here: {', '.join(have)}" if have else
                  "neither wxparaver nor paramedir is installed here: copy the trace "
                  "(.prv, .pcf, .row) and the .cfg files to a machine with Paraver "
                  "(https://tools.bsc.es/paraver)"))
    for line in commands(prv):
        print(line)
    return 0
