"""Can a backend place anything? (Machine files and placement.txt refuse what is not a
backend; on this host `hmtune advise` warns, `hmtune run` refuses.)

`backend_problem` is the one check: the grammar (hmtune/core/backends.py) and, given a
host, one answer per backend from the same sources as `hmtune machine`
(hmtune/machine/host.py): memkind's own availability check, the NUMA nodes sysfs lists,
hugetlbfs and its pool, the THP mode, and for the umf:* backends whether libumf.so.1 is
installed (`make deps`) beside their NUMA or hugepage checks. None means the backend can
place.
"""

from __future__ import annotations

import ctypes.util
from pathlib import Path

from hmtune.core.backends import UMF_NUMA_MODES, grammar_problem
from hmtune.machine.choice import choose, fast_tier
from hmtune.machine.host import Host, HostError, memkind_reach, parse_list

NR_HUGEPAGES = "/proc/sys/vm/nr_hugepages"
# Where `make deps` puts UMF (workflows/deps.sh); libhmalloc.so dlopens the copy the
# build found, else libumf.so.1 from the loader's search path.
UMF_DEPS = Path(__file__).resolve().parents[2] / ".deps" / "umf-1.2.0" / "lib" / "libumf.so.1"


def umf_problem(deps: Path = UMF_DEPS) -> str | None:
    """Why libhmalloc.so cannot load UMF here (None: it can)."""
    if deps.exists() or ctypes.util.find_library("umf"):
        return None
    return ("UMF is not installed (libumf.so.1): run 'make deps', which installs UMF 1.2.0 "
            "into .deps/")


def backend_problem(backend: str, host: Host | None = None,
                    need_pages: bool = False) -> str | None:
    """Why `backend` cannot place (None: it can): not a backend of the grammar, or with a
    host, not one that can place on it. need_pages: a hugetlb tier also needs free pages
    in the pool now (hmtune run; advise only needs hugetlbfs)."""
    problem = grammar_problem(backend)
    if problem or host is None:
        return problem
    return _on_host(host, backend, need_pages)


def _on_host(host: Host, backend: str, need_pages: bool) -> str | None:
    kind, _, arg = backend.partition(":")
    if kind == "default":
        return None
    if kind == "memkind":
        why = host.memkind.get(arg)
        if why is None:
            why = memkind_reach((arg,))[arg] if host.live else ""
        return f"memkind says {arg} is not available here: {why}" if why else None
    if kind == "umf":
        sub, _, rest = arg.partition(":")
        inner = "hugetlb" if sub == "hugetlb" else f"numa:{rest.partition(':')[0]}"
        if sub == "numa" and rest.partition(":")[2] not in ("", *UMF_NUMA_MODES):
            return f"'{rest.partition(':')[2]}' is not a NUMA mode of umf:numa"
        if sub not in ("hugetlb", "numa"):
            return f"unknown backend '{backend}'"
        return umf_problem() or _on_host(host, inner, need_pages)
    if kind == "numa":
        try:
            wanted = parse_list(arg)
        except ValueError:
            return f"'{arg}' is not a NUMA node list"
        have = {n.index: n for n in host.nodes}
        missing = [i for i in wanted if i not in have]
        if missing:
            return (f"NUMA node(s) {','.join(map(str, missing))} do not exist here (this "
                    f"host has {','.join(str(i) for i in sorted(have)) or 'none'})")
        if not any(have[i].total for i in wanted):
            return f"NUMA node(s) {arg} have no memory"
        return None
    if kind == "hugetlb":
        if not host.default_hugepage:
            return "this kernel has no hugetlbfs (no Hugepagesize in /proc/meminfo)"
        pools = [n.hugepages.get(host.default_hugepage, (0, 0)) for n in host.nodes]
        if need_pages and not any(free for _, free in pools):
            return (f"no free hugepage in the pool ({NR_HUGEPAGES} is "
                    f"{sum(nr for nr, _ in pools)})")
        return None
    if kind == "thp":
        if not host.thp:
            return "this kernel has no transparent hugepages"
        if host.thp == "never":
            return ("transparent hugepages are off "
                    "(/sys/kernel/mm/transparent_hugepage/enabled is never)")
        return None
    return f"unknown backend '{backend}'"


def fast_tier_here(host: Host | None = None) -> str:
    """What this host's fastest tier is, as `hmtune advise --mem` would take it (or why
    there is none): the hint after a tier that cannot place. host: the one already
    detected (default: this host, detected with memkind asked)."""
    try:
        choice = fast_tier() if host is None else choose(host)
    except HostError as e:
        return str(e)
    return choice.why.replace("fast tier: ", "")
