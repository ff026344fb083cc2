"""libhmalloc's reference policies (HMTUNE_BASELINE, used by `hmtune compare`): every
request of at least a page (first-come) or of at least SIZE (size-window) goes to the
first tier while it has room, whatever its call site. The latency example in its quick
configuration allocates, in this order, cold1 2 MiB, cold2 2 MiB, stream 4 MiB, gidx
512 KiB, gdata 2 MiB, chase 5.5 MiB (examples/latency.c)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
LIB = ROOT / "build" / "lib" / "libhmalloc.so"
LATENCY = ROOT / "build" / "examples" / "latency"
MiB = 1 << 20


Result = tuple[subprocess.CompletedProcess[bytes], dict]


def run(tmp_path: Path, baseline: str, capacity: int) -> Result:
    pl = tmp_path / "placement.txt"
    pl.write_text("# hmtune placement v1\n"
                  f"tier fast thp {capacity}\ntier slow default unlimited\n"
                  "depth 1\nsize-window 0 0\n")
    stats = tmp_path / "stats.json"
    stats.unlink(missing_ok=True)
    env = dict(os.environ, LD_PRELOAD=str(LIB), HMTUNE_PLACEMENT=str(pl), HMTUNE_SUMMARY="0",
               HMTUNE_STATS=str(stats), HMTUNE_BASELINE=baseline)
    r = subprocess.run([str(LATENCY), "-q"], capture_output=True, env=env, timeout=60)
    return r, json.loads(stats.read_text()) if stats.exists() else {}


def plain_output() -> bytes:
    r = subprocess.run([str(LATENCY), "-q"], capture_output=True, timeout=60)
    return r.stdout.split(b" ")[1]


@pytest.mark.parametrize("baseline,capacity,blocks,placed", [
    # cold1, cold2, gidx, gdata and stdio's one-page buffer: stream and chase do not fit
    ("first-come", 7 * MiB, 5, 6 * MiB + MiB // 2 + 4096),
    ("size-window", 7 * MiB, 3, 6 * MiB),      # cold1, cold2, gdata: gidx is under 1 MiB
    ("size-window:3M", 7 * MiB, 1, 4 * MiB),  # stream; the others are too small
    ("size-window:3M", 10 * MiB, 2, 9 * MiB + MiB // 2),  # stream and chase
    # everything, and stdio's one-page buffer (a page is first-come's smallest request)
    ("first-come", 64 * MiB, 7, 16 * MiB + 4096),
])
def test_first_tier_in_allocation_order(tmp_path: Path, baseline: str, capacity: int,
                                        blocks: int, placed: int) -> None:
    r, s = run(tmp_path, baseline, capacity)
    assert r.returncode == 0 and r.stderr == b"", r.stderr
    assert r.stdout.split(b" ")[1] == plain_output()           # same checksum
    assert s["baseline"] == baseline
    fast = s["tiers"][0]
    assert (fast["placed_blocks"], fast["placed_bytes"]) == (blocks, placed)
    assert fast["high_water_bytes"] <= capacity
    # the arrays are freed; stdio's buffer, when placed, lives to the end
    stdio = placed % (64 << 10)                                 # the arrays: 64 KiB multiples
    assert fast["freed_blocks"] == blocks - (1 if stdio else 0)
    assert fast["used_bytes_at_exit"] == stdio
    assert s["sites"] == []


def test_bad_baseline_passes_everything_through(tmp_path: Path) -> None:
    r, s = run(tmp_path, "size-window:lots", 64 * MiB)
    assert r.returncode == 0 and r.stdout.split(b" ")[1] == plain_output()
    assert s == {}                                              # no statistics: off
    assert r.stderr.count(b"hmalloc:") == 1                     # one warning


SPARSE = ROOT / "build" / "tests" / "programs" / "sparse_rows"


@pytest.mark.skipif(not SPARSE.exists(), reason="test programs not built (make)")
@pytest.mark.parametrize("backend", ["thp", "numa:0"])
def test_all_places_every_request(tmp_path: Path, backend: str) -> None:
    """all (compare's every-site-fast bound): requests of any size, here the 2000
    sparse rows (212-2000 bytes) and their 2000 small records that first-come leaves
    out, with the program's output unchanged."""
    pl = tmp_path / "placement.txt"
    pl.write_text("# hmtune placement v1\n"
                  f"tier fast {backend} {256 * MiB}\ntier slow default unlimited\n"
                  "depth 1\nsize-window 0 0\n")
    args = [str(SPARSE), "2000", "10"]
    bare = subprocess.run(args, capture_output=True, text=True, timeout=60, check=True)
    row_bytes = int(bare.stdout.split()[3])
    got = {}
    for baseline in ("all", "first-come"):
        stats = tmp_path / f"{baseline}.json"
        env = dict(os.environ, LD_PRELOAD=str(LIB), HMTUNE_PLACEMENT=str(pl),
                   HMTUNE_SUMMARY="0", HMTUNE_STATS=str(stats), HMTUNE_BASELINE=baseline)
        r = subprocess.run(args, capture_output=True, text=True, env=env, timeout=60)
        assert r.returncode == 0 and r.stderr == "" and r.stdout == bare.stdout
        s = json.loads(stats.read_text())
        assert s["baseline"] == baseline
        got[baseline] = s["tiers"][0]
    every, first = got["all"], got["first-come"]
    assert every["placed_blocks"] == first["placed_blocks"] + 2 * 2000
    assert every["placed_bytes"] - first["placed_bytes"] >= row_bytes
    assert every["freed_blocks"] == first["freed_blocks"] + 2 * 2000


THRESHOLD = ROOT / "build" / "tests" / "programs" / "mmap_threshold"


def loop_faults(out: bytes) -> int:
    fields = dict(kv.split("=") for kv in out.decode().split())
    return int(fields["loop_minflt"])


@pytest.mark.skipif(not THRESHOLD.exists(), reason="test programs not built (make)")
@pytest.mark.parametrize("backend", ["thp", "numa:0"])
@pytest.mark.parametrize("big_kib,mid_kib", [(4096, 1024), (8192, 3072)])
def test_placed_block_moves_glibcs_mmap_threshold(tmp_path: Path, backend: str, big_kib: int,
                                                  mid_kib: int) -> None:
    """A placed block's free moves glibc's mmap threshold as the block itself would have:
    the program's later mid-size blocks then come from glibc's heap and fault their pages
    once, as without libhmalloc, not twice (a fresh mapping, then the heap)."""
    args = [str(THRESHOLD), str(big_kib), str(mid_kib), "20"]
    bare = subprocess.run(args, capture_output=True, timeout=60)
    assert bare.returncode == 0
    pl = tmp_path / "placement.txt"
    pl.write_text("# hmtune placement v1\n"
                  f"tier fast {backend} {64 * MiB}\ntier slow default unlimited\n"
                  "depth 1\nsize-window 0 0\n")
    stats = tmp_path / "stats.json"
    env = dict(os.environ, LD_PRELOAD=str(LIB), HMTUNE_PLACEMENT=str(pl), HMTUNE_SUMMARY="0",
               HMTUNE_STATS=str(stats), HMTUNE_BASELINE=f"size-window:{big_kib}K")
    placed = subprocess.run(args, capture_output=True, env=env, timeout=60)
    assert placed.returncode == 0 and placed.stderr == b"", placed.stderr
    fast = json.loads(stats.read_text())["tiers"][0]
    assert (fast["placed_blocks"], fast["placed_bytes"]) == (1, big_kib << 10)
    assert placed.stdout.split()[1:] == bare.stdout.split()[1:]      # same pages, same sum
    pages = mid_kib // 4
    assert loop_faults(bare.stdout) <= pages + 8
    # the fresh mapping a low threshold would make costs a whole block of faults more
    assert loop_faults(placed.stdout) <= loop_faults(bare.stdout) + 8
