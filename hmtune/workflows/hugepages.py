"""The machine's pools of reserved hugepages: how much of each is free, and topping
them up for the length of a run or a measurement, as root, with every setting put back
however it ends (also on Ctrl-C, SIGTERM and SIGHUP).

A pool is the pages of one size, either the machine's (for the default size
/proc/sys/vm/nr_hugepages, for the others /sys/kernel/mm/hugepages/hugepages-<kB>kB/)
or one NUMA node's (/sys/devices/system/node/nodeN/hugepages/hugepages-<kB>kB/).
Writing a larger nr_hugepages makes the kernel take that many pages from ordinary
memory; when memory is too fragmented it gives fewer, and nr_hugepages reads back what
it got. At the end the pages added are given back from the pool's value then (not by
writing the old value: two jobs sharing a node must not shrink each other's pools);
pages still in use become surplus pages and return when their process ends."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from hmtune.core.units import human

MEMINFO = Path("/proc/meminfo")
NR_HUGEPAGES = Path("/proc/sys/vm/nr_hugepages")
SYS = Path("/sys")


@dataclass(frozen=True)
class HugePages:
    total: int                       # pages (HugePages_Total = nr_hugepages)
    free: int                        # pages
    page: int                        # bytes


def pool(meminfo: Path = MEMINFO) -> HugePages | None:
    """The default-size hugepage pool from /proc/meminfo; None when the kernel has none."""
    fields: dict[str, int] = {}
    try:
        for line in meminfo.read_text().splitlines():
            key, _, rest = line.partition(":")
            words = rest.split()
            if words and words[0].isdigit():
                fields[key] = int(words[0]) * (1024 if words[1:] == ["kB"] else 1)
    except OSError:
        return None
    if "Hugepagesize" not in fields or "HugePages_Free" not in fields:
        return None
    return HugePages(fields.get("HugePages_Total", 0), fields["HugePages_Free"],
                     fields["Hugepagesize"])


def free_pages() -> int:
    p = pool()
    return p.free if p else 0


# ---- the pools and their files ----

@dataclass(frozen=True)
class Pool:
    """The hugepages of one size: the machine's (node None) or one NUMA node's."""
    page: int                        # bytes
    node: int | None = None

    def name(self) -> str:
        return f"{human(self.page)} pages" + ("" if self.node is None else
                                              f" on node {self.node}")


@dataclass(frozen=True)
class Sysfs:
    """Where the kernel's hugepage files are (the real ones; a test's tree)."""
    sys: Path = SYS
    nr_default: Path = NR_HUGEPAGES  # the machine's pool of the default size
    meminfo: Path = MEMINFO

    def default_page(self) -> int | None:
        p = pool(self.meminfo)
        return p.page if p else None

    def pool_dir(self, p: Pool) -> Path:
        sub = Path("hugepages") / f"hugepages-{p.page // 1024}kB"
        if p.node is None:
            return self.sys / "kernel" / "mm" / sub
        return self.sys / "devices" / "system" / "node" / f"node{p.node}" / sub

    def setting(self, p: Pool) -> Path:
        """The file whose value is the pool's size in pages (nr_hugepages)."""
        if p.node is None and p.page == self.default_page():
            return self.nr_default           # the name users know (echo N > ...)
        return self.pool_dir(p) / "nr_hugepages"

    def free(self, p: Pool) -> int | None:
        """Pages of the pool that a new mapping can have: free_hugepages, less those
        promised to mappings not yet touched (resv_hugepages: the machine's pool only,
        nodes do not say); None when the kernel has no such pool."""
        d = self.pool_dir(p)
        try:
            free = int((d / "free_hugepages").read_text())
            resv = int((d / "resv_hugepages").read_text()) if p.node is None else 0
        except (OSError, ValueError):
            return None
        return max(0, free - resv)


# ---- topping pools up for a while ----

@dataclass(frozen=True)
class Want:
    """pages of page bytes to be free for `what`: in the machine's pool, or, when nodes
    are given, on those NUMA nodes together (what is missing is spread over them)."""
    page: int
    pages: int
    nodes: tuple[int, ...] = ()
    what: str = ""


