"""`hmtune advise` with static variables in sites.csv (v2, kind static): they are
placed as `static` lines with their sizes, take no part in depth and size-window, are
worth only the part of them in whole pages of the tier (none for a static smaller
than a 2 MiB page on hugetlb), count as live for the whole run in the lifetime ILP,
stay out of FlexMalloc's files, and the report says what share of the weight the
advisor can act on."""

from __future__ import annotations

from pathlib import Path

import pytest
from advisefix import APP, LIBC, MS, advise, site, static_site, write_allocs, write_sites

from hmtune.advisor.inputs import load_sites
from hmtune.advisor.model import static_fraction
from hmtune.analyze.sites_io import version_line
from hmtune.core.placement import read_placement
from hmtune.core.units import MIB
from hmtune.machine.tiers import Tier

ROOT = Path(__file__).resolve().parents[2]
HUGETLB = ROOT / "configs" / "machines" / "vm-hugetlb.toml"


def stage(tmp: Path, rows: list[dict], total: float | None = None) -> Path:
    d = tmp / "stage"
    write_sites(d / "sites.csv", rows, total)
    return d


def test_statics_are_placed_as_static_lines(tmp_path: Path,
                                            capsys: pytest.CaptureFixture) -> None:
    rows = [site(3, 8 * MIB, 100.0, max_size=MIB),
            static_site(4, 32 * MIB, 300.0, 0x5000),
            static_site(5, 4 * MIB, 50.0, 0x3005000),
            site(6, 64 * MIB, 10.0)]
    d = stage(tmp_path, rows, 1000.0)
    rc, out, err = advise(capsys, str(d), "--mem", "48M")
    assert rc == 0, err
    pf = read_placement(d / "placement.txt")
    assert [(s.tier, s.frame, s.size) for s in pf.statics] == \
        [("fast", f"{APP}+0x5000", 32 * MIB), ("fast", f"{APP}+0x3005000", 4 * MIB)]
    assert [s.chain for s in pf.sites] == [rows[0]["callstack_raw"]]
    # the statics' sizes are no requests: the window is the heap site's
    assert pf.size_window == (0, MIB) and pf.depth == 2
    assert "var4 [static, app]" in pf.statics[0].comment
    s = load_sites(d / "sites.csv")
    assert list(s.table["kind"]) == ["heap", "static", "static", "heap"]


def test_fraction_of_a_static_in_whole_pages() -> None:
    # 4 KiB pages: exact from the offset; 2 MiB pages: size - 2 MiB expected
    assert static_fraction(0x1000, 16384, 4096) == 1.0
    assert static_fraction(0x1010, 16384, 4096) == 0.75
    assert static_fraction(0x1010, 4000, 4096) == 0.0
    assert static_fraction(0, 16 * MIB, 2 * MIB) == 14 / 16
    assert static_fraction(0, MIB, 2 * MIB) == 0.0
    assert Tier("t", 1, "thp").page_size == 4096      # thp: 4 KiB charges, 2 MiB moves


def test_hugetlb_values_statics_by_their_whole_pages(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture) -> None:
    """Room for one of two 16 MiB objects: on 4 KiB pages the heavier static goes; on
    hugetlb only its 14 MiB of whole 2 MiB pages count (105 x 14/16 < 100) and the heap
    site goes. A 1 MiB static gains nothing on hugetlb whatever the room."""
    rows = [site(3, 16 * MIB, 100.0), static_site(4, 16 * MIB, 105.0, 0x10000),
            static_site(5, MIB, 40.0, 0x2000000)]
    d = stage(tmp_path, rows, 1000.0)
    assert advise(capsys, str(d), "--mem", "16M")[0] == 0
    pf = read_placement(d / "placement.txt")
    assert [s.frame for s in pf.statics] == [f"{APP}+0x10000"] and pf.sites == []
    assert advise(capsys, str(d), "--machine", str(HUGETLB), "--mem", "18M")[0] == 0
    pf = read_placement(d / "placement.txt")
    assert pf.statics == [] and [s.chain for s in pf.sites] == [rows[0]["callstack_raw"]]
    assert advise(capsys, str(d), "--machine", str(HUGETLB), "--mem", "1G")[0] == 0
    pf = read_placement(d / "placement.txt")
    assert [s.frame for s in pf.statics] == [f"{APP}+0x10000"]   # not the 1 MiB one


