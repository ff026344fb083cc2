"""Run `hmtune-prvscan`, the C scanner that reads a `.prv` once (see hmtune.analyze.scan_io).

`hmtune-prvscan TRACE.prv[.gz] -o OUTDIR [--skip-bad] [--progress-live] [--lookahead]
[--profile-granularity BYTES] [--phases N]` exits 0 on
success and 1 with one line on stderr for bad input. Its progress display (lines
ending in '\\r') is passed through to the terminal; its other stderr lines are held
back: on failure the last one is the error message, on success they are notes
(e.g. bad lines skipped) for the caller to print.
"""

from __future__ import annotations

import codecs
import os
import subprocess
import sys
from pathlib import Path

from hmtune.core import paths


class ScanFailed(Exception):
    """The scanner refused the trace or could not run; str() is its message."""


def scanner_bin() -> Path:
    return paths.prvscan_bin()


def _split(buffer: str) -> tuple[list[tuple[str, str]], str]:
    """Cut complete segments (text, terminator) off `buffer`; return them and the rest."""
    segments: list[tuple[str, str]] = []
    start = 0
    for i, ch in enumerate(buffer):
        if ch in "\r\n":
            segments.append((buffer[start:i], ch))
            start = i + 1
    return segments, buffer[start:]


def run_scanner(trace: Path, outdir: Path, skip_bad: bool = False,
                progress: bool | None = None, lookahead: bool = False,
                profile_granularity: int | None = None,
                phases: int | None = None) -> list[str]:
    """Scan `trace` into `outdir`; return the scanner's stderr lines (notes).

    progress None: show the scanner's progress when our stderr is a terminal.
    lookahead: attribute the software sampler's look-ahead addresses to their objects
    (by default they count as samples without an address).
    profile_granularity: profile.csv's bucket size (the scanner's default, 4096, when
    None).
    phases: counters.csv's phases (the scanner's default, 20, when None).
    Raises ScanFailed with the scanner's own message when it fails.
    """
    if progress is None:
        progress = sys.stderr.isatty()
    cmd = [str(scanner_bin()), str(trace), "-o", str(outdir)]
    cmd += ["--skip-bad"] if skip_bad else []
    cmd += ["--progress-live"] if progress else []
    cmd += ["--lookahead"] if lookahead else []
    if profile_granularity is not None:
        cmd += ["--profile-granularity", str(profile_granularity)]
    if phases is not None:
        cmd += ["--phases", str(phases)]
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    except OSError as e:
        raise ScanFailed(f"cannot run {cmd[0]}: {e.strerror or e}") from None
    assert proc.stderr is not None
    lines: list[str] = []
    pending = ""
    shown = 0                    # width of the progress text on screen
    fd = proc.stderr.fileno()
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        segments, pending = _split(pending + decoder.decode(chunk))
        for text, end in segments:
            if end == "\n":
                if text.strip():
                    lines.append(text.rstrip())
            elif progress and text.strip():
                sys.stderr.write(text.ljust(shown) + "\r")
                sys.stderr.flush()
                shown = len(text)
    if pending.strip():
        lines.append(pending.rstrip())
    proc.stderr.close()
    rc = proc.wait()
    if shown:
        sys.stderr.write(" " * shown + "\r")
        sys.stderr.flush()
    if rc != 0:
        name = Path(cmd[0]).name
        if rc < 0:
            lines.append(f"{name} was killed by signal {-rc}")
        elif not lines:
            lines.append(f"{name} failed (exit status {rc})")
        for line in lines[:-1]:
            print(line, file=sys.stderr)
        raise ScanFailed(lines[-1])
    return lines
