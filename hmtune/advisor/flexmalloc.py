"""FlexMalloc's two input files, written from the same placement as placement.txt.

Formats, as FlexMalloc's sources parse them (intel/flexmalloc src/allocators.cxx,
src/allocator-*.cxx, src/code-locations.cxx; BSC's build adds the `numa` and
`memkind/pmem-*` allocators, documented in accelcom-bsc/ecoHMEM readme.md):

definitions (FLEXMALLOC_DEFINITIONS) — per allocator, a marker line and one
configuration line:

    # Memory configuration for allocator memkind/hbwmalloc
    Size 256 MBytes
    # Memory configuration for allocator numa
    Size 16384 MBytes @ 8 @ 9
    # Memory configuration for allocator posix
    Size 1024 MBytes

`Size N MBytes` is N << 20 bytes per process. `posix` is FlexMalloc's default
fallback and must be configured; FlexMalloc never checks the fallback's size.

locations (FLEXMALLOC_LOCATIONS) — one line per call stack, innermost frame first:

    /path/app!1a2b > /lib/x86_64-linux-gnu/libc.so.6!2724a @ memkind/hbwmalloc

FlexMalloc decides between raw (`module!hexoffset`) and source (`file:line`) frames by
counting '!' and ':' in the whole file, comments included, so this file holds no ':'.
It turns a raw frame into an address by adding the start of the module's first
executable mapping in /proc/self/maps (0 when that mapping is the first line of the
maps, i.e. a main executable whose text segment comes first). hmtune's offsets are
relative to the module's load base, so each frame is rebased with the module's ELF
program headers; frames whose module cannot be read or expressed leave their site out,
with a note. FlexMalloc compares the frames of `backtrace()` (return addresses, like
hmtune's) for equality, and only chains of the same length.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from hmtune.core.elf import PT_INTERP, PT_LOAD, program_headers
from hmtune.core.placement import SiteLine, TierLine
from hmtune.core.sitekey import frames
from hmtune.core.units import MIB

PF_X, ET_EXEC = 1, 2
_HBW_KINDS = ("MEMKIND_HBW", "MEMKIND_HBW_PREFERRED", "MEMKIND_HBW_ALL",
              "MEMKIND_HBW_INTERLEAVE")
_BAD_IN_PATH = (":", "!", "@", " > ", "\n")


class FlexMallocError(ValueError):
    """The placement cannot be expressed in FlexMalloc's files; str() says why."""


@dataclass
class FlexMallocFiles:
    definitions: str
    locations: str
    notes: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)     # chains not written


@dataclass(frozen=True)
class _Elf:
    etype: int
    x_vaddr: int            # p_vaddr of the first executable PT_LOAD
    x_is_first: bool        # that segment is the first PT_LOAD
    has_interp: bool


def _read_elf(path: str) -> _Elf | None:
    ph = program_headers(path)
    if ph is None or not ph.is64 or not ph.complete:
        return None
    loads = [(vaddr, bool(pflags & PF_X)) for ptype, pflags, vaddr in ph.entries
             if ptype == PT_LOAD]
    interp = any(ptype == PT_INTERP for ptype, _, _ in ph.entries)
    xs = [i for i, (_, x) in enumerate(loads) if x]
    if not xs:
        return None
    return _Elf(ph.etype, loads[xs[0]][0], xs[0] == 0, interp)


def _page_size() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return 4096


def rebase_frame(frame: str, cache: dict[str, _Elf | None]) -> tuple[str | None, str]:
    """`module+0xOFF` → (`module!HEX` as FlexMalloc adds it back, "") or (None, why)."""
    module, sep, off = frame.rpartition("+0x")
    if not sep or module == "??":
        return None, f"frame {frame} lies outside any module"
    if any(b in module for b in _BAD_IN_PATH):
        return None, f"module path {module!r} holds a character FlexMalloc's parser splits on"
    if module not in cache:
        cache[module] = _read_elf(module)
    elf = cache[module]
    if elf is None:
        return None, f"cannot read the ELF program headers of {module}"
    offset = int(off, 16)
    if elf.x_is_first and elf.etype == ET_EXEC:
        return f"{module}!{offset:x}", ""          # non-PIE, text first: absolute address
    if elf.x_is_first and elf.has_interp:
        return None, (f"{module} is a position-independent executable whose text segment "
                      "comes first: FlexMalloc would use its randomized address")
    base = elf.x_vaddr & ~(_page_size() - 1)
    if offset < base:
        return None, f"frame {frame} lies before the executable segment of {module}"
    return f"{module}!{offset - base:x}", ""


