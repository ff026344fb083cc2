"""Short site labels: one line per allocation site that tells it apart from every other
site of the same trace (docs/formats.md §4, `label`).

A site's chain (`callstack`, innermost first) is often shared for several frames by
many sites: every `new` goes through libstdc++'s operator new, every array of a C++
code through one allocation template, every site of a wrapper through the wrapper's
line. The innermost application frame alone then reads the same for 20 sites. The
label is made of:

- the innermost frame that is the application's own (not the C/C++/Fortran runtime:
  libc, libstdc++, libgfortran, libgomp, the dynamic loader, hmtune's own libraries;
  not inlined code from system headers such as `/usr/include/c++/`; not the
  allocation functions themselves); every frame when all are the runtime's;
- then the first frames where its chain differs from the chains that share what is
  shown so far, until no other site reads the same; a gap between shown frames is
  written ` > … > `.

Each frame is written short: `file.c:LINE function` (file name without directories,
function without namespaces beyond its class, parameters or long template arguments),
`symbol+0xOFF` (a stripped module's exported symbol) or `module+0xOFF`. Sites whose
chains are equal in these frames but differ in runtime frames are told apart by
those; then by the module+offset frames (` @ lib.so+0x1f2`); two ids of one chain by
` (site N)`. So distinct chains always get distinct labels.

`short_labels` is the one function that makes them: hmtune analyze writes its result
into sites.csv's `label` column, and readers of a sites.csv without that column (an
older analyze, a hand-made file) call `labels_for_rows`.
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from hmtune.core.sitekey import BANG_FORM, OFFSET_FORM, SEP

GAP = " > … > "
FRAME_WIDTH = 72            # characters of one frame's text at most
NO_STACK = "(no call stack)"

_FILELINE = re.compile(r"^(?P<file>.+):(?P<line>\d+)$")
_UNKNOWN = {"", "??", "??:0", "??:?", "Unresolved:0", "_NOT_Found:0", "Unresolved",
            "_NOT_Found"}
# Modules of the language runtimes and of hmtune itself (file names).
_RUNTIME_LIB = re.compile(
    r"^(?:libc|libm|libmvec|libstdc\+\+|libgfortran|libgomp|libgcc_s|libquadmath|"
    r"libpthread|libdl|librt|ld-linux[\w.-]*?|ld64|libhmtrace[\w-]*|libhmalloc[\w-]*)"
    r"(?:-[\d.]+)?\.so")
# Source files of the runtimes: system headers (inlined templates), gcc's libraries.
_SHARED_OBJECT = re.compile(r"\.so(?:\.\d+)*$")
_RUNTIME_SRC = ("/usr/include/", "/usr/lib/gcc/", "<built-in>")
_RUNTIME_SRC_PART = ("/libstdc++-v3/", "/libgfortran/", "/libgomp/", "/libsupc++/")
_RUNTIME_FUNC_PREFIX = ("std::", "__gnu_cxx::", "__cxxabiv1::", "_IO_", "__GI_", "__libc_",
                        "_dl_", "_gfortran", "_gfortrani_", "GOMP_", "gomp_")
_ALLOC_FUNCS = frozenset({
    "operator new", "operator new[]", "malloc", "calloc", "realloc", "reallocarray",
    "posix_memalign", "aligned_alloc", "memalign", "valloc", "pvalloc", "strdup",
    "strndup", "free", "operator delete", "operator delete[]"})


@dataclass(frozen=True)
class Frame:
    """One frame of a site's readable chain."""

    loc: str                # file:line, symbol+0xOFF, module+0xOFF, or ?? (unknown)
    function: str = ""      # the function's (demangled) name, "" when unknown
    module: str = ""        # the module's path or file name, "" when unknown


@dataclass(frozen=True)
class SiteChain:
    frames: tuple[Frame, ...]
    raw: tuple[str, ...] = ()       # module+0xOFF frames (callstack_raw)


def split_chain(text: str) -> list[str]:
    """Frames of a ` > ` chain ("" gives none)."""
    return [f.strip() for f in text.split(SEP)] if text.strip() else []


def _module_of_raw(frame: str) -> str:
    m = OFFSET_FORM.match(frame) or BANG_FORM.match(frame)
    if not m:
        return ""
    mod = m["mod"]
    return "" if mod.startswith("??") else mod


