"""Can LD_PRELOAD reach this program's malloc? Statically linked ELF files have no
PT_INTERP and no PT_DYNAMIC, so the dynamic loader never runs for them."""

from __future__ import annotations

import shutil
import struct
from dataclasses import dataclass
from pathlib import Path

PT_LOAD = 1
PT_DYNAMIC = 2
PT_INTERP = 3


@dataclass(frozen=True)
class ProgramHeaders:
    """An ELF file's type and program headers as (p_type, p_flags, p_vaddr)."""

    etype: int
    is64: bool
    entries: list[tuple[int, int, int]]
    complete: bool          # False when the file ends inside the table


def program_headers(path: str | Path) -> ProgramHeaders | None:
    """The program header table of an ELF file (32- or 64-bit, either byte order);
    None when the file cannot be read or is not ELF."""
    try:
        with open(path, "rb") as f:
            ident = f.read(64)
            if len(ident) < 64 or ident[:4] != b"\x7fELF":
                return None
            is64 = ident[4] == 2
            e = "<" if ident[5] == 1 else ">"
            etype, = struct.unpack_from(e + "H", ident, 16)
            if is64:
                phoff, = struct.unpack_from(e + "Q", ident, 32)
                phentsize, phnum = struct.unpack_from(e + "HH", ident, 54)
            else:
                phoff, = struct.unpack_from(e + "I", ident, 28)
                phentsize, phnum = struct.unpack_from(e + "HH", ident, 42)
            f.seek(phoff)
            table = f.read(phentsize * phnum)
    except OSError:
        return None
    need = 24 if is64 else 28
    entries: list[tuple[int, int, int]] = []
    for i in range(phnum):
        entry = table[i * phentsize:(i + 1) * phentsize]
        if len(entry) < need:
            return ProgramHeaders(etype, is64, entries, False)
        if is64:
            ptype, pflags = struct.unpack_from(e + "II", entry, 0)
            vaddr, = struct.unpack_from(e + "Q", entry, 16)
        else:
            ptype, vaddr = struct.unpack_from(e + "I4xI", entry, 0)
            pflags, = struct.unpack_from(e + "I", entry, 24)
        entries.append((ptype, pflags, vaddr))
    return ProgramHeaders(etype, is64, entries, True)


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
    ph = program_headers(path)
    if ph is None:
        return False
    types = {ptype for ptype, _, _ in ph.entries}
    return PT_INTERP not in types and PT_DYNAMIC not in types
