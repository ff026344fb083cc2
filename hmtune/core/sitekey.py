"""The site key as text (docs/formats.md §2): the chain of return addresses above an
allocation call, innermost first, joined by ` > `; each frame `module+0xHEX`, the
offset from the module's load base in lower-case hexadecimal, below 2^48. The one
definition of that grammar on the Python side: analyze writes `callstack_raw` with
`canonical_chain`, the advisor's placement writer and reader check frames with
`FRAME` (the interposer's C reader, interpose/hmi_fields.c, accepts exactly the
same; tests/py/test_placement_grammar.py checks the two against each other), and
every report splits chains with `frames`.

Frames without a module offset are not part of any key. Extrae labels frames it could
not resolve `??` (no address: code outside every module, such as JIT code) and writes
`file:line` when it translated addresses; hmtune's tracer writes a frame outside every
module as `??+0xADDRESS`, which is a module offset of the module `??` and matches on a
re-run only where that code sits at the same address. A chain holding a frame of no
module offset cannot be matched by the interposer: `canonical_chain` says None for it,
analyze leaves its `callstack_raw` empty and the advisor lists the site as
unplaceable, saying why. Older traces' `module!HEX` frames (FlexMalloc, Extrae 4) and
upper-case or zero-padded offsets are written in the one form."""

from __future__ import annotations

import re
from collections.abc import Iterable

from hmtune.core import events

# The grammar's constants, declared once in common/site_key.tsv (hmtune.core.contract).
SEP = events.HM_KEY_SEP                     # between frames
OFFSET = events.HM_KEY_OFFSET               # between a frame's module and its offset
UNKNOWN = events.HM_KEY_UNKNOWN             # a frame outside every module
MAX_FRAMES = events.HM_KEY_MAX_FRAMES       # frames in a site chain (HMI_MAX_FRAMES)
OFFSET_LIMIT = 1 << events.HM_KEY_OFFSET_BITS   # frame offsets are below it

# White space as the C reader strips it (hmi_is_ws: str.strip()'s in ASCII).
WS = " \t\n\x0b\x0c\r\x1c\x1d\x1e\x1f"
_WSC = re.escape(WS)
# One frame as a placement file carries it: a module path without ">" that does not
# start or end with white space, "+0x", lower-case hex digits.
FRAME = re.compile(rf"[^{_WSC}>](?:[^>]*[^{_WSC}>])?{re.escape(OFFSET)}([0-9a-f]+)")
# The frame forms trace labels hold, which canonical_frame rewrites: `X+0xHEX` in any
# case (X a module, or a symbol in a readable label) and the older `module!HEX`.
OFFSET_FORM = re.compile(rf"^(?P<mod>.+){re.escape(OFFSET)}(?P<off>[0-9a-fA-F]+)$")
BANG_FORM = re.compile(r"^(?P<mod>[^!]+)!(?:0x)?(?P<off>[0-9a-fA-F]+)$")


def frames(chain: str) -> list[str]:
    """The frames of a chain, innermost first, white space around each stripped; []
    for an empty chain."""
    return [f.strip(WS) for f in chain.split(SEP)] if chain else []


def join(parts: Iterable[str]) -> str:
    """A chain of frames."""
    return SEP.join(parts)


def frame_parts(frame: str) -> tuple[str, int] | None:
    """(module, offset) of a frame in the key's form, or None."""
    m = FRAME.fullmatch(frame)
    if not m:
        return None
    off = int(m.group(1), 16)
    return (frame[: m.start(1) - 3], off) if off < OFFSET_LIMIT else None


def make_frame(module: str, offset: int) -> str:
    """The frame of module at offset."""
    return f"{module}{OFFSET}{offset:x}"


def canonical_frame(frame: str) -> str | None:
    """frame in the key's form (`module+0xHEX` in any case or zero-padded, or
    `module!HEX`), or None when it has no module offset (`??`, `file:line`) or its
    offset does not fit in 48 bits."""
    frame = frame.strip(WS)
    m = OFFSET_FORM.match(frame) or BANG_FORM.match(frame)
    if not m:
        return None
    off = int(m["off"], 16)
    out = make_frame(m["mod"], off)
    return out if off < OFFSET_LIMIT and FRAME.fullmatch(out) else None


def canonical_chain(label: str) -> str | None:
    """label's frames in the key's form, or None when a frame has no module offset
    (the interposer could not match the site) or the chain is empty."""
    out = []
    for f in frames(label.strip(WS)):
        c = canonical_frame(f)
        if c is None:
            return None
        out.append(c)
    return join(out) if out else None
