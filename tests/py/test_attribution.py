"""finalize: each sample goes to the object live at its address at its time
(freed-then-reused memory, realloc chains, statics, stacks) — on hand-made streams."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import rawstream as rs
from tracemodel import PROGRAMS, ROOT, check, load

FIN = ROOT / "build" / "bin" / "hmtune-finalize"
APP = PROGRAMS / "four_arrays"          # a real binary with a static array `loop_count`
BASE = 0x555555554000
P, Q, R = 0x7F0000100000, 0x7F0000200000, 0x7F0000300000


def finalize(tmp: Path, streams: list[rs.Stream], extra: list[bytes] = ()) -> object:
    raw = tmp / "raw"
    raw.mkdir()
    proc = [rs.proc_record(100, 1000), rs.module_record(1, str(APP), BASE, BASE, BASE + 0x5000),
            rs.sampler_record(3, "soft 250 Hz"), *extra, rs.end_record(10_000)]
    rs.write(raw / "h.100.0.hmr", proc, streams)
    r = subprocess.run([str(FIN), str(raw), "-o", str(tmp / "t")], capture_output=True)
    assert r.returncode == 0, r.stderr
    assert check(tmp / "t.prv") == []
    return load(tmp / "t.prv")


def symbol(name: str) -> int:
    return symbol_size(name)[0]


def symbol_size(name: str) -> tuple[int, int]:
    """The symbol's value and ELF size (nm -S)."""
    nm = subprocess.run(["nm", "-S", str(APP)], capture_output=True, text=True,
                        check=True).stdout
    f = next(line.split() for line in nm.splitlines() if line.endswith(" " + name))
    return int(f[0], 16), int(f[1], 16) if len(f) == 4 else 0


def main_stream() -> rs.Stream:
    s = rs.Stream(1).thread(1000, 100)
    s.stack(1, [(1, 0x1100)]).stack(2, [(1, 0x1200)]).stack(3, [(1, 0x1300)])
    return s


def test_reused_address_goes_to_the_object_live_then(tmp_path: Path) -> None:
    s = main_stream()
    s.call(1, 1, 1100, 1110, 65536, P)          # site A at P
    s.free(1300, 1310, P)
    s.call(1, 2, 1500, 1510, 65536, P)          # site B, same address
    smp = rs.Stream(1 | rs.SAMPLE_STREAM).thread(1000, 100, (0x7FFF0000, 0x7FFF8000))
    smp.sample(1200, BASE + 0x1150, P + 100)     # A live
    smp.sample(1400, BASE + 0x1150, P + 100)     # nothing live there
    smp.sample(1600, BASE + 0x1150, P + 65535)   # B live, last byte
    smp.sample(1700, BASE + 0x1150, P + 65536)   # one past the end: not B
    t = finalize(tmp_path, [s, smp])
    a, b = t.allocs()
    assert [x.obj for x in t.samples] == [a.site, 0, b.site, 0]
    assert [x.cls for x in t.samples] == [1, 4, 1, 4]
    assert a.site != b.site
    assert t.nthreads == [1]                     # the sample stream is on the thread's line


def test_realloc_moves_samples_to_the_realloc_site(tmp_path: Path) -> None:
    s = main_stream()
    s.call(1, 1, 1100, 1110, 8192, Q)            # site A
    s.call(3, 2, 1300, 1310, 16384, Q, inp=Q)    # realloc in place, site B
    s.call(3, 3, 1500, 1510, 65536, R, inp=Q)    # realloc that moves, site C
    smp = rs.Stream(1 | rs.SAMPLE_STREAM).thread(1000, 100)
    smp.sample(1200, BASE + 0x1150, Q + 10)
    smp.sample(1400, BASE + 0x1150, Q + 10000)   # inside the grown block
    smp.sample(1600, BASE + 0x1150, R + 10)
    smp.sample(1650, BASE + 0x1150, Q + 10)      # the old block is gone
    t = finalize(tmp_path, [s, smp])
    sites = [c.site for c in t.allocs()]
    assert [x.obj for x in t.samples] == [sites[0], sites[1], sites[2], 0]


def test_static_stack_unknown_and_no_address(tmp_path: Path) -> None:
    s = main_stream()
    smp = rs.Stream(1 | rs.SAMPLE_STREAM).thread(1000, 100, (0x7FFF0000, 0x7FFF8000))
    smp.sample(1200, BASE + 0x1150, BASE + symbol("loop_count") + 16)   # static array
    smp.sample(1210, BASE + 0x1150, 0x7FFF1000, flags=rs.ADDR_OK | rs.STORE)   # stack
    smp.sample(1220, BASE + 0x1150, 0x1234)                  # nothing known
    smp.sample(1230, BASE + 0x1150, 0, flags=rs.NO_MEMOP)    # no memory operand
    smp.sample(1240, BASE + 0x1150, 0, flags=rs.REJECTED)    # e.g. a gather
    smp.sample(1250, 0, 0, weight=7, flags=rs.LOST)          # the kernel dropped 7
    t = finalize(tmp_path, [s, smp])
    st, stack, unk, nomem, rej = t.samples
    assert st.cls == 2 and st.obj >= 3 and "loop_count" in t.fileline[st.obj]
    off, size = symbol_size("loop_count")
    assert size > 0 and t.raw[st.obj] == f"{APP}+0x{off:x} [static {size}]"
    assert (stack.cls, stack.store, stack.obj) == (3, True, 0)
    assert (unk.cls, unk.obj) == (4, 0)
    assert nomem.cls == 5 and nomem.addr is None and rej.cls == 5
    assert t.lost_samples == 7


def test_sampled_instruction_is_symbolized(tmp_path: Path) -> None:
    main_off = symbol("main")
    smp = rs.Stream(1 | rs.SAMPLE_STREAM).thread(1000, 100)
    smp.sample(1200, BASE + main_off + 4, 0x1234)
    t = finalize(tmp_path, [main_stream(), smp])
    assert t.samples[0].func == "main"
    assert "four_arrays.c:" in t.samples[0].line


@pytest.mark.parametrize("order", ["samples-first", "allocs-first"])
def test_threads_and_sample_only_threads(tmp_path: Path, order: str) -> None:
    """A thread with samples but no traced allocation still gets its own line."""
    s = main_stream().call(1, 1, 1100, 1110, 65536, P)
    other = rs.Stream(2 | rs.SAMPLE_STREAM).thread(1050, 101)
    other.sample(1200, BASE + 0x1150, P + 8)     # a second thread reading main's block
    streams = [other, s] if order == "samples-first" else [s, other]
    t = finalize(tmp_path, streams)
    assert t.nthreads == [2]
    assert t.samples[0].obj == t.allocs()[0].site and t.samples[0].thread == 2
