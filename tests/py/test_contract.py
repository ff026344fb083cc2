"""The trace contract (common/trace_events.tsv, common/trace_values.tsv) against the
C and Python sides.

- the tables parse: header, unique codes and names; each value row's event known, its
  value a number, unique and increasing in its table, its name UPPER_CASE and unique;
  a malformed row is refused with a message naming its line;
- regenerating from them gives exactly the committed common/hm_events.h and
  hmtune/core/events.py; each code and value is in both under its name, and a C
  program built on the header prints every value table's rows as the table has them;
- the C enums that mirror a value table (the hot path's enum hmr_kind, hms_level,
  hms_why, hmr_src; finalize's fin_class, fin_rule) take its constants, cover it, and
  give no other enumerator one of its values as a number;
- no C or Python file outside the generated ones and the tests spells an event code as
  a number in its code (comments and docstrings may name them): a new literal fails
  here, and the fix is the HM_EV_* constant. Values are small numbers found everywhere,
  so they cannot be checked that way; instead no such file writes a value's .pcf label
  (one that is not a single word) or a .pcf VALUES line ("N label") in a string.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from hmtune.core import contract, events

ROOT = Path(__file__).resolve().parents[2]
SKIP_DIRS = {".venv", "build", ".git", "tests", "__pycache__", "node_modules"}
GENERATED = {ROOT / contract.C_HEADER, ROOT / contract.PY_MODULE}


def table() -> list[contract.Event]:
    return contract.parse((ROOT / contract.TABLE).read_text())


def value_tables() -> list[contract.ValueTable]:
    return contract.parse_values((ROOT / contract.VALUE_TABLE).read_text(), table())


def test_table_codes_and_names_unique() -> None:
    rows = table()
    assert rows, "the table declares no event type"
    codes = [e.code for e in rows]
    names = [e.name for e in rows]
    assert len(set(codes)) == len(codes)
    assert len(set(names)) == len(names)
    for e in rows:
        assert 10_000_000 <= e.code <= 99_999_999, e
        # ours are 41000000+; Extrae's are below, but for its counters' (41999999 the
        # active set, 42000000+ PAPI's counts)
        assert e.origin == "hmtune" or not 41_000_000 <= e.code < 41_999_999, e
        assert e.origin == "extrae" or e.code >= 41_000_000, e


def test_parse_refuses_duplicates() -> None:
    head = "\t".join(contract.COLUMNS) + "\n"
    row = "41000000\tA\thmtune\tfinalize\tx\n"
    with pytest.raises(contract.ContractError, match=r"code 41000000 already on line 2"):
        contract.parse(head + row + row.replace("\tA\t", "\tB\t"))
    with pytest.raises(contract.ContractError, match="name A already"):
        contract.parse(head + row + row.replace("41000000", "41000001"))
    with pytest.raises(contract.ContractError, match="header"):
        contract.parse(row)


# -- the value tables ------------------------------------------------------------------

def test_value_tables() -> None:
    tables = value_tables()
    assert tables, "the value table declares nothing"
    by_event = {e.name: t for t in tables for e in t.events}
    assert len(by_event) == sum(len(t.events) for t in tables)      # an event in one table
    assert by_event["FAULT_CLASS"] is by_event["SAMPLE_CLASS"]      # shared, declared once
    for t in tables:
        values = [v.value for v in t.values]
        assert values == sorted(set(values)), t.prefix
        assert len({v.name for v in t.values}) == len(values), t.prefix


VHEAD = "\t".join(contract.VALUE_COLUMNS) + "\n"
VROW = "CALL_KIND\t1\tMALLOC\tmalloc()\n"


def _bad_values(text: str, match: str) -> None:
    with pytest.raises(contract.ContractError, match=match) as err:
        contract.parse_values(VHEAD + text, table(), "v.tsv")
    assert "\n" not in str(err.value)                       # one line


def test_values_parse_a_good_row() -> None:
    [t] = contract.parse_values(VHEAD + VROW, table(), "v.tsv")
    assert t.prefix == "HM_CALL_KIND" and t.values[0].key == "malloc"


def test_values_refuse_an_unknown_event() -> None:
    _bad_values(VROW + "NO_SUCH\t1\tX\tx\n", r"v\.tsv:3: unknown event 'NO_SUCH'")
    _bad_values("SAMPLE_CLASS,NOPE\t1\tX\tx\n", r"v\.tsv:2: unknown event 'NOPE'")


def test_values_refuse_a_duplicate_value() -> None:
    _bad_values(VROW + "CALL_KIND\t1\tFREE\tfree()\n",
                r"v\.tsv:3: value 1 of CALL_KIND already on line 2")


def test_values_refuse_a_duplicate_name() -> None:
    _bad_values(VROW + "CALL_KIND\t2\tMALLOC\tfree()\n",
                r"v\.tsv:3: name MALLOC of CALL_KIND already on line 2")


def test_values_refuse_a_value_that_is_no_number() -> None:
    _bad_values("CALL_KIND\tone\tMALLOC\tx\n", r"v\.tsv:2: value 'one' is not a number")
    _bad_values("CALL_KIND\t-1\tMALLOC\tx\n", r"v\.tsv:2: value '-1' is not a number")


def test_values_refuse_a_bad_name() -> None:
    _bad_values("CALL_KIND\t1\tmalloc\tx\n", r"v\.tsv:2: name 'malloc' is not UPPER_CASE")
    _bad_values("CALL_KIND\t1\tMAX\tx\n", r"v\.tsv:2: name MAX is reserved")


def test_values_refuse_other_malformed_rows() -> None:
    _bad_values("CALL_KIND\t1\tMALLOC\n", r"v\.tsv:2: 3 fields, expected 4")
    _bad_values("CALL_KIND\t1\tMALLOC\t\n", r"v\.tsv:2: label '' is empty")
    _bad_values("CALL_KIND\t2\tFREE\tx\n" + VROW, r"v\.tsv:3: value 1 after 2")
    _bad_values("SAMPLE_CLASS,FAULT_CLASS\t1\tA\tx\nFAULT_CLASS\t2\tB\ty\n",
                r"v\.tsv:3: event FAULT_CLASS already has values \(line 2\)")
    _bad_values("SAMPLE_CLASS,FAULT_CLASS\t1\tA\tx\nSAMPLE_CLASS\t2\tB\ty\n",
                r"v\.tsv:3: events SAMPLE_CLASS, but line 2 gives this table")
    _bad_values("CALL\t1\tKIND_X\tx\nCALL_KIND\t1\tX\tx\n",
                r"v\.tsv:3: constant HM_CALL_KIND_X already on line 2")
    with pytest.raises(contract.ContractError, match="v.tsv: no header row"):
        contract.parse_values("# nothing\n", table(), "v.tsv")


def test_generated_files_are_current() -> None:
    for path, text in contract.outputs(ROOT).items():
        assert path.read_text() == text, (
            f"{path.relative_to(ROOT)} differs from {contract.TABLE}: run `make contract`")
    assert contract.main(["--check", str(ROOT)]) == 0


def test_every_code_in_header_and_module() -> None:
    header = (ROOT / contract.C_HEADER).read_text()
    defines = {m[1]: int(m[2]) for m in re.finditer(r"^#define (HM_EV_\w+)\s+(\d+)\b",
                                                    header, re.M)}
    rows = table()
    assert defines == {e.const: e.code for e in rows}
    assert events.ALL == {e.const: e.code for e in rows}
    for e in rows:
        assert getattr(events, e.const) == e.code


def test_every_value_in_header_and_module() -> None:
    header = (ROOT / contract.C_HEADER).read_text()
    defines = {m[1]: int(m[2]) for m in re.finditer(r"^#define (HM_\w+)\s+(\d+)\b", header,
                                                    re.M)
               if not m[1].startswith(("HM_EV_", "HM_KEY_"))}   # HM_KEY_: the site key
    tables = value_tables()
    want = {t.const(v): v.value for t in tables for v in t.values}
    want |= {f"{t.prefix}_MAX": max(v.value for v in t.values) for t in tables}
    assert defines == want
    for t in tables:
        assert {v.value: getattr(events, t.const(v)) for v in t.values} == \
            {v.value: v.value for v in t.values}
        assert getattr(events, f"{t.prefix}_LABELS") == {v.value: v.label for v in t.values}
        assert getattr(events, f"{t.prefix}_KEYS") == {v.value: v.key for v in t.values}
        for e in t.events:
            assert events.VALUES[e.code] == {v.value: v.label for v in t.values}
    assert len(events.VALUES) == sum(len(t.events) for t in tables)


def test_c_header_gives_the_value_tables() -> None:
    """Cross-language: a C program built on hm_events.h prints each table through its
    X-macro and its constants; the output is the table's rows."""
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    tables = value_tables()
    body = []
    for t in tables:
        body.append(f'    puts("{t.prefix}");')
        body.append(f"    {t.prefix}_VALUES(ROW)")
        body += [f'    printf("const %d\\n", {t.const(v)});' for v in t.values]
    src = ("#include <stdio.h>\n#include \"hm_events.h\"\n"
           '#define ROW(v, key, label) printf("%d\\t%s\\t%s\\n", (v), (key), (label));\n'
           "int main(void)\n{\n" + "\n".join(body) + "\n    return 0;\n}\n")
    work = Path(os.environ.get("TMPDIR", "/tmp")) / f"hm_values_{os.getpid()}"
    work.mkdir(exist_ok=True)
    try:
        (work / "t.c").write_text(src)
        subprocess.run([cc, "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-I",
                        str(ROOT / "common"), "-o", str(work / "t"), str(work / "t.c")],
                       check=True)
        out = subprocess.run([str(work / "t")], check=True, capture_output=True,
                             text=True).stdout
    finally:
        shutil.rmtree(work, ignore_errors=True)
    want = []
    for t in tables:
        want.append(t.prefix)
        want += [f"{v.value}\t{v.key}\t{v.label}" for v in t.values]
        want += [f"const {v.value}" for v in t.values]
    assert out.splitlines() == want


