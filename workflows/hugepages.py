"""The machine's pool of reserved hugepages (/proc/meminfo, /proc/sys/vm/nr_hugepages):
how much of it is free, and reserving more for the length of a measurement, as root,
with the previous setting put back however the measurement ends."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

MEMINFO = Path("/proc/meminfo")
NR_HUGEPAGES = Path("/proc/sys/vm/nr_hugepages")


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


def _exit_on_term(signum: int, _frame: FrameType | None) -> None:
    """SIGTERM/SIGHUP end the measurement as an exception, so that `finally` runs."""
    raise SystemExit(128 + signum)


@contextmanager
def reserved(nbytes: int, who: str) -> Iterator[str]:
    """Make at least nbytes of hugepages free while the block runs; yields "" when the
    pool has room, else one sentence saying what is missing and how to get it. The old
    nr_hugepages is written back when the block ends (also on Ctrl-C or SIGTERM)."""
    p = pool()
    if p is None:
        yield "this kernel has no hugepages"
        return
    need = -(-nbytes // p.page)
    free = p.free
    old: str | None = None
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGHUP)}
    if free < need and os.geteuid() == 0 and os.access(NR_HUGEPAGES, os.W_OK):
        try:
            old = NR_HUGEPAGES.read_text().strip()
            for sig in handlers:
                signal.signal(sig, _exit_on_term)
            NR_HUGEPAGES.write_text(f"{int(old) + need - free}\n")
            print(f"{who}: reserved hugepages: nr_hugepages {old} -> "
                  f"{NR_HUGEPAGES.read_text().strip()} (put back at the end)", file=sys.stderr)
        except OSError as e:
            print(f"{who}: could not reserve hugepages: {e.strerror}", file=sys.stderr)
        free = free_pages()
    try:
        if free >= need:
            yield ""
        else:
            total = (pool() or p).total
            yield (f"only {free} of the {need} hugepages needed are free (as root: "
                   f"echo {total + need - free} > {NR_HUGEPAGES})")
    finally:
        if old is not None:
            try:
                NR_HUGEPAGES.write_text(old + "\n")
                print(f"{who}: nr_hugepages put back to {old}", file=sys.stderr)
            except OSError as e:
                print(f"{who}: could not put nr_hugepages back to {old}: {e.strerror}",
                      file=sys.stderr)
            for sig, h in handlers.items():
                signal.signal(sig, h)
