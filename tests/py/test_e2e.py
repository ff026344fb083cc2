"""The whole loop on a small configuration of the latency example, through the make
targets users run (trace → analyze → advise → rerun, also under mpirun with the fast
tier's node capacity split across the ranks): every stage writes valid files, the
placement lists the example's hot site (its `hmtune-site: chase` line), and the re-run
put that site in the fast tier by the interposer's own residency report. No timing is
asserted. The fast tier is node 0 through mbind (numa:0), whose residency this
one-node machine can check exactly."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from clistage import CRASH, FOM, HMTUNE, LATENCY, ROOT

from hmtune.core.placement import read_placement

MPIRUN = "mpirun --allow-run-as-root --oversubscribe -np 2"
APP = f"{LATENCY} -s 32 -n 20"          # chase 11 MiB, about 0.5 s of kernel
CHASE = 11 << 20


def make(target: str, **kw: str) -> subprocess.CompletedProcess[str]:
    args = ["make", "--no-print-directory", "-C", str(ROOT), target,
            *(f"{k}={v}" for k, v in kw.items())]
    return subprocess.run(args, capture_output=True, text=True, timeout=600)


def machine(path: Path, capacity: str, per: str) -> Path:
    path.write_text('name = "e2e"\n[[tier]]\nname = "fast"\n'
                    f'capacity = "{capacity}"\nper = "{per}"\nbackend = "numa:0"\n'
                    'load_cost = 1.0\nstore_cost = 1.0\n'
                    '[[tier]]\nname = "slow"\ncapacity = "unlimited"\nbackend = "default"\n'
                    'load_cost = 2.0\nstore_cost = 2.0\n')
    return path


def chase_line() -> int:
    for n, line in enumerate((ROOT / "examples" / "latency.c").read_text().splitlines(), 1):
        if "hmtune-site: chase" in line:
            return n
    raise AssertionError("no chase marker in latency.c")


def sites(d: Path) -> list[dict[str, str]]:
    with (d / "sites.csv").open(newline="") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def chase_chain(d: Path) -> str:
    hot = [r for r in sites(d) if r["callstack"].split(" > ")[0].endswith(
        f"latency.c:{chase_line()}")]
    assert len(hot) >= 1, "the chase site is not in sites.csv"
    return hot[0]["callstack_raw"]


def check_stages(d: Path) -> None:
    """Valid trace, per-site tables, and a placement that lists the hot site."""
    assert subprocess.run([str(HMTUNE), "check-trace", str(d / "trace.prv")],
                          capture_output=True).returncode == 0
    assert (d / "trace.pcf").is_file() and (d / "trace.row").is_file()
    table = sites(d)
    assert table and (d / "allocs.csv").is_file()
    heaviest = max(table, key=lambda r: float(r["weight"]))
    assert heaviest["callstack_raw"] == chase_chain(d)
    pf = read_placement(d / "placement.txt")
    assert chase_chain(d) in {s.chain for s in pf.sites}
    assert (d / "report.txt").is_file() and (d / "capacity_curve.csv").is_file()


def check_residency(s: dict, d: Path, capacity: int) -> None:
    """The hot site was placed (whole, or by the ranges of its placement line: what the
    tier holds of it), and its pages are on the fast tier's node."""
    chain = chase_chain(d)
    (line,) = (x for x in read_placement(d / "placement.txt").sites if x.chain == chain)
    held = sum(min(b, CHASE) - a for a, b in line.ranges) if line.ranges else CHASE
    site = [x for x in s["sites"] if x["chain"] == chain]
    assert site and (site[0]["placed"], site[0]["placed_bytes"]) == (1, held)
    fast = s["tiers"][0]
    assert fast["available"] and fast["capacity"] == capacity
    assert fast["high_water_bytes"] <= capacity and fast["high_water_bytes"] >= held
    res = fast["residency"]
    assert res["bytes_intended"] >= held and res["bytes_elsewhere"] == 0