# -- no literal outside the contract --------------------------------------------------

def _c_code(text: str) -> str:
    """C text without its comments (string and character literals kept)."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
            out.append(" ")
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text[i] in "\"'":
            q, j = text[i], i + 1
            while j < n and text[j] != q:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _py_code_hits(text: str, codes: set[int], pattern: re.Pattern[str]) -> list[int]:
    """Line numbers where Python code (not comments, not docstrings) has a code:
    an int constant, or a string constant (f-strings too) holding its digits."""
    tree = ast.parse(text)
    docstrings: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef
                      | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value,
                                                                     ast.Constant):
                docstrings.add(id(body[0].value))
        # attribute docstrings: a string statement after an assignment
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(node, field, None)
            if isinstance(stmts, list):
                for prev, stmt in zip(stmts, stmts[1:], strict=False):
                    if (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
                            and isinstance(prev, ast.Assign | ast.AnnAssign)):
                        docstrings.add(id(stmt.value))
    hits = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or id(node) in docstrings:
            continue
        v = node.value
        if (isinstance(v, int) and not isinstance(v, bool) and v in codes) or (
                isinstance(v, str) and pattern.search(v)):
            hits.append(node.lineno)
    return sorted(set(hits))


def _sources() -> list[Path]:
    found = []
    for dirpath, dirnames, filenames in os.walk(ROOT):
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
        for f in filenames:
            path = Path(dirpath, f)
            if path.suffix in (".c", ".h", ".py") and path not in GENERATED:
                found.append(path)
    return sorted(found)


def test_no_event_code_literal_outside_the_contract() -> None:
    rows = table()
    codes = {e.code for e in rows}
    pattern = re.compile(r"(?<![0-9])(" + "|".join(str(c) for c in sorted(codes))
                         + r")(?![0-9])")
    name = {e.code: e.const for e in rows}
    bad: list[str] = []
    for path in _sources():
        text = path.read_text(errors="replace")
        rel = path.relative_to(ROOT)
        if path.suffix == ".py":
            for lineno in _py_code_hits(text, codes, pattern):
                bad.append(f"{rel}:{lineno}")
        else:
            code = _c_code(text)
            for m in pattern.finditer(code):
                bad.append(f"{rel}: {m[1]} (use {name[int(m[1])]})")
    assert not bad, "event-code literals outside common/trace_events.tsv:\n" + "\n".join(bad)


def test_scanner_sees_literals() -> None:
    """The scan above is not vacuous: it finds a literal in code, not in comments."""
    codes = {events.HM_EV_CALL}
    pattern = re.compile(str(events.HM_EV_CALL))
    py = ('"""doc 40000040"""\nX = 40000040  # 40000040\nY = f"type {Z} 40000040"\n'
          'def f():\n    """40000040"""\n')
    assert _py_code_hits(py, codes, pattern) == [2, 3]
    c = '/* 40000040 */ int x = 1; // 40000040\nputs("40000040");\n'
    assert pattern.findall(_c_code(c)) == ["40000040"]


# -- C enums mirroring a value table ----------------------------------------------------

# (file, enum tag, the table's first event, names of the table the enum leaves out)
MIRRORS = [
    ("collect/hmc_stream.h", "hmr_kind", "CALL_KIND", {"END"}),
    ("collect/hmc_stream.h", "hms_level", "SAMPLE_LEVEL", set()),
    ("collect/hmc_stream.h", "hms_why", "SAMPLE_WHY", set()),
    ("collect/hmc_stream.h", "hmr_src", "SAMPLER", set()),
    ("collect/finalize/fin.h", "fin_class", "SAMPLE_CLASS", set()),
    ("collect/finalize/fin.h", "fin_rule", "SAMPLE_RECOVERED", set()),
]


def _enum(text: str, tag: str) -> list[tuple[str, str]] | None:
    """The enumerators of `enum tag { ... }` in C text: (name, initializer or "")."""
    m = re.search(r"\benum\s+" + tag + r"\s*\{(.*?)\}", _c_code(text), re.S)
    if m is None:
        return None
    items = []
    for part in m[1].split(","):
        name, _, expr = part.partition("=")
        if name.strip():
            items.append((name.strip(), " ".join(expr.split())))
    return items


def mirror_problems(text: str, tag: str, t: contract.ValueTable, omit: set[str]) -> list[str]:
    """What keeps enum tag from mirroring table t: an enumerator set to a constant of
    another table, or to one of t's values as a number; a value of t (but omit) that
    no enumerator takes, or that two take."""
    items = _enum(text, tag)
    if items is None:
        return [f"no enum {tag}"]
    consts = {t.const(v): v for v in t.values}
    taken: dict[str, list[str]] = {}
    bad = []
    for name, expr in items:
        if expr in consts:
            taken.setdefault(expr, []).append(name)
        elif re.fullmatch(r"HM_[A-Z0-9_]+", expr) and not expr.startswith(t.prefix + "_"):
            bad.append(f"{name} = {expr}: not a constant of {t.prefix}")
        elif re.fullmatch(r"\d+|0x[0-9a-fA-F]+", expr):
            hit = [c for c, v in consts.items() if v.value == int(expr, 0)]
            if hit:
                bad.append(f"{name} = {expr}: write {hit[0]}")
    for c, v in consts.items():
        if v.name not in omit and len(taken.get(c, [])) != 1:
            bad.append(f"{c}: taken by {taken.get(c, [])}, expected one enumerator")
    return bad


@pytest.mark.parametrize("path,tag,event,omit", MIRRORS)
def test_c_enum_mirrors_its_table(path: str, tag: str, event: str, omit: set[str]) -> None:
    [t] = [t for t in value_tables() if t.events[0].name == event]
    assert mirror_problems((ROOT / path).read_text(), tag, t, omit) == []


def test_mirror_check_sees_drift() -> None:
    """The check above is not vacuous: a number, a missing value, another table's
    constant each fail it."""
    [t] = [t for t in value_tables() if t.events[0].name == "SAMPLE_HIT"]
    good = ("enum h { H_U = HM_SAMPLE_HIT_UNKNOWN, H_HIT = HM_SAMPLE_HIT_HIT, "
            "H_MISS = HM_SAMPLE_HIT_MISS, H_N };")
    assert mirror_problems(good, "h", t, set()) == []
    assert mirror_problems(good.replace("HM_SAMPLE_HIT_MISS", "2"), "h", t, set()) == [
        "H_MISS = 2: write HM_SAMPLE_HIT_MISS",
        "HM_SAMPLE_HIT_MISS: taken by [], expected one enumerator"]
    assert mirror_problems(good.replace("HM_SAMPLE_HIT_MISS", "HM_SAMPLER_IBS"), "h", t,
                           set())[0] == "H_MISS = HM_SAMPLER_IBS: not a constant of HM_SAMPLE_HIT"
    assert mirror_problems(good, "nope", t, set()) == ["no enum nope"]


# -- no value label outside the contract ------------------------------------------------

def _label_checks() -> tuple[dict[str, str], list[tuple[re.Pattern[str], re.Pattern[str], str]]]:
    """Labels that are more than one word (label -> constant), and per value a pattern
    of its .pcf VALUES line in C text (\\n escaped) and in Python text (a newline)."""
    labels: dict[str, str] = {}
    lines = []
    for t in value_tables():
        for v in t.values:
            if len(v.label) >= 4 and not v.label.isalnum():
                labels.setdefault(v.label, t.const(v))
            line = rf"{v.value}[ \t]+{re.escape(v.label)}"
            lines.append((re.compile(r"(?:^|\\n)" + line + r"\\n"),
                          re.compile(r"(?:^|\n)" + line + r"\n"), t.const(v)))
    return labels, lines


def _literal_problems(strings: list[str], c_text: bool) -> list[str]:
    labels, lines = _label_checks()
    bad = []
    for s in strings:
        if s in labels:
            bad.append(f"{s!r} (the label of {labels[s]})")
            continue
        hit = [const for c_pat, py_pat, const in lines if (c_pat if c_text else py_pat).search(s)]
        if hit:
            bad.append(f"{s[:40]!r}... (a VALUES line of {hit[0]})")
    return bad


def _c_strings(text: str) -> list[str]:
    return re.findall(r'"((?:[^"\\\n]|\\.)*)"', _c_code(text))


def _py_strings(text: str) -> list[str]:
    tree = ast.parse(text)
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and n.body and isinstance(n.body[0], ast.Expr)
            and isinstance(n.body[0].value, ast.Constant)}
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
            and isinstance(n.value, str) and id(n) not in docs]


def test_no_value_label_outside_the_contract() -> None:
    bad = []
    for path in _sources():
        text = path.read_text(errors="replace")
        c_text = path.suffix != ".py"
        strings = _c_strings(text) if c_text else _py_strings(text)
        bad += [f"{path.relative_to(ROOT)}: {p}" for p in _literal_problems(strings, c_text)]
    assert not bad, ("value labels written outside common/trace_values.tsv (use the "
                     "generated tables):\n" + "\n".join(bad))


def test_label_scan_sees_literals() -> None:
    """The scan above is not vacuous: it finds an array of labels and a VALUES block in C
    and Python, not in comments."""
    c = ('/* "Line fill buffer" */ static const char *k[] = { "End", "malloc()" };\n'
         'fputs("VALUES\\n0 Unknown\\n1 Hit\\n2 Miss\\n", f);\n')
    assert _literal_problems(_c_strings(c), True) == [
        "'malloc()' (the label of HM_CALL_MALLOC)",
        "'VALUES\\\\n0 Unknown\\\\n1 Hit\\\\n2 Miss\\\\n'... (a VALUES line of "
        "HM_SAMPLE_LEVEL_UNKNOWN)"]
    py = '"""Traced heap object"""\nX = {1: "Traced heap object"}\nY = "0 None\\n1 PEBS\\n"\n'
    assert sorted(_literal_problems(_py_strings(py), False)) == [
        "'0 None\\n1 PEBS\\n'... (a VALUES line of HM_SAMPLER_NONE)",
        "'Traced heap object' (the label of HM_SAMPLE_CLASS_HEAP)"]


# ---- the site key's grammar (common/site_key.tsv) ----

def test_site_key_constants_in_c_and_python() -> None:
    """Every site-key constant is in the generated header and module with its value, the
    Python grammar (hmtune.core.sitekey) is built on them, and a C program built on
    hm_events.h prints the same values and a frame made of them."""
    key = contract.parse_key((ROOT / contract.KEY_TABLE).read_text())
    assert {k.name for k in key} >= {"SEP", "OFFSET", "UNKNOWN", "MAX_FRAMES", "OFFSET_BITS"}
    for k in key:
        assert getattr(events, k.const) == k.value
    from hmtune.core import sitekey

    assert (sitekey.SEP, sitekey.MAX_FRAMES, sitekey.OFFSET_LIMIT) == \
        (events.HM_KEY_SEP, events.HM_KEY_MAX_FRAMES, 1 << events.HM_KEY_OFFSET_BITS)
    assert sitekey.make_frame("/lib/a.so", 0x1f) == "/lib/a.so" + events.HM_KEY_OFFSET + "1f"
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    body = [f'    printf("{k.const}=%s\\n", {"" if isinstance(k.value, str) else "S"}'
            f"({k.const}));" for k in key]
    src = ("#include <stdio.h>\n#include \"hm_events.h\"\n#define S_(x) #x\n#define S(x) S_(x)\n"
           "int main(void)\n{\n" + "\n".join(body) +
           '\n    printf("frame=%s\\n", "/lib/a.so" HM_KEY_OFFSET "1f" HM_KEY_SEP HM_KEY_UNKNOWN '
           'HM_KEY_OFFSET "2");\n    return 0;\n}\n')
    work = Path(os.environ.get("TMPDIR", "/tmp")) / f"hm_key_{os.getpid()}"
    work.mkdir(exist_ok=True)
    try:
        (work / "t.c").write_text(src)
        subprocess.run([cc, "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-I",
                        str(ROOT / "common"), "-o", str(work / "t"), str(work / "t.c")],
                       check=True)
        out = subprocess.run([str(work / "t")], check=True, capture_output=True,
                             text=True).stdout.splitlines()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    assert out[:-1] == [f"{k.const}={k.value}" for k in key]
    assert out[-1] == "frame=" + sitekey.join(["/lib/a.so+0x1f", "??+0x2"])


@pytest.mark.parametrize("row, match", [
    ("sep\t\" > \"\tx", "not UPPER_CASE"),
    ("SEP\t\" > \"\tx\nSEP\t1\tx", "SEP already on line"),
    ("SEP\t > \tx", "neither a number nor"),
    ("SEP\t\"\"\tx", "neither a number nor"),
    ("SEP\t\"a\\\"b\"\tx", "neither a number nor"),
    ("SEP\t-1\tx", "neither a number nor"),
    ("SEP\t1", "2 fields, expected 3"),
])
def test_site_key_refuses_malformed_rows(row: str, match: str) -> None:
    with pytest.raises(contract.ContractError, match=match) as err:
        contract.parse_key("name\tvalue\tmeaning\n" + row + "\n", "k.tsv")
    assert str(err.value).startswith("k.tsv:")
