"""hmtune.analyze.check_trace: the fixture, a valid hmtune-style trace, one mutation per rule."""

import gzip
import re
import shutil
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from prvtext import PRVSCAN, analyze

from hmtune.analyze.check_result import HMTUNE_ONLY, MAX_PER_RULE, RULES
from hmtune.analyze.check_trace import check_trace, main

FIXTURE = Path(__file__).parent / "data" / "extrae-malloc-trace"

# 1 app; task 1 has 2 threads on node 1, task 2 has 1 thread on node 2; 3 cpus.
HEADER = "#Paraver (23/11/2026 at 10:00):10000_ns:2(2,1):1:2(2:1,1:2),0"
RECORDS = [                                                   # file line
    "1:1:1:1:1:0:9000:1",                                     # 2
    "1:2:1:1:2:0:9000:1",                                     # 3
    "1:3:1:2:1:0:9000:1",                                     # 4
    "2:1:1:1:1:100:40000041:1024",                            # 5  size split from ...
    "2:1:1:1:1:100:40000040:1:32000009:3",                    # 6  ... its malloc entry
    "2:2:1:1:2:150:40000040:4:40000041:4096:32000009:4",      # 7  calloc
    "2:1:1:1:1:180:40000040:0:40000043:4096",                 # 8
    "2:2:1:1:2:190:40000040:0:40000043:8192",                 # 9
    "2:3:1:2:1:200:40000040:3:40000041:2048:40000042:0:32000009:5",  # 10 realloc(NULL)
    "2:3:1:2:1:250:40000040:0:40000043:12288",                # 11
    "2:1:1:1:1:300:32000000:4100:32000007:3",                 # 12 sampled load
    "2:2:1:1:2:400:32000001:8200:32000007:0",                 # 13 store, no object
    "2:1:1:1:1:500:40000040:2:40000042:4096",                 # 14 free
    "2:1:1:1:1:520:40000040:0",                               # 15
    "2:3:1:2:1:600:40000040:5:40000041:65536:32000009:1",     # 16 unknown dynamic site
    "2:3:1:2:1:650:40000040:0:40000043:16384",                # 17
    f"2:1:1:1:1:700:32000000:{2**64 - 1}:32000007:4",         # 18 largest value
]
PCF = """STATES
0    Idle
1    Running


EVENT_TYPE
0    40000040    Dynamic memory calls
VALUES
0      End
1      malloc()
2      free()
3      realloc()
4      calloc()
5      posix_memalign()


EVENT_TYPE
0    40000041    Requested size in dynamic memory call
0    40000042    In pointer (free, realloc)
0    40000043    Out pointer (malloc, calloc, realloc)
0    32000000    Sampled load address
0    32000001    Sampled store address


EVENT_TYPE
0    32000007    Memory object referenced by sampled address
0    32000009    Allocation memory object
0    41000032    hmtune memory object of a sampled page fault
VALUES
0 End
1 ??
2 ??
3 app.c:10 > libc-start.c:74
4 app.c:20 > libc-start.c:74
5 app.c:30 > libc-start.c:74


EVENT_TYPE
0    41000010    Allocation site (module+offset chain)
VALUES
1 ??
2 ??
3 /bin/app+0x1129 > /lib/libc.so.6+0x2724a
4 /bin/app+0x1139 > /lib/libc.so.6+0x2724a
5 /bin/app+0x1149 > /lib/libc.so.6+0x2724a


EVENT_TYPE
0    41000030    hmtune sampled minor page fault (data address)
0    41000031    hmtune page faults the fault sample stands for
0    41000033    hmtune page-fault address class


EVENT_TYPE
7    41999999    Active hardware counter set
VALUES
1 Set 1


EVENT_TYPE
7    42000059    Total cycles (PAPI_TOT_CYC)
7    42001000    perf::TASK-CLOCK (perf::TASK-CLOCK)
"""
ROW = """LEVEL CPU SIZE 3
1.node1
2.node1
3.node2

LEVEL NODE SIZE 2
node1
node2

LEVEL THREAD SIZE 3
THREAD 1.1.1
THREAD 1.1.2
THREAD 1.2.1
"""


