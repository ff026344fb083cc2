"""An installed hmtune in a clean environment (`env -i`), as an HPC centre installs it:
- with an interpreter that saw the requirements only through PYTHONPATH at install time
  (what Spack's python-venv and its py-* packages look like in the build environment,
  and EasyBuild's Python with its modules loaded), the whole loop runs without that
  environment (no `spack load`, no `module load` of the requirements);
- through the modulefiles `make install` writes (Lua and Tcl), loaded by Lmod in a
  clean shell, the whole loop runs (skipped where Lmod is not installed)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import numpy
import pytest

from hmtune.core.version import version

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not (ROOT / "build" / "lib" / "libhmalloc.so").exists(),
                                reason="hmtune is not built (make)")
CLEAN = {"PATH": "/usr/bin:/bin"}
LMOD_INITS = ("/usr/share/lmod/lmod/init/bash", "/opt/apps/lmod/lmod/init/bash",
              "/usr/local/lmod/lmod/init/bash")


def lmod_init() -> str | None:
    """Lmod's bash initialisation, where Debian and Lmod's own install put it."""
    found = [os.environ.get("LMOD_PKG", "") + "/init/bash", *LMOD_INITS]
    return next((p for p in found if os.path.isfile(p)), None)


def loop(prefix: Path) -> str:
    """The shell commands of the loop on the installed latency example, run by `hmtune`
    from PATH: --version, trace, analyze, advise, run."""
    app = f"{prefix}/libexec/hmtune/examples/latency -s 32"
    thp = f"{prefix}/share/hmtune/configs/machines/vm-thp.toml"
    return ("set -e; hmtune --version; hmtune trace -q -o out -- " + app + " > /dev/null; "
            "hmtune analyze out > /dev/null; hmtune advise out --machine " + thp +
            " --mem 16M; hmtune run -o out -- " + app + " > /dev/null; test -s "
            "out/run-stats.json")


@pytest.fixture(scope="module")
def prefix(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """hmtune installed with PYTHON= a virtualenv that has none of the requirements,
    which it finds through PYTHONPATH (this interpreter's site-packages) at install
    time only."""
    top = tmp_path_factory.mktemp("spacklike")
    bare = top / "python-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    py = bare / "bin" / "python"
    assert subprocess.run([str(py), "-c", "import numpy"], capture_output=True,
                          env=CLEAN).returncode != 0
    site = str(Path(numpy.__file__).resolve().parents[1])
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    env["PYTHONPATH"] = site
    p = top / "hmtune"
    r = subprocess.run(["make", "-C", str(ROOT), "--no-print-directory", "install",
                        f"PREFIX={p}", f"PYTHON={py}"], capture_output=True, text=True,
                       env=env)
    assert r.returncode == 0, r.stderr
    recorded = (p / "lib" / "hmtune" / "python" / "hmtune-pythonpath").read_text().split()
    assert site in recorded
    return p


def test_loop_in_a_clean_environment(prefix: Path, tmp_path: Path) -> None:
    env = CLEAN | {"PATH": f"{prefix}/bin:/usr/bin:/bin"}
    r = subprocess.run(["sh", "-c", loop(prefix)], capture_output=True, text=True, env=env,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines()[0] == f"hmtune {version()}"
    assert "hmtune advise: MIP solver: " in r.stdout


def test_without_the_recorded_paths_it_fails(prefix: Path, tmp_path: Path) -> None:
    """The same installation without hmtune-pythonpath: the requirements are not found
    (what `spack load`-less users got before), so the test above can fail."""
    copy = tmp_path / "copy"
    shutil.copytree(prefix, copy, symlinks=True)
    (copy / "lib" / "hmtune" / "python" / "hmtune-pythonpath").unlink()
    r = subprocess.run([str(copy / "bin" / "hmtune"), "advise", "out", "--mem", "16M"],
                       capture_output=True, text=True, env=CLEAN, cwd=tmp_path)
    assert r.returncode != 0 and "No module named 'numpy'" in r.stderr


@pytest.mark.parametrize("kind", ["lua", "tcl"])
def test_modulefile_in_a_clean_shell(prefix: Path, tmp_path: Path, kind: str) -> None:
    init = lmod_init()
    if init is None:
        pytest.skip("Lmod is not installed (Debian: apt-get install lmod)")
    modules = prefix / "share" / "modulefiles"
    if kind == "tcl":           # alone: next to the Lua file, Lmod takes the Lua one
        modules = tmp_path / "tcl"
        (modules / "hmtune").mkdir(parents=True)
        shutil.copy(prefix / "share" / "modulefiles" / "hmtune" / version(), modules / "hmtune")
    script = (f"source {shlex.quote(init)}; module use {shlex.quote(str(modules))}; "
              "module load hmtune; module --redirect show hmtune; " + loop(prefix))
    r = subprocess.run(["bash", "--noprofile", "--norc", "-c", script], capture_output=True,
                       text=True, env=CLEAN | {"HOME": str(tmp_path)}, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    shown = f"hmtune/{version()}" + (".lua" if kind == "lua" else "")
    assert shown in r.stdout, r.stdout
    assert f"hmtune {version()}" in r.stdout.splitlines()
