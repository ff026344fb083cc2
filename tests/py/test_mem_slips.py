"""A fast tier's size as users mistype it (issue 44 item 3): `--mem 64` (bytes, surely
meant as 64M), `--mem 0.5G`, `--mem -5M` get clear errors that say what to give and
write nothing; and an advise that places nothing never silently replaces a placement
that placed something."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from advisefix import advise, standard_dir

from hmtune.core.errors import Failure
from hmtune.core.units import MIB, human_exact, parse_capacity
from hmtune.workflows.harness import capacities


@pytest.mark.parametrize(("text", "hint"), [
    ("64", "64M"), ("512", "512M"), ("0.5G", "512M"), (".25G", "256M"), ("1.5M", "1536K"),
    ("-5M", "negative"), ("-1", "negative"), ("0", "> 0"), ("0M", "> 0"), ("4X", "not a size"),
])
def test_slips_are_refused_with_what_to_give(text: str, hint: str) -> None:
    with pytest.raises(ValueError) as e:
        parse_capacity(text)
    assert hint in str(e.value)


@pytest.mark.parametrize(("text", "want"), [
    ("64B", 64), ("64M", 64 * MIB), ("256m", 256 * MIB), ("1G", 1 << 30), ("1048576", MIB),
    ("3MiB", 3 * MIB)])
def test_sizes_that_say_what_they_mean_are_taken(text: str, want: int) -> None:
    assert parse_capacity(text) == want


def test_human_exact_reads_back() -> None:
    for n in (512 * MIB, 1536 * 1024, 3 << 40, 12345):
        assert parse_capacity(human_exact(n)) == n if n >= MIB else True
    assert human_exact(512 * MIB) == "512M" and human_exact(12345) == "12345B"


@pytest.mark.parametrize("mem", ["64", "0.5G", "-5M"])
def test_advise_refuses_a_slip_and_keeps_the_placement(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture,
                                                       mem: str) -> None:
    d = standard_dir(tmp_path)
    rc, _, _ = advise(capsys, str(d), "--mem", "64M")
    assert rc == 0
    good = (d / "placement.txt").read_bytes()
    rc, out, err = advise(capsys, str(d), "--mem", mem)
    assert rc == 2 and "--mem" in err and len(err.strip().splitlines()) == 1
    assert (d / "placement.txt").read_bytes() == good
    assert not (d / "placement.txt.prev").exists()


def test_compare_refuses_a_slip(tmp_path: Path) -> None:
    args = argparse.Namespace(mem="64", fraction=None)
    with pytest.raises(Failure) as e:
        capacities(args, tmp_path / "sites.csv")
    assert "64M" in str(e.value)


def test_a_placement_of_nothing_keeps_the_previous_one(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture) -> None:
    d = standard_dir(tmp_path)
    assert advise(capsys, str(d), "--mem", "64M")[0] == 0
    good = (d / "placement.txt").read_text()
    assert any(x.startswith("site ") for x in good.splitlines())
    rc, _, err = advise(capsys, str(d), "--mem", "4K")       # nothing fits in 4 KiB
    assert rc == 0
    now = (d / "placement.txt").read_text()
    assert not any(x.split(" ", 1)[0] in ("site", "split", "static")
                   for x in now.splitlines())
    assert (d / "placement.txt.prev").read_text() == good
    assert "placement.txt.prev" in err
