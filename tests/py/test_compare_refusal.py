"""compare's refusal to mix configurations (issue 44 item 4): one sentence naming what
differs, not a dict, and this host's machine.toml left as it was."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from hmtune.core.errors import Failure
from hmtune.workflows.harness import HOST_NEW, config_difference, open_runs

OLD = {"app": ["/bin/app", "-n", "4"], "machine": "/d/compare/machine.toml",
       "tiers": [["huge", "hugetlb", 1.0, 1.0, 2097152, None]], "mem": 67108864,
       "fom": None, "runs_format": 2}


def test_the_difference_in_words() -> None:
    new = {**OLD, "app": ["/bin/app", "-n", "8"], "mem": 134217728}
    text = config_difference(OLD, new)
    assert "the application command was /bin/app -n 4, now /bin/app -n 8" in text
    assert "the fast tier's capacity was 67108864, now 134217728" in text
    assert "{" not in text and "tiers" not in text


def test_a_refusal_leaves_machine_toml_as_it_was(tmp_path: Path) -> None:
    work = tmp_path / "compare"
    work.mkdir()
    (work / "config.json").write_text(json.dumps(OLD))
    (work / "runs.csv").write_text("variant,round\n")
    (work / "machine.toml").write_text("# the machine of the runs there\n")
    (work / HOST_NEW).write_text("# this host now\n")
    setup = SimpleNamespace(work=work, config={**OLD, "fom": ["x=(\\d+)"]})
    with pytest.raises(Failure) as e:
        open_runs(setup, "compare", force=False)          # type: ignore[arg-type]
    assert "--fom was none, now x=(\\d+)" in str(e.value) and "{" not in str(e.value)
    assert (work / "machine.toml").read_text() == "# the machine of the runs there\n"
    assert not (work / HOST_NEW).exists()
    assert json.loads((work / "config.json").read_text()) == OLD
