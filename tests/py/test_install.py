"""`make install` (workflows/install.sh): the installed hmtune finds its pieces in the
installed layout and runs the whole pipeline from another directory, writing only
there — nothing into the checkout or PREFIX. PYTHON= is this interpreter (it has the
requirements), so no virtualenv is pip-installed here."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hmtune.core.placement import read_placement
from hmtune.core.version import version

VERSION = version()

ROOT = Path(__file__).resolve().parents[2]
BUILT = [ROOT / "build" / p for p in ("lib/libhmtrace.so", "lib/libhmalloc.so",
                                      "bin/hmtune-finalize", "bin/hmtune-probe",
                                      "bin/hmtune-prvscan", "examples/latency")]

pytestmark = pytest.mark.skipif(not all(p.exists() for p in BUILT),
                                reason="hmtune is not built (make)")


def make_install(*args: str) -> subprocess.CompletedProcess[str]:
    """`make install ARGS` in the checkout, free of an enclosing make's flags."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    return subprocess.run(["make", "-C", str(ROOT), "--no-print-directory", "install", *args],
                          capture_output=True, text=True, env=env)


def run_env() -> dict[str, str]:
    """The user's environment without anything pointing at the checkout; bytecode
    writing on, so that a write into PREFIX would show."""
    drop = ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE", "HMTUNE_BUILD", "PYTHONSAFEPATH")
    return {k: v for k, v in os.environ.items() if k not in drop}


def snapshot(top: Path) -> dict[str, tuple[int, int]]:
    """Every file and directory under top (but .git) with its mtime and size."""
    seen: dict[str, tuple[int, int]] = {}
    for d, dirs, files in os.walk(top):
        if Path(d) == top:
            dirs[:] = [x for x in dirs if x != ".git"]
        for name in dirs + files:
            p = os.path.join(d, name)
            st = os.lstat(p)
            seen[os.path.relpath(p, top)] = (st.st_mtime_ns, st.st_size)
    return seen


