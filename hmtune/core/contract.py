"""The trace contract: the Paraver event types and the values of the enumerated ones,
declared once as data.

Three tables, each tab-separated with a header row (`#` lines are comments, blank lines
are skipped):

- `common/trace_events.tsv`: one row per event type (`code name origin writer
  meaning`);
- `common/trace_values.tsv`: one row per value of an enumerated type (`event value
  name label`): `event` names a row of the first table (or several, comma-separated,
  that share the values: the first names the constants), `value` the number on the
  wire (increasing within a table), `name` the constant (UPPER_CASE; its lower case is
  the value's key, the word hmtune's files use for it), `label` the .pcf label;
- `common/site_key.tsv`: the site key's grammar constants (`name value meaning`: the
  frame separator, the module-offset separator, the unknown module, the most frames,
  the offset bits), a number or a double-quoted string each.

`python -m hmtune.core.contract [ROOT]` (`make contract`) reads them and writes the two
files generated from them, both committed:

- `common/hm_events.h`: `#define HM_EV_<name> <code>` and `HM_EV_STR(HM_EV_<name>)`
  (the code as a string literal, for .pcf text); per value table `#define
  HM_<EVENT>_<NAME> <value>`, `HM_<EVENT>_MAX` (the largest value) and the X-macro
  `HM_<EVENT>_VALUES(X)`: `X(HM_<EVENT>_<NAME>, "key", "label")` per row, in order,
  from which C builds its label arrays and .pcf VALUES blocks; `#define HM_KEY_<name>
  <value>` per site-key constant;
- `hmtune/core/events.py`: the same constants, per value table `HM_<EVENT>_LABELS`
  and `HM_<EVENT>_KEYS` (value -> label, value -> key), and `VALUES` (event code ->
  its labels, for each event of a value table), `HM_KEY_<name>`.

A malformed row is a ContractError naming the file and line. `--check` writes nothing
and exits 1 when a generated file differs from the tables. tests/py/test_contract.py
checks the same, that no other C or Python file writes an event code as a number, and
that the C enums mirroring a value table take its constants.
"""

from __future__ import annotations

import re
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

TABLE = Path("common/trace_events.tsv")
VALUE_TABLE = Path("common/trace_values.tsv")
KEY_TABLE = Path("common/site_key.tsv")
KEY_COLUMNS = ["name", "value", "meaning"]
C_HEADER = Path("common/hm_events.h")
PY_MODULE = Path("hmtune/core/events.py")
COLUMNS = ["code", "name", "origin", "writer", "meaning"]
ORIGINS = ("extrae", "hmtune")
VALUE_COLUMNS = ["event", "value", "name", "label"]
RESERVED = ("MAX", "VALUES", "LABELS", "KEYS")     # generated next to a table's constants
_NAME = re.compile(r"[A-Z][A-Z0-9_]*\Z")


class ContractError(Exception):
    """A table of the contract is malformed (the message names the file and line)."""


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


@dataclass(frozen=True)
class Value:
    value: int
    name: str          # after HM_<EVENT>_
    label: str         # the .pcf label

    @property
    def key(self) -> str:
        """The value's word in hmtune's files (JSON keys, sites.csv, sampler names)."""
        return self.name.lower()


@dataclass(frozen=True)
class ValueTable:
    events: tuple[Event, ...]      # the first names the constants
    values: tuple[Value, ...]      # in increasing value order

    @property
    def prefix(self) -> str:
        return f"HM_{self.events[0].name}"

    def const(self, v: Value) -> str:
        return f"{self.prefix}_{v.name}"


def _rows(text: str, source: str, columns: list[str]) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of each row after the header; blank and `#` lines skipped."""
    header_seen = False
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if not header_seen:
            if fields != columns:
                raise ContractError(f"{source}:{lineno}: header is {fields}, expected {columns}")
            header_seen = True
            continue
        if len(fields) != len(columns):
            raise ContractError(f"{source}:{lineno}: {len(fields)} fields, expected "
                                f"{len(columns)}")
        yield lineno, fields
    if not header_seen:
        raise ContractError(f"{source}: no header row")


def parse(text: str, source: str = str(TABLE)) -> list[Event]:
    """The table's rows, in order; codes and names unique."""
    events: list[Event] = []
    codes: dict[int, int] = {}
    names: dict[str, int] = {}
    for lineno, fields in _rows(text, source, COLUMNS):
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
    return events


