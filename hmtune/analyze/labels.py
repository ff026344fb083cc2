"""Allocation-site labels from a trace's `.pcf` (DESIGN.md §2, docs/formats.md §3).

A site id (the value of 32000009 / 32000007) can be labelled in three forms:

- `module+0xoffset > ...` — hmtune's 41000010 table, and Extrae 5's untranslated
  32000009 labels. This is what the interposer matches.
- `module!hexoffset > ...` — the older form of FlexMalloc and Extrae 4.x. Converted
  frame by frame to `module+0xhexoffset`.
- `file:line > ...` — the 32000009 table of hmtune, and Extrae's when it translated
  addresses. No module offsets: enough for people, useless to the interposer.

`load_labels` returns, per site id, `callstack` (the chain a person reads) and
`callstack_raw` (the module+offset chain, "" when the trace has none), and names the
form the trace's raw labels take. In hmtune's traces `callstack` is the 32000009 label
(`file:line` frames, `symbol+0xOFF` or `module+0xOFF` where no line is known); a `??`
frame of an older trace is replaced by its function (41000011) or its module+offset
frame when those line up with it. In other traces `callstack` is the file:line chain
when there is one; otherwise the function chain (41000011) when present; otherwise the
raw chain itself (an untranslated trace has nothing better).

`SiteLabels.chain` gives a site's frames with their functions and modules (41000011,
and 41000012: how many 32000009 frames each raw frame gave), which
`hmtune.analyze.shortlabels.short_labels` turns into the short labels of sites.csv.

Static variables have object ids of their own (32000007 only, never allocated).
hmtune labels them `symbol [static, module]` in the readable table and
`module+0xOFF [static SIZE]` in 41000010 (`[static]` when the symbol has no ELF size;
`module+0xOFF (static symbol)` in traces of an older hmtune, without a size):
`SiteLabels.statics` has them, and their `callstack_raw` is the 41000010 form with a
size, which placement.txt's `static` lines carry (docs/formats.md §4, §5). Extrae
labels a static by its symbol name alone: `looks_static` tells such labels from call
stacks; analyze takes them as statics only for objects that allocated nothing.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import hmtune.core.events as events
from hmtune.analyze.prv_io import TraceFormatError
from hmtune.analyze.prv_tables import Pcf, parse_pcf
from hmtune.analyze.shortlabels import SiteChain, chain_of
from hmtune.core.sitekey import (
    BANG_FORM,
    OFFSET_FORM,
    SEP,
    canonical_chain,
    canonical_frame,
    frames,
)

SITE_TYPE = events.HM_EV_SITE  # allocation memory object (Extrae's table, file:line in hmtune's)
OBJECT_TYPE = events.HM_EV_SAMPLE_OBJECT  # object of a sampled address; shares 32000009's table
RAW_TYPE = events.HM_EV_SITE_RAW  # hmtune: module+0xoffset chains
FUNC_TYPE = events.HM_EV_SITE_FUNC  # hmtune: function chains
LEVELS_TYPE = events.HM_EV_SITE_LEVELS  # hmtune: 32000009 frames per raw frame (inlining levels)

FORM_RAW = "module+0xoffset"
FORM_BANG = "module!hexoffset"
FORM_FILELINE = "file:line"
FORM_NONE = "none"          # no .pcf, or no classifiable label in it

_FILELINE = re.compile(r"^.+:\d+$")
_UNKNOWN = {"", "??", "??:0", "??:?", "Unresolved:0", "_NOT_Found:0"}
# Static objects (fin_objects.c): the 41000010 form, the older one, the readable one.
_STATIC_RAW = re.compile(r"^(?P<mod>.+)\+0x(?P<off>[0-9a-fA-F]+) \[static(?: (?P<size>\d+))?\]$")
_STATIC_OLD = re.compile(r"^(?P<mod>.+)\+0x(?P<off>[0-9a-fA-F]+) \(static (?P<sym>.*)\)$")
_STATIC_TEXT = re.compile(r"^(?P<sym>.+) \[static, (?P<mod>[^\]]*)\]$")
# Extrae's label of a static: its symbol name (shortened ones read `short [full]`).
_SYMBOL = re.compile(r"^[A-Za-z_.$][\w.$@:<>, ~*&()\[\]-]*$")


@dataclass(frozen=True)
class StaticObject:
    """A static variable of the trace: its symbol, and where it is and how big, as far
    as the trace says (module "" and offset -1 when unknown, size 0 when unknown)."""

    symbol: str
    module: str = ""
    offset: int = -1
    size: int = 0

    @property
    def raw(self) -> str:
        """`module+0xOFF [static SIZE]`, what placement.txt's static lines carry; ""
        when the trace does not say where the object is or how big."""
        if not self.module or self.offset < 0 or self.size <= 0:
            return ""
        return static_raw(self.module, self.offset, self.size)


def static_raw(module: str, offset: int, size: int) -> str:
    return f"{module}+0x{offset:x} [static {size}]"


def parse_static_raw(text: str) -> tuple[str, int, int] | None:
    """(module, offset, size) of a `module+0xOFF [static SIZE]` text, else None."""
    m = _STATIC_RAW.match(text.strip())
    if not m or m["size"] is None:
        return None
    return m["mod"], int(m["off"], 16), int(m["size"])


def looks_static(label: str) -> bool:
    """Whether an object label of a trace without hmtune's tables reads like a static
    variable's (Extrae: the symbol name alone), not like a call stack."""
    text = label.strip()
    if text in _UNKNOWN or text in ("Unresolved", "_NOT_Found") or SEP in text or \
            frame_form(text) is not None:
        return False
    return _SYMBOL.match(text) is not None


