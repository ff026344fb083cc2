"""Sixteen threads allocating small objects of several size classes from a few sites
(tests/programs/thread_classes), next to a large array the advisor splits, traced,
advised for this VM's hugetlb tier at 32 MiB and run with `--reserve-hugepages`
(issue 42): the arena's chunks (interpose/hmi_arena.c), the advisor's footprint
(hmtune/advisor/arena_fit.py) and the reservation (hmtune/workflows/reserve.py) agree,
and every object the advisor planned into the tier is placed there, whichever thread
frees it. The trace records every small call (`--small-sample off`), so that the
plan is the run's exactly; the sampler's estimates are not what is tested here.

The end-to-end tests need root and 2 MiB hugepages; the machine's pool is emptied
first and put back as it was after each (also when one fails)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from clistage import HMTUNE, HUGETLB, ROOT, hmtune

from hmtune.core.placement import read_placement
from hmtune.core.units import MIB
from hmtune.workflows import hugepages, reserve, runstats

PAGE = 2 * MIB
LIB = ROOT / "build" / "lib" / "libhmalloc.so"
PROGRAM = ROOT / "build" / "tests" / "programs" / "thread_classes"
ARGS = ("3", "16", "0.05")          # rounds, threads, CPU seconds of reading per round
NR = hugepages.NR_HUGEPAGES

root_pool = pytest.mark.skipif(
    os.geteuid() != 0 or not os.access(NR, os.W_OK) or not LIB.exists()
    or not PROGRAM.exists() or hugepages.pool() is None
    or hugepages.pool().page != PAGE,                               # type: ignore[union-attr]
    reason="needs root, 2 MiB hugepages, libhmalloc.so and tests/programs/thread_classes")



@pytest.fixture(scope="module", params=["main", "own"])
def stage(request: pytest.FixtureRequest,
          tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """The program traced (every small call) and advised at 32 MiB; objects freed by
    the main thread (a work queue's consumer) or by the thread that allocated them."""
    if os.geteuid() != 0 or not PROGRAM.exists():
        pytest.skip("needs root and tests/programs/thread_classes")
    d = tmp_path_factory.mktemp(f"threads-{request.param}")
    app = [str(PROGRAM), *ARGS, request.param]
    r = hmtune("trace", "-q", "--small-sample", "off", "-o", str(d), "--", *app)
    assert r.returncode == 0, r.stderr
    assert hmtune("analyze", str(d)).returncode == 0
    r = hmtune("advise", str(d), "--machine", str(HUGETLB), "--mem", "32M")
    assert r.returncode == 0, r.stderr
    return d, app


@root_pool
def test_every_planned_object_is_placed_in_the_pages_reserved(
        stage: tuple[Path, list[str]], empty_pool: None, tmp_path: Path) -> None:
    """The reservation is what the process takes, within one page: the arena's chunks
    (run-stats.json arena_chunks) and the split object's ranges; the arena's share of
    it is the advisor's footprint of the same sites; and no object of a site in the
    tier falls back, no range of the split object is left out, no mapping is refused."""
    import pandas as pd

    from hmtune.advisor.arena_fit import blocks_footprint

    d, app = stage
    pf = read_placement(d / "placement.txt")
    huge = [s for s in pf.sites if s.tier == "huge"]
    assert [s for s in huge if not s.ranges], "no site of small objects in the tier"
    sizes, why = reserve.sizes_for(d / "placement.txt", [d], {s.chain for s in huge})
    assert why == ""
    need = reserve.tier_needs(pf, sizes, 1, PAGE)
    assert [(n.tier, n.sized_by, n.capped) for n in need] == [("huge", "allocs.csv", False)]
    # the arena's chunks, as the reservation and the advisor count them
    whole = [s for s in huge if not s.ranges]
    arena = reserve.arena_pages([sizes[s.chain] for s in whole]).get(0, 0)
    table = pd.read_csv(d / "sites.csv", comment="#")
    ids = table[table["callstack_raw"].isin({s.chain for s in whole})]["site_id"]
    allocs = pd.read_csv(d / "allocs.csv", comment="#")
    assert blocks_footprint(allocs[allocs["site_id"].isin(ids)], "hugetlb") == arena * PAGE
    # what the rest takes: the split object's ranges (every other object is packed)
    rest = sum(max((reserve.site_pages(sizes[s.chain], PAGE, s.ranges) or {}).values(),
                   default=0) for s in huge)

    bare = subprocess.run(app, capture_output=True, text=True, timeout=300)
    out = tmp_path / "run"
    r = subprocess.run([str(HMTUNE), "run", "-q", "-o", str(out), "--placement",
                        str(d / "placement.txt"), "--reserve-hugepages", "--", *app],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout == bare.stdout and r.stdout.endswith("ok\n")
    stats = json.loads((out / "run-stats.json").read_text())
    tier = next(t for t in stats["tiers"] if t["name"] == "huge")
    assert tier["available"]
    assert (tier["not_fitting"], tier["map_failed"], tier["split_ranges_not_fitting"]) == \
        (0, 0, 0)
    assert sum(tier["not_fitting_reasons"].values()) == 0
    for s in stats["sites"]:
        if s["tier"] == "huge":
            assert s["matches"] > 0 and s["placed"] == s["matches"] and s["fell_back"] == 0, s
            for rg in s.get("ranges", []):
                assert rg["objects"] == s["matches"], s
    used = tier["arena_chunks"] + rest
    assert used <= need[0].pages <= used + 1, (tier["arena_chunks"], rest, need[0].pages)
    assert tier["arena_chunks"] <= arena <= tier["arena_chunks"] + 1


def test_the_summary_over_ranks_says_why() -> None:
    """`hmtune run --mpirun`'s summary adds the ranks' reasons (not_fitting_reasons) up
    and gives them a line when some request did not fit; files without the field (an
    older libhmalloc) add nothing."""
    def tier(nf: int, **why: int) -> dict:
        reasons = dict.fromkeys(runstats.REFUSALS, 0) | why
        return {"not_fitting": nf, "not_fitting_reasons": reasons}

    up: dict[int | None, dict] = {0: tier(3, capacity=1, kernel=2), 1: tier(2, kernel=1, split=1),
                                  2: {"not_fitting": 4}}
    assert runstats.refusal_counts(up) == dict.fromkeys(runstats.REFUSALS, 0) | {
        "capacity": 1, "kernel": 3, "split": 1}
    assert len(runstats.refusals("fast", "hugetlb", up)) == 1
    assert runstats.refusals("fast", "hugetlb", {0: tier(0)}) == []
    assert runstats.refusals("fast", "hugetlb", {0: {"not_fitting": 4}}) == []
