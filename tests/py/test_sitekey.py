"""hmtune.core.sitekey: the one grammar of the site key, and that analyze's keys are
what the advisor's placement writer and the interposer's reader accept."""

from __future__ import annotations

import pytest

from hmtune.analyze.labels import to_raw_chain
from hmtune.core.placement import chain_ok
from hmtune.core.sitekey import (
    MAX_FRAMES,
    OFFSET_LIMIT,
    canonical_chain,
    canonical_frame,
    frame_parts,
    frames,
    join,
    make_frame,
)


def test_frames_and_join() -> None:
    assert frames("") == []
    assert frames(" /a/b+0x1 >  /c+0x2 ") == ["/a/b+0x1", "/c+0x2"]
    assert join(["/a/b+0x1", "/c+0x2"]) == "/a/b+0x1 > /c+0x2"


def test_frame_parts() -> None:
    assert frame_parts("/usr/lib/x.so+0x1f") == ("/usr/lib/x.so", 0x1F)
    assert frame_parts("??+0x7f00") == ("??", 0x7F00)
    assert frame_parts("/a+0x1F") is None                     # upper case is not the key
    assert frame_parts("/a!1f") is None
    assert frame_parts(make_frame("/a", OFFSET_LIMIT)) is None
    assert frame_parts(make_frame("/a", OFFSET_LIMIT - 1)) == ("/a", OFFSET_LIMIT - 1)


@pytest.mark.parametrize("text,key", [
    ("/a+0x1F", "/a+0x1f"),
    ("/a+0x0001f", "/a+0x1f"),
    ("/a!1F", "/a+0x1f"),
    ("/a!0x1f", "/a+0x1f"),
    ("  /a+0x1  ", "/a+0x1"),
    ("??", None),
    ("main.c:12", None),
    ("Unresolved:0", None),
    ("/a+0x1000000000000", None),                             # 2^48: does not fit
    ("/a > b+0x1", None),
])
def test_canonical_frame(text: str, key: str | None) -> None:
    assert canonical_frame(text) == key


def test_canonical_chain_is_all_or_nothing() -> None:
    assert canonical_chain("/a!1F > /b+0x2") == "/a+0x1f > /b+0x2"
    assert canonical_chain("/a!1F > ??") is None
    assert canonical_chain("") is None


@pytest.mark.parametrize("label", [
    "/a/app!11D6 > /lib/libc.so.6!0x271CA",
    "/a/app+0x0010 > /lib/x.so+0xFF",
    "??+0x7f0012345678 > /a/app+0x10",
    " > ".join(f"/m{i}.so+0x{i:x}" for i in range(MAX_FRAMES)),
])
def test_every_key_analyze_writes_is_placeable(label: str) -> None:
    """The defect this grammar removes: analyze kept chains the advisor and the
    interposer then refused, so such sites were silently unplaceable."""
    key = to_raw_chain(label)
    assert key and chain_ok(key)


@pytest.mark.parametrize("label", ["/a/app!11d6 > ??", "a.c:1 > b.c:2", "??"])
def test_no_key_for_chains_the_interposer_cannot_match(label: str) -> None:
    assert to_raw_chain(label) == ""
