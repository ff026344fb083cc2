"""Readers of a Paraver trace's companions: `.pcf` (labels) and `.row` (object names).

`.pcf`: sections introduced by a keyword line (STATES, EVENT_TYPE, VALUES, ...).
An EVENT_TYPE block lists `gradient type description` lines; a VALUES block right
after it (`value label` lines) labels the values of every type in that block, e.g.
Extrae's 32000007 and 32000009 share one table of memory objects.

`.row`: blocks `LEVEL <name> SIZE <n>` followed by one name per line.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from hmtune.analyze.prv_io import PathLike, TraceFormatError, open_text


@dataclass
class EventType:
    type: int
    description: str
    gradient: int
    lineno: int          # line of the definition in the .pcf


@dataclass
class Pcf:
    path: str
    states: dict[int, str] = field(default_factory=dict)
    event_types: dict[int, EventType] = field(default_factory=dict)
    # type -> value -> label. Types of one EVENT_TYPE block share one dict object;
    # treat the tables as read-only.
    values: dict[int, dict[int, str]] = field(default_factory=dict)

    def label(self, type_: int, value: int) -> str | None:
        """The label of `value` for event `type_`, or None if it has none."""
        table = self.values.get(type_)
        return None if table is None else table.get(value)


def _pcf_int(text: str, path: PathLike, lineno: int, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise TraceFormatError(path, lineno, f"{what} {text!r} is not an integer",
                               "pcf-syntax") from None


def parse_pcf(path: PathLike) -> Pcf:
    """Read a `.pcf`: states, event types with descriptions, and VALUES tables.

    Sections other than STATES, EVENT_TYPE and VALUES are skipped, and so are lines
    starting with `#` (hmtune-finalize's first line names its release). Raises
    TraceFormatError (kind "pcf-syntax") on a malformed line of those three.
    """
    pcf = Pcf(os.fspath(path))
    section = ""
    block: list[int] = []           # types of the latest EVENT_TYPE block
    table: dict[int, str] = {}
    with open_text(path) as fh:
        for lineno, raw in enumerate(fh, 1):
            line = raw.strip()
            if not line or line[0] == "#":      # a comment, as Paraver reads it
                continue
            if not (line[0].isdigit() or line[0] == "-"):   # a section keyword
                section = line.split()[0]
                if section == "VALUES":
                    if not block:
                        raise TraceFormatError(path, lineno, "VALUES without an EVENT_TYPE"
                                               " block before it", "pcf-syntax")
                    table = {}
                    for type_ in block:
                        pcf.values[type_] = table
                    continue
                block = []
                continue
            if section == "STATES":
                parts = line.split(None, 1)
                state = _pcf_int(parts[0], path, lineno, "state")
                pcf.states[state] = parts[1] if len(parts) > 1 else ""
            elif section == "EVENT_TYPE":
                parts = line.split(None, 2)
                if len(parts) < 2:
                    raise TraceFormatError(path, lineno, "EVENT_TYPE line needs"
                                           " 'gradient type description'", "pcf-syntax")
                gradient = _pcf_int(parts[0], path, lineno, "gradient")
                type_ = _pcf_int(parts[1], path, lineno, "event type")
                description = parts[2] if len(parts) > 2 else ""
                pcf.event_types[type_] = EventType(type_, description, gradient, lineno)
                block.append(type_)
            elif section == "VALUES":
                parts = line.split(None, 1)
                value = _pcf_int(parts[0], path, lineno, "value")
                table[value] = parts[1] if len(parts) > 1 else ""
    return pcf


@dataclass
class RowLevel:
    name: str            # upper case: CPU, NODE, THREAD, APPL, TASK, ...
    size: int            # as declared by `SIZE n`
    names: list[str]     # as listed (may differ from `size` in a broken file)
    lineno: int          # line of the LEVEL header


@dataclass
class Row:
    path: str
    levels: dict[str, RowLevel] = field(default_factory=dict)

    def names(self, level: str) -> list[str]:
        """Names listed for `level` (case-insensitive); [] if the level is absent."""
        found = self.levels.get(level.upper())
        return [] if found is None else found.names


def parse_row(path: PathLike) -> Row:
    """Read a `.row`. A level's names run until a blank line or the next LEVEL.

    Raises TraceFormatError (kind "row-syntax") on a malformed LEVEL line or a name
    outside any level.
    """
    row = Row(os.fspath(path))
    current: RowLevel | None = None
    with open_text(path) as fh:
        for lineno, raw in enumerate(fh, 1):
            line = raw.rstrip("\r\n")
            if line.startswith("LEVEL"):
                parts = line.split()
                if len(parts) < 4 or parts[-2] != "SIZE" or not parts[-1].isdigit():
                    raise TraceFormatError(path, lineno, "expected 'LEVEL <name> SIZE <n>'",
                                           "row-syntax")
                name = " ".join(parts[1:-2]).upper()
                current = RowLevel(name, int(parts[-1]), [], lineno)
                row.levels[name] = current
            elif not line.strip():
                current = None
            elif current is None:
                raise TraceFormatError(path, lineno, "name outside a LEVEL block",
                                       "row-syntax")
            else:
                current.names.append(line)
    return row
