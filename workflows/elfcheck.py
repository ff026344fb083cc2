"""Can LD_PRELOAD reach this program's malloc? Statically linked ELF files have no
PT_INTERP and no PT_DYNAMIC, so the dynamic loader never runs for them."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

PT_DYNAMIC = 2
PT_INTERP = 3


def resolve(program: str) -> Path | None:
    """The file a command name runs, as execvp would find it."""
    if "/" in program:
        p = Path(program)
        return p if p.exists() else None
    found = shutil.which(program)
    return Path(found) if found else None


def is_static_elf(path: Path) -> bool:
    """True for an ELF executable without a dynamic loader (static or static-pie without
    PT_INTERP). Scripts and non-ELF files are False: their interpreter is what runs."""
    try:
        with path.open("rb") as f:
            ident = f.read(64)
            if len(ident) < 64 or ident[:4] != b"\x7fELF":
                return False
            is64 = ident[4] == 2
            endian = "<" if ident[5] == 1 else ">"
            if is64:
                phoff, = struct.unpack_from(endian + "Q", ident, 32)
                phentsize, phnum = struct.unpack_from(endian + "HH", ident, 54)
            else:
                phoff, = struct.unpack_from(endian + "I", ident, 28)
                phentsize, phnum = struct.unpack_from(endian + "HH", ident, 42)
            f.seek(phoff)
            table = f.read(phentsize * phnum)
    except OSError:
        return False
    types = set()
    for i in range(phnum):
        entry = table[i * phentsize:(i + 1) * phentsize]
        if len(entry) >= 4:
            types.add(struct.unpack_from(endian + "I", entry, 0)[0])
    return PT_INTERP not in types and PT_DYNAMIC not in types
