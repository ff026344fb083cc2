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
               "window_selected_functions", "window_compose_functions"]
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


def filter_types(w: dict[str, str]) -> list[tuple[int, str]]:
    """A window's filtered event types with their labels (`evt_type N v1 .. vN`)."""
    key = next(k for k in w if k.startswith("window_filter_module evt_type "))
    n = int(key.rsplit(" ", 1)[1])
    types = [int(x) for x in w[key].split()]
    labels = re.findall(r'"([^"]*)"', w[f"window_filter_module evt_type_label {n}"])
    assert len(types) == len(labels) == n
    return list(zip(types, labels, strict=True))


HMTUNE_ONLY = 41000000          # hmtune's own types: in hmtune traces only


@pytest.mark.parametrize("cfg", CFGS, ids=lambda p: p.name)
def test_cfg_event_types_in_extrae_traces(cfg: Path) -> None:
    """Each type a window filters is declared, with that label, in Extrae's traces, or
    (hmtune's own, 41xxxxxx) in hmtune's .pcf."""
    pcf = parse_pcf(EXTRAE_PCF)
    ours = parse_pcf(hmtune_pcf())
    _, windows, _ = parse_cfg(cfg)
    for w in windows:
        for etype, label in filter_types(w):
            table = ours if etype >= HMTUNE_ONLY else pcf
            assert etype in table.event_types, (cfg.name, etype)
            assert label == table.event_types[etype].description


_PCF: list[Path] = []


def hmtune_pcf() -> Path:
    """The .pcf finalize writes (for a hand-made stream), made once."""
    if not _PCF:
        import tempfile

        from test_attribution import finalize, main_stream
        d = Path(tempfile.mkdtemp(prefix="hmtune-pcf-"))
        finalize(d, [main_stream()])
        _PCF.append(next(d.rglob("*.pcf")))
    return _PCF[0]


# ---- the configurations' semantics against sites.csv ----

def bursts_per_value(prv: Path, types: set[int]) -> dict[int, int]:
    """What a `# Bursts` histogram of a window filtering `types` at thread level with
    `Last Evt Val` counts per column, summed over its rows (threads): one per record
    that carries one of the types, in the column of its value."""
    out: dict[int, int] = {}
    with prv.open() as f:
        for line in f:
            if not line.startswith("2:"):
                continue
            fields = line.rstrip("\n").split(":")
            pairs = fields[6:]
            for k in range(0, len(pairs) - 1, 2):
                if int(pairs[k]) in types:
                    v = int(pairs[k + 1])
                    out[v] = out.get(v, 0) + 1
    return out


@pytest.mark.skipif(not (ROOT / "build" / "examples" / "latency").exists(),
                    reason="examples not built")
@pytest.mark.parametrize(("cfg", "lookahead"), [("sampled_refs_per_object.cfg", False),
                                                ("sampled_refs_per_object_with_lookahead.cfg",
                                                 True)])
def test_sampled_refs_are_sites_csv_samples(tmp_path: Path, cfg: str, lookahead: bool) -> None:
    """A Paraver user sees the numbers sites.csv has: on the latency example traced
    with the software sampler, the configuration's count per object is each heap site's
    `samples` as hmtune analyze counts them (by default; --lookahead for the other)."""
    import csv
    import subprocess

    hm = ROOT / "bin" / "hmtune"
    d = tmp_path / "out"
    r = subprocess.run([str(hm), "trace", "-q", "--sampler", "soft", "-o", str(d), "--",
                        str(ROOT / "build" / "examples" / "latency"), "-q"],
                       capture_output=True, timeout=600)
    assert r.returncode == 0, r.stderr
    a = subprocess.run([str(hm), "analyze", *(["--lookahead"] if lookahead else []), str(d)],
                       capture_output=True, timeout=600)
    assert a.returncode == 0, a.stderr
    _, windows, _ = parse_cfg(CFG_DIR / cfg)
    types = {t for t, _ in filter_types(windows[0])}
    got = bursts_per_value(d / "trace.prv", types)
    with (d / "sites.csv").open(newline="") as f:
        f.readline()
        heap = {int(x["site_id"]): int(x["samples"]) for x in csv.DictReader(f)
                if x["kind"] == "heap"}
    assert sum(heap.values()) > 0
    assert {s: got.get(s, 0) for s in heap} == heap
