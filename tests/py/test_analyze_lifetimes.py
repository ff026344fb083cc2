"""analyze: the per-(task, site) lifetime facts hmtune-prvscan computes while streaming,
on hand-written traces with known answers (sites.tsv and allocs.csv), on a random
trace against a direct computation from the definitions, and on generated traces
against the generator's own answers (hmtune-gentrace --check)."""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path

import pytest
from scantrace import Block, Trace, alloc_lines, reference_lifetimes, run_scan, site_row

from hmtune.analyze.scan_io import LIFETIME_COLUMNS
from hmtune.analyze.scanner import scanner_bin

KB = 0x1000


def test_overlapping_blocks_and_never_freed(tmp_path: Path) -> None:
    # A [0,50) 100 B, B [20,80) 200 B, C [100, end) 50 B never freed
    tr = Trace(end=1000)
    tr.malloc(0, 100, 3, 16 * KB)
    tr.malloc(20, 200, 3, 32 * KB)
    tr.free(50, 16 * KB)
    tr.free(80, 32 * KB)
    tr.malloc(100, 50, 3, 48 * KB)
    r = site_row(run_scan(tr, tmp_path), 3)
    assert r["peak_live_bytes"] == 300           # A and B overlap on [20,50)
    assert r["live_ns"] == 80 + 900              # [0,80) u [100,1000)
    assert r["last_free_ns"] == 1000             # a block is never freed: trace end
    assert (r["n_allocs"], r["max_size"], r["total_bytes"], r["first_alloc_ns"]) == \
        (3, 200, 350, 0)


def test_disjoint_blocks_touching_ends_free_first(tmp_path: Path) -> None:
    # B starts when A ends (another thread reuses the address): ends come first at equal
    # times, so they never add up.
    tr = Trace(nthreads=2)
    tr.malloc(0, 100, 4, 16 * KB)
    tr.free(10, 16 * KB)
    tr.malloc(10, 300, 4, 16 * KB, thread=2, dur=2)
    tr.free(20, 16 * KB, thread=2)
    tr.malloc(30, 50, 4, 16 * KB)
    tr.free(40, 16 * KB)
    scan = run_scan(tr, tmp_path)
    r = site_row(scan, 4)
    assert r["peak_live_bytes"] == 300
    assert r["live_ns"] == 30                    # [0,20) u [30,40)
    assert r["last_free_ns"] == 40
    assert scan.meta["evictions"] == 0


def test_realloc_rows(tmp_path: Path) -> None:
    # malloc(100) at site 5; realloc in place to 400 at site 5 (t=50); realloc to 1000
    # at site 6 (t=70), moved; freed at 90: the old block's row ends where the new one
    # starts, and the new block belongs to the realloc call's site.
    tr = Trace()
    tr.malloc(0, 100, 5, 16 * KB)
    tr.realloc(50, 16 * KB, 400, 5, 16 * KB)
    tr.realloc(70, 16 * KB, 1000, 6, 32 * KB)
    tr.free(90, 32 * KB)
    scan = run_scan(tr, tmp_path)
    r5, r6 = site_row(scan, 5), site_row(scan, 6)
    assert r5["peak_live_bytes"] == 400          # not 500: never both at once
    assert (r5["n_allocs"], r5["total_bytes"], r5["live_ns"], r5["last_free_ns"]) == \
        (2, 500, 70, 70)
    assert (r6["peak_live_bytes"], r6["live_ns"], r6["first_alloc_ns"]) == (1000, 20, 70)
    assert alloc_lines(scan) == ["5,0,1,0x10000,100,0,50,1", "5,0,1,0x10000,400,50,70,1",
                                 "6,0,1,0x20000,1000,70,90,1"]


