"""One release number, pyproject.toml's: `hmtune --version` prints it, and every file the
loop writes names it in its header (the C programs get it at build time, the Python side
reads it from pyproject.toml or the installation's marker file)."""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
from pathlib import Path

import pytest

from hmtune.analyze.prv_tables import parse_pcf
from hmtune.analyze.sites_io import read_allocs, read_sites
from hmtune.core import version as version_mod
from hmtune.core.placement import read_placement
from hmtune.core.sitesfile import read_rows

ROOT = Path(__file__).resolve().parents[2]
HMTUNE = ROOT / "bin" / "hmtune"
LATENCY = ROOT / "build" / "examples" / "latency"
THP = ROOT / "configs" / "machines" / "vm-thp.toml"


def pyproject_version() -> str:
    with open(ROOT / "pyproject.toml", "rb") as fh:
        return str(tomllib.load(fh)["project"]["version"])


def test_version_is_pyprojects() -> None:
    v = pyproject_version()
    assert version_mod.version() == v
    r = subprocess.run([str(HMTUNE), "--version"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout == f"hmtune {v}\n"


def test_version_sources(tmp_path: Path) -> None:
    """pyproject.toml's [project] version only; the installation's marker file; else
    unknown."""
    p = tmp_path / "pyproject.toml"
    p.write_text('[tool.x]\nversion = "9"\n[project]\nname = "hmtune"\nversion = "1.2.3"\n'
                 '[tool.y]\nversion = "8"\n')
    assert version_mod.from_pyproject(p) == "1.2.3"
    p.write_text('[project]\nname = "hmtune"\n[tool.y]\nversion = "8"\n')
    assert version_mod.from_pyproject(p) is None
    assert version_mod.from_pyproject(tmp_path / "missing.toml") is None
    code = "from hmtune.core.version import version; print(version())"
    tree = tmp_path / "python"                  # an installation's python directory
    (tree / "hmtune").mkdir(parents=True)
    for f in ("__init__.py", "core/__init__.py", "core/version.py", "core/paths.py"):
        (tree / "hmtune" / f).parent.mkdir(parents=True, exist_ok=True)
        (tree / "hmtune" / f).write_bytes((ROOT / "hmtune" / f).read_bytes())
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(tree)}

    def run() -> str:
        r = subprocess.run([str(ROOT / ".venv" / "bin" / "python"), "-P", "-c", code],
                           capture_output=True, text=True, env=env, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        return r.stdout.strip()

    assert run() == "unknown"
    (tree / "hmtune-installed").write_text("hmtune 4.5.6: this tree was installed by make "
                                           "install\n")
    assert run() == "4.5.6"


@pytest.mark.skipif(not LATENCY.exists(), reason="hmtune is not built (make)")
def test_every_output_names_the_version(tmp_path: Path) -> None:
    v = pyproject_version()

    def sh(*args: str) -> subprocess.CompletedProcess[str]:
        r = subprocess.run([str(HMTUNE), *args], capture_output=True, text=True, cwd=tmp_path)
        assert r.returncode == 0, f"{args}: {r.stderr}"
        return r

    app = [str(LATENCY), "-s", "32"]
    sh("trace", "-q", "-o", "out", "--", *app)
    out = tmp_path / "out"
    pcf = (out / "trace.pcf").read_text().splitlines()
    assert pcf[0] == f"# hmtune {v} (hmtune-finalize)" and pcf[1] == "DEFAULT_OPTIONS"
    assert parse_pcf(out / "trace.pcf").event_types          # the comment is skipped
    sh("check-trace", "--quiet", "out")
    assert json.loads((out / "trace.summary.json").read_text())["hmtune"] == v
    sh("analyze", "out")
    assert read_sites(out / "sites.csv").attrs["meta"]["hmtune"] == v
    assert read_allocs(out / "allocs.csv").attrs["meta"]["hmtune"] == v
    assert read_rows(out / "profile.csv", "profile")[0]["hmtune"] == v
    sh("advise", "out", "--machine", str(THP), "--mem", "16M")
    assert f"(hmtune {v}, " in read_placement(out / "placement.txt").generated_by
    assert f"hmtune:         {v}" in (out / "report.txt").read_text().splitlines()[:4]
    sh("run", "-o", "out", "--", *app)
    assert json.loads((out / "run-stats.json").read_text())["hmtune"] == v
