"""hmtune.analyze.labels: the three site-label forms of DESIGN.md §2, and traces without labels."""

from __future__ import annotations

from pathlib import Path

import pytest

from hmtune.analyze.labels import (
    FORM_BANG,
    FORM_FILELINE,
    FORM_NONE,
    FORM_RAW,
    frame_form,
    load_labels,
    pcf_path_for,
    table_form,
    to_raw_chain,
)
from hmtune.analyze.shortlabels import fit_label

DATA = Path(__file__).resolve().parent / "data" / "extrae-malloc-trace"

HMTUNE_PCF = """\
DEFAULT_OPTIONS

LEVEL               THREAD
UNITS               NANOSEC

EVENT_TYPE
0    32000007    Memory object referenced by sampled address
0    32000009    Allocation memory object
VALUES
0 End
1 ??
2 ??
3 /src/app.c:94 > ./csu/../sysdeps/x86/libc-start.c:58 > ??
4 ./libio/filedoalloc.c:101 > ./stdio-common/printf.c:33 > /src/app.c:130
9 grid [static, /opt/app]

EVENT_TYPE
0    41000010    hmtune allocation site (module+offset chain)
VALUES
0 End
1 ??
2 ??
3 /opt/app+0x1188 > /lib/x86_64-linux-gnu/libc.so.6+0x2724a > ??+0x7ffd0000
4 /lib/x86_64-linux-gnu/libc.so.6+0x758cc > /opt/app+0x16cb

EVENT_TYPE
0    41000011    hmtune allocation site (function chain)
VALUES
0 End
3 main > __libc_start_call_main > _start
4 _IO_file_doallocate > printf > main
"""

EXTRAE5_RAW_PCF = """\
EVENT_TYPE
0    32000007    Memory object referenced by sampled address
0    32000009    Allocation memory object
VALUES
0 End
1 ??
2 ??
3 /home/demo/src/malloc_test+0x11d6 > /usr/lib/x86_64-linux-gnu/libc.so.6+0x271ca
4 /home/demo/src/malloc_test+0x11f4 > /usr/lib/x86_64-linux-gnu/libc.so.6+0x271ca
"""

BANG_PCF = """\
EVENT_TYPE
0    32000007    Memory object referenced by sampled address
0    32000009    Allocation memory object
VALUES
0 End
1 ??
3 /home/demo/app!11d6 > /lib64/libc.so.6!0x271CA
4 /home/demo/app!1200 > ??
"""


def write_trace(tmp: Path, pcf: str | None, name: str = "trace") -> Path:
    prv = tmp / f"{name}.prv"
    prv.write_text("#Paraver (01/01/2026 at 00:00):10_ns:1(1):1:1(1:1),0\n")
    if pcf is not None:
        (tmp / f"{name}.pcf").write_text(pcf)
    return prv


def test_frame_forms() -> None:
    assert frame_form("/a/b.so+0x1f") == FORM_RAW
    assert frame_form("??+0x7ffd0000") == FORM_RAW
    assert frame_form("/a/b.so!1f") == FORM_BANG
    assert frame_form("/a/b.so!0x1F") == FORM_BANG
    assert frame_form("./csu/../csu/libc-start.c:128") == FORM_FILELINE
    assert frame_form("??") is None and frame_form("main") is None
    assert table_form({1: "??", 2: "??"}) == FORM_NONE
    assert table_form({3: "a.c:1 > b+0x1", 4: "c+0x2"}) == FORM_RAW


def test_bang_to_raw() -> None:
    assert to_raw_chain("/a/app!11d6 > /lib/libc.so.6!0x271CA") == \
        "/a/app+0x11d6 > /lib/libc.so.6+0x271ca"
    assert to_raw_chain("/a/app+0x10") == "/a/app+0x10"
    assert to_raw_chain("/a/app+0x0010 > /a/app+0xAB") == "/a/app+0x10 > /a/app+0xab"
    # a frame without a module offset: the interposer could not match the site, so it
    # gets no key (the advisor lists it as unplaceable), whatever its other frames
    assert to_raw_chain("/a/app!11d6 > /lib/libc.so.6!0x271CA > ??") == ""
    assert to_raw_chain("/a/app+0x10 > main.c:3") == ""
    # the tracer's own frame outside every module is a module offset of "??"
    assert to_raw_chain("??+0x7f0012345678 > /a/app+0x10") == "??+0x7f0012345678 > /a/app+0x10"
    assert to_raw_chain("a.c:1 > b.c:2") == ""
    assert to_raw_chain("??") == ""