@dataclass(frozen=True)
class Spec:
    header: str = HEADER
    records: tuple[str, ...] = tuple(RECORDS)
    pcf: str | None = PCF
    row: str | None = ROW

    def line(self, lineno, text):
        """Replace file line `lineno` (the header is line 1)."""
        records = list(self.records)
        records[lineno - 2] = text
        return replace(self, records=tuple(records))

    def sub(self, lineno, old, new):
        assert old in self.records[lineno - 2]
        return self.line(lineno, self.records[lineno - 2].replace(old, new))

    def delete(self, lineno):
        records = list(self.records)
        del records[lineno - 2]
        return replace(self, records=tuple(records))

    def insert(self, lineno, text):
        """Insert `text` so that it becomes file line `lineno`."""
        records = list(self.records)
        records.insert(lineno - 2, text)
        return replace(self, records=tuple(records))

    def swap(self, a, b):
        records = list(self.records)
        records[a - 2], records[b - 2] = records[b - 2], records[a - 2]
        return replace(self, records=tuple(records))

    def write(self, directory: Path, name="trace", gz=False) -> Path:
        text = "\n".join((self.header, *self.records)) + "\n"
        prv = directory / (name + (".prv.gz" if gz else ".prv"))
        if gz:
            with gzip.open(prv, "wt") as fh:
                fh.write(text)
        else:
            prv.write_text(text)
        if self.pcf is not None:
            (directory / (name + ".pcf")).write_text(self.pcf)
        if self.row is not None:
            (directory / (name + ".row")).write_text(self.row)
        return prv


VALID = Spec()
NO_RAW_TABLE = PCF[:PCF.index("EVENT_TYPE\n0    41000010")]


def check(spec: Spec, tmp_path: Path, extrae=False):
    return check_trace(spec.write(tmp_path), extrae=extrae)


# -- the real Extrae trace ----------------------------------------------------------------

def test_fixture_has_exactly_the_end_time_problem():
    result = check_trace(FIXTURE / "malloc_test.prv")
    assert result.extrae                          # auto: the .pcf has no 41000010 table
    assert [(p.rule, p.line) for p in result.problems] == [("end-time", 86)]
    assert not result.suppressed and not result.ok
    assert (result.records, result.states, result.events, result.comms) == (87, 21, 66, 0)
    assert (result.tasks, result.threads, result.max_time) == (1, 1, 182253711)
    assert check_trace(FIXTURE / "malloc_test.prv", extrae=True).rules() == {"end-time"}


def test_fixture_with_later_end_time_is_valid(tmp_path):
    for suffix in (".pcf", ".row"):
        shutil.copy(FIXTURE / ("malloc_test" + suffix), tmp_path)
    text = (FIXTURE / "malloc_test.prv").read_text()
    prv = tmp_path / "malloc_test.prv"
    prv.write_text(text.replace(":182253711_ns:", ":182253712_ns:", 1))
    result = check_trace(prv)
    assert result.problems == [] and result.ok


# -- the hand-written hmtune trace --------------------------------------------------------

def test_valid_hmtune_trace(tmp_path):
    result = check(VALID, tmp_path)
    assert result.problems == [] and result.ok and not result.extrae
    assert (result.records, result.states, result.events) == (17, 3, 14)
    assert (result.tasks, result.threads, result.max_time) == (2, 3, 9000)


def test_valid_gzip_trace(tmp_path):
    result = check_trace(VALID.write(tmp_path, gz=True))
    assert result.problems == [] and result.records == 17


COMM = "3:1:1:1:1:700:700:3:1:2:1:710:710:64:1"
FIRST_COUNTS = "2:1:1:1:1:350:41999999:1:42000059:1000:42001000:250"   # thread 1.1.1's set
COUNTS = "2:1:1:1:1:450:42000059:2000:42001000:500"
FAULT = "2:1:1:1:1:350:41000030:4104:41000032:3:41000031:61:41000033:1"