def parse_values(text: str, events: list[Event],
                 source: str = str(VALUE_TABLE)) -> list[ValueTable]:
    """The value tables, in the order of their first rows; each row's events known,
    values increasing and names unique within a table, constants unique overall."""
    by_name = {e.name: e for e in events}
    # first event -> (the table's events, its values, its first line)
    tables: dict[str, tuple[tuple[Event, ...], list[Value], int]] = {}
    owner: dict[str, int] = {}          # event -> the line that gave it values
    consts: dict[str, int] = {}         # constant -> its line
    for lineno, (event_text, value_text, name, label) in _rows(text, source, VALUE_COLUMNS):
        where = f"{source}:{lineno}"
        names = event_text.split(",")
        for n in names:
            if n not in by_name:
                raise ContractError(f"{where}: unknown event {n!r} (not a name in {TABLE})")
        if not value_text.isdigit():
            raise ContractError(f"{where}: value {value_text!r} is not a number")
        if not _NAME.match(name):
            raise ContractError(f"{where}: name {name!r} is not UPPER_CASE")
        if name in RESERVED:
            raise ContractError(f"{where}: name {name} is reserved ({', '.join(RESERVED)} "
                                "are generated)")
        if not label.strip() or label != label.strip():
            raise ContractError(f"{where}: label {label!r} is empty or has outer spaces")
        first, value = names[0], int(value_text)
        if first not in tables:
            for n in names:
                if n in owner:
                    raise ContractError(f"{where}: event {n} already has values (line "
                                        f"{owner[n]})")
                owner[n] = lineno
            tables[first] = (tuple(by_name[n] for n in names), [], lineno)
        evs, values, line0 = tables[first]
        if [e.name for e in evs] != names:
            raise ContractError(f"{where}: events {event_text}, but line {line0} gives this "
                                f"table {','.join(e.name for e in evs)}")
        for v in values:
            if v.value == value:
                raise ContractError(f"{where}: value {value} of {first} already on line "
                                    f"{consts[f'HM_{first}_{v.name}']}")
            if v.name == name:
                raise ContractError(f"{where}: name {name} of {first} already on line "
                                    f"{consts[f'HM_{first}_{v.name}']}")
        if values and value < values[-1].value:
            raise ContractError(f"{where}: value {value} after {values[-1].value}: a "
                                "table's values go in increasing order")
        const = f"HM_{first}_{name}"
        if const in consts:
            raise ContractError(f"{where}: constant {const} already on line {consts[const]}")
        consts[const] = lineno
        values.append(Value(value, name, label))
    out = [ValueTable(evs, tuple(values)) for evs, values, _ in tables.values()]
    taken = {f"{t.prefix}_{r}" for t in out for r in RESERVED}
    clash = sorted(taken & consts.keys())
    if clash:
        raise ContractError(f"{source}:{consts[clash[0]]}: constant {clash[0]} is generated "
                            "for another table")
    return out


@dataclass(frozen=True)
class KeyConst:
    """A constant of the site-key grammar (common/site_key.tsv)."""
    name: str           # without the HM_KEY_ prefix
    value: int | str
    meaning: str

    @property
    def const(self) -> str:
        return f"HM_KEY_{self.name}"

    @property
    def literal(self) -> str:
        return _quoted(self.value) if isinstance(self.value, str) else str(self.value)


def parse_key(text: str, source: str = str(KEY_TABLE)) -> list[KeyConst]:
    """The site-key table's rows, in order; names unique."""
    out: list[KeyConst] = []
    seen: dict[str, int] = {}
    for lineno, (name, value, meaning) in _rows(text, source, KEY_COLUMNS):
        if not _NAME.match(name):
            raise ContractError(f"{source}:{lineno}: name {name!r} is not UPPER_CASE")
        if name in seen:
            raise ContractError(f"{source}:{lineno}: name {name} already on line {seen[name]}")
        seen[name] = lineno
        if value.isdigit():
            out.append(KeyConst(name, int(value), meaning))
        elif (len(value) >= 3 and value[0] == value[-1] == '"'
              and not any(c in value[1:-1] for c in '"\\')):
            out.append(KeyConst(name, value[1:-1], meaning))
        else:
            raise ContractError(f"{source}:{lineno}: value {value!r} is neither a number nor "
                                "a non-empty string in double quotes")
    return out


def _banner(prefix: str) -> list[str]:
    return [f"{prefix}Generated from {TABLE}, {VALUE_TABLE} and {KEY_TABLE}",
            f"{prefix}by `python -m hmtune.core.contract` (make contract); do not edit.",
            f"{prefix}The tables say what each code and value means."]


