"""configs/paraver/*.cfg: structure as Paraver parses it (Paraver itself is not
installed here), and event types that both trace kinds declare."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hmtune.analyze.prv_tables import parse_pcf

ROOT = Path(__file__).resolve().parents[2]
CFG_DIR = ROOT / "configs" / "paraver"
EXTRAE_PCF = Path(__file__).resolve().parent / "data" / "extrae-malloc-trace" / "malloc_test.pcf"
CFGS = sorted(CFG_DIR.glob("*.cfg"))

WINDOW_KEYS = ["window_name", "window_type", "window_id", "window_level", "window_object",
               "window_selected_functions", "window_compose_functions",
               "window_filter_module evt_type 1"]
ANALYZER_KEYS = ["Analyzer2D.Name:", "Analyzer2D.ControlWindow:", "Analyzer2D.DataWindow:",
                 "Analyzer2D.Statistic:", "Analyzer2D.Minimum:", "Analyzer2D.Maximum:",
                 "Analyzer2D.Delta:"]
STATISTICS = {"# Bursts", "Maximum", "Sum bursts", "Time", "Average value"}


def parse_cfg(path: Path) -> tuple[dict[str, str], list[dict[str, str]], list[dict[str, str]]]:
    """(header, windows, analyzers); each section as {key: rest of line}."""
    lines = path.read_text().splitlines()
    assert lines[0] == "#ParaverCFG"
    header: dict[str, str] = {}
    windows: list[dict[str, str]] = []
    analyzers: list[dict[str, str]] = []
    current: dict[str, str] | None = None
    for line in lines[1:]:
        if line.startswith("< NEW DISPLAYING WINDOW ") and line.endswith(" >"):
            current = {"title": line[24:-2]}
            windows.append(current)
        elif line == "< NEW ANALYZER2D >":
            current = {}
            analyzers.append(current)
        elif not line.strip() or line.startswith("#"):
            continue
        elif current is None:
            key, _, value = line.partition(" ")
            header[key] = value
        elif line.startswith("Analyzer2D."):
            key, _, value = line.partition(" ")
            current[key] = value
        else:
            m = re.match(r"^(window_filter_module evt_type(?:_label)? \d+|\S+) ?(.*)$", line)
            assert m, line
            current[m[1]] = m[2]
    return header, windows, analyzers


def test_there_are_configs() -> None:
    names = {p.name for p in CFGS}
    assert {"sampled_refs_per_object.cfg", "max_size_per_site.cfg",
            "object_timeline.cfg"} <= names
    assert (CFG_DIR / "README.md").exists()


@pytest.mark.parametrize("cfg", CFGS, ids=lambda p: p.name)
def test_cfg_structure(cfg: Path) -> None:
    header, windows, analyzers = parse_cfg(cfg)
    assert header["ConfigFile.Version:"] == "3.4"
    assert int(header["ConfigFile.NumWindows:"]) == len(windows) >= 1
    ids = [int(w["window_id"]) for w in windows]
    assert ids == list(range(1, len(windows) + 1))
    for w in windows:
        for key in WINDOW_KEYS:
            assert key in w, (cfg.name, w["title"], key)
        assert w["window_name"] == w["title"]
        assert w["window_type"] == "single" and w["window_level"] == "thread"
        functions = w["window_selected_functions"]
        assert functions.startswith("{ 14, {") and functions.count("{") == functions.count("}")
        assert w["window_compose_functions"].startswith("{ 9, {")
    for a in analyzers:
        for key in ANALYZER_KEYS:
            assert key in a, (cfg.name, key)
        assert int(a["Analyzer2D.ControlWindow:"]) in ids
        assert int(a["Analyzer2D.DataWindow:"]) in ids
        assert a["Analyzer2D.Statistic:"] in STATISTICS
        assert len(a["Analyzer2D.Parameters:"].split()) == 5
        assert float(a["Analyzer2D.Minimum:"]) < float(a["Analyzer2D.Maximum:"])


@pytest.mark.parametrize("cfg", CFGS, ids=lambda p: p.name)
def test_cfg_event_types_in_extrae_traces(cfg: Path) -> None:
    pcf = parse_pcf(EXTRAE_PCF)
    _, windows, _ = parse_cfg(cfg)
    for w in windows:
        etype = int(w["window_filter_module evt_type 1"])
        assert etype in pcf.event_types, (cfg.name, etype)
        label = w["window_filter_module evt_type_label 1"].strip('"')
        assert label == pcf.event_types[etype].description
