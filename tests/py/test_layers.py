"""The Python layers (docs/architecture.md): core (0) < machine (1) < analyze (2) <
advisor (3) < workflows (4).

Checked on the source, not by importing it (ast over every hmtune/**/*.py):
- no module imports a layer above its own, at module level or inside a function;
- hmtune.core imports nothing of hmtune outside hmtune.core, hmtune.machine nothing
  outside hmtune.core and hmtune.machine;
- the floor (core and machine) imports nothing but the standard library (what
  `hmtune machine` and `hmtune run` load stays light: tests/py/test_machine_imports.py
  runs them);
- no import cycle between files through module-level imports (imports inside
  functions and under `if TYPE_CHECKING:` run later or never, so they may close a loop).

`python tests/py/test_layers.py [ROOT]` checks another checkout; a tree from before the
hmtune package (top-level analyze/, advisor/, workflows/) is read with the same layers.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "hmtune"
LAYERS = {"core": 0, "machine": 1, "analyze": 2, "advisor": 3, "workflows": 4}
FLOOR = ("core", "machine")      # the standard library only


@dataclass(frozen=True)
class Edge:
    src: str            # importing module (dotted)
    dst: str            # imported module (dotted), resolved to a file where one exists
    line: int
    top: bool           # executed when src is imported (module level, not TYPE_CHECKING)

    def __str__(self) -> str:
        return f"{self.src} -> {self.dst} (line {self.line}{'' if self.top else ', deferred'})"


def modules(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for the hmtune package or the older top-level layout."""
    if (root / PACKAGE).is_dir():
        bases = [root / PACKAGE]
    else:
        bases = [root / name for name in LAYERS if (root / name / "__init__.py").is_file()]
    out: dict[str, Path] = {}
    for base in bases:
        for f in sorted(base.rglob("*.py")):
            parts = list(f.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = f
    return out


def layer(module: str) -> tuple[str, int] | None:
    """(stage, layer) of a module of ours; None for the stdlib, third parties and
    hmtune/__init__.py."""
    parts = module.split(".")
    if parts[0] == PACKAGE:
        parts = parts[1:]
    if not parts or parts[0] not in LAYERS:
        return None
    return parts[0], LAYERS[parts[0]]


def _type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


@dataclass(frozen=True)
class Stmt:
    node: ast.Import | ast.ImportFrom
    top: bool           # runs when its module is imported (module level, not TYPE_CHECKING)
    runs: bool          # runs at all (not under `if TYPE_CHECKING:`)


def _imports(tree: ast.Module) -> list[Stmt]:
    """Every import statement, with when it runs."""
    found: list[Stmt] = []

    def visit(node: ast.AST, top: bool, runs: bool) -> None:
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(Stmt(node, top, runs))
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            for child in ast.iter_child_nodes(node):
                visit(child, False, runs)
        elif isinstance(node, ast.If) and _type_checking(node):
            for child in node.body:
                visit(child, False, False)
            for child in node.orelse:
                visit(child, top, runs)
        else:
            for child in ast.iter_child_nodes(node):
                visit(child, top, runs)

    visit(tree, True, True)
    return found


def _targets(node: ast.Import | ast.ImportFrom, package: str,
             mods: dict[str, Path]) -> list[str]:
    """What an import statement names, resolved against the package it is in."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:
        anchor = package.split(".")
        anchor = anchor[:len(anchor) - node.level + 1]
        base = ".".join([*anchor, *([base] if base else [])])
    # `from pkg import mod` names the module where it is one.
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]


def _parsed(root: Path) -> list[tuple[str, str, list[Stmt]]]:
    """(module, its package, its imports) for every module of ours."""
    out = []
    for name, path in modules(root).items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        out.append((name, package, _imports(ast.parse(path.read_text(), str(path)))))
    return out


def edges(root: Path) -> list[Edge]:
    mods = modules(root)
    out: list[Edge] = []
    for name, package, imports in _parsed(root):
        for st in imports:
            for t in dict.fromkeys(_targets(st.node, package, mods)):
                while t not in mods and "." in t:   # `import a.b.c` of a function's module
                    t = t.rpartition(".")[0]
                if t in mods and t != name:
                    out.append(Edge(name, t, st.node.lineno, st.top))
    return out


def outside_stdlib(root: Path) -> list[str]:
    """Imports of the floor's modules (FLOOR) of anything but the standard library and
    hmtune, at module level or inside a function (TYPE_CHECKING ones aside: they never
    run)."""
    mods = modules(root)
    bad = []
    for name, package, imports in _parsed(root):
        found = layer(name)
        if found is None or found[0] not in FLOOR:
            continue
        for st in imports:
            if not st.runs or (isinstance(st.node, ast.ImportFrom) and st.node.level):
                continue
            for t in dict.fromkeys(_targets(st.node, package, mods)):
                top_name = t.partition(".")[0]
                if top_name not in (PACKAGE, "__future__", *sys.stdlib_module_names):
                    bad.append(f"{name} -> {t} (line {st.node.lineno})")
    return bad


def upward(es: list[Edge]) -> list[Edge]:
    """Imports of a higher layer, and imports from core of anything else of ours."""
    bad = []
    for e in es:
        src, dst = layer(e.src), layer(e.dst)
        if src is None or dst is None:
            continue
        if dst[1] > src[1] or (src[0] == "core" and dst[0] != "core"):
            bad.append(e)
    return bad


def cycles(es: list[Edge]) -> list[list[Edge]]:
    """A cycle through each group of files linked by module-level imports (one per group
    the search meets; fixing it may reveal another)."""
    graph: dict[str, list[Edge]] = {}
    for e in es:
        if e.top:
            graph.setdefault(e.src, []).append(e)
    found: list[list[Edge]] = []
    done: set[str] = set()

    def visit(node: str, path: list[Edge], on_path: dict[str, int]) -> list[Edge] | None:
        for e in graph.get(node, []):
            if e.dst in on_path:
                return path[on_path[e.dst]:] + [e]
            if e.dst in done:
                continue
            on_path[e.dst] = len(path) + 1
            loop = visit(e.dst, [*path, e], on_path)
            if loop:
                return loop
            del on_path[e.dst]
            done.add(e.dst)
        return None

    for start in sorted(graph):
        if start in done:
            continue
        loop = visit(start, [], {start: 0})
        done.add(start)
        if loop:
            found.append(loop)
            done.update(e.src for e in loop)
    return found


def problems(root: Path) -> list[str]:
    es = edges(root)
    out = [f"imports a higher layer: {e}" for e in upward(es)]
    out += [f"core or machine imports beyond the standard library: {b}"
            for b in outside_stdlib(root)]
    out += ["import cycle: " + "; ".join(str(e) for e in loop) for loop in cycles(es)]
    return out


def test_the_package_is_there() -> None:
    mods = modules(ROOT)
    for stage in LAYERS:
        assert f"{PACKAGE}.{stage}" in mods, f"{PACKAGE}/{stage}/__init__.py is missing"
    assert not any((ROOT / stage / "__init__.py").exists() for stage in LAYERS), \
        "a stage is still a top-level package"


def test_layers_and_cycles() -> None:
    bad = problems(ROOT)
    assert not bad, "\n".join(bad)


def fake_package(root: Path) -> Path:
    """root/hmtune/ with an empty package per layer: what the checker tests fill in."""
    pkg = root / PACKAGE
    for stage in LAYERS:
        (pkg / stage).mkdir(parents=True)
        (pkg / stage / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    return pkg


def test_the_checker_sees_an_upward_import_and_a_cycle(tmp_path: Path) -> None:
    pkg = fake_package(tmp_path)
    (pkg / "core" / "units.py").write_text("def f():\n    from hmtune.advisor import a\n")
    (pkg / "advisor" / "a.py").write_text("from . import b\n")
    (pkg / "advisor" / "b.py").write_text("from hmtune.advisor.a import x\n")
    (pkg / "workflows" / "w.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from hmtune.advisor import a\n")
    bad = problems(tmp_path)
    assert any("hmtune.core.units -> hmtune.advisor.a" in b for b in bad), bad
    assert any(b.startswith("import cycle") and "hmtune.advisor.a -> hmtune.advisor.b" in b
               for b in bad), bad
    assert len(bad) == 2, bad


def test_the_checker_sees_the_floor(tmp_path: Path) -> None:
    pkg = fake_package(tmp_path)
    (pkg / "machine" / "host.py").write_text(
        "from typing import TYPE_CHECKING\nimport os\nfrom hmtune.core import units\n"
        "if TYPE_CHECKING:\n    import pandas\n"
        "def f():\n    import numpy\n    from hmtune.analyze import a\n")
    (pkg / "analyze" / "a.py").write_text("import numpy\nfrom hmtune.machine import host\n")
    (pkg / "core" / "units.py").write_text("")
    bad = problems(tmp_path)
    assert any("hmtune.machine.host -> numpy (line 7)" in b for b in bad), bad
    assert any("higher layer: hmtune.machine.host -> hmtune.analyze.a" in b for b in bad), bad
    assert len(bad) == 2, bad


def test_a_sub_package_is_in_its_package_layer(tmp_path: Path) -> None:
    """hmtune/advisor/solve/ is in the advisor's layer: it may import core, machine,
    analyze and advisor, not workflows, and advisor imports it as its own."""
    assert layer("hmtune.advisor.solve.mip") == ("advisor", LAYERS["advisor"])
    assert "hmtune.advisor.solve.mip" in modules(ROOT)
    pkg = fake_package(tmp_path)
    (pkg / "core" / "units.py").write_text("")
    (pkg / "workflows" / "w.py").write_text("")
    (pkg / "advisor" / "solve").mkdir()
    (pkg / "advisor" / "solve" / "__init__.py").write_text("")
    (pkg / "advisor" / "solve" / "s.py").write_text(
        "from hmtune.core import units\nfrom hmtune.advisor import m\n"
        "def f():\n    from hmtune.workflows import w\n")
    (pkg / "advisor" / "m.py").write_text("def g():\n    from hmtune.advisor.solve import s\n")
    assert problems(tmp_path) == ["imports a higher layer: hmtune.advisor.solve.s -> "
                                  "hmtune.workflows.w (line 4, deferred)"]


if __name__ == "__main__":
    where = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT
    found = problems(where)
    print("\n".join(found) or f"{where}: layers and cycles OK")
    sys.exit(1 if found else 0)
