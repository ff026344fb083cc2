"""hmtune: place an application's heap objects in fast memory tiers without changing it.

The Python side in five layers, lowest first (docs/architecture.md): `hmtune.core`
(units, files, paths, ELF headers, the backend grammar, the error type),
`hmtune.machine` (this host's memory, tiers and machine files), `hmtune.analyze`
(traces -> sites.csv), `hmtune.advisor` (sites -> placement.txt, the tier model),
`hmtune.workflows` (the `hmtune` CLI and the loop). A module imports only its own layer
and the ones below it (tests/py/test_layers.py).
"""

import os as _os
import sys as _sys

PYTHONPATH_FILE = "hmtune-pythonpath"
"""`make install PYTHON=...` writes it next to the installed package: one directory a
line, where that interpreter found the requirements outside its own search path."""


def _recorded_paths() -> None:
    """In an installation made with an interpreter whose requirements came from
    PYTHONPATH (Spack's build environment, loaded modules), the directories it found them
    in go right after the package's own on sys.path, as they were at install time: the
    installed hmtune then runs in an environment without them (no `spack load`, no
    `module load`). Nothing happens in a checkout, which has no such file."""
    top = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
    try:
        with open(_os.path.join(top, PYTHONPATH_FILE), encoding="utf-8") as fh:
            dirs = [line.rstrip("\n") for line in fh if line.strip()]
    except OSError:
        return
    at = _sys.path.index(top) + 1 if top in _sys.path else len(_sys.path)
    _sys.path[at:at] = [d for d in dirs if d not in _sys.path]


_recorded_paths()
