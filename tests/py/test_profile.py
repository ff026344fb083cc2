"""profile.csv (docs/formats.md §4): where in its blocks each site's sampled weight
falls — written by hmtune analyze from hand-made and generated traces and from a traced
program, read back by hmtune.analyze.profile, whose rebucket, flatness and errors are checked."""

from __future__ import annotations

import re
import subprocess
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from prvtext import GENTRACE, PrvText, analyze, pcf_text, read_csv
from tracemodel import PROGRAMS, trace

from hmtune.analyze.profile import (
    HUGEPAGE,
    ProfileFormatError,
    chi2_sf,
    flatness,
    profile_next_to,
    read_profile,
    rebucket,
)
from hmtune.analyze.sites_io import SitesFormatError
from hmtune.core.sitesfile import release_field
from hmtune.core.units import MIB

P, Q, R = 0x7F0000000000, 0x7F1000000000, 0x7F2000000000
WINDOW = range(20 * MIB, 22 * MIB)      # the hot window of site 3's 64 MiB object


def windowed_trace() -> tuple[PrvText, dict[int, list[tuple[int, int]]]]:
    """Site 3: one 64 MiB block per task (tasks 1 and 2), its samples in WINDOW, half
    named by 32000007, half found by address. Site 4: a 16 MiB block sampled evenly
    all over. Site 5: a block with one sample the trace names but whose address is in
    no block of it (the profile cannot place it). Returns the trace and, per site, the
    (offset, weight) of each placed sample."""
    t = PrvText(ntasks=2)
    t.alloc(10, 64 * MIB, 3, P, task=1)
    t.alloc(10, 64 * MIB, 3, Q, task=2)
    t.alloc(20, 16 * MIB, 4, R, task=1)
    t.alloc(30, 4096, 5, R + 32 * MIB, task=1)
    placed: dict[int, list[tuple[int, int]]] = {3: [], 4: []}
    time = 100
    for i in range(60):
        off = WINDOW.start + (i * 37 * 4096 + i * 8) % len(WINDOW)
        task, base = (1, P) if i % 3 else (2, Q)
        t.sample(time, base + off, weight=1000 + i, obj=3 if i % 2 else None, task=task)
        placed[3].append((off, 1000 + i))
        time += 10
    for i in range(400):
        off = i * (16 * MIB // 400) + 100
        t.sample(time, R + off, weight=500, obj=4 if i % 2 else None)
        placed[4].append((off, 500))
        time += 10
    t.sample(time, P + 70 * MIB, weight=7, obj=5)      # site 5 named, but no block there
    return t, placed


PCF = pcf_text({3: "a.c:3", 4: "a.c:4", 5: "a.c:5"},
               {3: "app+0x3", 4: "app+0x4", 5: "app+0x5"})


@pytest.fixture(scope="module")
def windowed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict, str]:
    d = tmp_path_factory.mktemp("windowed")
    t, placed = windowed_trace()
    prv = t.write(d, pcf=PCF)
    r = analyze(prv, d / "out")
    assert r.returncode == 0, r.stderr
    return d / "out", placed, r.stderr


