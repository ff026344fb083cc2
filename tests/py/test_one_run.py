"""tests/one_run.sh: one test run per host at a time (the runs share the hugepage pool);
a second run waits for the first, a nested call does not wait for its own run."""

import os
import subprocess
import time
from pathlib import Path

ONE_RUN = Path(__file__).resolve().parents[1] / "one_run.sh"


def unlocked_env(lock: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "HMTUNE_TEST_LOCK_HELD"}
    env["HMTUNE_TEST_LOCK"] = str(lock)
    return env


def test_a_second_run_waits_for_the_first(tmp_path: Path) -> None:
    lock, out = tmp_path / "tests.lock", tmp_path / "out"
    env = unlocked_env(lock)
    first = subprocess.Popen([str(ONE_RUN), "sh", "-c", f"touch {out}.1; sleep 1.5"],
                             env=env)
    while not Path(f"{out}.1").exists():
        time.sleep(0.02)
    t0 = time.monotonic()
    second = subprocess.run([str(ONE_RUN), "sh", "-c", 'echo "$HMTUNE_TEST_LOCK_HELD"'],
                            env=env, capture_output=True, text=True, timeout=30)
    waited = time.monotonic() - t0
    assert first.wait(timeout=30) == 0
    assert second.returncode == 0 and second.stdout == "1\n"
    assert waited >= 1.0


def test_nested_and_free_runs_do_not_wait(tmp_path: Path) -> None:
    lock = tmp_path / "tests.lock"
    env = unlocked_env(lock)
    t0 = time.monotonic()
    nested = subprocess.run([str(ONE_RUN), str(ONE_RUN), "true"], env=env, timeout=10,
                            capture_output=True, text=True)
    assert nested.returncode == 0 and nested.stderr == ""
    failing = subprocess.run([str(ONE_RUN), "sh", "-c", "exit 3"], env=env, timeout=10)
    assert failing.returncode == 3
    assert time.monotonic() - t0 < 5


def test_a_process_left_behind_does_not_hold_the_lock(tmp_path: Path) -> None:
    env = unlocked_env(tmp_path / "tests.lock")
    left = subprocess.run([str(ONE_RUN), "sh", "-c", "sleep 4 >/dev/null 2>&1 &"],
                          env=env, timeout=10)
    assert left.returncode == 0
    t0 = time.monotonic()
    after = subprocess.run([str(ONE_RUN), "true"], env=env, timeout=10)
    assert after.returncode == 0 and time.monotonic() - t0 < 2