def _levels(text: str, nraw: int) -> list[int] | None:
    parts = split_chain(text)
    if len(parts) != nraw or not all(p.isdigit() and int(p) > 0 for p in parts):
        return None
    return [int(p) for p in parts]


def chain_of(callstack: str, callstack_raw: str = "", functions: str = "",
             levels: str = "") -> SiteChain:
    """A site's frames from its chains: `callstack` (sites.csv, the 32000009 label),
    `callstack_raw`, and when the trace has them the function chain (41000011, one
    name per callstack frame) and the inlining levels per raw frame (41000012), which
    say which module each callstack frame is in."""
    locs = split_chain(callstack)
    raw = split_chain(callstack_raw)
    funcs = split_chain(functions)
    if len(funcs) != len(locs):
        funcs = []
    mods = [""] * len(locs)
    lv = _levels(levels, len(raw)) if levels else None
    if lv is not None and sum(lv) == len(locs):
        j = 0
        for frame, n in zip(raw, lv, strict=True):
            for _ in range(n):
                mods[j] = _module_of_raw(frame)
                j += 1
    elif len(raw) == len(locs):
        mods = [_module_of_raw(f) for f in raw]
    out = []
    for i, loc in enumerate(locs):
        fn = funcs[i] if funcs and funcs[i] not in _UNKNOWN else ""
        if OFFSET_FORM.match(fn):
            fn = ""                  # a module+0xOFF stand-in, not a name
        out.append(Frame(loc, fn, mods[i]))
    return SiteChain(tuple(out), tuple(raw))


# ---- one frame, short -------------------------------------------------------------

_OPEN = "<({["
_CLOSE = ">)}]"


def _match_back(s: str, end: int) -> int:
    """Index of the '(' matching the ')' at s[end], or -1."""
    depth = 0
    for i in range(end, -1, -1):
        if s[i] == ")":
            depth += 1
        elif s[i] == "(":
            depth -= 1
            if depth == 0:
                return i
    return -1


def _top_split(s: str, sep: str) -> list[str]:
    """s split at `sep` outside any bracket (<> () {} [])."""
    out, depth, start, i = [], 0, 0, 0
    while i < len(s):
        c = s[i]
        if s.startswith("operator", i):
            i = _skip_operator(s, i)
            continue
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth = max(0, depth - 1)
        elif depth == 0 and s.startswith(sep, i):
            out.append(s[start:i])
            i += len(sep)
            start = i
            continue
        i += 1
    out.append(s[start:])
    return out


_OPERATOR_CHARS = set("<>=!+-*/%^&|~,()[]")


def _skip_operator(s: str, i: int) -> int:
    """Index after `operator` and an operator symbol that follows it (`operator<<`,
    `operator()`, `operator->`); after the word alone otherwise."""
    j = i + len("operator")
    k = j
    while k < len(s) and s[k] == " ":
        k += 1
    if s.startswith(("()", "[]"), k):
        return k + 2
    m = k
    while m < len(s) and s[m] in _OPERATOR_CHARS and s[m] not in "([":
        m += 1
    return m if m > k else j


def _collapse_templates(s: str, keep: int = 16) -> str:
    """Template argument lists longer than `keep` characters become `<…>`."""
    out: list[str] = []
    i = 0
    while i < len(s):
        if s.startswith("operator", i):
            j = _skip_operator(s, i)
            out.append(s[i:j])
            i = j
            continue
        if s[i] != "<":
            out.append(s[i])
            i += 1
            continue
        depth, j = 0, i
        while j < len(s):
            if s[j] == "<":
                depth += 1
            elif s[j] == ">":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        if depth != 0:
            return s                 # unbalanced: leave the name as it is
        inner = s[i + 1:j]
        out.append("<…>" if len(inner) > keep else s[i:j + 1])
        i = j + 1
    return "".join(out)