def test_zero_length_and_out_of_order_end(tmp_path: Path) -> None:
    # Thread 2's blocks overlap thread 1's, so thread 1's end where thread 2's calls
    # began: site 7's at its own allocation time (never live), site 8's before its
    # allocation (clamped to it).
    tr = Trace(nthreads=2)
    tr.malloc(10, 100, 7, 16 * KB, dur=10)
    tr.malloc(10, 64, 9, 16 * KB, thread=2, dur=20)
    tr.malloc(40, 100, 8, 32 * KB, dur=10)
    tr.malloc(35, 64, 9, 32 * KB, thread=2, dur=20)
    scan = run_scan(tr, tmp_path)
    r7, r8 = site_row(scan, 7), site_row(scan, 8)
    assert (r7["live_ns"], r7["peak_live_bytes"], r7["last_free_ns"]) == (0, 0, 10)
    assert (r8["live_ns"], r8["peak_live_bytes"], r8["last_free_ns"]) == (0, 0, 40)
    assert scan.meta["evictions"] == 2
    assert alloc_lines(scan)[:2] == ["7,0,1,0x10000,100,10,10,1", "9,0,2,0x10000,64,10,-1,1"]
    assert "8,0,1,0x20000,100,40,35,1" in alloc_lines(scan)   # the row keeps the raw time


def test_calls_overlapping_across_threads(tmp_path: Path) -> None:
    # A block starts at its call's entry, known only at the call's end; a realloc ends
    # its old block at its entry, also known only at its end. Meanwhile other threads
    # free and allocate: the sweep must still see them in time order.
    tr = Trace(nthreads=2)
    tr.malloc(0, 100, 11, 16 * KB)                          # A [0,12)
    tr.malloc(10, 200, 11, 32 * KB, thread=2, dur=10)       # B [10,30)
    tr.free(12, 16 * KB)
    tr.realloc(30, 32 * KB, 50, 11, 48 * KB, thread=2, dur=20)   # C [30,end)
    tr.malloc(35, 1000, 11, 64 * KB)                        # D [35,40)
    tr.free(40, 64 * KB)
    tr.end = 100
    r = site_row(run_scan(tr, tmp_path), 11)
    assert r["peak_live_bytes"] == 1050          # C + D; A + B = 300 on [10,12)
    assert (r["live_ns"], r["n_allocs"], r["last_free_ns"]) == (100, 4, 100)


def test_interleaved_sites_and_tasks_do_not_mix(tmp_path: Path) -> None:
    tr = Trace(ntasks=2, nthreads=2, end=200)
    tr.malloc(0, 100, 3, 16 * KB)
    tr.malloc(10, 1000, 4, 32 * KB)
    tr.free(20, 32 * KB)
    tr.free(100, 16 * KB)
    tr.malloc(5, 7, 3, 16 * KB, task=2)                     # same address, other process
    tr.malloc(50, 11, 3, 48 * KB, thread=2)
    tr.free(60, 48 * KB, thread=2)
    scan = run_scan(tr, tmp_path)
    assert site_row(scan, 3, task=1)["peak_live_bytes"] == 111   # threads of one process add up
    assert site_row(scan, 4, task=1)["peak_live_bytes"] == 1000
    assert site_row(scan, 3, task=2)["peak_live_bytes"] == 7
    assert site_row(scan, 3, task=2)["live_ns"] == 195
    assert [line.split(",")[:3] for line in alloc_lines(scan)] == \
        [["3", "0", "1"], ["3", "1", "1"], ["4", "0", "1"], ["3", "0", "2"]]


def random_trace(seed: int, nslots: int) -> tuple[Trace, list[Block], int]:
    """Mallocs, frees and reallocs (in place or moved) on 2 tasks x 2 threads, reusing
    addresses; a fifth of the time slots hold two calls (threads 1 and 2) at the same
    time. Returns the trace, the blocks as made, and the trace end."""
    rng = random.Random(seed)
    tr = Trace(ntasks=2, nthreads=2)
    blocks: list[Block] = []
    live: list[dict[int, Block]] = [{}, {}]
    t = 0
    for _ in range(nslots):
        t += rng.choice([2, 3, 5, 40])        # calls last 1 ns: every thread is idle again
        born: set[tuple[int, int]] = set()    # blocks made at t: their pointer is not out yet
        for thread in (1, 2) if rng.random() < 0.2 else (1,):
            task = rng.randrange(2)
            mine = live[task]
            old = [p for p in sorted(mine) if (task, p) not in born]
            free_addrs = [a * KB for a in range(1, 200) if a * KB not in mine]
            op = rng.random() * (1.0 if old else 0.4)
            if op < 0.4 + 0.2 * (len(old) < 20):
                ptr, site, size = rng.choice(free_addrs), rng.randrange(3, 7), rng.randrange(1, 999)
                tr.malloc(t, size, site, ptr, task=task + 1, thread=thread)
            elif op < 0.85:
                ptr = rng.choice(old)
                tr.free(t, ptr, task=task + 1, thread=thread)
                mine.pop(ptr).t_free = t
                continue
            else:
                prev = rng.choice(old)
                ptr = prev if rng.random() < 0.5 else rng.choice(free_addrs)
                site, size = rng.randrange(3, 7), rng.randrange(1, 999)
                tr.realloc(t, prev, size, site, ptr, task=task + 1, thread=thread)
                mine.pop(prev).t_free = t
            mine[ptr] = Block(task + 1, site, size, t)
            blocks.append(mine[ptr])
            born.add((task, ptr))
    return tr, blocks, t + 2