def changed(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> list[str]:
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


@pytest.fixture(scope="module")
def prefix(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("install") / "hmtune"
    r = make_install(f"PREFIX={p}", f"PYTHON={sys.executable}")
    assert r.returncode == 0, r.stderr
    return p


def test_layout(prefix: Path) -> None:
    for f in ("bin/hmtune", "bin/hmtune-demo", "lib/libhmtrace.so", "lib/libhmalloc.so",
              "libexec/hmtune/hmtune-finalize", "libexec/hmtune/hmtune-probe",
              "libexec/hmtune/hmtune-prvscan", "libexec/hmtune/hmtune-rusage",
              "libexec/hmtune/examples/latency",
              "share/hmtune/configs/machines/vm-thp.toml",
              "share/hmtune/configs/paraver/sampled_refs_per_object.cfg",
              "lib/hmtune/python/hmtune/workflows/cli.py", "lib/hmtune/python/hmtune-installed"):
        assert (prefix / f).is_file(), f
    for f in ("bin/hmtune", "bin/hmtune-demo", "libexec/hmtune/examples/latency"):
        assert os.access(prefix / f, os.X_OK), f
    assert not (prefix / "lib" / "hmtune" / "venv").exists()     # PYTHON= was given
    assert not list((prefix / "lib" / "hmtune" / "python").rglob("prvscan"))
    modules = sorted((prefix / "share" / "modulefiles" / "hmtune").iterdir())
    assert [m.name for m in modules] == [VERSION, f"{VERSION}.lua"]
    assert f"prepend-path PATH {{{prefix}/bin}}" in modules[0].read_text()
    assert f'prepend_path("PATH", [==[{prefix}/bin]==])' in modules[1].read_text()


def test_installed_paths(prefix: Path, tmp_path: Path) -> None:
    """hmtune/core/paths.py, imported from the installation, points into it."""
    code = ("import json; from hmtune.core import paths as p; print(json.dumps({k: str(f()) for "
            "k, f in [('prefix', p.install_prefix), ('tracer', p.tracer_lib), "
            "('hmalloc', p.hmalloc_lib), ('finalize', p.finalize_bin), "
            "('probe', p.probe_bin), ('prvscan', p.prvscan_bin), "
            "('configs', p.configs_dir), ('examples', p.examples_dir), ('cli', p.cli)]}))")
    env = run_env() | {"PYTHONPATH": str(prefix / "lib" / "hmtune" / "python")}
    r = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True,
                       env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    got = {k: Path(v) for k, v in json.loads(r.stdout).items()}
    helpers = prefix / "libexec" / "hmtune"
    assert got == {"prefix": prefix, "tracer": prefix / "lib" / "libhmtrace.so",
                   "hmalloc": prefix / "lib" / "libhmalloc.so",
                   "finalize": helpers / "hmtune-finalize", "probe": helpers / "hmtune-probe",
                   "prvscan": helpers / "hmtune-prvscan",
                   "configs": prefix / "share" / "hmtune" / "configs",
                   "examples": helpers / "examples", "cli": prefix / "bin" / "hmtune"}
    assert all(p.exists() for p in got.values())


def test_pipeline_from_install(prefix: Path, tmp_path: Path) -> None:
    """trace → analyze → advise → run with the installed CLI, from an unrelated current
    directory that even holds an `hmtune` package of its own (a checkout's, say)."""
    work = tmp_path / "work"
    (work / "hmtune").mkdir(parents=True)
    (work / "hmtune" / "__init__.py").write_text("raise SystemExit('wrong package')\n")
    hmtune = str(prefix / "bin" / "hmtune")
    latency = [str(prefix / "libexec" / "hmtune" / "examples" / "latency"), "-s", "32"]
    thp = prefix / "share" / "hmtune" / "configs" / "machines" / "vm-thp.toml"
    env = run_env()

    def sh(*cmd: str) -> subprocess.CompletedProcess[str]:
        r = subprocess.run(list(cmd), capture_output=True, text=True, cwd=work, env=env)
        assert r.returncode == 0, f"{cmd}: {r.stderr}"
        return r

    before = snapshot(ROOT), snapshot(prefix)
    sh(hmtune, "--help")
    sh(hmtune, "trace", "-o", "out", "--", *latency)
    out = work / "out"
    for f in ("trace.prv", "trace.pcf", "trace.row"):
        assert (out / f).stat().st_size > 0, f
    assert (out / "trace.prv").read_text().startswith("#Paraver")
    sh(hmtune, "check-trace", "--quiet", "out/trace.prv")

    sh(hmtune, "analyze", "out/trace.prv")
    with open(out / "sites.csv", newline="") as fh:
        sites = list(csv.DictReader(fh))
    assert len(sites) >= 6                      # latency's six arrays, at least
    assert (out / "allocs.csv").is_file()

    sh(hmtune, "advise", "out", "--machine", str(thp), "--mem", "16M")
    pf = read_placement(out / "placement.txt")
    assert pf.sites, "the advisor placed nothing: no sampled weight in any site?"
    assert (out / "report.txt").is_file()

    plain = sh(*latency)
    rerun = sh(hmtune, "run", "-o", "out", "--", *latency)
    checksum = [w for w in plain.stdout.split() if w.startswith("checksum=")]
    assert checksum and checksum == [w for w in rerun.stdout.split()
                                     if w.startswith("checksum=")]
    stats = json.loads((out / "run-stats.json").read_text())
    assert stats["program"] == latency[0]
    assert sum(t["placed_blocks"] for t in stats["tiers"]) >= 1

    assert changed(before[0], snapshot(ROOT)) == [], "the runs wrote into the checkout"
    assert changed(before[1], snapshot(prefix)) == [], "the runs wrote into PREFIX"
    assert not (work / "hmtune-out").exists()   # -o out was honoured


def test_destdir_staging(tmp_path: Path) -> None:
    """DESTDIR stages the tree; nothing in it names the staging directory, and it runs
    from there (the launchers find PREFIX from their own location)."""
    stage, final = tmp_path / "stage", "/opt/hmtune-test"
    r = make_install(f"PREFIX={final}", f"DESTDIR={stage}", f"PYTHON={sys.executable}")
    assert r.returncode == 0, r.stderr
    assert not Path(final).exists()
    staged = stage / final.lstrip("/")
    files = [p for p in staged.rglob("*") if p.is_file()]
    assert len(files) > 20
    assert [p for p in files if str(stage).encode() in p.read_bytes()] == []
    module = staged / "share" / "modulefiles" / "hmtune" / VERSION
    assert f"prepend-path PATH {{{final}/bin}}" in module.read_text()
    h = subprocess.run([str(staged / "bin" / "hmtune"), "--help"], capture_output=True,
                       env=run_env(), cwd=tmp_path)
    assert h.returncode == 0 and h.stdout


def test_python_without_requirements_refused(tmp_path: Path) -> None:
    """PYTHON= naming an interpreter without the requirements stops the install before
    anything is copied."""
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(0o755)
    p = tmp_path / "prefix"
    r = make_install(f"PREFIX={p}", f"PYTHON={fake}")
    assert r.returncode != 0
    assert not p.exists()


def test_demo_from_install(prefix: Path, tmp_path: Path) -> None:
    """The installed demo on the quick configuration, one run per variant: every stage's
    files under the current directory, a comparison of every variant and the report,
    nothing written into PREFIX or the checkout, and the hugepage setting as it was."""
    nr = Path("/proc/sys/vm/nr_hugepages")
    hugepages_before = nr.read_text() if nr.exists() else None
    env = run_env() | {"DEMO_ARGS": "-q", "REPEATS": "1"}
    before = snapshot(ROOT), snapshot(prefix)
    r = subprocess.run([str(prefix / "bin" / "hmtune-demo")], capture_output=True, text=True,
                       cwd=tmp_path, env=env, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    out = tmp_path / "hmtune-out" / "latency"
    for f in ("trace.prv", "sites.csv", "allocs.csv", "placement.txt", "report.txt",
              "compare/runs.csv", "report/report.md"):
        assert (out / f).stat().st_size > 0, f
    with open(out / "compare" / "summary.csv", newline="") as fh:
        variants = [row["variant"] for row in csv.DictReader(fh)]
    assert variants == ["all-slow", "first-come", "size-window", "ilp", "ilp-lifetime",
                        "misses", "density", "all-fast"]
    # the demo's placement and compare's are for one tier, chosen and sized by hmtune
    from hmtune.core.placement import read_placement

    mine = read_placement(out / "placement.txt").tiers
    theirs = read_placement(out / "compare" / "ilp-lifetime" / "placement.txt").tiers
    assert [(t.backend, t.capacity) for t in mine] == [(t.backend, t.capacity) for t in theirs]
    assert changed(before[0], snapshot(ROOT)) == [], "the demo wrote into the checkout"
    assert changed(before[1], snapshot(prefix)) == [], "the demo wrote into PREFIX"
    if hugepages_before is not None:
        assert nr.read_text() == hugepages_before
    # again: the trace and the runs are kept, not redone
    runs = (out / "compare" / "runs.csv").read_bytes()
    again = subprocess.run([str(prefix / "bin" / "hmtune-demo")], capture_output=True,
                           text=True, cwd=tmp_path, env=env, timeout=600)
    assert again.returncode == 0 and (out / "compare" / "runs.csv").read_bytes() == runs
