"""libhmalloc.so exports madvise, mprotect and mremap (interpose/hmi_advise.c); its own
files call the kernel's through interpose/hmi_sys.h (common/'s, which it links too,
through syscall), never the exported ones, which a
call from inside the library would reach through the dynamic linker (and whose file
would then sit in a circle with the files it includes). Checked on the source: calls
in comments and strings do not count."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXPORTER = "hmi_advise.c"
_CALL = re.compile(r"(?<![\w.>])(madvise|mprotect|mremap)\s*\(")
_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_STRING = re.compile(r'"(?:\\.|[^"\\])*"')


def calls(text: str) -> list[str]:
    code = _STRING.sub('""', _COMMENT.sub(" ", text))
    return _CALL.findall(code)


def test_the_checker_finds_a_call() -> None:
    assert calls("x = mprotect(a, n, p); /* madvise(a) */ s = \"mremap(\";") == ["mprotect"]
    assert calls("hmi_sys_madvise(a, n, b); int madvise_count;") == []


def test_library_files_go_to_the_kernel() -> None:
    bad = {p.name: found for p in sorted((ROOT / "interpose").glob("*.[ch]"))
           if p.name != EXPORTER and (found := calls(p.read_text()))}
    assert not bad, f"call hmi_sys_* (interpose/hmi_sys.h) instead: {bad}"
    # common/ is linked into libhmalloc.so too, and cannot include interpose/'s header:
    # its calls are syscall(SYS_...)
    bad = {p.name: found for p in sorted((ROOT / "common").glob("*.[ch]"))
           if (found := calls(p.read_text()))}
    assert not bad, f"call syscall(SYS_madvise, ...) and the like instead: {bad}"
    # the exporter only defines them: its calls go to the kernel too
    assert sorted(calls((ROOT / "interpose" / EXPORTER).read_text())) == \
        ["madvise", "mprotect", "mremap"]