def test_random_trace_against_the_definitions(tmp_path: Path) -> None:
    tr, blocks, end = random_trace(7, 1500)
    scan = run_scan(tr, tmp_path)
    want = reference_lifetimes(blocks, end)
    got = {(r["task"], r["site_id"]): {c: r[c] for c in LIFETIME_COLUMNS}
           for r in scan.sites if r["n_allocs"]}
    assert got == want
    assert scan.meta["evictions"] == 0 and scan.meta["late_endpoints"] == 0
    rows = [line.split(",") for line in alloc_lines(scan)]
    assert [(int(r[0]), int(r[1]) + 1, int(r[4]), int(r[5]), int(r[6])) for r in rows] == \
        [(b.site, b.task, b.size, b.t_alloc, b.t_free) for b in blocks]


def test_scan_json_counts(tmp_path: Path) -> None:
    tr, blocks, _ = random_trace(11, 300)
    scan = run_scan(tr, tmp_path)
    meta = json.loads((tmp_path / "scan" / "scan.json").read_text())
    assert meta["alloc_rows"] == scan.alloc_rows == len(blocks)
    assert meta["allocs"] == len(blocks)
    assert sum(r["n_allocs"] for r in scan.sites) == len(blocks)


@pytest.mark.parametrize("records,extra", [(300_000, []), (1_000_000, ["--alloc-heavy"])])
def test_generated_traces_match_the_generator(tmp_path: Path, records: int,
                                              extra: list[str]) -> None:
    # the alloc-heavy trace has more blocks than the scanner keeps in memory (131072):
    # its allocs.csv is merged back from sorted runs
    gentrace = scanner_bin().with_name("hmtune-gentrace")
    prv = tmp_path / "gen.prv"
    subprocess.run([str(gentrace), str(records), str(prv), "--tasks", "3", "--threads", "2",
                    *extra], check=True)
    scan = run_scan(prv, tmp_path)
    check = subprocess.run([str(gentrace), "--check", str(prv), str(tmp_path / "scan")],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stdout
    assert scan.alloc_rows > (131072 if extra else 0)


def test_call_that_never_ends(tmp_path: Path) -> None:
    # Thread 2 enters malloc and the trace never shows it return (a process killed in
    # the call): the sweep cannot wait for it forever. 150000 blocks on thread 1 queue
    # more endpoints than the scanner holds (2^18), so it sweeps the oldest anyway.
    n = 150_000
    lines = [f"#Paraver (01/01/2026 at 00:00):{6 * n + 100}_ns:1(2):1:1(2:1),0",
             "2:2:1:1:2:1:40000040:1:40000041:64:32000009:9"]
    for i in range(n):
        t = 10 + 6 * i
        lines += [f"2:1:1:1:1:{t}:40000040:1:40000041:{100 + i % 7}:32000009:3",
                  f"2:1:1:1:1:{t + 1}:40000040:0:40000043:4096",
                  f"2:1:1:1:1:{t + 3}:40000040:2:40000042:4096", f"2:1:1:1:1:{t + 4}:40000040:0"]
    prv = tmp_path / "stuck.prv"
    prv.write_text("\n".join(lines) + "\n")
    scan = run_scan(prv, tmp_path)
    r = site_row(scan, 3)
    assert (r["n_allocs"], r["peak_live_bytes"], r["live_ns"]) == (n, 106, 3 * n)
    assert r["last_free_ns"] == 10 + 6 * (n - 1) + 3
    assert scan.meta["unterminated_calls"] == 1 and scan.meta["late_endpoints"] == 0
    assert [x["site_id"] for x in scan.sites] == [3]           # the open call made no block
