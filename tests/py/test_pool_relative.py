"""The hugepage pool is put back by what was added, not by writing the old value
(issue 44 item 7): two jobs sharing a node must not shrink each other's pools."""

from __future__ import annotations

from pathlib import Path

from test_run_reserve import GIB, PAGE, fake_sysfs, value

from hmtune.workflows import hugepages
from hmtune.workflows.hugepages import Pool, Want


def test_two_jobs_on_one_node_keep_each_others_pages(tmp_path: Path) -> None:
    fs = fake_sysfs(tmp_path, {(PAGE, None): (0, 0)})
    nr = fs.nr_default
    a = hugepages.topped_up([Want(PAGE, 10, (), "job a")], "a", quiet=True, fs=fs)
    a.__enter__()
    assert value(nr) == 10
    # job b starts while a runs: the kernel's pool now has a's 10 pages, none free
    with hugepages.topped_up([Want(PAGE, 5, (), "job b")], "b", quiet=True, fs=fs):
        assert value(nr) == 15
        a.__exit__(None, None, None)          # a ends first: only its 10 go
        assert value(nr) == 5
    assert value(nr) == 0                     # then b's 5


def test_a_pool_shrunk_meanwhile_is_never_written_below_zero(tmp_path: Path) -> None:
    fs = fake_sysfs(tmp_path, {(PAGE, None): (2, 0), (GIB, None): (0, 0)})
    nr1g = fs.pool_dir(Pool(GIB)) / "nr_hugepages"
    with hugepages.topped_up([Want(PAGE, 4), Want(GIB, 1)], "t", quiet=True, fs=fs):
        assert (value(fs.nr_default), value(nr1g)) == (6, 1)
        fs.nr_default.write_text("3\n")       # an administrator took some back
        nr1g.write_text("4\n")                # another job added 3 GiB pages
    assert (value(fs.nr_default), value(nr1g)) == (0, 3)