def short_function(name: str, width: int = FRAME_WIDTH) -> str:
    """`LAMMPS_NS::Memory::create<double>(double*&, int, char const*)` ->
    `Memory::create<double>`: no parameters, return type, `[clone]` suffix, long
    template arguments or namespaces beyond the class; cut to `width` with '…'."""
    s = re.sub(r"\s*\[clone [^\]]*\]\s*$", "", name.strip())
    s = re.sub(r"(?:\s*(?:const|volatile|&&|&|noexcept))+$", "", s)
    if s.endswith(")"):
        i = _match_back(s, len(s) - 1)
        if i > 0:
            s = s[:i].rstrip()
    s = _collapse_templates(s)
    tokens = [t for t in _top_split(s, " ") if t]
    if tokens:
        at = next((k for k in range(len(tokens) - 1, -1, -1)
                   if "operator" in tokens[k]), None)
        s = " ".join(tokens[at:]) if at is not None else tokens[-1]
    scopes = _top_split(s, "::")
    s = "::".join(scopes[-2:])
    return s if len(s) <= width else s[:width - 1] + "…"


def _base(path: str) -> str:
    return os.path.basename(path) if path.startswith(("/", "./", "../")) else path


def frame_text(f: Frame, coarse: bool = False) -> str:
    """A frame as the label writes it; `coarse`: a `symbol+0xOFF` frame without its
    offset (the function, where the offset is only needed between sites that share
    every function)."""
    loc = f.loc
    m = _FILELINE.match(loc)
    if m and not OFFSET_FORM.match(loc):
        text = f"{os.path.basename(m['file'])}:{m['line']}"
        if f.function:
            text += " " + short_function(f.function, FRAME_WIDTH - len(text) - 1)
        return text
    if loc in _UNKNOWN:
        if f.function:
            return short_function(f.function)
        return f"{_base(f.module)}" if f.module else "??"
    m = OFFSET_FORM.match(loc) or BANG_FORM.match(loc)
    if m:
        name = m["mod"]
        if name.startswith(("/", "./", "../")):
            head = os.path.basename(name)         # a module
        elif "(" in name or "::" in name or "<" in name:
            head = short_function(name)           # a C++ symbol
        else:
            head = name                           # a C symbol or a module's file name
        if coarse and f.function == name and not _SHARED_OBJECT.search(name):
            return head
        return f"{head}+0x{m['off'].lower()}"
    if f.function and loc == f.function:
        return short_function(loc)
    return loc if len(loc) <= FRAME_WIDTH else loc[:FRAME_WIDTH - 1] + "…"


def is_runtime(f: Frame) -> bool:
    """A frame of the language runtime or of hmtune (see the module docstring)."""
    if f.module and _RUNTIME_LIB.match(os.path.basename(f.module)):
        return True
    loc = f.loc
    m = OFFSET_FORM.match(loc)
    if m and _RUNTIME_LIB.match(os.path.basename(m["mod"])):
        return True
    fl = _FILELINE.match(loc)
    if fl and not m:
        path = fl["file"]
        if path.startswith(_RUNTIME_SRC) or any(p in path for p in _RUNTIME_SRC_PART):
            return True
    name = f.function or (m["mod"] if m and "/" not in m["mod"] else "")
    if name:
        if name.startswith(_RUNTIME_FUNC_PREFIX):
            return True
        s = re.sub(r"\(.*$", "", name).strip()
        if s in _ALLOC_FUNCS or s.split(" ", 1)[-1] in _ALLOC_FUNCS:
            return True
    return loc in _UNKNOWN and not f.function


# ---- telling sites apart ------------------------------------------------------------

Seq = Sequence[tuple[str, str]]     # per frame: (coarse text, fine text)
COARSE, FINE = 0, 1


def _text(seq: Seq, i: int, level: int) -> str:
    return seq[i][level] if i < len(seq) else ""


def _render(seq: Seq, shown: Mapping[int, int]) -> str:
    """The frames at the shown indices (at their level), ` > ` between neighbours and
    ` > … > ` across a gap."""
    out: list[str] = []
    prev = -1
    for i in sorted(shown):
        if i >= len(seq):
            continue
        if out:
            out.append(SEP if i == prev + 1 else GAP)
        out.append(seq[i][shown[i]])
        prev = i
    return "".join(out)


