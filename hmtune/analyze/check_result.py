"""Rules of `hmtune check-trace` and the result it returns (see hmtune.analyze.check_trace)."""

from __future__ import annotations

from dataclasses import dataclass, field

from hmtune.core import events as ev

# rule id -> (severity, what it checks). Each rule has one severity.
RULES: dict[str, tuple[str, str]] = {
    "read-error": ("error", "a file could not be read (I/O error, corrupt gzip)"),
    "header": ("error", "the #Paraver header line parses"),
    "records": ("error", "at least one record follows the header (hmtune analyze refuses"
                         " an empty trace)"),
    "pcf-missing": ("error", "NAME.pcf exists next to NAME.prv"),
    "row-missing": ("error", "NAME.row exists next to NAME.prv"),
    "pcf-syntax": ("error", "the .pcf parses"),
    "row-syntax": ("error", "the .row parses and each level lists SIZE names"),
    "row-threads": ("error", ".row THREAD level lists the header's number of threads"),
    "row-cpus": ("error", ".row CPU level lists the header's number of cpus"),
    "row-nodes": ("error", ".row NODE level lists the header's number of nodes"),
    "fields": ("error", "a record has the right number of fields (truncated line)"),
    "integer": ("error", "every record field is a decimal integer"),
    "record-type": ("error", "records are of type 1 (state), 2 (event) or 3 (comm)"),
    "cpu-id": ("error", "cpu in 1..total cpus of the header"),
    "app-id": ("error", "app in 1..number of applications"),
    "task-id": ("error", "task in 1..tasks of that application"),
    "thread-id": ("error", "thread in 1..threads of that task"),
    "time-negative": ("error", "times are non-negative"),
    "state-interval": ("error", "a state's begin <= its end"),
    "time-order": ("error", "records sorted by time (state: begin; comm: logical send)"),
    "end-time": ("error", "header end time > every record time and state end"),
    "event-type": ("error", "event types are positive"),
    "event-value": ("error", "event values are unsigned 64-bit (0 <= v < 2^64)"),
    "pcf-type": ("warning", "every event type used is declared in the .pcf"),
    "pcf-type-required": ("error", f"types {ev.HM_EV_SAMPLE_OBJECT}/{ev.HM_EV_SITE}/"
                                   f"{ev.HM_EV_SITE_RAW}/{ev.HM_EV_SITE_FUNC} used are"
                                   " declared in the .pcf"),
    "value-unknown": ("error", "values of hmtune's enumerated types (call kinds, sampler,"
                               " address class, access kind, ...) are those"
                               " trace_values.tsv defines [hmtune only]"),
    "pcf-counter": ("error", f"every hardware-counter type used ({ev.HM_EV_HWC_PRESET}-"
                             "42999999) is declared in the .pcf (its counter name)"),
    "counter-set": ("error", f"a thread's first counter values come with (or after) its"
                             f" {ev.HM_EV_HWC_SET} (active counter set) event [hmtune only]"),
    "site-label": ("error", f"every site id in {ev.HM_EV_SITE}/{ev.HM_EV_SAMPLE_OBJECT}/"
                            f"{ev.HM_EV_FAULT_OBJECT} has a {ev.HM_EV_SITE} label"),
    "site-raw-label": ("error", f"every site id has a {ev.HM_EV_SITE_RAW} (module+0xoffset)"
                                " label [hmtune only]"),
    "site-reserved": ("error", f"the {ev.HM_EV_SITE} table labels reserved ids 1 (unknown"
                               " dynamic) and 2 (unknown static) [hmtune only]"),
    "site-id": ("error", "an allocation's site id is >= 1 (and not 2, the static"
                         " placeholder, in hmtune traces)"),
    "call-nested": ("error", f"a {ev.HM_EV_CALL} entry comes after the previous call's end"),
    "call-unmatched-end": ("error", f"a {ev.HM_EV_CALL} end (0) closes an open call"),
    "call-unterminated": ("error", f"every {ev.HM_EV_CALL} entry has its end before the"
                                   " trace ends"),
    "ret-ptr": ("error", f"{ev.HM_EV_OUT_PTR} (returned pointer) appears only at a call end"),
    "call-size": ("error", "malloc/realloc/calloc/posix_memalign entries carry"
                           f" {ev.HM_EV_SIZE}"),
    "call-site": ("error", f"allocating entries carry a {ev.HM_EV_SITE} site id"
                           " [hmtune only]"),
}

# Rules that only hold for hmtune's own traces; relaxed with --extrae.
HMTUNE_ONLY = frozenset({"site-raw-label", "site-reserved", "call-site", "counter-set",
                         "value-unknown"})

MAX_PER_RULE = 100   # problems kept (and printed) per rule; the rest are counted


@dataclass(frozen=True)
class Problem:
    file: str
    line: int
    rule: str
    message: str

    @property
    def severity(self) -> str:
        return RULES[self.rule][0]

    def __str__(self) -> str:
        prefix = "warning: " if self.severity == "warning" else ""
        return f"{self.file}:{self.line}: [{self.rule}] {prefix}{self.message}"


@dataclass
class CheckResult:
    prv: str
    extrae: bool = False                 # Extrae rules applied (asked for or auto-detected)
    problems: list[Problem] = field(default_factory=list)   # at most MAX_PER_RULE per rule
    suppressed: dict[str, int] = field(default_factory=dict)  # rule -> problems not kept
    records: int = 0                     # record lines (states + events + comms)
    states: int = 0
    events: int = 0                      # event record lines (before fusion)
    comms: int = 0
    tasks: int = 0                       # from the header
    threads: int = 0                     # from the header
    max_time: int = 0                    # latest record time or state end seen

    def add(self, file: str, line: int, rule: str, message: str) -> None:
        """Record a problem, keeping at most MAX_PER_RULE per rule."""
        kept = self._kept.get(rule, 0)
        if kept < MAX_PER_RULE:
            self._kept[rule] = kept + 1
            self.problems.append(Problem(file, line, rule, message))
        else:
            self.suppressed[rule] = self.suppressed.get(rule, 0) + 1

    def __post_init__(self) -> None:
        self._kept: dict[str, int] = {}

    def rule_counts(self) -> dict[str, int]:
        """rule -> number of problems, including those not kept."""
        counts = dict(self.suppressed)
        for problem in self.problems:
            counts[problem.rule] = counts.get(problem.rule, 0) + 1
        return counts

    def rules(self) -> set[str]:
        return set(self.rule_counts())

    def count(self, severity: str) -> int:
        return sum(n for rule, n in self.rule_counts().items() if RULES[rule][0] == severity)

    @property
    def ok(self) -> bool:
        """True when there are no errors (warnings allowed)."""
        return self.count("error") == 0

    def summary(self) -> str:
        mode = "extrae" if self.extrae else "hmtune"
        verdict = "valid" if self.ok else "INVALID"
        return (f"{self.prv}: {verdict} ({mode} rules): {self.records} records"
                f" ({self.states} states, {self.events} events, {self.comms} comms),"
                f" {self.tasks} tasks, {self.threads} threads, max time {self.max_time};"
                f" {self.count('error')} errors, {self.count('warning')} warnings")
