"""One placement grammar (issue 13): what libhmalloc.so's reader refuses, `hmtune run`
refuses first (exit 2, the program never starts), and what it accepts, `hmtune run`
accepts. The same files go to three readers: hmtune.core.placement.read_placement, `hmtune
run` (which uses it), and the library itself, preloaded into a program with
HMTUNE_PLACEMENT=FILE (it accepted the file when it wrote its statistics at exit; when
it refuses one it passes everything through and writes none). Each case also says the
verdict it must get, so that the readers cannot agree by both being wrong.

The chains name only modules the program has loaded (libc, at small offsets) or a
shared library it could load (libdlalloc.so), so that the library's run-time checks
(another program, another build) never refuse an accepted file."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from advisefix import site, write_sites
from tracemodel import HMTUNE, PROGRAMS, ROOT

from hmtune.core import placement as P

LIB = ROOT / "build" / "lib" / "libhmalloc.so"
APP = PROGRAMS / "echo_io"                       # exit 7, three lines on stdout
LIBC = "/lib/x86_64-linux-gnu/libc.so.6"
DL = PROGRAMS / "libdlalloc.so"                  # a shared library echo_io never loads

pytestmark = pytest.mark.skipif(not (LIB.exists() and APP.exists() and DL.exists()
                                     and Path(LIBC).exists()),
                                reason="libhmalloc.so or the test programs not built (make)")

H = b"# hmtune placement v1\n"
H2 = b"# hmtune placement v2\n"
T = b"tier fast thp 1048576\ntier slow default unlimited\n"
TAIL = b"depth 1\nsize-window 0 0\n"


def chain(n: int, module: str = LIBC, first: int = 0x10) -> bytes:
    return " > ".join(f"{module}+0x{first + i:x}" for i in range(n)).encode()


def tiers(n: int) -> bytes:
    return b"".join(b"tier t%d thp 4096\n" % i for i in range(n - 1)) + \
        b"tier last default unlimited\n"


def digits(n: int) -> bytes:
    return b"1" + b"0" * (n - 1)


def ranges(n: int, step: int = 8192, first: int = 0) -> bytes:
    return ",".join(f"{first + i * step}-{first + i * step + 4096}" for i in range(n)).encode()


def split(rs: bytes, tier: bytes = b"fast", frames: int = 1) -> bytes:
    return H2 + T + b"depth %d\nsize-window 0 0\nsplit " % frames + tier + b" " + rs + b" " \
        + chain(frames) + b"   # s\n"


def sstatic(rs: bytes, size: bytes = b"8192", tier: bytes = b"fast", head: bytes = H2,
            frame: bytes = b"/x+0x40") -> bytes:
    """A file with one static-split line (v2)."""
    return head + T + TAIL + b"static-split " + tier + b" " + size + b" " + rs + b" " + frame \
        + b"   # s\n"


def comment_line(length: int) -> bytes:
    return b"#" + b"x" * (length - 1) + b"\n"


MAX64 = b"18446744073709551615"
OVER64 = b"18446744073709551616"

# name: (file bytes, accepted?)
CASES: dict[str, tuple[bytes, bool]] = {
    "minimal": (H + T + TAIL, True),
    # capacities, depth, size-window: 64-bit numbers, any number of leading zeros
    "capacity-2^64-1": (H + b"tier fast thp " + MAX64 + b"\ntier s default unlimited\n"
                        + TAIL, True),
    "capacity-2^64": (H + b"tier fast thp " + OVER64 + b"\ntier s default unlimited\n"
                      + TAIL, False),
    "capacity-5000-digits": (H + b"tier fast thp " + digits(5000) + b"\ntier s default "
                             b"unlimited\n" + TAIL, False),
    "capacity-leading-zeros": (H + b"tier fast thp " + b"0" * 40 + b"4096\n"
                               b"tier s default unlimited\n" + TAIL, True),
    "capacity-superscript-digit": (H + "tier fast thp 4\u00b2\ntier s default unlimited\n"
                                   .encode() + TAIL, False),
    "depth-2^64-1": (H + T + b"depth " + MAX64 + b"\nsize-window 0 0\n", True),
    "depth-2^64": (H + T + b"depth " + OVER64 + b"\nsize-window 0 0\n", False),
    "depth-arabic-digit": (H + T + "depth \u0661\nsize-window 0 0\n".encode(), False),
    "window-2^64-1": (H + T + b"depth 1\nsize-window 0 " + MAX64 + b"\n", True),
    "window-2^64": (H + T + b"depth 1\nsize-window 0 " + OVER64 + b"\n", False),
    "version-5000-digits": (b"# hmtune placement v" + digits(5000) + b"\n" + T + TAIL, False),
    "version-leading-zero": (b"# hmtune placement v01\n" + T + TAIL, True),
    "numa-range-5000-digits": (H + b"tier fast numa:0-" + digits(5000) + b" 4096\n"
                               b"tier s default unlimited\n" + TAIL, True),
    "numa-range-backwards": (H + b"tier fast numa:" + digits(30) + b"-" + digits(29)
                             + b" 4096\ntier s default unlimited\n" + TAIL, False),
    # lines: at most 64 KiB, a 200 KB comment line is refused
    "comment-200KB": (H + comment_line(200_000) + T + TAIL, False),
    "comment-65536": (H + comment_line(65536) + T + TAIL, True),
    "comment-65537": (H + comment_line(65537) + T + TAIL, False),
    "depth-line-65536": (H + T + b"depth 1" + b" " * (65536 - 7) + b"\nsize-window 0 0\n",
                         True),
    "depth-line-65537": (H + T + b"depth 1" + b" " * (65537 - 7) + b"\nsize-window 0 0\n",
                         False),
    # frames: at most 64 per chain, offsets below 2^48
    "frames-64": (H + T + b"depth 64\nsize-window 0 0\nsite fast " + chain(64) + b"\n", True),
    "frames-65": (H + T + b"depth 65\nsize-window 0 0\nsite fast " + chain(65) + b"\n",
                  False),
    "frames-70": (H + T + b"depth 70\nsize-window 0 0\nsite fast " + chain(70) + b"\n",
                  False),
    "offset-2^48-1": (H + T + b"depth 1\nsize-window 0 0\nsite fast "
                      + f"{DL}+0xffffffffffff".encode() + b"\n", True),
    "offset-2^48": (H + T + b"depth 1\nsize-window 0 0\nsite fast "
                    + f"{DL}+0x1000000000000".encode() + b"\n", False),
    "offset-leading-zeros": (H + T + b"depth 1\nsize-window 0 0\nsite fast "
                             + f"{DL}+0x{'0' * 40}1".encode() + b"\n", True),
    # bytes
    "nul-in-comment": (H + b"# a\0b\n" + T + TAIL, False),
    "nul-in-header": (b"# hmtune placement v1\0\n" + T + TAIL, False),
    "latin1-in-comment": (H + b"# caf\xe9 (not UTF-8)\n" + T + TAIL, True),
    "u2028-in-comment": (H + "# a\u2028b\n".encode() + T + TAIL, True),
    # U+0085 is a line break to str.splitlines, not to the C reader: one line here
    "nel-is-no-line-break": (H + T + "depth 1\u0085size-window 0 0\n".encode(), False),
    "crlf": ((H + T + TAIL).replace(b"\n", b"\r\n"), True),
    "cr-vt-ff-breaks": (H + b"tier fast thp 1048576\rtier slow default unlimited\x0b"
                        b"depth 1\x0csize-window 0 0\x1c", True),
    "unit-separator-is-white-space": (H + T + b"depth 1\x1f\nsize-window 0 0\n", True),
    # tiers: at most 16
    "tiers-16": (H + tiers(16) + TAIL, True),
    "tiers-17": (H + tiers(17) + TAIL, False),
    "tier-name-64": (H + b"tier " + b"n" * 64 + b" thp 1\ntier s default unlimited\n" + TAIL,
                     True),
    "tier-name-65": (H + b"tier " + b"n" * 65 + b" thp 1\ntier s default unlimited\n" + TAIL,
                     False),
    # program PATH: absolute, at most once, at most 4095 bytes
    "program": (H + f"program {APP}\n".encode() + T + TAIL, True),
    "program-relative": (H + b"program echo_io\n" + T + TAIL, False),
    "program-twice": (H + f"program {APP}\nprogram {APP}\n".encode() + T + TAIL, False),
    "program-4096-bytes": (H + b"program /" + b"x" * 4095 + b"\n" + T + TAIL, False),
    # static TIER SIZE FRAME: one frame, SIZE >= 1, the object below 2^48, once each
    "static": (H + T + TAIL + b"static fast 4096 " + chain(1) + b"   # s\n", True),
    "static-path-with-space": (H + T + TAIL + b"static fast 16 /a b/c d.so+0x10\n", True),
    "static-size-0": (H + T + TAIL + b"static fast 0 " + chain(1) + b"\n", False),
    "static-size-missing": (H + T + TAIL + b"static fast " + chain(1) + b"\n", False),
    "static-size-2^64": (H + T + TAIL + b"static fast " + OVER64 + b" " + chain(1) + b"\n",
                         False),
    "static-ends-at-2^48": (H + T + TAIL + b"static fast 281474976710640 " + chain(1)
                            + b"\n", True),
    "static-ends-past-2^48": (H + T + TAIL + b"static fast 281474976710641 " + chain(1)
                              + b"\n", False),
    "static-two-frames": (H + T + TAIL + b"static fast 16 " + chain(2) + b"\n", False),
    "static-twice": (H + T + TAIL + b"static fast 16 " + chain(1) + b"\nstatic slow 8 "
                     + chain(1) + b"\n", False),
    "static-undeclared-tier": (H + T + TAIL + b"static mid 16 " + chain(1) + b"\n", False),
    "static-then-tier": (H + b"tier fast thp 1048576\nstatic fast 16 " + chain(1)
                         + b"\ntier slow default unlimited\n" + TAIL, False),
    # v2: split TIER RANGES CHAIN
    "v2-without-split": (H2 + T + TAIL + b"site fast " + chain(1) + b"\n", True),
    "version-3": (b"# hmtune placement v3\n" + T + TAIL, False),
    "version-002": (b"# hmtune placement v002\n" + T + TAIL, True),
    "split": (split(b"2097152-6291456"), True),
    "split-in-v1": (split(b"0-4096").replace(H2, H), False),
    "split-two-ranges": (split(b"0-2097152,6291456-10485760"), True),
    "split-ranges-64": (split(ranges(64)), True),
    "split-ranges-65": (split(ranges(65)), False),
    "split-end-2^48": (split(b"0-281474976710656"), True),
    "split-end-2^48+4096": (split(b"0-281474976714752"), False),
    "split-start-unaligned": (split(b"4095-8192"), False),
    "split-end-unaligned": (split(b"0-4097"), False),
    "split-start-equals-end": (split(b"4096-4096"), False),
    "split-start-after-end": (split(b"8192-4096"), False),
    "split-touching": (split(b"0-4096,4096-8192"), False),
    "split-gap-4096": (split(b"0-4096,8192-12288"), True),
    "split-overlapping": (split(b"0-8192,4096-12288"), False),
    "split-decreasing": (split(b"8192-12288,0-4096"), False),
    "split-leading-zeros": (split(b"000-0004096"), True),
    "split-2^64": (split(b"0-" + OVER64), False),
    "split-negative": (split(b"-4096-8192"), False),
    "split-empty-range": (split(b"0-4096,"), False),
    "split-no-ranges": (H2 + T + TAIL + b"split fast  " + chain(1) + b"\n", False),
    "split-no-chain": (H2 + T + TAIL + b"split fast 0-4096\n", False),
    "split-space-in-range": (split(b"0 -4096"), False),
    "split-fallback-tier": (split(b"0-4096", tier=b"slow"), False),
    "split-undeclared-tier": (split(b"0-4096", tier=b"mid"), False),
    "split-frames-64": (split(b"0-4096", frames=64), True),
    "split-frames-65": (split(b"0-4096", frames=65), False),
    "split-deeper-than-depth": (H2 + T + TAIL + b"split fast 0-4096 " + chain(2) + b"\n",
                                False),
    "split-and-site-same-chain": (H2 + T + TAIL + b"site fast " + chain(1) + b"\nsplit fast "
                                  b"0-4096 " + chain(1) + b"\n", False),
    "split-twice": (H2 + T + TAIL + b"split fast 0-4096 " + chain(1) + b"\nsplit fast "
                    b"8192-12288 " + chain(1) + b"\n", False),
    "split-and-site": (H2 + T + TAIL + b"site fast " + chain(1) + b"\nsplit fast 0-4096 "
                       + chain(1, first=0x20) + b"\n", True),
    # v2: static-split TIER SIZE RANGES FRAME
    "static-split": (sstatic(b"0-4096"), True),
    "static-split-in-v1": (sstatic(b"0-4096", head=H), False),
    "static-split-end-size": (sstatic(b"4096-8192"), True),
    "static-split-end-rounded-up": (sstatic(b"0-8192", size=b"5000"), True),
    "static-split-end-past-size": (sstatic(b"0-12288"), False),
    "static-split-unaligned": (sstatic(b"100-4096"), False),
    "static-split-touching": (sstatic(b"0-4096,4096-8192", size=b"16384"), False),
    "static-split-two": (sstatic(b"0-4096,8192-12288", size=b"16384"), True),
    "static-split-65": (sstatic(ranges(65), size=b"1048576"), False),
    "static-split-64": (sstatic(ranges(64), size=b"1048576"), True),
    "static-split-fallback": (sstatic(b"0-4096", tier=b"slow"), False),
    "static-split-undeclared": (sstatic(b"0-4096", tier=b"mid"), False),
    "static-split-no-ranges": (sstatic(b""), False),
    "static-split-no-frame": (H2 + T + TAIL + b"static-split fast 8192 0-4096\n", False),
    "static-split-size-0": (sstatic(b"0-4096", size=b"0"), False),
    "static-split-bad-frame": (sstatic(b"0-4096", frame=b"/x"), False),
    "static-split-past-2^48": (sstatic(b"0-4096", frame=b"/x+0xffffffffffff"), False),
    "static-split-and-static": (sstatic(b"0-4096") + b"static fast 64 /x+0x40\n", False),
    "static-split-and-other-static": (sstatic(b"0-4096") + b"static fast 64 /x+0x4000\n",
                                      True),
    "split-then-tier": (H2 + b"tier fast thp 1048576\ntier mid thp 4096\nsplit fast 0-4096 "
                        + chain(1) + b"\ntier slow default unlimited\n" + TAIL, False),
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("corpus")
    files = {}
    for name, (data, _) in CASES.items():
        files[name] = d / f"{name}.txt"
        files[name].write_bytes(data)
    # 4 GiB - 1 bytes (sparse): one byte more than the library reads
    files["input-4GiB-1"] = d / "input-4GiB-1.txt"
    with files["input-4GiB-1"].open("wb") as f:
        f.write(H + T + TAIL)
        f.truncate(P.INPUT_MAX + 1)
    return files


VERDICT = {**{name: ok for name, (_, ok) in CASES.items()}, "input-4GiB-1": False}


def python_accepts(path: Path) -> bool:
    try:
        P.read_placement(path)
    except P.PlacementFormatError:
        return False
    return True


def library_accepts(path: Path, tmp: Path) -> bool:
    """The library read the file: it wrote its statistics at exit."""
    stats = tmp / "lib-stats.json"
    stats.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HMTUNE_")}
    env.update(LD_PRELOAD=str(LIB), HMTUNE_PLACEMENT=str(path), HMTUNE_STATS=str(stats),
               HMTUNE_SUMMARY="0")
    r = subprocess.run([str(APP)], env=env, capture_output=True, timeout=60)
    assert r.returncode == 7, r.stderr          # the program ran as it does alone
    return stats.exists()


@pytest.mark.parametrize("name", sorted(VERDICT))
def test_same_verdict(corpus: dict[str, Path], tmp_path: Path, name: str) -> None:
    path = corpus[name]
    want = VERDICT[name]
    assert python_accepts(path) == want
    assert library_accepts(path, tmp_path) == want
    r = subprocess.run([str(HMTUNE), "run", "-q", "-o", str(tmp_path / "out"), "--placement",
                        str(path), "--", str(APP)], capture_output=True, timeout=120)
    if want:
        assert r.returncode == 7 and r.stdout.count(b"\n") == 3, r.stderr
    else:
        assert (r.returncode, r.stdout) == (2, b"")          # the program never started
        assert not (tmp_path / "out" / "run-stats.json").exists()


VERDICT_TOOL = ROOT / "build" / "tests" / "c" / "placement_verdict"
SEEDS = [H + b"program /bin/x\ntier fast thp 1048576\ntier mid numa:0-3,8 4096\n"
         b"tier slow default unlimited\ndepth 3\nsize-window 0 100\n"
         b"site fast /a/b+0x1 > /c d+0x2   # c\nsite mid /x+0x3\nstatic fast 64 /x+0x40\n",
         (H + b"tier f memkind:MEMKIND_HBW 1\ntier s default unlimited\ndepth 2 # x\n"
          b"size-window 1 1\nsite f a+0x1 > b+0x2\n").replace(b"\n", b"\r\n"),
         H2 + b"tier fast hugetlb 8388608\ntier slow default unlimited\ndepth 2\n"
         b"size-window 0 100\nsplit fast 0-2097152,6291456-10485760 /a+0x1 > /b+0x2   # s\n"
         b"site fast /c+0x3\n",
         H2 + b"tier fast numa:0 8388608\ntier slow default unlimited\ndepth 1\n"
         b"size-window 0 0\nstatic-split fast 16384 0-4096,8192-16384 /x+0x40   # s\n"]
TOKENS = [b" ", b"\t", b"\r", b"\n", b"\r\n", b"\x0b", b"\x0c", b"\x1c", b"\x1d", b"\x1e",
          b"\x1f", b"\x85", b"\xc2\x85", b"\xa0", b"\xc2\xa0", b"\xe2\x80\xa8", b"\0", b"#",
          b" #", b">", b" > ", b"+0x", b"+", b"0", b"1", b"9", b"a", b"F", b"x", b"-", b",",
          b":", b"unlimited", b"tier ", b"site ", b"depth ", b"size-window ", b"program ",
          b"static ", b"static fast 16 /s+0x8\n",
          b"program /p", b"/", MAX64, OVER64, b"ffffffffffff", b"1000000000000",
          b"\xd9\xa1", b"\xc2\xb2", b"\xff", b"MEMKIND_", b"numa:", b"thp", b"v1", b"v01",
          b"v2", b"v3", b"split ", b"split fast 0-4096 /s+0x9\n", b"4096", b"8192", b"-",
          b"0-4096,", b"281474976710656"]


def mutants(seed: int, n: int) -> list[bytes]:
    """n files made from SEEDS and the small accepted CASES by inserting, replacing and
    deleting grammar tokens and the bytes the two readers could split or strip
    differently, and by repeating lines."""
    import random

    rng = random.Random(seed)
    pool = SEEDS + [data for data, ok in CASES.values() if ok and len(data) < 4096]
    out = []
    for _ in range(n):
        d = bytearray(rng.choice(pool))
        for _ in range(rng.randint(1, 3)):
            op, pos = rng.random(), rng.randint(0, len(d))
            if op < 0.45:
                d[pos:pos] = rng.choice(TOKENS)
            elif op < 0.7:
                del d[pos:pos + rng.randint(1, 4)]
            elif op < 0.85:
                d[pos:pos + 1] = rng.choice(TOKENS)
            else:
                lines = bytes(d).split(b"\n")
                lines.insert(rng.randrange(len(lines)), rng.choice(lines))
                d = bytearray(b"\n".join(lines))
        out.append(bytes(d))
    return out


@pytest.mark.skipif(not VERDICT_TOOL.exists(), reason="placement_verdict not built (make)")
def test_mutated_files_same_verdict(tmp_path: Path) -> None:
    """5000 files mutated from valid ones: the C reader (placement_verdict, the
    library's hmi_placement_load) and the Python reader give the same verdict on each,
    and the Python reader fails only with PlacementFormatError."""
    files = mutants(13, 5000)
    paths = []
    for i, data in enumerate(files):
        paths.append(tmp_path / f"{i}.txt")
        paths[-1].write_bytes(data)
    c = []
    for i in range(0, len(paths), 1000):
        r = subprocess.run([str(VERDICT_TOOL), *map(str, paths[i:i + 1000])],
                           capture_output=True, text=True, check=True)
        c += [line == "1" for line in r.stdout.split()]
    py = [python_accepts(p) for p in paths]
    differ = [files[i] for i in range(len(files)) if c[i] != py[i]]
    assert not differ, differ[:5]
    assert 100 < sum(py) < len(py) - 100           # both verdicts are well represented


def test_limits_are_the_c_headers() -> None:
    """hmtune/core/placement.py's limits are the numbers of interpose/hmi_placement_data.h."""
    def defines(name: str) -> dict[str, int]:
        text = (ROOT / name).read_text()
        return {m.group(1): int(m.group(2), 0) for m in
                re.finditer(r"^#define\s+(\w+)\s+(0x[0-9a-fA-F]+|\d+)u?\b", text, re.M)}

    h = defines("interpose/hmi_placement_data.h")
    assert (h["HMI_LINE_MAX"], h["HMI_MAX_TIER_LINES"],
            h["HMI_INPUT_MAX"], h["HMI_PROGRAM_MAX"]) == \
        (P.LINE_MAX, P.MAX_TIERS, P.INPUT_MAX, P.PROGRAM_MAX)
    # the site key's limits come from the contract (common/site_key.tsv) on both sides
    from hmtune.core import events

    assert re.search(r"^#define HMI_MAX_FRAMES\s.*\bHM_KEY_MAX_FRAMES\b",
                     (ROOT / "interpose/hmi_placement_data.h").read_text(), re.M)
    assert re.search(r"^#define HM_FRAME_MODSHIFT\s+HM_KEY_OFFSET_BITS\b",
                     (ROOT / "common/hm_modmap.h").read_text(), re.M)
    assert P.MAX_FRAMES == events.HM_KEY_MAX_FRAMES
    assert P.OFFSET_LIMIT == 1 << events.HM_KEY_OFFSET_BITS
    assert (h["HMI_VERSION_MAX"], h["HMI_MAX_RANGES"], h["HMI_RANGE_ALIGN"],
            h["HMI_RANGE_END_MAX"]) == \
        (P.VERSION_SPLIT, P.MAX_RANGES, P.RANGE_ALIGN, P.RANGE_END_MAX)
    assert defines("interpose/hmi_tiers.h")["HMI_MAX_TIERS"] >= P.MAX_TIERS


def test_advise_writes_only_what_the_library_reads(tmp_path: Path) -> None:
    """Sites the library could not read (70 frames, an offset of 2^48, a chain longer
    than a line) stay out of placement.txt; the others are placed, with their comments
    cut to fit a line; the library reads the file and places them."""
    d = tmp_path / "stage"
    long_label = " > ".join(f"/src/very/long/path/file{i}.c:{i}" for i in range(20000))
    rows = [site(3, 4096, 500.0, chain(70).decode()),
            site(4, 4096, 400.0, f"{DL}+0x1000000000000"),
            site(5, 4096, 300.0, " > ".join([f"/{'d' * 4000}/lib.so+0x1"] * 17)),
            site(6, 4096, 200.0, f"{LIBC}+0x10", callstack=long_label),
            site(7, 4096, 100.0, chain(64).decode())]
    write_sites(d / "sites.csv", rows)
    two_tier = ROOT / "tests" / "machines" / "two-tier-memkind.toml"   # 4 KiB pages
    r = subprocess.run([str(HMTUNE), "advise", str(d), "--mem", "1M", "--machine",
                        str(two_tier)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    pf = P.read_placement(d / "placement.txt")
    assert [s.chain for s in pf.sites] == [f"{LIBC}+0x10", chain(64).decode()]
    assert all(len(line) <= P.LINE_MAX for line in (d / "placement.txt").read_bytes()
               .splitlines())
    assert library_accepts(d / "placement.txt", tmp_path)


def _split_file(sites: list[P.SiteLine]) -> P.PlacementFile:
    return P.PlacementFile(tiers=[P.TierLine("fast", "thp", 1 << 30),
                                  P.TierLine("slow", "default", None)],
                           depth=2, size_window=(0, 0), sites=sites)


def test_writer_split_lines(tmp_path: Path) -> None:
    """A SiteLine with ranges is written as a v2 split line that both readers read back
    as it was; without ranges the file stays v1, as before; the writer refuses the
    ranges the readers refuse."""
    c1, c2 = f"{LIBC}+0x10", f"{LIBC}+0x20 > {LIBC}+0x30"
    pf = _split_file([P.SiteLine("fast", c1, "app.c:9", ((0, 4096), (8192, 2 << 20))),
                      P.SiteLine("fast", c2, "whole")])
    text = P.format_placement(pf)
    assert text.startswith(P.HEADER_SPLIT + "\n")
    assert f"\nsplit fast 0-4096,8192-2097152 {c1}   # app.c:9\n" in text
    assert f"\nsite fast {c2}   # whole\n" in text
    path = tmp_path / "p.txt"
    P.write_placement(path, pf)
    back = P.read_placement(path)
    assert back.sites == pf.sites and back.sites[0].keyword == "split"
    assert library_accepts(path, tmp_path)
    plain = P.format_placement(_split_file([P.SiteLine("fast", c2)]))
    assert plain.startswith(P.HEADER + "\n") and "split" not in plain
    bad: list[tuple[tuple[int, int], ...]] = [
        ((0, 4097),), ((1, 4096),), ((4096, 4096),), ((0, 4096), (4096, 8192)),
        ((8192, 12288), (0, 4096)), ((0, (1 << 48) + 4096),), ((-4096, 4096),),
        tuple((i * 8192, i * 8192 + 4096) for i in range(65))]
    for rs in bad:
        with pytest.raises(P.PlacementFormatError):
            P.format_placement(_split_file([P.SiteLine("fast", c1, "", rs)]))
    ok64 = tuple((i * 8192, i * 8192 + 4096) for i in range(64))
    text64 = P.format_placement(_split_file([P.SiteLine("fast", c1, "", ok64)]))
    assert P.parse_placement_bytes(text64.encode()).sites[0].ranges == ok64
    with pytest.raises(P.PlacementFormatError, match="fallback"):
        P.format_placement(_split_file([P.SiteLine("slow", c1, "", ((0, 4096),))]))
