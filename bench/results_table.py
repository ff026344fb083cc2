"""bench/results/README.md's table of codes: for each code of `make bench-apps`, its
latest run (the newest bench/results/apps-*.md with a section for it), numbers only:
all-fast's speedup, and at 25 % and 50 % of the footprint the advisor's (the first
strategy row after all-fast) with its share of all-fast's gain and its predicted
speedup. `python3 bench/results_table.py` prints the table; `--write` puts it in
bench/results/README.md between its two marker lines, leaving the rest (the history of
every run) as it is."""

from __future__ import annotations

import re
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
README = RESULTS / "README.md"
BEGIN, END = "<!-- codes: begin (bench/results_table.py) -->", "<!-- codes: end -->"
BASELINES = ("all-fast", "first-come", "size-window")
_DATE = re.compile(r"apps-(\d{4}-\d{2}-\d{2})([a-z]?)-")


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def sections(text: str) -> dict[str, list[list[str]]]:
    """code -> its table rows (cells), from one apps-*.md."""
    out: dict[str, list[list[str]]] = {}
    code = None
    for line in text.splitlines():
        if line.startswith("## "):
            code = line[3:].strip()
            continue
        if code and code != "Summary" and re.match(r"^\| (25|50)% ", line):
            out.setdefault(code, []).append(_cells(line))
    return out


def latest() -> dict[str, tuple[Path, list[list[str]]]]:
    """code -> (the newest run file with rows for it, its rows)."""
    runs = sorted(RESULTS.glob("apps-*.md"),
                  key=lambda p: (*(_DATE.search(p.name).groups() if _DATE.search(p.name)
                                   else ("", "")), p.name))
    out: dict[str, tuple[Path, list[list[str]]]] = {}
    for p in runs:                              # oldest first: later runs replace
        for code, rows in sections(p.read_text()).items():
            out[code] = (p, rows)
    return out


def _at(rows: list[list[str]], cap: str) -> tuple[str, str, str, str]:
    """(all-fast, advisor speedup, its share, its predicted) at capacity cap ('25' or '50')."""
    mine = [r for r in rows if r[0].startswith(cap + "%")]
    fast = next((r[2] for r in mine if r[1] == "all-fast"), "–")
    adv = next((r for r in mine if r[1] and r[1] not in BASELINES and not r[1].endswith("-whole")
                and not r[1].startswith("split over")), None)
    if adv is None:
        return fast, "–", "–", "–"
    return fast, adv[2], adv[4] or "–", adv[5] or "–"


def table() -> str:
    lines = ["| code | latest run | all-fast | advisor at 25 % | share | predicted | "
             "advisor at 50 % | share | predicted |",
             "|---|---|---|---|---|---|---|---|---|"]
    for code, (path, rows) in sorted(latest().items()):
        fast, a25, s25, p25 = _at(rows, "25")
        _, a50, s50, p50 = _at(rows, "50")
        lines.append(f"| {code} | [{path.stem}]({path.name}) | {fast} | {a25} | {s25} | {p25} | "
                     f"{a50} | {s50} | {p50} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    text = table()
    if "--write" not in argv:
        print(text)
        return 0
    doc = README.read_text()
    if BEGIN not in doc or END not in doc:
        sys.exit(f"{README}: no {BEGIN} ... {END} lines to write the table between")
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    README.write_text(f"{head}{BEGIN}\n{text}\n{END}{tail}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
