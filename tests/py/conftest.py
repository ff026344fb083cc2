"""Make the checkout's Python package (hmtune) and the test helpers importable; the
fixtures several test files share."""

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
for p in (HERE.parents[1], HERE):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from hmtune.workflows.hugepages import NR_HUGEPAGES as NR  # noqa: E402 (after the path)

NODE0 = Path("/sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages")


@pytest.fixture
def empty_pool() -> Iterator[None]:
    """nr_hugepages 0 for the test, the settings as they were afterwards (root)."""
    saved = {p: p.read_text() for p in (NODE0, NR) if p.exists()}
    NR.write_text("0\n")
    try:
        yield
    finally:
        for p, v in saved.items():
            p.write_text(v)
