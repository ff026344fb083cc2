"""`hmtune run` refuses to run a placement whose tier cannot place anything on this host
(one line saying what to change, exit 2, nothing run) unless --allow-unplaced."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HMTUNE = ROOT / "bin" / "hmtune"
APP = ROOT / "build" / "examples" / "latency"


def placement(tmp: Path, backend: str) -> Path:
    p = tmp / "placement.txt"
    p.write_text("# hmtune placement v1\n"
                 f"program {APP.resolve()}\n"
                 f"tier fast {backend} 67108864\n"
                 "tier slow default unlimited\n"
                 "depth 1\n"
                 "size-window 4096 67108864\n"
                 f"site fast {APP.resolve()}+0x1297\n")
    return p


def run(tmp: Path, backend: str, *opts: str,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    pf = placement(tmp, backend)
    e = {k: v for k, v in os.environ.items() if k != "MEMKIND_HBW_NODES"}
    return subprocess.run([str(HMTUNE), "run", "-o", str(tmp), "--placement", str(pf), *opts,
                           "--", str(APP), "-q"], capture_output=True, text=True,
                          env={**e, **(env or {})}, timeout=300)


@pytest.mark.parametrize("backend", ["numa:7", "memkind:MEMKIND_HBW"])
def test_a_tier_absent_here_is_refused(tmp_path: Path, backend: str) -> None:
    r = run(tmp_path, backend)
    assert r.returncode == 2 and "checksum=" not in r.stdout
    assert len(r.stderr.strip().splitlines()) == 1 and "--allow-unplaced" in r.stderr
    assert not (tmp_path / "run-stats.json").exists()
    assert (tmp_path / "placement.txt").exists()                    # nothing lost
    r = run(tmp_path, backend, "--allow-unplaced")
    assert r.returncode == 0, r.stderr
    assert "checksum=" in r.stdout
    stats = json.loads((tmp_path / "run-stats.json").read_text())
    fast = [t for t in stats["tiers"] if t["name"] == "fast"][0]
    assert not fast["available"] and fast["placed_blocks"] == 0


def test_a_tier_that_can_place_runs(tmp_path: Path) -> None:
    """memkind's HBW kind on node 0 (MEMKIND_HBW_NODES) and a numa tier on node 0 run."""
    r = run(tmp_path, "memkind:MEMKIND_HBW", env={"MEMKIND_HBW_NODES": "0"})
    assert r.returncode == 0, r.stderr
    assert run(tmp_path, "numa:0").returncode == 0


def test_thp_off_is_refused(tmp_path: Path) -> None:
    """THP set to never on a recorded host (HMTUNE_HOST_ROOT): refused."""
    host = tmp_path / "host"
    node = host / "sys/devices/system/node/node0"
    node.mkdir(parents=True)
    (node / "cpulist").write_text("0-1\n")
    (node / "meminfo").write_text("Node 0 MemTotal: 8388608 kB\nNode 0 MemFree: 4194304 kB\n")
    thp = host / "sys/kernel/mm/transparent_hugepage"
    thp.mkdir(parents=True)
    (thp / "enabled").write_text("always madvise [never]\n")
    (host / "proc").mkdir()
    (host / "proc/meminfo").write_text("MemTotal: 8388608 kB\nHugepagesize: 2048 kB\n")
    r = run(tmp_path, "thp", env={"HMTUNE_HOST_ROOT": str(host)})
    assert r.returncode == 2 and "checksum=" not in r.stdout
    assert run(tmp_path, "thp").returncode == 0          # this host: THP madvise
