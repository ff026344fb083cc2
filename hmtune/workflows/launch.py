"""Running the user's application under one of hmtune's preload libraries, shared by
`hmtune trace` and `hmtune run`: checking that LD_PRELOAD can reach it, letting a
program built with AddressSanitizer start after the library, building the command
line (for MPI the environment goes to the ranks, not to the launcher), running it in
the foreground and handing its exit status back unchanged."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from hmtune.core import elf
from hmtune.core.errors import Failure


def say(who: str, msg: str) -> None:
    """One line `hmtune WHO: msg` on stderr (the form of every command's error too:
    hmtune/workflows/cli.py main prints a Failure so)."""
    print(f"hmtune {who}: {msg}", file=sys.stderr)


def app_command(remainder: list[str]) -> list[str]:
    """The application's command from argparse's `-- APP ARGS` remainder (the `--`
    dropped); empty when none was given."""
    return remainder[1:] if remainder[:1] == ["--"] else list(remainder)


def check_program(program: str, consequence: str) -> Path:
    """The file `program` runs. Raises Failure saying why it cannot be used: 127 when it
    does not exist, 2 when it is statically linked (LD_PRELOAD cannot reach its malloc;
    `consequence` says what that means for this command)."""
    exe = elf.resolve(program)
    if exe is None:
        where = (f"in {os.getcwd()}" if "/" in program and not program.startswith("/")
                 else "" if "/" in program else "in the directories of PATH")
        raise Failure(f"{program}: no such program{' ' + where if where else ''} (give its "
                      "path, absolute or from the directory you run in)", 127)
    if elf.is_static_elf(exe):
        raise Failure(f"{program} is statically linked: LD_PRELOAD cannot interpose "
                      f"its malloc, so {consequence}; link it dynamically "
                      "(without -static)", 2)
    return exe


def preload_with(lib: Path) -> str:
    """LD_PRELOAD with lib first, then whatever the user already preloads."""
    old = os.environ.get("LD_PRELOAD", "")
    return f"{lib}:{old}" if old else str(lib)


# AddressSanitizer's runtime, as gcc (libasan.so.N) and clang (libclang_rt.asan-ARCH.so)
# name it.
_ASAN_RUNTIME = re.compile(r"^lib(asan|clang_rt\.asan[-\w]*)\.so(\.|$)")
_LINK_ORDER = re.compile(r"(?:^|[:,\s])verify_asan_link_order=([^:,\s]*)")


def asan_runtime(program: Path | None) -> str | None:
    """The AddressSanitizer runtime the program names in its dynamic section, or None."""
    names = elf.needed(program) if program is not None else None
    return next((n for n in names or [] if _ASAN_RUNTIME.match(n)), None)


def asan_env(who: str, program: Path | None, lib: Path,
             environ: dict[str, str]) -> dict[str, str]:
    """A program built with AddressSanitizer stops at start-up ("ASan runtime does not
    come first in initial library list") when a preload library comes before its
    runtime, as hmtune's must: unless ASAN_OPTIONS says otherwise, run it with
    verify_asan_link_order=0 (which lets the preloaded library come first) and say
    so in one line; when ASAN_OPTIONS turns the check on, say what to change. The
    variables to add to the application's environment."""
    runtime = asan_runtime(program)
    if runtime is None:
        return {}
    opts = environ.get("ASAN_OPTIONS", "")
    given = _LINK_ORDER.findall(opts)
    if not given:
        say(who, f"note: {program} is built with AddressSanitizer ({runtime}), whose runtime "
                 f"must otherwise come first: running it with ASAN_OPTIONS="
                 f"verify_asan_link_order=0 so that {lib.name} can be preloaded before it "
                 "(set the same when you preload it by hand)")
        return {"ASAN_OPTIONS": f"{opts}:verify_asan_link_order=0" if opts
                else "verify_asan_link_order=0"}
    if given[-1] not in ("0", "false"):
        say(who, f"warning: {program} is built with AddressSanitizer ({runtime}) and "
                 f"ASAN_OPTIONS sets verify_asan_link_order={given[-1]}: its runtime will "
                 f"refuse to start after {lib.name}; set verify_asan_link_order=0 in "
                 "ASAN_OPTIONS, which lets the preloaded library come first")
    return {}


def command(launcher: list[str], app: list[str],
            app_env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """The command line and environment that give app_env to the application only.
    With an MPI launcher, the launcher itself runs with the caller's environment (it
    must not run under the preload library) and `env VAR=... app` applies app_env on
    each rank: launchers pass the command line to every node, but not every variable."""
    env = dict(os.environ)
    if launcher:
        return launcher + ["env"] + [f"{k}={v}" for k, v in app_env.items()] + app, env
    env.update(app_env)
    return list(app), env


def run_foreground(cmd: list[str], env: dict[str, str], who: str) -> int:
    """Run cmd in the foreground; the terminal's Ctrl-C reaches the app, not us, and a
    SIGTERM or SIGHUP sent to us is passed on (so that we outlive the app and can clean
    up after it). Returns Popen's status (-SIG for a signal)."""
    try:
        proc = subprocess.Popen(cmd, env=env)
    except OSError as e:
        say(who, f"cannot run {cmd[0]}: {e.strerror}")
        return 127
    old_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
    passed = {sig: signal.signal(sig, lambda s, f: proc.send_signal(s))
              for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        return proc.wait()
    finally:
        signal.signal(signal.SIGINT, old_int)
        for sig, old in passed.items():
            signal.signal(sig, old)


def exit_like(rc: int) -> int:
    """Give our caller the app's status: a signal death is re-raised on ourselves."""
    if rc < 0:
        sig = -rc
        if sig not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(sig, signal.SIG_DFL)
        sys.stdout.flush()
        sys.stderr.flush()
        os.kill(os.getpid(), sig)
        return 128 + sig
    return rc


def is_srun(launcher: list[str]) -> bool:
    """Whether the launcher line is Slurm's srun (whose -N counts nodes, not processes
    per node as Open MPI's does, and which starts the job's SLURM_NTASKS by default)."""
    return bool(launcher) and os.path.basename(launcher[0]) == "srun"
