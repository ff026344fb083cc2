"""The words beside compare's and analyze's tables (issue 44 item 8): a share whose
interval says nothing is explained, max RSS of hugetlb runs is said not to hold the
hugetlb pages, a report cell without a number is `-`, and analyze names the call-site
form the table shows."""

from __future__ import annotations

import math
from types import SimpleNamespace

from hmtune.analyze.cli import shown_form
from hmtune.analyze.sites import SiteTable
from hmtune.workflows.compare import table_notes
from hmtune.workflows.report import _number_or_dash
from hmtune.workflows.stats import Estimate


def summary(name: str, share: tuple[float, float, float] | None, hugepages: float) -> object:
    est = Estimate(8, 1.1, 1.0, 1.2, "faster",
                   *(share if share is not None else (None, None, None)))
    return SimpleNamespace(name=name, est=est, resources={"hugepages": hugepages})


def test_notes_say_what_needs_a_word() -> None:
    quiet = [summary("all-slow", None, 0.0), summary("ilp", (0.9, 0.8, 1.0), math.nan)]
    assert table_notes(quiet) == []             # type: ignore[arg-type]
    wide = [summary("ilp", (1.24, -1.5, 2.5), 0.0), summary("all-fast", (1.0, 1.0, 1.0), 12)]
    notes = table_notes(wide)                   # type: ignore[arg-type]
    assert len(notes) == 2
    assert "ilp" in notes[0] and "200 points" in notes[0]
    assert "hugetlb" in notes[1]


def test_report_cells_without_a_number() -> None:
    assert [_number_or_dash(x) for x in ("nan", "", "12.5", "inf")] == ["-", "-", "12.5", "-"]


def test_analyze_names_the_call_site_form() -> None:
    t = SiteTable(["label"], [{"label": "kinds.c:69 main"}, {"label": "app+0x1234"}])
    assert shown_form(t, "module+0xoffset") == \
        "as file:line (1 of 2 rows; the others module+0xoffset)"
    assert shown_form(SiteTable(["label"], [{"label": "a.f90:3"}]), "module+0xoffset") == \
        "as file:line"
    assert shown_form(SiteTable(["label"], [{"label": "app+0x1"}]), "module+0xoffset") == \
        "module+0xoffset"
