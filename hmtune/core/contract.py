"""The trace contract: the Paraver event types, declared once in common/trace_events.tsv.

`python -m hmtune.core.contract [ROOT]` (`make contract`) reads the table and writes
the two files generated from it, both committed:

- `common/hm_events.h`: `#define HM_EV_<name> <code>` for the C side, and
  `HM_EV_STR(HM_EV_<name>)`, the code as a string literal (for .pcf text);
- `hmtune/core/events.py`: `HM_EV_<name>: Final = <code>`, the same names in Python.

`--check` writes nothing and exits 1 when a generated file differs from the table.
tests/py/test_contract.py checks the same, and that no other C or Python file writes
a code of the table as a number.
"""

from __future__ import annotations

import re
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

TABLE = Path("common/trace_events.tsv")
C_HEADER = Path("common/hm_events.h")
PY_MODULE = Path("hmtune/core/events.py")
COLUMNS = ["code", "name", "origin", "writer", "meaning"]
ORIGINS = ("extrae", "hmtune")
_NAME = re.compile(r"[A-Z][A-Z0-9_]*\Z")


class ContractError(Exception):
    """common/trace_events.tsv is malformed (the message names the line)."""


@dataclass(frozen=True)
class Event:
    code: int
    name: str          # without the HM_EV_ prefix
    origin: str        # "extrae" or "hmtune"
    writer: str
    meaning: str

    @property
    def const(self) -> str:
        return f"HM_EV_{self.name}"


def parse(text: str, source: str = str(TABLE)) -> list[Event]:
    """The table's rows, in order; codes and names unique."""
    events: list[Event] = []
    header_seen = False
    codes: dict[int, int] = {}
    names: dict[str, int] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if not header_seen:
            if fields != COLUMNS:
                raise ContractError(f"{source}:{lineno}: header is {fields}, expected {COLUMNS}")
            header_seen = True
            continue
        if len(fields) != len(COLUMNS):
            raise ContractError(f"{source}:{lineno}: {len(fields)} fields, expected "
                                f"{len(COLUMNS)}")
        code_text, name, origin, writer, meaning = fields
        if not code_text.isdigit():
            raise ContractError(f"{source}:{lineno}: code {code_text!r} is not a number")
        code = int(code_text)
        if not _NAME.match(name):
            raise ContractError(f"{source}:{lineno}: name {name!r} is not UPPER_CASE")
        if origin not in ORIGINS:
            raise ContractError(f"{source}:{lineno}: origin {origin!r}, expected one of "
                                f"{', '.join(ORIGINS)}")
        if code in codes:
            raise ContractError(f"{source}:{lineno}: code {code} already on line "
                                f"{codes[code]}")
        if name in names:
            raise ContractError(f"{source}:{lineno}: name {name} already on line "
                                f"{names[name]}")
        codes[code], names[name] = lineno, lineno
        events.append(Event(code, name, origin, writer, meaning))
    if not header_seen:
        raise ContractError(f"{source}: no header row")
    return events


def _banner(prefix: str) -> list[str]:
    return [f"{prefix}Generated from {TABLE} by `python -m hmtune.core.contract`",
            f"{prefix}(make contract); do not edit. The table says what each value means."]


def render_c(events: list[Event]) -> str:
    width = max(len(e.const) for e in events)
    lines = ["/* hm_events.h — the Paraver event types of the trace contract.",
             *_banner(" * "), " */",
             "#ifndef HM_EVENTS_H", "#define HM_EVENTS_H", ""]
    for e in events:
        lines.append(f"#define {e.const:<{width}} {e.code}  /* {e.origin}: {e.meaning} */")
    lines += ["",
              "/* The code as a string literal: \"6    \" HM_EV_STR(HM_EV_CALL) \"    ...\". */",
              "#define HM_EV_STR_(x) #x",
              "#define HM_EV_STR(x) HM_EV_STR_(x)",
              "", "#endif", ""]
    return "\n".join(lines)


def render_py(events: list[Event]) -> str:
    lines = ['"""The Paraver event types of the trace contract (docs/formats.md §3).', "",
             *_banner(""), '"""', "",
             "from typing import Final", ""]
    for e in events:
        lines += textwrap.wrap(f"{e.origin}: {e.meaning}", 96, initial_indent="# ",
                               subsequent_indent="#   ")
        lines.append(f"{e.const}: Final = {e.code}")
    lines += ["",
              "ALL: Final[dict[str, int]] = {",
              *(f'    "{e.const}": {e.const},' for e in events),
              "}", '"""Every constant above by name."""', ""]
    return "\n".join(lines)


def outputs(root: Path) -> dict[Path, str]:
    """The generated files' paths (under root) and their contents."""
    events = parse((root / TABLE).read_text(), str(TABLE))
    return {root / C_HEADER: render_c(events), root / PY_MODULE: render_py(events)}


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    check = "--check" in args
    args = [a for a in args if a != "--check"]
    root = Path(args[0]) if args else Path(__file__).resolve().parents[2]
    try:
        files = outputs(root)
    except (OSError, ContractError) as e:
        print(f"hmtune.core.contract: {e}", file=sys.stderr)
        return 2
    stale = []
    for path, text in files.items():
        old = path.read_text() if path.exists() else None
        if old == text:
            continue
        stale.append(path)
        if not check:
            path.write_text(text)
    for path in stale:
        print(f"{'stale' if check else 'wrote'} {path}", file=sys.stderr)
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