def _static_of(label: str, raw_label: str, func: str) -> StaticObject | None:
    """The static variable an hmtune trace labels with these texts, else None."""
    text = _STATIC_TEXT.match(label.strip())
    sym = text["sym"] if text else func.strip()
    m = _STATIC_RAW.match(raw_label.strip())
    if m:
        return StaticObject(sym, m["mod"], int(m["off"], 16), int(m["size"] or 0))
    m = _STATIC_OLD.match(raw_label.strip())
    if m:
        return StaticObject(sym or m["sym"], m["mod"], int(m["off"], 16), 0)
    return StaticObject(sym) if text else None


@dataclass
class SiteLabels:
    form: str                                   # one of the FORM_* names
    callstack: dict[int, str] = field(default_factory=dict)
    callstack_raw: dict[int, str] = field(default_factory=dict)
    functions: dict[int, str] = field(default_factory=dict)
    levels: dict[int, str] = field(default_factory=dict)
    statics: dict[int, StaticObject] = field(default_factory=dict)   # hmtune's statics
    # the counters' event types (42000000 and up: PAPI's, as hmtune and Extrae write
    # them) and their labels, `description (NAME)`
    counters: dict[int, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    # The .pcf is there but is not one that labels sites: it cannot be read or parsed
    # ("unreadable"), or it has no allocation-site table ("no-table"); None otherwise.
    unusable: str | None = None

    def symbolized(self, site_id: int) -> str:
        """The readable chain of a site, `site N` when the trace does not label it."""
        return self.callstack.get(site_id) or f"site {site_id}"

    def raw(self, site_id: int) -> str:
        """The module+0xoffset chain of a site, "" when unknown."""
        return self.callstack_raw.get(site_id, "")

    def chain(self, site_id: int) -> SiteChain:
        """A site's frames, with functions and modules where the trace gives them."""
        return chain_of(self.symbolized(site_id), self.raw(site_id),
                        self.functions.get(site_id, ""), self.levels.get(site_id, ""))


def frame_form(frame: str) -> str | None:
    """Form of one frame; None for an unknown frame (`??`) or text of no known form."""
    frame = frame.strip()
    if frame in _UNKNOWN:
        return None
    if OFFSET_FORM.match(frame):
        return FORM_RAW
    if BANG_FORM.match(frame):
        return FORM_BANG
    if _FILELINE.match(frame):
        return FORM_FILELINE
    return None


def table_form(labels: dict[int, str]) -> str:
    """The form most frames of a label table take (FORM_NONE when none classifies).

    Ties go to the form the interposer can use: raw, then bang, then file:line.
    """
    counts: Counter[str] = Counter()
    for label in labels.values():
        for frame in label.split(SEP):
            form = frame_form(frame)
            if form is not None:
                counts[form] += 1
    if not counts:
        return FORM_NONE
    order = (FORM_RAW, FORM_BANG, FORM_FILELINE)
    return max(order, key=lambda f: (counts[f], -order.index(f)))


def to_raw_chain(label: str) -> str:
    """label as a site key (hmtune.core.sitekey.canonical_chain: `module!hex` and
    upper-case offsets in the key's form); "" when a frame has no module offset
    (`??`, `file:line`): the interposer could not match such a site, so it has no key."""
    return canonical_chain(label) or ""


def _fill_unknown(label: str, functions: str, raw: str) -> str:
    """`??` frames of a label replaced by the function of that frame (the function
    chain has one frame per label frame), else by its module+offset frame when the
    raw chain has as many frames as the label."""
    frames = [f.strip() for f in label.split(SEP)]
    if not any(f in _UNKNOWN for f in frames):
        return label
    funcs = [f.strip() for f in functions.split(SEP)] if functions else []
    raws = [f.strip() for f in raw.split(SEP)] if raw else []
    for i, f in enumerate(frames):
        if f not in _UNKNOWN:
            continue
        if len(funcs) == len(frames) and funcs[i] not in _UNKNOWN:
            frames[i] = funcs[i]
        elif len(raws) == len(frames) and raws[i]:
            frames[i] = raws[i]
    return SEP.join(frames)


def _site_ids(*tables: dict[int, str]) -> list[int]:
    """Ids labelled in any table, without 0 (Paraver's `End` value)."""
    return sorted({k for t in tables for k in t if k > 0})


def labels_from_pcf(pcf: Pcf) -> SiteLabels:
    """Build the per-site labels from a parsed `.pcf` (see the module docstring)."""
    site = pcf.values.get(SITE_TYPE) or pcf.values.get(OBJECT_TYPE) or {}
    raw_table = pcf.values.get(RAW_TYPE, {})
    funcs = {k: v for k, v in pcf.values.get(FUNC_TYPE, {}).items() if k > 0}
    levels = {k: v for k, v in pcf.values.get(LEVELS_TYPE, {}).items() if k > 0}
    site_form = table_form({k: v for k, v in site.items() if k > 0})
    has_raw_table = RAW_TYPE in pcf.event_types or bool(raw_table)
    out = SiteLabels(FORM_NONE, functions=funcs, levels=levels,
                     counters={t: e.description for t, e in pcf.event_types.items()
                               if t >= events.HM_EV_HWC_PRESET})
    if has_raw_table:
        form = table_form(raw_table)
        out.form = FORM_RAW if form == FORM_NONE else form
    else:
        out.form = site_form
    unmatched = 0
    for sid in _site_ids(site, raw_table):
        label = site.get(sid, "")
        raw_label = raw_table.get(sid) if has_raw_table else label
        static = _static_of(label, raw_label or "", funcs.get(sid, "")) if sid > 2 else None
        if static is not None:
            out.statics[sid] = static
            out.callstack_raw[sid] = static.raw
            out.callstack[sid] = label or static.symbol
            continue
        out.callstack_raw[sid] = to_raw_chain(raw_label or "")
        if not out.callstack_raw[sid] and any(map(canonical_frame, frames(raw_label or ""))):
            unmatched += 1          # some frames have a module offset, one has none
        if has_raw_table and label:      # hmtune: the readable table, whatever its form
            text = _fill_unknown(label, funcs.get(sid, ""), out.callstack_raw[sid])
        elif site_form == FORM_FILELINE or not out.callstack_raw[sid]:
            text = label
        else:                    # untranslated labels: a function chain reads better
            text = funcs.get(sid) or out.callstack_raw[sid]
        out.callstack[sid] = text or out.callstack_raw[sid]
    if not site and not raw_table:
        out.unusable = "no-table"
        out.warnings.append(f"{pcf.path} has no allocation-site table ({SITE_TYPE}): "
                            "sites are numbered, not named")
    elif out.form == FORM_FILELINE:
        out.warnings.append(f"{pcf.path}: site labels are file:line chains only (Extrae with "
                            "address translation): callstack_raw is empty, so the interposer "
                            "cannot match these sites; trace with hmtune, or with Extrae "
                            "without translation, to place them")
    elif out.form == FORM_BANG:
        out.warnings.append(f"{pcf.path}: site labels use the older module!offset form "
                            "(FlexMalloc, Extrae 4.x); converted to module+0xoffset")
    if unmatched and out.form != FORM_FILELINE:
        out.warnings.append(f"{pcf.path}: {unmatched} site(s) have a frame without a module "
                            "offset ('??': code outside every module, whose address the "
                            "trace does not give): the interposer cannot match them, so "
                            "their callstack_raw is empty")
    return out


def pcf_path_for(trace: str | os.PathLike[str]) -> Path:
    """`X.pcf` for `X.prv` or `X.prv.gz`."""
    p = Path(trace)
    name = p.name
    for suffix in (".gz", ".prv"):
        name = name.removesuffix(suffix)
    return p.with_name(name + ".pcf")


def load_labels(trace: str | os.PathLike[str]) -> SiteLabels:
    """Labels of the trace at `trace` (`.prv`/`.prv.gz`), read from its `.pcf`.

    A missing or unreadable `.pcf` is not an error here: the result has no labels
    (callers fall back to `site N`), form FORM_NONE and one warning saying why; an
    unreadable one, or one without a site table, also sets `unusable` (hmtune analyze
    refuses those rather than replace good labels with numbers).
    """
    pcf_path = pcf_path_for(trace)
    if not pcf_path.exists():
        return SiteLabels(FORM_NONE, warnings=[
            f"no {pcf_path.name} next to the trace: sites are numbered (`site N`), "
            "and callstack_raw is empty, so the interposer cannot match them"])
    try:
        pcf = parse_pcf(pcf_path)
    except (OSError, TraceFormatError, UnicodeDecodeError) as e:
        return SiteLabels(FORM_NONE, unusable="unreadable", warnings=[
            f"cannot read site labels from {pcf_path} ({e}): sites are numbered (`site N`)"])
    return labels_from_pcf(pcf)