def test_statics_without_a_size_are_unplaceable(tmp_path: Path,
                                                capsys: pytest.CaptureFixture) -> None:
    rows = [site(3, 8 * MIB, 100.0), static_site(4, 0, 300.0)]
    d = stage(tmp_path, rows, 1000.0)
    rc, _, err = advise(capsys, str(d), "--mem", "1G")
    assert rc == 0
    assert read_placement(d / "placement.txt").statics == []
    s = load_sites(d / "sites.csv")
    assert list(s.unplaceable["site_id"]) == [4]


def test_acts_on_share_and_split(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """report.txt: the weight the advisor can act on (placeable allocation sites and
    statics) and the version line's split by address."""
    rows = [site(3, 8 * MIB, 100.0), static_site(4, 4 * MIB, 300.0),
            site(5, 4 * MIB, 50.0, "")]
    d = tmp_path / "stage"
    split = {"samples_heap": 150, "samples_static": 300, "samples_stack": 100,
             "samples_unknown": 50, "samples_no_address": 400, "weight_heap": 150,
             "weight_static": 300, "weight_stack": 100, "weight_unknown": 50,
             "weight_no_address": 400}
    write_sites(d / "sites.csv", rows, 1000.0,
                first_line=version_line("sites", 2, trace="t.prv", sampler="soft",
                                        label_form="module+0xoffset", **split))
    assert advise(capsys, str(d), "--mem", "1G")[0] == 0
    s = load_sites(d / "sites.csv")
    assert s.split is not None and s.total_weight == 1000.0 * MS
    report = (d / "report.txt").read_text()
    acts = next(line for line in report.splitlines() if line.startswith("acts on:"))
    assert acts.split()[2:4] == ["40.0%", "of"]
    assert "10.0% in 1 allocation site(s), 30.0% in 1 static variable(s)" in acts
    by = next(line for line in report.splitlines() if line.startswith("by address:"))
    assert "stack 10.0%" in by and "no address 40.0%" in by


def test_lifetime_ilp_keeps_statics_live_all_run(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture) -> None:
    """Two heap sites of 30 MiB never live together share their capacity; a 24 MiB
    static is live all the time: 54 MiB hold all three, 53 MiB only the two sites (the
    static beside either would need 54), and ilp without lifetimes takes the static and
    one site at 54 MiB."""
    rows = [site(3, 30 * MIB, 100.0), site(4, 30 * MIB, 100.0),
            static_site(5, 24 * MIB, 150.0, 0x10000)]
    d = stage(tmp_path, rows, 1000.0)
    write_allocs(d / "allocs.csv", [(3, 0, 30 * MIB, 10, 100), (4, 0, 30 * MIB, 200, 300)])
    assert advise(capsys, str(d), "--mem", "54M", "--strategy", "ilp-lifetime")[0] == 0
    pf = read_placement(d / "placement.txt")
    assert len(pf.statics) == 1 and len(pf.sites) == 2
    assert advise(capsys, str(d), "--mem", "53M", "--strategy", "ilp-lifetime")[0] == 0
    pf = read_placement(d / "placement.txt")
    assert pf.statics == [] and len(pf.sites) == 2
    assert advise(capsys, str(d), "--mem", "54M", "--strategy", "ilp")[0] == 0
    pf = read_placement(d / "placement.txt")
    assert len(pf.statics) == 1 and len(pf.sites) == 1


def test_flexmalloc_leaves_statics_out(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    rows = [site(3, 8 * MIB, 100.0, f"{LIBC}+0x2724a"),
            static_site(4, 4 * MIB, 300.0, 0x1d31e0, module=LIBC)]
    d = stage(tmp_path, rows, 1000.0)
    rc, _, err = advise(capsys, str(d), "--mem", "1G", "--format", "flexmalloc")
    assert rc == 0, err
    assert len(read_placement(d / "placement.txt").statics) == 1
    locations = (d / "flexmalloc-locations.txt").read_text().splitlines()
    placed = [x for x in locations if not x.startswith("#")]
    assert len(placed) == 1 and placed[0].startswith(f"{LIBC}!")   # the heap site only


def test_per_rank_statics_fold_to_one_object(tmp_path: Path) -> None:
    rows = [{**static_site(4, 4 * MIB, 30.0), "rank": r} for r in (0, 1)] + \
        [{**site(3, 8 * MIB, 10.0), "rank": r} for r in (0, 1)]
    d = stage(tmp_path, rows, 100.0)
    s = load_sites(d / "sites.csv")
    t = s.table.set_index("site_id")
    assert (t.loc[4, "n_allocs"], t.loc[4, "total_bytes"], t.loc[4, "weight"]) == \
        (1, 4 * MIB, 60.0 * MS)
    assert t.loc[3, "n_allocs"] == 2


def write_profile(d: Path, rows: list[tuple[int, int, float, int]]) -> None:
    """profile.csv next to sites.csv: (site, offset, weight in sites.csv units, samples)."""
    lines = ["# hmtune profile v1 trace=t.prv granularity=4096",
             "site_id,offset,weight,samples"]
    lines += [f"{s},{o},{int(w * MS)},{n}" for s, o, w, n in rows]
    (d / "profile.csv").write_text("\n".join(lines) + "\n")


def test_a_static_is_split_by_its_profile(tmp_path: Path,
                                          capsys: pytest.CaptureFixture) -> None:
    """A 64 MiB static whose samples are in its first 16 MiB, with 16 MiB of fast
    memory: placed by its hot range (a static-split line, v2), not left out whole; and
    with room for all of it, a plain static line."""
    rows = [static_site(4, 64 * MIB, 400.0, 0x5010), site(3, 4 * MIB, 1.0)]
    d = stage(tmp_path, rows, 1000.0)
    write_profile(d, [(4, k * MIB, 50.0, 5) for k in range(0, 16, 2)])
    rc, _, err = advise(capsys, str(d), "--mem", "16M")
    assert rc == 0, err
    assert (d / "placement.txt").read_text().startswith("# hmtune placement v2\n")
    pf = read_placement(d / "placement.txt")
    (st,) = pf.statics
    assert st.frame == f"{APP}+0x5010" and st.size == 64 * MIB
    assert st.ranges == ((0, 16 * MIB),)
    assert "16.0 MiB of 64.0 MiB" in st.comment
    rc, _, err = advise(capsys, str(d), "--mem", "80M")
    assert rc == 0, err
    (st,) = read_placement(d / "placement.txt").statics
    assert st.ranges == () and st.size == 64 * MIB
    # --whole-objects: the static does not fit whole in 16 MiB, nothing of it is placed
    rc, _, err = advise(capsys, str(d), "--mem", "16M", "--whole-objects")
    assert rc == 0, err
    assert read_placement(d / "placement.txt").statics == []


def test_static_split_lines_are_written_and_checked(tmp_path: Path) -> None:
    from hmtune.core.placement import (
        PlacementFile,
        PlacementFormatError,
        StaticLine,
        TierLine,
        format_placement,
        parse_placement_bytes,
    )

    tiers = [TierLine("fast", "numa:0", 1 << 30), TierLine("slow", "default", None)]
    line = StaticLine("fast", f"{APP}+0x5010", 10000, "x", ((0, 4096), (8192, 12288)))
    text = format_placement(PlacementFile(tiers, 1, (0, 0), [], statics=[line]))
    assert text.startswith("# hmtune placement v2\n")
    assert f"static-split fast 10000 0-4096,8192-12288 {APP}+0x5010   # x\n" in text
    assert parse_placement_bytes(text.encode()).statics == [line]
    for bad in (((0, 16384),),                       # past the object (10000 -> 12288)
                ((0, 4096), (4096, 8192)),           # touching
                ((100, 4096),)):                     # not a multiple of 4096
        with pytest.raises(PlacementFormatError, match="static-split"):
            format_placement(PlacementFile(tiers, 1, (0, 0), [],
                                           statics=[StaticLine("fast", line.frame, 10000,
                                                               "", bad)]))
    with pytest.raises(PlacementFormatError, match="fallback"):
        format_placement(PlacementFile(tiers, 1, (0, 0), [],
                                       statics=[StaticLine("slow", line.frame, 10000, "",
                                                           ((0, 4096),))]))
