"""Can LD_PRELOAD reach this program's malloc? Statically linked ELF files have no
PT_INTERP and no PT_DYNAMIC, so the dynamic loader never runs for them. And which
libraries a program names (DT_NEEDED): the sanitizer runtimes among them want to
come first."""

from __future__ import annotations

import shutil
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

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


@dataclass(frozen=True)
class _Header:
    is64: bool
    e: str                  # struct's byte order
    etype: int
    phentsize: int
    phnum: int
    table: bytes            # the program header table as read (may be short)


def _header(f: BinaryIO) -> _Header | None:
    """The ELF header and program header table of an open file; None when not ELF."""
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
    return _Header(is64, e, etype, phentsize, phnum, f.read(phentsize * phnum))


def program_headers(path: str | Path) -> ProgramHeaders | None:
    """The program header table of an ELF file (32- or 64-bit, either byte order);
    None when the file cannot be read or is not ELF."""
    try:
        with open(path, "rb") as f:
            h = _header(f)
    except OSError:
        return None
    if h is None:
        return None
    is64, e, etype, phentsize, phnum, table = h.is64, h.e, h.etype, h.phentsize, h.phnum, h.table
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


DT_NEEDED = 1
DT_STRTAB = 5
_NEEDED_MAX = 256          # names read at most (a real program needs tens)


def needed(path: str | Path) -> list[str] | None:
    """The libraries an ELF file names in its dynamic section (DT_NEEDED, in order);
    None when it cannot be read, is not ELF or has no dynamic section."""
    try:
        with open(path, "rb") as f:
            h = _header(f)
            if h is None:
                return None
            is64, phentsize, phnum, table = h.is64, h.phentsize, h.phnum, h.table
            ph_fmt, dyn_fmt = (h.e + "IIQQQQ", h.e + "qQ") if is64 else (h.e + "IIIII", h.e + "iI")
            loads: list[tuple[int, int, int]] = []      # (vaddr, offset, filesz)
            dynamic: tuple[int, int] | None = None      # (offset, filesz)
            for i in range(phnum):
                entry = table[i * phentsize:(i + 1) * phentsize]
                if len(entry) < struct.calcsize(ph_fmt):
                    return None
                if is64:
                    ptype, _, off, vaddr, _, filesz = struct.unpack_from(ph_fmt, entry)
                else:
                    ptype, off, vaddr, _, filesz = struct.unpack_from(ph_fmt, entry)
                if ptype == PT_LOAD:
                    loads.append((vaddr, off, filesz))
                elif ptype == PT_DYNAMIC:
                    dynamic = (off, filesz)
            if dynamic is None:
                return None
            f.seek(dynamic[0])
            raw = f.read(min(dynamic[1], 1 << 20))
            step = struct.calcsize(dyn_fmt)
            names: list[int] = []
            strtab = None
            for k in range(0, len(raw) - step + 1, step):
                tag, val = struct.unpack_from(dyn_fmt, raw, k)
                if tag == 0:
                    break
                if tag == DT_NEEDED and len(names) < _NEEDED_MAX:
                    names.append(val)
                elif tag == DT_STRTAB:
                    strtab = val
            if strtab is None:
                return None if names else []
            base = next((off + strtab - va for va, off, sz in loads if va <= strtab < va + sz),
                        None)
            if base is None:
                return None
            out: list[str] = []
            for n in names:
                f.seek(base + n)
                out.append(f.read(256).split(b"\0", 1)[0].decode(errors="replace"))
            return out
    except (OSError, struct.error):
        return None