def test_make_loop(tmp_path: Path) -> None:
    out = tmp_path / "latency"
    m = machine(tmp_path / "m.toml", "16M", "process")            # 40 % of 40 MiB
    assert make("trace", APP=APP, OUT=str(out)).returncode == 0
    assert make("analyze", OUT=str(out)).returncode == 0
    assert make("advise", OUT=str(out), MACHINE=str(m)).returncode == 0
    check_stages(out)
    r = make("rerun", APP=APP, OUT=str(out))
    assert r.returncode == 0, r.stderr
    plain = subprocess.run(APP.split(), capture_output=True, text=True)
    assert plain.stdout.split()[1] == r.stdout.split()[-1]         # same checksum
    s = json.loads((out / "run-stats.json").read_text())
    check_residency(s, out, 16 << 20)


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="Open MPI not installed")
def test_make_loop_under_mpirun(tmp_path: Path) -> None:
    """Two ranks; a 24 MiB tier per node gives each rank 12 MiB: room for its chase (or
    for most of it and the ranges of another site)."""
    out = tmp_path / "latency"
    m = machine(tmp_path / "m.toml", "24M", "node")
    assert make("trace", APP=APP, OUT=str(out), MPIRUN=MPIRUN).returncode == 0
    assert make("analyze", OUT=str(out)).returncode == 0
    a = make("advise", OUT=str(out), MACHINE=str(m))
    assert a.returncode == 0, a.stderr
    check_stages(out)
    assert read_placement(out / "placement.txt").tiers[0].capacity == 12 << 20
    for f in out.glob("run-stats*.json"):
        f.unlink()
    r = make("rerun", APP=APP, OUT=str(out), MPIRUN=MPIRUN)
    assert r.returncode == 0, r.stderr
    for rank in (0, 1):
        s = json.loads((out / f"run-stats.{rank}.json").read_text())
        assert s["rank"] == rank
        check_residency(s, out, 12 << 20)


def test_make_targets_refuse_bad_input(tmp_path: Path) -> None:
    """Missing APP or sites.csv, a failing application: one clear error each. An output
    directory that cannot be made does not cost the user the application's run: it runs
    untraced, with its own output and exit status, and nothing is written."""
    assert make("trace").returncode == 2
    assert make("rerun").returncode == 2
    assert make("compare").returncode == 2
    assert make("advise", OUT=str(tmp_path / "empty")).returncode == 2
    out = tmp_path / "crash"
    r = make("trace", APP=f"{CRASH} exit3", OUT=str(out))
    assert r.returncode != 0
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    r = make("trace", APP=APP, OUT=str(blocked / "sub"))
    assert r.returncode == 0 and r.stdout.split()[-1].startswith("checksum=")
    assert blocked.read_text() == "not a directory"


def test_make_explore(tmp_path: Path) -> None:
    """make explore with an APP (after make trace/analyze), and without one (the latency
    example, traced first): 2^(K+1) placements plus the advisor, and the result file."""
    out = tmp_path / "app"
    quick = f"{LATENCY} -q"
    assert make("trace", APP=quick, OUT=str(out)).returncode == 0
    assert make("analyze", OUT=str(out)).returncode == 0
    r = make("explore", APP=quick, OUT=str(out), K="1", REPEATS="1",
             FOM=FOM, MACHINE=str(ROOT / "configs" / "machines" /
                                                         "vm-thp.toml"))
    assert r.returncode == 0, r.stderr
    with (out / "explore" / "summary.csv").open(newline="") as f:
        assert [row["variant"] for row in csv.DictReader(f)] == [
            "m00", "m10", "m01", "m11", "advisor"]
    own = tmp_path / "default"
    r = make("explore", OUT=str(own), K="1", REPEATS="1", FRACTION="0.4",
             MACHINE=str(ROOT / "configs" / "machines" / "vm-thp.toml"))
    assert r.returncode == 0, r.stderr
    assert (own / "trace.prv").is_file() and (own / "sites.csv").is_file()
    res = json.loads((own / "explore" / "result.json").read_text())
    assert res["placements"] == 4 and res["rest_group"] is True
    # the advisor's sites are one explored placement, or split the rest group
    assert res["advisor_placement"] in (None, "m00", "m10", "m01", "m11")
