"""Samples that wait on memory carry an address (issue 43): on each bundled example,
traced with the software sampler and its recoveries (look ahead, producer load), at
least 70 % of the samples that are not compute (an instruction without a memory
operand and no load behind it) have a data address, by the counts sites.csv's first
line records; and the counts themselves follow from the split."""

from __future__ import annotations

from pathlib import Path

import pytest
from clistage import HMTUNE, ROOT, hmtune

from hmtune.analyze.sites_io import Split, memory_addressed
from hmtune.core.sitesfile import VERSIONS, parse_version_line

EXAMPLES = ROOT / "build" / "examples"
# about a second of kernel each on the 2-core development machine: 70-500 samples
RUNS = {"latency": ("-s", "128", "-n", "8"), "stream": ("-s", "128", "-n", "24"),
        "histogram": ("-s", "128", "-n", "8"), "hashjoin": ("-s", "128", "-n", "8")}
WANTED = 0.7


def first_line(path: Path) -> dict[str, str]:
    return parse_version_line(path.read_text().splitlines()[0], "sites", VERSIONS["sites"])


@pytest.mark.parametrize("name", sorted(RUNS))
def test_samples_that_wait_on_memory_carry_an_address(tmp_path: Path, name: str) -> None:
    r = hmtune("trace", "-q", "-o", str(tmp_path), "--", str(EXAMPLES / name), *RUNS[name])
    assert r.returncode == 0, r.stderr
    a = hmtune("analyze", str(tmp_path))
    assert a.returncode == 0, a.stderr
    meta = first_line(tmp_path / "sites.csv")
    samples = {k.removeprefix("samples_"): int(v) for k, v in meta.items()
               if k.startswith("samples_")}
    compute, ahead = samples.pop("compute"), samples.pop("lookahead", 0)
    total = sum(samples.values())
    memory = total - compute
    assert memory >= 50, (name, samples, compute)
    addressed = total - samples["no_address"] + ahead
    assert addressed >= WANTED * memory, (name, addressed, memory, samples)
    # the look-ahead ones are among the split's no_address until --lookahead counts them
    assert ahead <= samples["no_address"]
    b = hmtune("analyze", str(tmp_path), "-o", str(tmp_path / "la"), "--lookahead")
    assert b.returncode == 0, b.stderr
    la = first_line(tmp_path / "la" / "sites.csv")
    assert "samples_lookahead" not in la
    assert int(la["samples_no_address"]) == samples["no_address"] - ahead


def test_memory_addressed_counts() -> None:
    split = Split({"heap": 60, "static": 10, "stack": 5, "unknown": 5, "no_address": 20},
                  {"heap": 1.0, "static": 1.0, "stack": 1.0, "unknown": 1.0, "no_address": 1.0})
    assert memory_addressed(split, 8, 4) == (92, 80, 4)
    # more look-ahead samples than unaddressed ones cannot be: capped
    assert memory_addressed(split, 8, 50) == (92, 80, 20)
    assert memory_addressed(split, None) is None          # the scanner counted no kinds
    assert memory_addressed(split, 100) is None           # nothing but compute


def test_hmtune_is_built() -> None:
    assert HMTUNE.exists() and all((EXAMPLES / n).exists() for n in RUNS)