def _allocator(t: TierLine, fallback: bool) -> tuple[str, str | None]:
    """(FlexMalloc allocator name, configuration line or None) for a tier."""
    kind, _, arg = t.backend.partition(":")
    if fallback:
        if t.backend == "default":
            return "posix", None
        if kind == "memkind" and arg == "MEMKIND_DAX_KMEM":
            return "memkind/pmem-numa", None
        raise FlexMallocError(f"tier {t.name}: FlexMalloc has no fallback allocator for "
                              f"backend {t.backend}")
    assert t.capacity is not None
    mbytes = t.capacity // MIB
    if mbytes < 1:
        raise FlexMallocError(f"tier {t.name}: FlexMalloc sizes are whole MBytes; "
                              f"{t.capacity} bytes is less than one")
    if kind == "memkind" and arg in _HBW_KINDS:
        return "memkind/hbwmalloc", f"Size {mbytes} MBytes"
    if kind == "numa":
        nodes: list[int] = []
        for part in arg.split(","):
            lo, _, hi = part.partition("-")
            nodes += range(int(lo), int(hi or lo) + 1)
        return "numa", f"Size {mbytes} MBytes" + "".join(f" @ {n}" for n in nodes)
    raise FlexMallocError(f"tier {t.name}: FlexMalloc has no allocator for backend "
                          f"{t.backend} (it has memkind/hbwmalloc, numa, posix, "
                          "memkind/pmem-*); use --format hmtune")


def flexmalloc_files(tiers: list[TierLine], sites: list[SiteLine],
                     fallback_bytes: int) -> FlexMallocFiles:
    """Both files for `sites` placed in `tiers`. `fallback_bytes` sizes the posix
    allocator (the most the fallback could hold: every site's peak)."""
    fb = tiers[-1]
    out = FlexMallocFiles(definitions="", locations="")
    alloc: dict[str, str] = {}
    blocks: list[str] = []
    used = {s.tier for s in sites if s.tier != fb.name}
    for t in tiers:
        if t.name != fb.name and t.name not in used:
            continue
        name, config = _allocator(t, t.name == fb.name)
        alloc[t.name] = name
        if config is not None:
            blocks.append(f"# Memory configuration for allocator {name}\n{config}\n")
    fb_name = alloc[fb.name]
    if fb_name != "posix":
        out.notes.append(f"FlexMalloc: set FLEXMALLOC_FALLBACK_ALLOCATOR={fb_name} (BSC's "
                         "FlexMalloc build) so that unplaced sites go to the fallback tier")
    posix = f"Size {max(1, -(-fallback_bytes // MIB))} MBytes"
    blocks.append(f"# Memory configuration for allocator posix\n{posix}\n")
    cache: dict[str, _Elf | None] = {}
    lines = ["# hmtune placement for FlexMalloc, raw frames (module!offset), innermost first"]
    for s in sites:
        if s.tier == fb.name:
            continue
        if s.ranges:
            out.left_out.append(s.chain)
            out.notes.append(f"FlexMalloc: split site {s.comment or s.chain} left out: "
                             "FlexMalloc places whole objects only, and the whole object "
                             "may not fit (placement.txt places its ranges)")
            continue
        rebased = [rebase_frame(f, cache) for f in frames(s.chain)]
        why = next((w for r, w in rebased if r is None), "")
        if why:
            out.left_out.append(s.chain)
            out.notes.append(f"FlexMalloc: site {s.comment or s.chain} left out: {why}")
            continue
        lines.append(" > ".join(r for r, _ in rebased if r) + f" @ {alloc[s.tier]}")
    out.locations = "\n".join(lines) + "\n"
    out.definitions = "".join(blocks)
    assert ":" not in out.locations, "a ':' would make FlexMalloc read source frames"
    return out
