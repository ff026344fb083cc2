"""The trace contract (common/trace_events.tsv) against the C and Python sides.

- the table parses: header, unique codes and names;
- regenerating from it gives exactly the committed common/hm_events.h and
  hmtune/core/events.py, and each code is in both under its name;
- no C or Python file outside the generated ones and the tests spells a code of the
  table as a number in its code (comments and docstrings may name them): a new
  literal fails here, and the fix is the HM_EV_* constant.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

import pytest

from hmtune.core import contract, events

ROOT = Path(__file__).resolve().parents[2]
SKIP_DIRS = {".venv", "build", ".git", "tests", "__pycache__", "node_modules"}
GENERATED = {ROOT / contract.C_HEADER, ROOT / contract.PY_MODULE}


def table() -> list[contract.Event]:
    return contract.parse((ROOT / contract.TABLE).read_text())


def test_table_codes_and_names_unique() -> None:
    rows = table()
    assert rows, "the table declares no event type"
    codes = [e.code for e in rows]
    names = [e.name for e in rows]
    assert len(set(codes)) == len(codes)
    assert len(set(names)) == len(names)
    for e in rows:
        assert 10_000_000 <= e.code <= 99_999_999, e
        assert e.origin == "hmtune" or e.code < 41_000_000, e   # ours are 41000000+
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
