"""`make dist`: hmtune-VERSION.tar.gz and its sha256, byte for byte reproducible (from a
checkout and from the unpacked tarball, which has no git), holding what `make`, `make
install` and `make test` need, without the two files that name its checksum; `make
dist-record` writes the checksum into those two."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NAMING = ("packaging/spack/package.py", "packaging/easybuild/hmtune-{v}.eb")


def version() -> str:
    with open(ROOT / "pyproject.toml", "rb") as fh:
        return str(tomllib.load(fh)["project"]["version"])


def make_dist(tree: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "SOURCE_DATE_EPOCH")}
    r = subprocess.run(["make", "-C", str(tree), "--no-print-directory", "dist", f"DIST={out}",
                        *extra], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    return r


@pytest.fixture(scope="module")
def tarball(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    make_dist(ROOT, out)
    return out / f"hmtune-{version()}.tar.gz"


def test_reproducible_and_its_sha256(tarball: Path, tmp_path: Path) -> None:
    make_dist(ROOT, tmp_path)
    again = tmp_path / tarball.name
    assert again.read_bytes() == tarball.read_bytes()
    digest = hashlib.sha256(tarball.read_bytes()).hexdigest()
    sha_file = tarball.with_name(tarball.name + ".sha256")
    assert sha_file.read_text() == f"{digest}  {tarball.name}\n"


def test_entries(tarball: Path) -> None:
    """Sorted names under hmtune-VERSION/, fixed time, owner 0, 0644/0755 modes."""
    top = f"hmtune-{version()}"
    with tarfile.open(tarball) as tf:
        members = tf.getmembers()
    names = [m.name for m in members]
    assert names[0] == top and all(n.startswith(top + "/") for n in names[1:])
    assert names == sorted(names, key=lambda n: n.split("/"))
    assert {m.mtime for m in members} == {946684800}
    assert {(m.uid, m.gid, m.uname, m.gname) for m in members} == {(0, 0, "", "")}
    assert {m.mode for m in members if not m.issym()} <= {0o644, 0o755}
    files = {m.name.removeprefix(top + "/") for m in members if not m.isdir()}
    for f in ("Makefile", "pyproject.toml", "workflows/install.sh", "packaging/dist.sh",
              "packaging/check.sh", "tests/py/test_dist.py", "common/hm_events.h", "MANIFEST"):
        assert f in files, f
    assert not {n.format(v=version()) for n in NAMING} & files
    with tarfile.open(tarball) as tf:
        manifest = tf.extractfile(f"{top}/MANIFEST").read().decode().split("\n")
    assert manifest[:-1] == sorted(files) and manifest[-1] == ""


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(),
                    reason="not a git checkout")
def test_holds_every_tracked_file(tarball: Path) -> None:
    tracked = subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True,
                             text=True, check=True).stdout.split("\n")[:-1]
    top = f"hmtune-{version()}/"
    with tarfile.open(tarball) as tf:
        files = {m.name.removeprefix(top) for m in tf.getmembers() if not m.isdir()}
    assert files == set(tracked) - {n.format(v=version()) for n in NAMING} | {"MANIFEST"}


@pytest.mark.skipif(not (ROOT / NAMING[0]).exists(), reason="a release tarball has no recipe")
def test_from_the_unpacked_tarball(tarball: Path, tmp_path: Path) -> None:
    """Without git: the same tarball again, `hmtune --version`, and dist-record writing
    the checksum into a recipe and an easyconfig put next to it."""
    with tarfile.open(tarball) as tf:
        tf.extractall(tmp_path / "src", filter="tar")
    tree = tmp_path / "src" / f"hmtune-{version()}"
    assert not (tree / ".git").exists()
    r = make_dist(tree, tmp_path / "again")
    assert "from MANIFEST" in r.stdout
    assert (tmp_path / "again" / tarball.name).read_bytes() == tarball.read_bytes()
    v = subprocess.run([sys.executable, "-P", "-m", "hmtune.workflows.cli", "--version"],
                       capture_output=True, text=True, cwd=tree,
                       env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tree)})
    assert v.stdout == f"hmtune {version()}\n", v.stderr
    zero = "0" * 64
    for name in NAMING:
        f = tree / name.format(v=version())
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(re.sub(r"[0-9a-f]{64}", zero, (ROOT / name.format(v=version())).read_text()))
    r = make_dist(tree, tmp_path / "record", "RECORD=1")
    digest = hashlib.sha256(tarball.read_bytes()).hexdigest()
    assert (tmp_path / "record" / tarball.name).read_bytes() == tarball.read_bytes()
    recipe = (tree / NAMING[0]).read_text()
    assert f'version("{version()}", sha256="{digest}")' in recipe
    assert f"checksums = ['{digest}']" in (tree / NAMING[1].format(v=version())).read_text()
    assert r.stdout.count("checksum recorded") == 2


def test_dist_writes_the_spack_mirror_layouts(tmp_path: Path) -> None:
    """make dist MIRROR=DIR: the tarball where Spack 1.x reads a mirror
    (_source-cache/archive/<sha[:2]>/<sha>.tar.gz) and where older Spack does
    (hmtune/hmtune-VERSION.tar.gz), both the tarball byte for byte."""
    out, mirror = tmp_path / "dist", tmp_path / "mirror"
    make_dist(ROOT, out, f"MIRROR={mirror}")
    tar = out / f"hmtune-{version()}.tar.gz"
    data = tar.read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    assert (out / f"hmtune-{version()}.tar.gz.sha256").read_text().split()[0] == sha
    cached = mirror / "_source-cache" / "archive" / sha[:2] / f"{sha}.tar.gz"
    assert cached.read_bytes() == data
    assert (mirror / "hmtune" / f"hmtune-{version()}.tar.gz").read_bytes() == data