MUTATIONS = {
    # name: (mutated spec, the exact set of rules that must fire)
    "unsorted-times": (VALID.swap(12, 13), {"time-order"}),
    "end-time-too-small": (replace(VALID, header=HEADER.replace(":10000_ns:", ":600_ns:")),
                           {"end-time"}),
    "cpu-id-zero": (VALID.sub(12, "2:1:", "2:0:"), {"cpu-id"}),
    "thread-out-of-range": (VALID.line(12, "2:1:1:1:3:300:32000000:4100:32000007:3"),
                            {"thread-id"}),
    "task-out-of-range": (VALID.line(13, "2:2:1:3:1:400:32000001:8200:32000007:0"),
                          {"task-id"}),
    "app-out-of-range": (VALID.line(13, "2:2:2:1:2:400:32000001:8200:32000007:0"), {"app-id"}),
    "comm": (VALID.insert(19, COMM), set()),
    "comm-receiver-out-of-range": (VALID.insert(19, COMM.replace(":3:1:2:1:", ":3:1:2:2:")),
                                   {"thread-id"}),
    "unlabelled-site": (VALID.sub(10, "32000009:5", "32000009:7"),
                        {"site-label", "site-raw-label"}),
    "unlabelled-sample-object": (VALID.sub(12, "32000007:3", "32000007:9"),
                                 {"site-label", "site-raw-label"}),
    # a sampled page fault (41000030-41000033) is accepted; its object must be labelled
    "fault-sample": (VALID.insert(13, FAULT), set()),
    "unlabelled-fault-object": (VALID.insert(13, FAULT.replace("41000032:3", "41000032:9")),
                                {"site-label", "site-raw-label"}),
    # enumerated hmtune types: a value trace_values.tsv does not define, once per value
    "unknown-call-kind": (VALID.sub(16, "40000040:5", "40000040:99")
                          .insert(18, "2:3:1:2:1:660:40000040:99:40000041:8:32000009:1")
                          .insert(19, "2:3:1:2:1:670:40000040:0"), {"value-unknown"}),
    "unknown-access-kind": (VALID.sub(12, "32000007:3", "32000007:3:41000035:9"),
                            {"value-unknown", "pcf-type"}),
    "access-insn-bits": (VALID.sub(12, "32000007:3", "32000007:3:41000036:63"), {"pcf-type"}),
    "unknown-access-insn-bit": (VALID.sub(12, "32000007:3", "32000007:3:41000036:64"),
                                {"value-unknown", "pcf-type"}),
    # counter deltas (42xxxxxx) after the thread's active set (41999999)
    "counters": (VALID.insert(13, FIRST_COUNTS).insert(15, COUNTS), set()),
    "counters-before-their-set": (VALID.insert(13, COUNTS.replace(":450:", ":350:"))
                                  .insert(14, COUNTS.replace(":450:", ":360:")),
                                  {"counter-set"}),
    "set-on-another-thread": (VALID.insert(13, FIRST_COUNTS)
                              .insert(15, COUNTS.replace("2:1:1:1:1:", "2:2:1:1:2:")),
                              {"counter-set"}),
    "counter-not-in-pcf": (VALID.insert(13, FIRST_COUNTS.replace("42001000", "42000050")),
                           {"pcf-counter"}),
    "no-raw-label": (replace(VALID, pcf=PCF.replace("5 /bin/app+0x1149", "6 /bin/app+0x1149")),
                     {"site-raw-label"}),
    "reserved-id-unlabelled": (replace(VALID, pcf=PCF.replace("1 ??\n2 ??\n3 app", "1 ??\n3 app")),
                               {"site-reserved"}),
    "site-id-zero": (VALID.sub(7, "32000009:4", "32000009:0"), {"site-id"}),
    "site-id-static": (VALID.sub(7, "32000009:4", "32000009:2"), {"site-id"}),
    "missing-pcf": (replace(VALID, pcf=None), {"pcf-missing"}),
    "missing-row": (replace(VALID, row=None), {"row-missing"}),
    "bad-header": (replace(VALID, header="#Paraver 23/11/2026:10000_ns:1(1):1:1(1:1),0"),
                   {"header"}),
    "truncated-event": (VALID.line(12, "2:1:1:1:1:300:3200"), {"fields"}),
    "truncated-state": (VALID.line(2, "1:1:1:1:1:0:90"), {"fields"}),
    "unknown-record-type": (VALID.insert(19, "9:1:1:1:1:800"), {"record-type"}),
    "non-integer-value": (VALID.sub(12, "4100", "0x1004"), {"integer"}),
    "value-2^64": (VALID.sub(18, str(2**64 - 1), str(2**64)), {"event-value"}),
    "negative-value": (VALID.sub(12, "4100", "-4100"), {"event-value"}),
    "type-zero": (VALID.sub(12, ":32000007:3", ":32000007:3:0:5"), {"event-type"}),
    "negative-time": (VALID.line(2, "1:1:1:1:1:-5:9000:1"), {"time-negative"}),
    "state-end-before-begin": (VALID.insert(19, "1:1:1:1:1:800:750:1"), {"state-interval"}),
    "type-not-in-pcf": (VALID.sub(12, ":32000007:3", ":32000007:3:12345:1"), {"pcf-type"}),
    "required-type-not-in-pcf": (VALID.sub(12, ":32000007:3", ":32000007:3:41000011:1"),
                                 {"pcf-type-required"}),
    "call-without-end": (VALID.delete(15), {"call-unterminated"}),
    "nested-call": (VALID.delete(8), {"call-nested"}),
    "end-without-call": (VALID.insert(16, "2:1:1:1:1:530:40000040:0"), {"call-unmatched-end"}),
    "ret-ptr-outside-call": (VALID.sub(12, ":32000007:3", ":32000007:3:40000043:77"),
                             {"ret-ptr"}),
    "ret-ptr-at-entry": (VALID.sub(14, ":40000042:4096", ":40000042:4096:40000043:1"),
                         {"ret-ptr"}),
    "missing-size": (VALID.sub(7, ":40000041:4096", ""), {"call-size"}),
    "missing-split-size": (VALID.delete(5), {"call-size"}),
    "missing-site": (VALID.sub(7, ":32000009:4", ""), {"call-site"}),
    "row-threads": (replace(VALID, row=ROW.replace("THREAD SIZE 3", "THREAD SIZE 2")
                            .replace("THREAD 1.2.1\n", "")), {"row-threads"}),
    "row-cpus": (replace(VALID, row=ROW.replace("CPU SIZE 3", "CPU SIZE 2")
                         .replace("3.node2\n", "")), {"row-cpus"}),
    "row-nodes": (replace(VALID, row=ROW.replace("NODE SIZE 2", "NODE SIZE 1")
                          .replace("node2\n\n", "\n")), {"row-nodes"}),
    "row-size-mismatch": (replace(VALID, row=ROW.replace("THREAD SIZE 3", "THREAD SIZE 4")),
                          {"row-syntax"}),
    "pcf-syntax": (replace(VALID, pcf=PCF.replace("0    40000041", "0    4000x041")),
                   {"pcf-syntax"}),
    "header-only": (replace(VALID, records=()), {"records"}),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_mutation_fires_its_rule(name, tmp_path):
    spec, expected = MUTATIONS[name]
    result = check(spec, tmp_path)
    assert result.rules() == expected
    assert expected <= set(RULES)
    assert result.ok == all(RULES[rule][0] == "warning" for rule in expected)


@pytest.mark.parametrize(("name", "file_suffix", "line"), [
    ("end-time-too-small", ".prv", 2),      # first record reaching the end: state end 9000
    ("unsorted-times", ".prv", 13),
    ("call-without-end", ".prv", 14),       # the free that never ends
    ("missing-split-size", ".prv", 5),      # the fused malloc entry starts on line 5 now
    ("unlabelled-site", ".prv", 10),
    ("reserved-id-unlabelled", ".pcf", 27),  # the 32000009 definition
    ("row-threads", ".row", 10),
    ("pcf-syntax", ".pcf", 18),
    ("counters-before-their-set", ".prv", 13),     # once for the thread, at its first
    ("unknown-call-kind", ".prv", 16),              # once for the value, at its first
])
def test_problem_location(name, file_suffix, line, tmp_path):
    result = check(MUTATIONS[name][0], tmp_path)
    assert {(Path(p.file).suffix, p.line) for p in result.problems} == {(file_suffix, line)}


def test_extrae_mode_relaxes_hmtune_rules(tmp_path):
    spec = VALID.sub(7, ":32000009:4", "").sub(10, "32000009:5", "32000009:2")
    assert check(spec, tmp_path).rules() == {"call-site", "site-id"}
    result = check(spec, tmp_path, extrae=True)
    assert result.extrae and result.problems == []


def test_extrae_mode_keeps_the_counter_labels(tmp_path):
    """Extrae's own counter events are not checked for their set, nor its call kinds
    against hmtune's (hmtune's rules), but an undeclared counter type stays an error:
    Paraver's counter views need its name."""
    early = VALID.insert(13, COUNTS.replace(":450:", ":350:"))
    assert check(early, tmp_path, extrae=True).problems == []
    assert check(MUTATIONS["unknown-call-kind"][0], tmp_path, extrae=True).problems == []
    unnamed = VALID.insert(13, FIRST_COUNTS.replace("42001000", "42000050"))
    assert check(unnamed, tmp_path, extrae=True).rules() == {"pcf-counter"}


def test_extrae_mode_auto_detected(tmp_path):
    spec = replace(VALID.sub(7, ":32000009:4", ""), pcf=NO_RAW_TABLE)
    result = check(spec, tmp_path)
    assert result.extrae and result.problems == []
    # rules shared with Extrae still apply
    result = check(spec.sub(10, "32000009:5", "32000009:7"), tmp_path)
    assert result.rules() == {"site-label"}


def test_problems_capped_per_rule(tmp_path):
    extra = [f"2:0:1:1:1:{800 + i}:32000000:1" for i in range(MAX_PER_RULE + 50)]
    result = check(replace(VALID, records=VALID.records + tuple(extra)), tmp_path)
    assert result.rule_counts() == {"cpu-id": MAX_PER_RULE + 50}
    assert len(result.problems) == MAX_PER_RULE
    assert result.suppressed == {"cpu-id": 50}
    assert result.count("error") == MAX_PER_RULE + 50


def test_corrupt_gzip_is_a_read_error(tmp_path):
    prv = VALID.write(tmp_path, gz=True)
    prv.write_bytes(b"not gzip at all\n")
    assert check_trace(prv).rules() == {"read-error"}


def test_missing_trace_raises(tmp_path):
    with pytest.raises(FileNotFoundError):
        check_trace(tmp_path / "nothing.prv")


# -- the command line -----------------------------------------------------------------------

def test_main_exit_codes(tmp_path, capsys):
    valid = VALID.write(tmp_path, "valid")
    broken = MUTATIONS["call-without-end"][0].write(tmp_path, "broken")
    warned = MUTATIONS["type-not-in-pcf"][0].write(tmp_path, "warned")
    assert main([str(valid)]) == 0
    assert main([str(warned)]) == 0              # warnings alone do not fail
    assert main([str(broken), "--quiet"]) == 1
    assert main([str(broken), "--extrae"]) == 1
    assert main([str(tmp_path / "nothing.prv")]) == 2
    assert main([]) == 2
    assert main([str(valid), str(broken)]) == 2
    assert main([str(valid), "--bogus"]) == 2
    assert main(["--help"]) == 0


def test_main_takes_a_directory(tmp_path, capsys):
    """DIR means DIR/trace.prv, as for hmtune analyze; a directory without one is a
    usage error."""
    d = tmp_path / "stage"
    d.mkdir()
    VALID.write(d)
    assert main([str(d)]) == 0
    MUTATIONS["call-without-end"][0].write(d)
    assert main([str(d)]) == 1
    (tmp_path / "empty").mkdir()
    assert main([str(tmp_path / "empty")]) == 2


@pytest.mark.skipif(not PRVSCAN.exists(), reason="hmtune-prvscan is not built (make)")
@pytest.mark.parametrize("name", ["valid", "header-only", "bad-header", "truncated-event"])
def test_check_trace_and_analyze_agree(name, tmp_path):
    """One validity rule: check-trace calls a trace valid exactly when analyze reads it."""
    spec = VALID if name == "valid" else MUTATIONS[name][0]
    prv = spec.write(tmp_path)
    r = analyze(prv, tmp_path / "out")
    assert check_trace(prv).ok == (r.returncode == 0), r.stderr
    assert (r.returncode == 0) == (name == "valid")


def test_main_output_shape(tmp_path, capsys):
    broken = MUTATIONS["call-without-end"][0].write(tmp_path)
    capsys.readouterr()
    main([str(broken)])
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2                          # one problem + the summary
    main([str(broken), "--quiet"])
    assert len(capsys.readouterr().out.splitlines()) == 1   # the summary only
    main([str(tmp_path / "nothing.prv")])
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.splitlines()) == 1


def test_the_rules_are_those_docs_formats_lists() -> None:
    """docs/formats.md's validator table names every rule with its severity, and its
    list of hmtune-only rules is HMTUNE_ONLY."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "formats.md").read_text()
    section = doc[doc.index("### Validator"):doc.index("### Summary")]
    table = dict(re.findall(r"^\| `([a-z0-9-]+)` \| (error|warning) \|", section, re.M))
    assert table == {rule: severity for rule, (severity, _) in RULES.items()}
    only = re.search(r"drops the hmtune-only rules \(([^)]*)\)", section)
    assert only is not None and set(re.findall(r"`([a-z-]+)`", only[1])) == HMTUNE_ONLY
