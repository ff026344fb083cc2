"""packaging/spack/package.py without Spack (none can be installed here): the recipe is
loaded against a stand-in for the part of `spack.package` it uses, which records the
directives and runs `make` in the checkout the way Spack's MakefilePackage runs it in
the stage. Checked: the dependencies it declares, and that its install() produces
every file its own sanity checks name, in a temporary prefix that then runs hmtune."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import types
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "packaging" / "spack" / "package.py"


def load_recipe() -> tuple[type, list[tuple[str, tuple, dict]]]:
    calls: list[tuple[str, tuple, dict]] = []

    def directive(name: str):                                   # type: ignore[no-untyped-def]
        def record(*args: object, **kw: object) -> None:
            calls.append((name, args, kw))
        return record

    def make(*args: str) -> None:
        env = {k: v for k, v in os.environ.items()
               if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
        subprocess.run(["make", "-C", str(ROOT), "--no-print-directory", *args], check=True,
                       env=env, capture_output=True)

    pkg = types.ModuleType("spack.package")
    names = {"version": directive("version"), "variant": directive("variant"),
             "depends_on": directive("depends_on"), "extends": directive("extends"),
             "make": make, "MakefilePackage": type("MakefilePackage", (), {}),
             "Spec": object, "Prefix": object, "EnvironmentModifications": object}
    for k, v in names.items():
        setattr(pkg, k, v)
    pkg.__all__ = list(names)                                   # type: ignore[attr-defined]
    saved = {k: sys.modules.get(k) for k in ("spack", "spack.package")}
    sys.modules["spack"] = types.ModuleType("spack")
    sys.modules["spack.package"] = pkg
    try:
        spec = importlib.util.spec_from_file_location("hmtune_spack_recipe", RECIPE)
        assert spec and spec.loader
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    return mod.Hmtune, calls


def test_declared_dependencies() -> None:
    _, calls = load_recipe()
    deps = {args[0] for name, args, _ in calls if name == "depends_on"}
    # what the C side links and the Python side imports (requirements.txt)
    assert {"libunwind", "capstone", "zlib-api", "py-numpy", "py-pandas", "py-pulp",
            "py-matplotlib"} <= deps
    assert any(d.startswith("python@3.11") for d in deps)
    assert [args[0] for name, args, _ in calls if name == "version"] == ["main"]


@pytest.mark.skipif(not (ROOT / "build" / "lib" / "libhmalloc.so").exists(),
                    reason="hmtune is not built (make)")
def test_install_gives_what_the_sanity_checks_name(tmp_path: Path) -> None:
    recipe, _ = load_recipe()
    prefix = tmp_path / "prefix"
    spec = {"python": SimpleNamespace(command=SimpleNamespace(path=sys.executable))}
    pkg = recipe()
    pkg.build(spec, prefix)
    pkg.install(spec, prefix)
    for f in recipe.sanity_check_is_file:
        assert (prefix / f).is_file(), f
    for d in recipe.sanity_check_is_dir:
        assert (prefix / d).is_dir(), d
    path: list[str] = []
    pkg.prefix = SimpleNamespace(bin=str(prefix / "bin"))
    pkg.setup_run_environment(SimpleNamespace(
        prepend_path=lambda var, value: path.append(f"{var}={value}")))
    assert path == [f"PATH={prefix / 'bin'}"]
    r = subprocess.run([str(prefix / "bin" / "hmtune"), "--help"], capture_output=True,
                       text=True, cwd=tmp_path)
    assert r.returncode == 0 and "explore" in r.stdout