def test_hmtune_labels(tmp_path: Path) -> None:
    labels = load_labels(write_trace(tmp_path, HMTUNE_PCF))
    assert labels.form == FORM_RAW and labels.warnings == []
    assert labels.symbolized(3) == "/src/app.c:94 > ./csu/../sysdeps/x86/libc-start.c:58 > _start"
    assert labels.raw(3) == ("/opt/app+0x1188 > /lib/x86_64-linux-gnu/libc.so.6+0x2724a"
                             " > ??+0x7ffd0000")
    assert labels.functions[4] == "_IO_file_doallocate > printf > main"
    assert labels.raw(1) == "" and labels.raw(9) == ""       # placeholders, statics
    assert labels.symbolized(42) == "site 42" and labels.raw(42) == ""


def test_extrae5_untranslated_labels(tmp_path: Path) -> None:
    labels = load_labels(write_trace(tmp_path, EXTRAE5_RAW_PCF))
    assert labels.form == FORM_RAW and labels.warnings == []
    raw = "/home/demo/src/malloc_test+0x11d6 > /usr/lib/x86_64-linux-gnu/libc.so.6+0x271ca"
    assert labels.raw(3) == raw
    assert labels.symbolized(3) == raw       # no symbols in the trace: the chain itself


def test_bang_labels(tmp_path: Path) -> None:
    labels = load_labels(write_trace(tmp_path, BANG_PCF))
    assert labels.form == FORM_BANG
    assert labels.raw(3) == "/home/demo/app+0x11d6 > /lib64/libc.so.6+0x271ca"
    assert labels.raw(4) == ""           # a '??' frame: no key the interposer could match
    assert labels.symbolized(3) == labels.raw(3)
    assert labels.symbolized(4)          # still named in the reports
    assert len(labels.warnings) == 2 and "module!offset" in labels.warnings[0]
    assert "1 site(s)" in labels.warnings[1]


def test_extrae_translated_labels_fixture() -> None:
    labels = load_labels(DATA / "malloc_test.prv")
    assert labels.form == FORM_FILELINE
    assert labels.symbolized(6) == ("/home/demo/src/malloc_test.c:41 > "
                                    "/home/demo/src/malloc_test.c:66 > "
                                    "./csu/../sysdeps/x86/libc-start.c:74 > "
                                    "./csu/../csu/libc-start.c:128")
    assert all(labels.raw(i) == "" for i in range(1, 7))
    (warning,) = labels.warnings
    assert "interposer cannot match" in warning


def test_missing_pcf(tmp_path: Path) -> None:
    labels = load_labels(write_trace(tmp_path, None))
    assert labels.form == FORM_NONE
    assert labels.symbolized(7) == "site 7" and labels.raw(7) == ""
    assert len(labels.warnings) == 1 and "trace.pcf" in labels.warnings[0]


@pytest.mark.parametrize("text", ["EVENT_TYPE\n0 40000040 Dynamic memory calls\n",
                                  "VALUES\n1 x\n"])
def test_pcf_without_site_table_or_broken(tmp_path: Path, text: str) -> None:
    labels = load_labels(write_trace(tmp_path, text))
    assert labels.form == FORM_NONE and labels.symbolized(3) == "site 3"
    assert len(labels.warnings) == 1


def test_pcf_next_to_gzipped_trace() -> None:
    assert pcf_path_for("/x/t.prv.gz") == Path("/x/t.pcf")
    assert pcf_path_for("t.prv") == Path("t.pcf")


def test_fit_label_keeps_both_ends() -> None:
    label = "memory.h:66 Memory::create<double> > … > neighbor.cpp:300 Neighbor::init"
    assert fit_label(label, 200) == label
    cut = fit_label(label, 40)
    assert len(cut) == 40 and cut.startswith("memory.h:66") and cut.endswith("Neighbor::init")
    assert fit_label("site 7", 10) == "site 7"


def test_hmtune_labels_fill_unknown_frames(tmp_path: Path) -> None:
    """An older trace's `??` frames: the function of that frame, else its raw frame."""
    labels = load_labels(write_trace(tmp_path, HMTUNE_PCF))
    assert "??" not in labels.symbolized(3).split(" > ")
    assert labels.symbolized(3).endswith(" > _start")
