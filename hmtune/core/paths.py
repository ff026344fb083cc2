"""Where hmtune's built pieces and shipped files live, and the per-app output directory.

Two layouts:
- the checkout: ROOT/build/{lib,bin,examples}, ROOT/configs;
- an installation (`make install PREFIX=...`): the Python package (hmtune/) in
  PREFIX/lib/hmtune/python/ next to the marker file INSTALL_MARK, the preload
  libraries in PREFIX/lib, the helper binaries and examples in PREFIX/libexec/hmtune,
  the configurations in PREFIX/share/hmtune/configs. Everything is found relative to
  this file, so an installed tree can be moved (or staged with DESTDIR).
HMTUNE_BUILD names a build tree (e.g. an ASan build) and overrides both for the
libraries and helper binaries.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
"""The checkout (in an installation: PREFIX/lib/hmtune/python); this file is
ROOT/hmtune/core/paths.py."""

INSTALL_MARK = "hmtune-installed"
"""`make install` writes this file into PREFIX/lib/hmtune/python/."""


def install_prefix() -> Path | None:
    """PREFIX when running from an installation, None when running from the checkout."""
    installed = ROOT.parts[-3:] == ("lib", "hmtune", "python") and len(ROOT.parts) > 3
    return ROOT.parents[2] if installed and (ROOT / INSTALL_MARK).is_file() else None


def build_dir() -> Path:
    """The build tree (`make` writes it); HMTUNE_BUILD overrides, e.g. for ASan builds."""
    return Path(os.environ.get("HMTUNE_BUILD", ROOT / "build"))


def _installed() -> Path | None:
    """PREFIX when the built pieces come from an installation (no HMTUNE_BUILD)."""
    return None if "HMTUNE_BUILD" in os.environ else install_prefix()


def lib_dir() -> Path:
    """Where libhmtrace.so and libhmalloc.so are."""
    prefix = _installed()
    return prefix / "lib" if prefix else build_dir() / "lib"


def helper_dir() -> Path:
    """Where the helper programs (hmtune-finalize, hmtune-probe, hmtune-prvscan) are."""
    prefix = _installed()
    return prefix / "libexec" / "hmtune" if prefix else build_dir() / "bin"


def examples_dir() -> Path:
    """The example programs (latency, stream, histogram, hashjoin)."""
    prefix = _installed()
    return prefix / "libexec" / "hmtune" / "examples" if prefix else build_dir() / "examples"


def configs_dir() -> Path:
    """configs/ (machines/*.toml, paraver/*.cfg)."""
    prefix = install_prefix()
    return prefix / "share" / "hmtune" / "configs" if prefix else ROOT / "configs"


def cli() -> Path:
    """The `hmtune` command itself (for running a stage as a subprocess)."""
    prefix = install_prefix()
    return prefix / "bin" / "hmtune" if prefix else ROOT / "bin" / "hmtune"


def not_built(what: Path) -> str:
    """The message for a missing library or helper: what to do about it."""
    prefix = _installed()
    if prefix:
        return f"{what} is missing from the installation: reinstall (make install PREFIX={prefix})"
    return f"{what} is not built: run 'make' in {ROOT}"


def tracer_lib() -> Path:
    return lib_dir() / "libhmtrace.so"


def hmalloc_lib() -> Path:
    """The placement interposer `hmtune run` preloads (interpose/)."""
    return lib_dir() / "libhmalloc.so"


def finalize_bin() -> Path:
    return helper_dir() / "hmtune-finalize"


def probe_bin() -> Path:
    return helper_dir() / "hmtune-probe"


def prvscan_bin() -> Path:
    """The analyzer's streaming trace scanner (analyze/prvscan/)."""
    return helper_dir() / "hmtune-prvscan"


def default_out(app: str) -> Path:
    """DESIGN.md §7: `hmtune-out/<app name>/` under the current directory."""
    return Path("hmtune-out") / (Path(app).name or "app")


def newest_stage(holding: str) -> Path | None:
    """The most recently changed `hmtune-out/*/` under the current directory that holds
    the file `holding` (sites.csv, trace.prv): the default stage of report and view."""
    dirs = [d for d in Path("hmtune-out").glob("*/") if (d / holding).is_file()]
    return max(dirs, key=lambda d: d.stat().st_mtime) if dirs else None