@dataclass
class Change:
    """One pool setting changed: new - old pages given back at the end."""
    pool: Pool
    path: Path
    old: int
    new: int                         # what nr_hugepages read back after the write
    what: str


@dataclass
class Topup:
    """What topped_up did: the settings it changed, and one line per problem (the
    command to run as root where it could not write, a pool the kernel could not fill)."""
    changes: list[Change] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    wanted: int = 0                  # pages, over every Want
    missing: int = 0                 # pages of them not free after topping up


def _exit_on_term(signum: int, _frame: FrameType | None) -> None:
    """SIGTERM/SIGHUP end the measurement as an exception, so that `finally` runs."""
    raise SystemExit(128 + signum)


HELD = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


@contextmanager
def _signals_held() -> Iterator[None]:
    """Ctrl-C, SIGTERM and SIGHUP wait while settings are written, so that a setting
    is never left changed without being on the list of those to put back."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, HELD)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def merged(wants: list[Want]) -> list[Want]:
    """One Want per (page size, nodes): pages added up, names joined; node-bound ones
    first (the machine's pool counts their pages too)."""
    out: dict[tuple[int, tuple[int, ...]], Want] = {}
    for w in wants:
        if w.pages <= 0:
            continue
        key = (w.page, tuple(sorted(set(w.nodes))))
        if key in out:
            o = out[key]
            names = ", ".join(x for x in (o.what, w.what) if x)
            out[key] = Want(w.page, o.pages + w.pages, key[1], names)
        else:
            out[key] = Want(w.page, w.pages, key[1], w.what)
    return sorted(out.values(), key=lambda w: (not w.nodes, w.page, w.nodes))


def spread(pages: int, nodes: tuple[int, ...]) -> dict[int, int]:
    """pages over nodes as evenly as they go, the first nodes taking the remainder."""
    base, extra = divmod(pages, len(nodes))
    return {n: base + (i < extra) for i, n in enumerate(nodes) if base + (i < extra)}


def _write(p: Pool, add: int, fs: Sysfs, t: Topup, by_path: dict[Path, Change],
           what: str) -> tuple[int, str, str]:
    """Grow pool p by add pages: (pages the kernel gave, why not all when it could not
    try, the command for root when it could not write)."""
    path = fs.setting(p)
    try:
        cur = int(path.read_text())
    except (OSError, ValueError) as e:
        return 0, f"cannot read {path}: {getattr(e, 'strerror', None) or e}", ""
    try:
        path.write_text(f"{cur + add}\n")
        why = ""
    except OSError as e:
        why = "not root" if os.geteuid() != 0 else f"cannot write {path}: {e.strerror or e}"
    try:                   # what the kernel gave (a failed write may have changed it too)
        new = int(path.read_text())
    except (OSError, ValueError):
        new = cur
    if path in by_path:
        by_path[path].new = new
    elif new != cur:
        by_path[path] = Change(p, path, cur, new, what)
        t.changes.append(by_path[path])
    return max(0, min(add, new - cur)), why, f"echo {cur + add} > {path}" if why else ""


def _top_up(wants: list[Want], fs: Sysfs, t: Topup) -> None:
    taken: dict[Pool, int] = {}        # pages counted for earlier wants, per pool
    by_path: dict[Path, Change] = {}
    for w in merged(wants):
        t.wanted += w.pages
        pools = [Pool(w.page, n) for n in w.nodes] or [Pool(w.page)]
        frees = {p: fs.free(p) for p in pools}
        absent = [p for p, f in frees.items() if f is None]
        if absent:
            t.notes.append(f"{w.what or 'the run'} needs {w.pages} hugepages of "
                           f"{human(w.page)} but this kernel has no pool of "
                           + ", ".join(p.name() for p in absent))
            t.missing += w.pages
            continue
        if w.nodes:
            avail = {p: max(0, (frees[p] or 0) - taken.get(p, 0)) for p in pools}
        else:      # pages on nodes that earlier wants counted are not free for this one
            counted = sum(v for p, v in taken.items() if p.page == w.page)
            avail = {pools[0]: max(0, (frees[pools[0]] or 0) - counted)}
        missing = max(0, w.pages - sum(avail.values()))
        adds = spread(missing, w.nodes) if w.nodes else {None: missing} if missing else {}
        got: dict[Pool, int] = {}
        whys: list[str] = []
        commands: list[str] = []
        for node, add in adds.items():
            p = Pool(w.page, node)
            got[p], why, command = _write(p, add, fs, t, by_path, w.what)
            whys += [why] if why and why not in whys else []
            commands += [command] if command else []
        left = w.pages                 # count this want's pages as taken, pool by pool
        for p in pools:
            use = min(left, avail[p] + got.get(p, 0))
            taken[p] = taken.get(p, 0) + use
            left -= use
        t.missing += left
        if not left:
            continue
        what = f" for {w.what}" if w.what else ""
        where = "" if not w.nodes else " on node" + ("s " if len(w.nodes) > 1 else " ") \
            + ",".join(map(str, w.nodes))
        head = (f"only {w.pages - left} of the {w.pages} hugepages of {human(w.page)}{what} "
                f"are free{where}")
        if commands:
            t.notes.append(f"{head} ({'; '.join(whys)}); to reserve them, as root: "
                           + " && ".join(commands))
        elif whys:
            t.notes.append(f"{head} ({'; '.join(whys)})")
        else:
            t.notes.append(f"{head}: the kernel gave {sum(got.values())} of the {missing} "
                           "more asked for (memory too fragmented for more)")


def _put_back(t: Topup, who: str, quiet: bool) -> None:
    """Give back what was added, from the pool as it is now: another job on the node
    that grew or shrank it meanwhile keeps its own pages (writing the old value back
    would take them)."""
    done: list[str] = []
    for c in reversed(t.changes):
        added = c.new - c.old
        try:
            now = int(c.path.read_text())
        except (OSError, ValueError):
            now = c.new
        back = max(0, now - added)
        try:
            c.path.write_text(f"{back}\n")
        except OSError as e:
            print(f"{who}: could not give the {added} hugepages back to {c.path} "
                  f"({now} -> {back}): {e.strerror or e}", file=sys.stderr)
            continue
        what = f" for {c.what}" if c.what else ""
        done.insert(0, f"{added} of {human(c.pool.page)}{what} "
                       f"({c.path} {c.old} -> {c.new}, then {now} -> {back})")
    if done and not quiet:
        print(f"{who}: hugepages reserved for the run and put back: {'; '.join(done)}",
              file=sys.stderr)


@contextmanager
def topped_up(wants: list[Want], who: str, quiet: bool = False,
              fs: Sysfs | None = None) -> Iterator[Topup]:
    """Make the pages each Want asks for free while the block runs, writing only what
    is missing into the pools' nr_hugepages (root); yields a Topup whose notes say what
    could not be had (with the command to run as root). Every setting changed is put
    back when the block ends, however it ends (SIGTERM and SIGHUP end it as SystemExit),
    with one line on stderr saying what was reserved (none when quiet)."""
    fs = fs or Sysfs()
    t = Topup()
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        with _signals_held():
            for sig in handlers:
                signal.signal(sig, _exit_on_term)
            _top_up(wants, fs, t)
        yield t
    finally:
        with _signals_held():
            _put_back(t, who, quiet)
            for sig, h in handlers.items():
                signal.signal(sig, h)


@contextmanager
def reserved(nbytes: int, who: str) -> Iterator[str]:
    """Make at least nbytes of hugepages of the default size free in the machine's pool
    while the block runs (topped_up); yields "" when the pool has room, else one
    sentence saying what is missing and how to get it."""
    p = pool()
    if p is None:
        yield "this kernel has no hugepages"
        return
    with topped_up([Want(p.page, -(-nbytes // p.page), (), "the fast tier")], who) as t:
        yield "; ".join(t.notes) if t.missing else ""
