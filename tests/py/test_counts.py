"""Counts that agree (issue 44 item 1): the advisor's report and terminal lines count a
split site once, however many ranges of it a tier holds, and say the ranges apart."""

from __future__ import annotations

import pandas as pd

from hmtune.advisor.report import count_text


def test_a_split_site_is_one_site_and_its_ranges_are_ranges() -> None:
    rows = pd.DataFrame({"site_id": [3, 4, 10, 11, 12], "parent": [3, 4, 5, 5, 5],
                         "pieces": [1, 1, 4, 4, 4],
                         "range_start": [-1, -1, 0, 2 << 20, 8 << 20],
                         "range_end": [-1, -1, 2 << 20, 4 << 20, 10 << 20]})
    # pieces 0-2 and 2-4 MiB touch: one range, as placement.txt's split line has it
    assert count_text(rows) == "3 site(s) (1 of them by ranges of their objects, 2 range(s))"
    whole = pd.DataFrame({"site_id": [3, 4], "parent": [3, 4], "pieces": [1, 1],
                          "range_start": [-1, -1], "range_end": [-1, -1]})
    # every piece of a split site in this tier: the whole object, no ranges to count
    every = pd.DataFrame({"site_id": [10, 11], "parent": [5, 5], "pieces": [2, 2],
                          "range_start": [0, 2 << 20], "range_end": [2 << 20, 4 << 20]})
    assert count_text(every) == "1 site(s)"
    assert count_text(whole) == "2 site(s)"
    assert count_text(whole.iloc[0:0]) == "0 site(s)"