def test_profile_puts_the_weight_in_its_buckets(windowed: tuple[Path, dict, str]) -> None:
    out, placed, _ = windowed
    prof = read_profile(out / "profile.csv")
    assert prof.granularity == 4096
    first = (out / "profile.csv").read_text().splitlines()[0]
    sites_first = (out / "sites.csv").read_text().splitlines()[0]
    tid = re.search(r"trace-id=(\w+)", sites_first)[1]
    assert first == f"# hmtune profile v1 trace={out.parent / 'trace.prv'} trace-id={tid} " \
                    f"granularity=4096 {release_field()}"
    assert prof.trace_id == tid
    for sid in (3, 4):
        want_w: Counter[int] = Counter()
        want_n: Counter[int] = Counter()
        for off, w in placed[sid]:
            want_w[off // 4096 * 4096] += w
            want_n[off // 4096 * 4096] += 1
        got = prof.site(sid)
        assert dict(zip(got["offset"], got["weight"], strict=True)) == dict(want_w)
        assert dict(zip(got["offset"], got["samples"], strict=True)) == dict(want_n)
    assert list(prof.df.columns) == ["site_id", "offset", "weight", "samples"]
    assert prof.df[["site_id", "offset"]].apply(tuple, axis=1).is_monotonic_increasing
    assert 5 not in set(prof.df["site_id"])             # its one sample has no block


def test_profile_sums_are_the_sites_weights(windowed: tuple[Path, dict, str]) -> None:
    out, _, stderr = windowed
    df = read_profile(out / "profile.csv").df
    sums = df.groupby("site_id")[["weight", "samples"]].sum()
    for row in read_csv(out / "sites.csv"):
        sid = int(row["site_id"])
        if sid == 5:
            continue                                    # its sample could not be placed
        assert sums.loc[sid, "weight"] == float(row["weight"])
        assert sums.loc[sid, "samples"] == int(row["samples"])
    assert "1 sample(s) of allocation sites are in no profile" in stderr
    assert ("profiles: 2 large site(s) (an object over 6 MiB, 4+ huge pages): 1 concentrated "
            "(splitting them can pay), 1 flat, 0 with too few samples to tell") in stderr


def test_rebucket_and_flatness(windowed: tuple[Path, dict, str]) -> None:
    out, placed, _ = windowed
    prof = read_profile(out / "profile.csv")
    huge = rebucket(prof.df, HUGEPAGE)
    assert huge.attrs["granularity"] == HUGEPAGE
    hot = huge[huge["site_id"] == 3]
    assert list(hot["offset"]) == [20 * MIB]            # WINDOW is one huge page
    assert int(hot["samples"].iloc[0]) == 60
    assert int(hot["weight"].iloc[0]) == sum(w for _, w in placed[3])
    even = huge[huge["site_id"] == 4]
    assert list(even["offset"]) == [i * HUGEPAGE for i in range(8)]
    assert list(even["samples"]) == [50] * 8
    assert rebucket(huge, 1 << 30)["offset"].tolist() == [0, 0]
    with pytest.raises(ValueError, match="finer"):
        rebucket(huge, 4096)
    with pytest.raises(ValueError, match="power of two"):
        rebucket(prof.df, 3 * MIB)
    assert flatness(prof.site(3), 64 * MIB) is False
    assert flatness(prof.site(4), 16 * MIB) is True
    assert flatness(prof.site(4), 6 * MIB) is None      # 3 huge pages: not a large site
    assert flatness(prof.site(3).head(3), 64 * MIB) is None   # 3 samples: cannot tell


def test_flatness_rule_on_counts() -> None:
    def site(counts: list[int], g: int = HUGEPAGE) -> pd.DataFrame:
        return pd.DataFrame({"site_id": 3, "offset": [i * g for i in range(len(counts))],
                             "weight": counts, "samples": counts})

    assert flatness(site([5, 5, 5, 5]), 8 * MIB) is True
    assert flatness(site([20, 0, 0, 0]), 8 * MIB) is False
    assert flatness(site([4, 4, 4, 4]), 8 * MIB) is None        # 16 samples < 4 x 5
    # 40 samples over 32 huge pages: pooled in runs of 4 (8 runs of 8 MiB, 5 expected)
    assert flatness(site([40] + [0] * 31), 64 * MIB) is False
    assert flatness(site([5 if i % 4 == 0 else 0 for i in range(32)]), 64 * MIB) is True
    # a short last huge page expects fewer samples
    assert flatness(site([30, 30, 30, 30, 3]), 8 * MIB + MIB // 10) is True
    # pooled into two runs, the short last one merged into the first: one run, None
    assert flatness(site([2, 2, 2, 1, 1]), 8 * MIB + 1) is None


def test_chi2_tail() -> None:
    assert chi2_sf(3.841458820694124, 1) == pytest.approx(0.05, rel=1e-9)
    assert chi2_sf(11.344866730144373, 3) == pytest.approx(0.01, rel=1e-9)
    assert chi2_sf(30.57791416689249, 15) == pytest.approx(0.01, rel=1e-9)
    assert chi2_sf(0.5, 4) == pytest.approx(1.25 * 2.718281828459045 ** -0.25, rel=1e-12)
    assert chi2_sf(0.0, 7) == 1.0
    assert chi2_sf(1e4, 10) == pytest.approx(0.0, abs=1e-300)


def test_granularity_option(tmp_path: Path) -> None:
    t, placed = windowed_trace()
    prv = t.write(tmp_path, pcf=PCF)
    r = analyze(prv, tmp_path / "o2", "--profile-granularity", "2M")
    assert r.returncode == 0, r.stderr
    prof = read_profile(tmp_path / "o2" / "profile.csv")
    assert prof.granularity == HUGEPAGE
    fine = rebucket(read_profile(windowed_out(tmp_path, prv)).df, HUGEPAGE)
    assert prof.df.reset_index(drop=True).equals(fine.reset_index(drop=True))
    for bad in ("3000", "2048", "2G", "6M", "abc", "-4096"):
        r = analyze(prv, tmp_path / "bad", "--profile-granularity", bad)
        assert r.returncode == 2, (bad, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(
            "hmtune analyze: --profile-granularity: "), (bad, r.stderr)
    assert not (tmp_path / "bad").exists()


def windowed_out(tmp: Path, prv: Path) -> Path:
    r = analyze(prv, tmp / "o4k")
    assert r.returncode == 0, r.stderr
    return tmp / "o4k" / "profile.csv"


def test_sums_hold_with_small_call_sampling(tmp_path: Path) -> None:
    """A generated trace of 4 processes: both attribution paths, blocks of small-call
    sampling whose weights are scaled and then bounded (ps_sites_cap)."""
    prv = tmp_path / "g.prv"
    subprocess.run([str(GENTRACE), "200000", str(prv), "--tasks", "4", "--threads", "2"],
                   check=True, capture_output=True)
    r = analyze(prv, tmp_path / "out", "--profile-granularity", "8192")
    assert r.returncode == 0, r.stderr
    assert "lowered to the weight sampled in untraced memory" in r.stderr   # the bound ran
    df = read_profile(tmp_path / "out" / "profile.csv").df
    assert (df["offset"] % 8192 == 0).all()
    sums = df.groupby("site_id")[["weight", "samples"]].sum()
    rows = read_csv(tmp_path / "out" / "sites.csv")
    assert len(rows) == len(sums) > 10
    for row in rows:
        sid = int(row["site_id"])
        assert sums.loc[sid, "weight"] == int(row["weight"]), sid
        assert sums.loc[sid, "samples"] == int(row["samples"]), sid


GOOD = "# hmtune profile v1 trace=t.prv trace-id=00 granularity=4096\n" \
       "site_id,offset,weight,samples\n3,0,10,1\n3,8192,5,2\n4,4096,1.5,1\n"


@pytest.mark.parametrize("text,where,why", [
    ("# hmtune profile v2 trace=t.prv granularity=4096\nsite_id,offset,weight,samples\n",
     1, "version 2 is newer"),
    ("# hmtune sites v2 trace=t.prv\nsite_id\n", 1, "not an hmtune profile.csv"),
    ("", 1, "empty file"),
    ("# hmtune profile v1 trace=t.prv\nsite_id,offset,weight,samples\n", 1, "no granularity"),
    ("# hmtune profile v1 granularity=3000\nsite_id,offset,weight,samples\n", 1,
     "granularity 3000 is not a power of two"),
    ("# hmtune profile v1 granularity=4096\nsite_id,offset,weight\n", 2,
     "missing column(s) samples"),
    (GOOD + "5,0,x,1\n", 6, "weight 'x' is not a number"),
    (GOOD + "5,0,1\n", 6, "3 fields, expected 4"),
    (GOOD + "\n5,0,1,1\n", 6, "1 fields, expected 4"),
    (GOOD + "5,100,1,1\n", 6, "offset is not a multiple of the granularity (4096)"),
    (GOOD + "5,0,-1,1\n", 6, "weight is negative"),
    (GOOD + "5,0,1,0\n", 6, "samples is below 1"),
    (GOOD + "4,4096,1,1\n", 6, "rows out of order or repeated"),
    (GOOD + "3,0,1,1\n", 6, "rows out of order or repeated"),
])
def test_reader_refuses_bad_files(tmp_path: Path, text: str, where: int, why: str) -> None:
    p = tmp_path / "profile.csv"
    p.write_text(text)
    with pytest.raises(ProfileFormatError) as e:
        read_profile(p)
    assert str(e.value).startswith(f"{p}:{where}: "), str(e.value)
    assert why in str(e.value)
    assert isinstance(e.value, SitesFormatError) and isinstance(e.value, ValueError)
    from hmtune.analyze.profile import ProfileError
    assert isinstance(e.value, ProfileError)


def test_reader_good_file_missing_file_and_old_outputs(tmp_path: Path) -> None:
    p = tmp_path / "profile.csv"
    p.write_text(GOOD)
    prof = read_profile(p)
    assert (prof.granularity, prof.trace, prof.trace_id) == (4096, "t.prv", "00")
    assert prof.meta["trace-id"] == "00" and prof.meta["granularity"] == "4096"
    assert prof.table is prof.df
    assert prof.df["weight"].tolist() == [10, 5, 1.5]
    assert prof.df["samples"].dtype == "int64"
    p.unlink()
    with pytest.raises(ProfileFormatError, match=r":0: no such file"):
        read_profile(p)
    # an analyze output from before profiles: no profile, nothing raised
    (tmp_path / "sites.csv").write_text("# hmtune sites v2\n")
    assert profile_next_to(tmp_path / "sites.csv") is None
    assert profile_next_to(tmp_path) is None
    p.write_text(GOOD)
    assert profile_next_to(tmp_path / "sites.csv").granularity == 4096
    # a sites.csv of another trace next to it: refused; of the same trace, or none: read
    (tmp_path / "sites.csv").write_text("# hmtune sites v2 trace=t.prv trace-id=ff\n")
    with pytest.raises(ProfileFormatError, match=r"profile.csv:1: made from another trace"):
        profile_next_to(tmp_path)
    (tmp_path / "sites.csv").write_text("# hmtune sites v2 trace=t.prv trace-id=00\n")
    assert profile_next_to(tmp_path / "sites.csv").trace_id == "00"
    (tmp_path / "sites.csv").unlink()
    assert profile_next_to(tmp_path).trace_id == "00"


def test_empty_trace_writes_a_header_only_profile(tmp_path: Path) -> None:
    t = PrvText()
    t.sample(100, 0x1000, weight=3)
    prv = t.write(tmp_path, pcf=pcf_text({}))
    r = analyze(prv, tmp_path / "out")
    assert r.returncode == 0, r.stderr
    prof = read_profile(tmp_path / "out" / "profile.csv")
    assert len(prof.df) == 0 and prof.granularity == 4096


def test_traced_program_hot_window(tmp_path: Path) -> None:
    """End to end: window_hot's 64 MiB array is only touched in [24 MiB, 28 MiB) by its
    hot loop (the software sampler); its 16 MiB array all over."""
    # 1 s per loop: the 64 MiB first touch (page faults, slower under load) stays a small share
    r = trace(tmp_path, str(PROGRAMS / "window_hot"), "1.0", extra=("--sampler", "soft"))
    assert r.returncode == 0, r.stderr
    m = re.search(rb"big=0x[0-9a-f]+ size=(\d+) window=(\d+)\+(\d+)", r.stdout)
    assert m, r.stdout
    size, lo, n = int(m[1]), int(m[2]), int(m[3])
    a = subprocess.run([str(Path(__file__).resolve().parents[2] / "bin" / "hmtune"), "analyze",
                        str(tmp_path), "--top", "0"], capture_output=True, text=True)
    assert a.returncode == 0, a.stderr
    rows = {r["label"]: r for r in read_csv(tmp_path / "sites.csv")}
    big = next(r for label, r in rows.items() if "window_hot.c" in label
               and int(r["max_size"]) == size)
    prof = read_profile(tmp_path / "profile.csv")
    site = prof.site(int(big["site_id"]))
    assert site["weight"].sum() == float(big["weight"])
    assert site["samples"].sum() == int(big["samples"])
    inside = site[(site["offset"] >= lo) & (site["offset"] < lo + n)]
    assert inside["weight"].sum() >= 0.8 * site["weight"].sum(), site
    assert flatness(site, size) is not True
    assert "profiles: 2 large site(s)" in a.stderr


def test_flatness_never_fails_on_odd_shapes() -> None:
    """Any object size and spread of samples gives True, False or None."""
    import random

    from hmtune.analyze.profile import flat_counts

    rnd = random.Random(5)
    for _ in range(3000):
        size = rnd.choice([1, 4096, 6 * MIB, 6 * MIB + 1, 8 * MIB, 8 * MIB + 1,
                           rnd.randrange(1, 1 << 34)])
        nbuckets = max(1, -(-size // HUGEPAGE))
        rows = [(rnd.randrange(nbuckets) * HUGEPAGE + rnd.randrange(HUGEPAGE) // 4096 * 4096,
                 rnd.randrange(1, 4) ** rnd.randrange(4)) for _ in range(rnd.randrange(60))]
        assert flat_counts(rows, size) in (True, False, None)
