"""The `hmtune` command: one entry point over every stage (DESIGN.md §7)."""

from __future__ import annotations

import argparse
import sys

from hmtune.advisor import cli as advisor_cli
from hmtune.analyze import cli as analyze_cli
from hmtune.core.errors import Failure
from hmtune.core.version import version
from hmtune.workflows import compare, explore, launch, machine, report, run, trace, view


def _check_trace(args: argparse.Namespace) -> int:
    from hmtune.analyze import check_trace

    argv = [args.trace]
    argv += ["--quiet"] if args.quiet else []
    argv += ["--extrae"] if args.extrae else []
    return check_trace.main(argv)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="hmtune",
        description="Find the heap objects that belong in fast memory and put them there.",
    )
    p.add_argument("--version", action="version", version=f"hmtune {version()}",
                   help="print hmtune's version and exit")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    trace.add_parser(sub)
    analyze_cli.add_parser(sub)
    advisor_cli.add_parser(sub)
    run.add_parser(sub)
    view.add_parser(sub)
    compare.add_parser(sub)
    explore.add_parser(sub)
    report.add_parser(sub)
    machine.add_parser(sub)
    c = sub.add_parser("check-trace", help="validate a Paraver trace against hmtune's rules",
                       description="Check FILE.prv (+ .pcf/.row) against the trace format rules "
                                   "(a directory means DIR/trace.prv).")
    c.add_argument("trace", metavar="FILE.prv|DIR")
    c.add_argument("--quiet", action="store_true", help="print only the summary line")
    c.add_argument("--extrae", action="store_true", help="relax hmtune-specific rules")
    c.set_defaults(func=_check_trace)
    return p


# Options whose value may be mistyped negative ("--mem -5M"): argparse would take the
# value for an option and say only "expected one argument"; glued to its option, the
# value reaches the option's own check, which says what is wrong with it.
SIGNED_VALUES = ("--mem", "--fraction")


def glue_signed(argv: list[str]) -> list[str]:
    """argv with `OPT -VALUE` written `OPT=-VALUE` for the options of SIGNED_VALUES
    (up to a `--`, after which the application's own arguments start)."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            return out + argv[i:]
        nxt = argv[i + 1] if i + 1 < len(argv) else ""
        if a in SIGNED_VALUES and len(nxt) > 1 and nxt[0] == "-" and (nxt[1].isdigit()
                                                                       or nxt[1] == "."):
            out.append(f"{a}={nxt}")
            i += 2
            continue
        out.append(a)
        i += 1
    return out


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(glue_signed(list(sys.argv[1:] if argv is None else argv)))
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args))
    except Failure as e:        # every command's error: one line, its exit status
        launch.say(args.command, str(e))
        return e.code


if __name__ == "__main__":
    sys.exit(main())
