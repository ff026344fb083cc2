"""Where the checkout's built pieces live, and the per-app output directory."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def build_dir() -> Path:
    """The build tree (`make` writes it); HMTUNE_BUILD overrides, e.g. for ASan builds."""
    return Path(os.environ.get("HMTUNE_BUILD", ROOT / "build"))


def tracer_lib() -> Path:
    return build_dir() / "lib" / "libhmtrace.so"


def hmalloc_lib() -> Path:
    """The placement interposer `hmtune run` preloads (interpose/)."""
    return build_dir() / "lib" / "libhmalloc.so"


def finalize_bin() -> Path:
    return build_dir() / "bin" / "hmtune-finalize"


def probe_bin() -> Path:
    return build_dir() / "bin" / "hmtune-probe"


def default_out(app: str) -> Path:
    """DESIGN.md §7: `hmtune-out/<app name>/` under the current directory."""
    return Path("hmtune-out") / (Path(app).name or "app")