def _quoted(text: str) -> str:
    """A C or Python string literal of text."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _for_events(t: ValueTable) -> str:
    return ", ".join(f"{e.const} ({e.code})" for e in t.events)


def render_c(events: list[Event], tables: list[ValueTable], key: list[KeyConst]) -> str:
    width = max(len(e.const) for e in events)
    lines = ["/* hm_events.h — the Paraver event types of the trace contract and the values",
             " * of the enumerated ones.",
             *_banner(" * "), " */",
             "#ifndef HM_EVENTS_H", "#define HM_EVENTS_H", ""]
    for e in events:
        lines.append(f"#define {e.const:<{width}} {e.code}  /* {e.origin}: {e.meaning} */")
    lines += ["",
              "/* The code as a string literal: \"6    \" HM_EV_STR(HM_EV_CALL) \"    ...\". */",
              "#define HM_EV_STR_(x) #x",
              "#define HM_EV_STR(x) HM_EV_STR_(x)",
              "",
              f"/* Values ({VALUE_TABLE}): per table HM_<EVENT>_<NAME>, HM_<EVENT>_MAX",
              " * (the largest value) and the X-macro HM_<EVENT>_VALUES(X):",
              " * X(HM_<EVENT>_<NAME>, \"key\", \"label\") per value in increasing order (the",
              " * key: the name in lower case; the label: the .pcf's). */"]
    for t in tables:
        w = max(len(t.const(v)) for v in t.values)
        lines += ["", *textwrap.wrap(f"/* values of {_for_events(t)} */", 92,
                                     subsequent_indent=" * ")]
        lines += [f"#define {t.const(v):<{w}} {v.value}" for v in t.values]
        lines.append(f"#define {t.prefix + '_MAX':<{w}} {max(v.value for v in t.values)}")
        lines.append(f"#define {t.prefix}_VALUES(X) \\")
        rows = [f"    X({t.const(v)}, {_quoted(v.key)}, {_quoted(v.label)})" for v in t.values]
        lines += [r + " \\" for r in rows[:-1]] + [rows[-1]]
    if key:
        w = max(len(k.const) for k in key)
        lines += ["", f"/* The site key's grammar ({KEY_TABLE}). */"]
        lines += [f"#define {k.const:<{w}} {k.literal}  /* {k.meaning} */" for k in key]
    lines += ["", "#endif", ""]
    return "\n".join(lines)


def render_py(events: list[Event], tables: list[ValueTable], key: list[KeyConst]) -> str:
    lines = ['"""The Paraver event types of the trace contract and the values of the enumerated',
             'ones (docs/formats.md §3).', "",
             *_banner(""), '"""', "",
             "from typing import Final", ""]
    for e in events:
        lines += textwrap.wrap(f"{e.origin}: {e.meaning}", 96, initial_indent="# ",
                               subsequent_indent="#   ")
        lines.append(f"{e.const}: Final = {e.code}")
    lines += ["",
              "ALL: Final[dict[str, int]] = {",
              *(f'    "{e.const}": {e.const},' for e in events),
              "}", '"""Every event type above by name."""']
    for t in tables:
        lines += ["", "", *textwrap.wrap(f"-- values of {_for_events(t)}", 92,
                                         initial_indent="# ", subsequent_indent="#   "), ""]
        lines += [f"{t.const(v)}: Final = {v.value}" for v in t.values]
        for what, attr in (("LABELS", "label"), ("KEYS", "key")):
            lines.append(f"{t.prefix}_{what}: Final[dict[int, str]] = {{")
            lines += [f"    {t.const(v)}: {_quoted(getattr(v, attr))}," for v in t.values]
            lines.append("}")
        lines.append(f'"""{t.prefix}_LABELS: value -> .pcf label; {t.prefix}_KEYS: value -> '
                     'key."""')
    if key:
        lines += ["", "", f"# -- the site key's grammar ({KEY_TABLE})", ""]
        for k in key:
            lines += textwrap.wrap(k.meaning, 96, initial_indent="# ",
                                   subsequent_indent="#   ")
            lines.append(f"{k.const}: Final = {k.literal}")
    lines += ["", "",
              "VALUES: Final[dict[int, dict[int, str]]] = {",
              *(f"    {e.const}: {t.prefix}_LABELS," for t in tables for e in t.events),
              "}", '"""The labels of each enumerated event type\'s values, by its code."""', ""]
    return "\n".join(lines)


def outputs(root: Path) -> dict[Path, str]:
    """The generated files' paths (under root) and their contents."""
    events = parse((root / TABLE).read_text(), str(TABLE))
    tables = parse_values((root / VALUE_TABLE).read_text(), events, str(VALUE_TABLE))
    key = parse_key((root / KEY_TABLE).read_text(), str(KEY_TABLE))
    return {root / C_HEADER: render_c(events, tables, key),
            root / PY_MODULE: render_py(events, tables, key)}


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
