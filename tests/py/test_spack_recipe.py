"""packaging/spack/package.py without Spack (none can be installed here): the recipe is
loaded the way each Spack generation reads it, against a stand-in for the part of
`spack.package` it uses, which records the directives and runs `make` in the checkout
the way Spack's MakefilePackage runs it in the stage.

- Spack 0.22/0.23: `from spack.package import *` is put in front of the recipe's text
  (so a `from __future__` import breaks it), spack.package exports MakefilePackage but
  no Prefix or Spec (so evaluated annotations naming them break it);
- Spack 1.x: the text as it is, MakefilePackage from spack_repo.builtin.

Checked: the dependencies the code needs (binutils without +libiberty, PuLP 2.8 with
+highs), the release's version and checksum (`make dist`'s), and an install the way
Spack's build environment makes it (an interpreter that sees the py-* packages only
through PYTHONPATH) whose hmtune runs in a clean environment; with +highs and a PuLP
without pulp.HiGHS the install fails, saying why. Spack's concretizer, fetcher and build
environment are not exercised (packaging/spack/README.md)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace

import numpy
import pytest

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "packaging" / "spack" / "package.py"
SPACK0_PREFIX = "from spack.package import *\n"
BUILT = (ROOT / "build" / "lib" / "libhmalloc.so").exists()
pytestmark = pytest.mark.skipif(not RECIPE.exists(), reason="no packaging/spack/package.py: "
                                "a release tarball leaves it out (it names the tarball's sha256)")
Call = tuple[str, tuple, dict]


def pyproject_version() -> str:
    with open(ROOT / "pyproject.toml", "rb") as fh:
        return str(tomllib.load(fh)["project"]["version"])


class Prefix(str):
    """Spack's Prefix: a path whose attributes are its subdirectories."""

    def __getattr__(self, name: str) -> Prefix:
        return Prefix(os.path.join(self, name))


class InstallError(Exception):
    pass


class Executable:
    """Spack's Executable, as far as the recipe uses it."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __call__(self, *args: str, output: object = None,
                 env: dict[str, str] | None = None) -> str | None:
        r = subprocess.run([self.path, *args], capture_output=True, text=True, env=env)
        if r.returncode != 0:
            raise InstallError(f"{self.path} {args}: {r.stderr}")
        return r.stdout if output is str else None


def make_env() -> dict[str, str]:
    """The environment `make` gets: this one without an enclosing make's flags."""
    return {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}


def stand_in(generation: int, calls: list[Call],
             make_env_of: Callable[[], dict[str, str]] = make_env) -> dict[str, object]:
    """The names `from spack.package import *` gives a recipe in Spack `generation`
    (0 or 1); directives are recorded in `calls`."""
    def directive(name: str) -> Callable[..., None]:
        def record(*args: object, **kw: object) -> None:
            calls.append((name, args, kw))
        return record

    def make(*args: str) -> None:
        subprocess.run(["make", "-C", str(ROOT), "--no-print-directory", *args], check=True,
                       env=make_env_of(), capture_output=True)

    names: dict[str, object] = {
        **{d: directive(d) for d in ("version", "variant", "depends_on", "extends")},
        "make": make, "run_after": lambda *phases: (lambda f: f),
        "Executable": Executable, "InstallError": InstallError, "join_path": os.path.join}
    if generation == 0:
        names["MakefilePackage"] = type("MakefilePackage", (), {})
    return names


def load(generation: int, calls: list[Call] | None = None,
         make_env_of: Callable[[], dict[str, str]] = make_env, text: str | None = None
         ) -> type:
    """The recipe's class, loaded as Spack `generation` loads it."""
    calls = [] if calls is None else calls
    pkg = types.ModuleType("spack.package")
    names = stand_in(generation, calls, make_env_of)
    for k, v in names.items():
        setattr(pkg, k, v)
    pkg.__all__ = list(names)                                   # type: ignore[attr-defined]
    mods = {"spack": types.ModuleType("spack"), "spack.package": pkg}
    if generation == 1:
        makefile = types.ModuleType("spack_repo.builtin.build_systems.makefile")
        makefile.MakefilePackage = type("MakefilePackage", (), {})  # type: ignore[attr-defined]
        for name in ("spack_repo", "spack_repo.builtin", "spack_repo.builtin.build_systems"):
            mods[name] = types.ModuleType(name)
        mods[makefile.__name__] = makefile
    saved = {k: sys.modules.get(k) for k in mods}
    sys.modules.update(mods)
    try:
        source = RECIPE.read_text() if text is None else text
        if generation == 0:
            source = SPACK0_PREFIX + source
        module: dict[str, object] = {"__name__": "spack.pkg.builtin.hmtune"}
        # dont_inherit: not this file's __future__ import (Spack's loader has none)
        exec(compile(source, str(RECIPE), "exec", dont_inherit=True), module)
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    return module["Hmtune"]                                     # type: ignore[return-value]


@pytest.mark.parametrize("generation", [0, 1])
def test_loads_on_every_spack_generation(generation: int) -> None:
    recipe = load(generation)
    assert recipe.__name__ == "Hmtune"


