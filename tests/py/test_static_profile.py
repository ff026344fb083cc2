"""profile.csv rows for static variables (issue 43, "Parts of statics"): finalize gives
each sample in a static its offset from the object's start (41000042), since the
object's start in a process depends on the module's load base, which the trace does
not record; the scanner buckets those samples like a heap block's. Hand-written traces:
two processes whose static lies at different addresses give one profile by offset; a
sample without the offset (an older trace) gives no row, as before."""

from __future__ import annotations

from pathlib import Path

from prvtext import OBJECT, WEIGHT, PrvText, analyze, pcf_text, read_csv

import hmtune.core.events as hev
from hmtune.core.units import MIB

APP = "/opt/app"
LABELS = {3: "app.c:3", 9: "table [static, app]"}
RAW = {3: f"{APP}+0x1188", 9: f"{APP}+0x4000 [static {64 * MIB}]"}
BASE = {1: 0x5555_0000_4000, 2: 0x5600_1234_5000}     # the static's start per process


def static_sample(t: PrvText, when: int, task: int, off: int | None, weight: int) -> None:
    pairs = [hev.HM_EV_SAMPLE_LOAD, BASE[task] + (off or 0), OBJECT, 9]
    if off is not None:
        pairs += [hev.HM_EV_STATIC_OFFSET, off]
    t.event(when, *pairs, WEIGHT, weight, task=task)


def test_static_samples_land_in_buckets_by_offset(tmp_path: Path) -> None:
    t = PrvText(ntasks=2)
    for task in (1, 2):
        t.alloc(100, 4096, 3, 0x7F00_0000_0000 + task * 0x10000, task=task)
        static_sample(t, 200, task, 8, 10)                  # first bucket
        static_sample(t, 210, task, 3 * MIB + 4100, 5)      # bucket 3 MiB + 4 KiB
        static_sample(t, 220, task, 40 * MIB, task)         # far out: the table
    static_sample(t, 230, 1, None, 7)                       # no offset: an older trace
    prv = t.write(tmp_path / "trace", pcf=pcf_text(LABELS, RAW))
    out = tmp_path / "out"
    r = analyze(prv, out)
    assert r.returncode == 0, r.stderr
    rows = [{k: int(v) for k, v in x.items()} for x in read_csv(out / "profile.csv")]
    assert rows == [
        {"site_id": 9, "offset": 0, "weight": 20, "samples": 2},
        {"site_id": 9, "offset": 3 * MIB + 4096, "weight": 10, "samples": 2},
        {"site_id": 9, "offset": 40 * MIB, "weight": 3, "samples": 2},
    ]
    site = next(x for x in read_csv(out / "sites.csv") if x["site_id"] == "9")
    # the sample without an offset is the static's, in no bucket
    assert float(site["weight"]) == 20 + 10 + 3 + 7 and site["kind"] == "static"
    assert "in no profile" not in r.stderr          # statics are not allocation sites
