"""hmtune's version: the one in pyproject.toml, the single place it is set.

Found without git and without the package being pip-installed, in whichever tree this
file is part of:
- a checkout or an unpacked release tarball (`make dist`): pyproject.toml next to the
  hmtune/ package;
- an installation (`make install`, Spack, EasyBuild): the marker file that
  workflows/install.sh writes next to the package (`hmtune VERSION: ...`), made from
  pyproject.toml at install time;
- a pip-installed package: its metadata.
The C side gets the same string at build time (the Makefile passes pyproject.toml's
version as HMTUNE_VERSION), so every file hmtune writes can name the version that
wrote it.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from hmtune.core.paths import INSTALL_MARK

UNKNOWN = "unknown"
_TOP = Path(__file__).resolve().parents[2]     # the checkout, or PREFIX/lib/hmtune/python
_PYPROJECT_VERSION = re.compile(r'^version\s*=\s*"([^"]+)"\s*$', re.M)
_INSTALLED_VERSION = re.compile(r"^hmtune (\S+):")


def from_pyproject(path: Path) -> str | None:
    """The `version = "..."` of pyproject.toml's [project] table; None without one."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return None
    project = text.split("[project]", 1)
    if len(project) < 2:
        return None
    table = project[1].split("\n[", 1)[0]      # up to the next table
    m = _PYPROJECT_VERSION.search(table)
    return m.group(1) if m else None


@cache
def version() -> str:
    """This hmtune's version (e.g. "0.1.0"); "unknown" when no source of it is found."""
    found = from_pyproject(_TOP / "pyproject.toml")
    if found:
        return found
    try:
        m = _INSTALLED_VERSION.match((_TOP / INSTALL_MARK).read_text(encoding="utf-8"))
    except OSError:
        m = None
    if m:
        return m.group(1)
    try:
        from importlib.metadata import PackageNotFoundError
        from importlib.metadata import version as dist_version

        return dist_version("hmtune")
    except (ImportError, PackageNotFoundError):
        return UNKNOWN