def test_spack0_loading_catches_what_broke_it() -> None:
    """The harness fails the recipe as Spack 0.x did: a __future__ import after the
    prepended line, and annotations naming what spack.package does not export."""
    text = RECIPE.read_text()
    with pytest.raises(SyntaxError, match="from __future__ imports must occur"):
        load(0, text="from __future__ import annotations\n" + text)
    unquoted = text.replace('spec: "Spec", prefix: "Prefix"', "spec: Spec, prefix: Prefix")
    assert unquoted != text
    with pytest.raises(NameError, match="Spec"):
        load(0, text=unquoted)


def test_declared_dependencies() -> None:
    calls: list[Call] = []
    load(1, calls)
    deps = {(args[0], kw.get("when")) for name, args, kw in calls if name == "depends_on"}
    # what the C side links and the Python side imports (requirements.txt)
    assert {("libunwind", None), ("capstone", None), ("zlib-api", None), ("binutils", None),
            ("py-numpy", None), ("py-pandas", None), ("py-pulp", None),
            ("py-matplotlib", None), ("python@3.11:", None)} <= deps
    assert not [d for d, _ in deps if "libiberty" in d]          # only libbfd is linked
    assert ("py-pulp@2.8:", "+highs") in deps and ("py-highspy", "+highs") in deps
    variants = {args[0]: kw for name, args, kw in calls if name == "variant"}
    assert variants["highs"]["default"] is False and variants["memkind"]["default"] is True


def test_release_version_and_checksum(tmp_path: Path) -> None:
    """The recipe's one version is pyproject.toml's, with a sha256 and a url naming the
    release tarball. Whether that sha256 is the one `make dist` gives for this tree is
    `make check-packaging`'s check (every change to a shipped file changes the tarball:
    `make dist-record` writes the new checksum when a release is cut), not make test's."""
    calls: list[Call] = []
    recipe = load(1, calls)
    versions = [(args, kw) for name, args, kw in calls if name == "version"]
    v = pyproject_version()
    assert [args for args, _ in versions] == [(v,)]
    assert recipe.url.endswith(f"/hmtune-{v}.tar.gz") and f"v{v}" in recipe.url
    assert re.fullmatch(r"[0-9a-f]{64}", versions[0][1]["sha256"])


@pytest.fixture(scope="module")
def spack_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What Spack's python (its python-venv) looks like: none of the py-* packages on
    its own path; the build environment's PYTHONPATH gives them."""
    d = tmp_path_factory.mktemp("spack-python") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(d)], check=True)
    return d / "bin" / "python"


class Spec(dict):
    """Spack's concrete spec, as far as the recipe uses it."""

    def __init__(self, python: Path, *variants: str) -> None:
        super().__init__(python=SimpleNamespace(command=SimpleNamespace(path=str(python))))
        self.version = pyproject_version()
        self.variants = variants

    def satisfies(self, s: str) -> bool:
        return s in self.variants


def install(tmp_path: Path, python: Path, pythonpath: str, *variants: str) -> Iterator[object]:
    recipe = load(1, make_env_of=lambda: make_env() | {"PYTHONPATH": pythonpath})
    prefix = Prefix(tmp_path / "prefix")
    spec = Spec(python, *variants)
    pkg = recipe()
    pkg.spec, pkg.prefix = spec, prefix
    pkg.build(spec, prefix)
    pkg.install(spec, prefix)
    yield pkg
    pkg.check_clean_environment()


@pytest.mark.skipif(not BUILT, reason="hmtune is not built (make)")
def test_install_runs_without_spack_load(tmp_path: Path, spack_python: Path) -> None:
    site = str(Path(numpy.__file__).resolve().parents[1])
    steps = install(tmp_path, spack_python, site, "+highs")
    pkg = next(steps)
    prefix = Path(pkg.prefix)
    for f in pkg.sanity_check_is_file:
        assert (prefix / f).is_file(), f
    for d in pkg.sanity_check_is_dir:
        assert (prefix / d).is_dir(), d
    next(steps, None)               # the post-install check: --version in a clean env, HiGHS
    path: list[str] = []
    pkg.setup_run_environment(SimpleNamespace(
        prepend_path=lambda var, value: path.append(f"{var}={value}")))
    assert path == [f"PATH={prefix / 'bin'}"]
    r = subprocess.run([str(prefix / "bin" / "hmtune"), "--help"], capture_output=True,
                       text=True, cwd=tmp_path, env={"PATH": "/usr/bin:/bin"})
    assert r.returncode == 0 and "explore" in r.stdout


@pytest.mark.skipif(not BUILT, reason="hmtune is not built (make)")
def test_highs_with_an_old_pulp_fails_the_install(tmp_path: Path, spack_python: Path) -> None:
    """+highs with PuLP 2.6.0 (no pulp.HiGHS), as Spack's 2025.11 repository gave it:
    the install stops and says why, instead of an advisor that never uses HiGHS."""
    old = tmp_path / "old-pulp"
    (old / "pulp").mkdir(parents=True)
    (old / "pulp" / "__init__.py").write_text(
        '__version__ = "2.6.0"\n\n\nclass PULP_CBC_CMD:\n    def __init__(self, msg=False):\n'
        "        pass\n\n    def available(self):\n        return True\n")
    site = str(Path(numpy.__file__).resolve().parents[1])
    steps = install(tmp_path, spack_python, f"{old}:{site}", "+highs")
    next(steps)
    with pytest.raises(InstallError, match=r"\+highs: .*PuLP 2\.6\.0 has no HiGHS interface"):
        next(steps, None)