def _distinguish(seqs: Mapping[int, Seq]) -> dict[int, str]:
    """Per id: the first frame, then the first frames where its sequence differs from
    those that read the same so far — by coarse text first, by fine text (a symbol's
    offset) where the coarse texts are all equal — until its text differs from every
    other one or the sequences are equal."""
    shown: dict[int, dict[int, int]] = {k: {0: COARSE} for k in seqs}
    pending = set(seqs)
    while pending:
        groups: dict[tuple[tuple[int, int, str], ...], list[int]] = defaultdict(list)
        for k in pending:
            key = tuple((i, lv, _text(seqs[k], i, lv)) for i, lv in sorted(shown[k].items()))
            groups[key].append(k)
        pending = set()
        for ids in groups.values():
            if len(ids) < 2:
                continue
            longest = max(len(seqs[k]) for k in ids)
            for level in (COARSE, FINE):
                at = next((i for i in range(longest)
                           if len({_text(seqs[k], i, level) if i < len(seqs[k]) else None
                                   for k in ids}) > 1), None)
                if at is not None:
                    for k in ids:
                        shown[k][at] = max(shown[k].get(at, COARSE), level)
                    pending.update(ids)
                    break
    out = {k: _render(seqs[k], shown[k]) for k in seqs}
    # positions of the shown frames are not in the text: a label that another one
    # reads the same way shows every frame up to its last
    for ids in _collisions(out):
        if len({tuple(seqs[k]) for k in ids}) > 1:
            for k in ids:
                last = max(shown[k])
                out[k] = _render(seqs[k], {i: shown[k].get(i, COARSE) for i in range(last + 1)})
    return out


def _collisions(labels: Mapping[int, str]) -> list[list[int]]:
    by_text: dict[str, list[int]] = defaultdict(list)
    for k, text in labels.items():
        by_text[text].append(k)
    return [sorted(ids) for ids in by_text.values() if len(ids) > 1]


def short_labels(chains: Mapping[int, SiteChain]) -> dict[int, str]:
    """The label of every site id (see the module docstring); distinct chains get
    distinct labels."""
    known = {k: [f for f in c.frames if f.loc not in _UNKNOWN or f.function or f.module]
             for k, c in chains.items()}
    full: dict[int, list[tuple[str, str]]] = {
        k: [(frame_text(f, True), frame_text(f)) for f in fs] for k, fs in known.items()}
    seqs: dict[int, list[tuple[str, str]]] = {}
    for k, fs in known.items():
        own = [t for t, f in zip(full[k], fs, strict=True) if not is_runtime(f)]
        seqs[k] = own or full[k]
    labels = _distinguish(seqs)
    # sites alike in the application's frames: their runtime frames too
    tied = [k for ids in _collisions(labels) if len({tuple(full[k]) for k in ids}) > 1
            for k in ids]
    if tied:
        for k in tied:
            seqs[k] = full[k]
        labels = _distinguish(seqs)
    labels = {k: t or NO_STACK for k, t in labels.items()}
    for ids in _collisions(labels):
        raws = {k: [(r, r) for r in map(_base_raw, chains[k].raw)] for k in ids}
        if len({tuple(r) for r in raws.values()}) > 1 and all(raws.values()):
            sub = _distinguish(raws)
            for k in ids:
                labels[k] = f"{labels[k]} @ {sub[k]}"
    for ids in _collisions(labels):
        for k in ids:
            labels[k] = f"{labels[k]} (site {k})"
    return labels


def fit_label(label: str, width: int) -> str:
    """label cut to `width` characters in its middle ('…'), so that both its first
    frame and the frames that tell it apart (at its end) stay."""
    if len(label) <= width:
        return label
    if width < 3:
        return label[:width]
    head = (width - 1) // 2
    return label[:head] + "…" + label[len(label) - (width - 1 - head):]


def _base_raw(frame: str) -> str:
    m = OFFSET_FORM.match(frame)
    return f"{_base(m['mod'])}+0x{m['off']}" if m else frame


def labels_for_rows(rows: Iterable[tuple[int, str, str]]) -> dict[int, str]:
    """Labels from (site_id, callstack, callstack_raw) rows of a sites.csv that has no
    `label` column (no function names: those are in the trace's .pcf only)."""
    chains: dict[int, SiteChain] = {}
    for sid, callstack, raw in rows:
        chains.setdefault(int(sid), chain_of(str(callstack), str(raw)))
    return short_labels(chains)
