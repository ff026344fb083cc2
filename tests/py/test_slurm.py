"""Under Slurm, as HPC users launch their codes (issue 17): a real Slurm cluster on
this host, started inside the test run as root (munged, slurmctld and slurmd, all
private: a temporary directory, free ports, a munge key of its own), takes batch jobs
submitted with `sbatch --wait` whose batch step runs `hmtune trace` or `hmtune run`
with `--mpirun "srun --mpi=pmix ..."`, exactly as the README's recipe does.

Checked: the trace of a 2-rank job has 2 tasks on the node that ran them and one row
per rank for mpi_alloc's `rank` site; the placement advised from it is used by both
ranks of a second job (each rank's statistics say its `rank` site was matched and
placed); a rank's non-zero exit status comes back through `hmtune trace`/`hmtune run`,
srun and `sbatch --wait`; and, with two slurmd on this host (each in a UTS namespace
with the node's name as hostname, since the tracer names a node by its hostname, and
TmpFS=DIR/tmp-%n, since Slurm's PMIx plugin names its directory there by job and step
only, so two slurmd sharing one collide), a 2-node job traces 2 tasks on 2 nodes.

Skipped, with the reason, when Slurm cannot start here: not root, a program missing,
the PMIx plugin missing, or a daemon that does not come up (the reason carries the
daemons' log tails). Every daemon, and every process of every job, is stopped at the
end; nothing is written outside the temporary directory."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from tracemodel import HMTUNE, PROGRAMS, ROOT, check, load, marker_line

from hmtune.analyze.prv import parse_row, read_header
from hmtune.analyze.sites_io import read_sites
from hmtune.core.placement import read_placement
from hmtune.core.units import MIB
from hmtune.machine.machinefile import load_machine

MPI_ALLOC = PROGRAMS / "mpi_alloc"
CRASH = PROGRAMS / "crash"                 # `crash exit3`: exits 3 (sites crash_a, crash_b)
THP = ROOT / "configs" / "machines" / "vm-thp.toml"
RANK_SITE = marker_line(ROOT / "tests" / "programs" / "mpi_alloc.c", "rank")

DAEMONS = ("mungekey", "munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "srun", "sinfo", "scancel")
SBIN = "/usr/sbin:/sbin"                   # daemons live there; a user's PATH may lack it
UP_S = 30                                  # the nodes must be idle within this
JOB_S = 300                                # sbatch --wait, per job (a loaded machine)
CMD_S = 60                                 # hmtune analyze/advise, sinfo, mungekey
LOG_LINES = 15                             # per log in a skip reason
# Inherited from a surrounding job or launcher, they would point srun and MPI elsewhere.
FOREIGN_ENV = ("SLURM_", "SBATCH_", "SALLOC_", "SRUN_", "PMI_", "PMIX_", "OMPI_")


def which(prog: str) -> str | None:
    return shutil.which(prog, path=f"{os.environ.get('PATH', '')}:{SBIN}")


def free_ports(n: int) -> list[int]:
    """n distinct TCP ports nothing listens on now (held open together while chosen)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def tail(path: Path, lines: int = LOG_LINES) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError as e:
        return f"    ({path.name}: {e.strerror})"
    return "\n".join(f"    {line}" for line in text[-lines:]) or f"    ({path.name}: empty)"


@dataclass
class Job:
    """A finished batch job: sbatch --wait's exit status (the job's) and its output."""

    name: str
    rc: int
    output: str

    def __str__(self) -> str:
        return f"job {self.name}: sbatch --wait exited {self.rc}; the job's output:\n{self.output}"


class Cluster:
    """A private Slurm cluster in `dir`: munged with a key of its own, slurmctld, and one
    slurmd (named after this host) or one per name in `nodes` (each in a UTS namespace
    of its own, the node name as hostname). Every file in dir, TmpFS per node
    (dir/tmp-NODE); ports chosen free at start. `env` is the environment its clients
    (sbatch, srun) need."""

    def __init__(self, d: Path, nodes: list[str] | None = None) -> None:
        self.dir = d
        self.host = socket.gethostname().split(".")[0]
        self.nodes = nodes or [self.host]
        self.namespaced = nodes is not None
        self.conf = d / "slurm.conf"
        self.procs: list[tuple[str, subprocess.Popen]] = []
        self.bins: dict[str, str] = {}
        env = {k: v for k, v in os.environ.items() if not k.startswith(FOREIGN_ENV)}
        # TMPDIR: Open MPI's session directories stay in here too
        self.env = dict(env, SLURM_CONF=str(self.conf), TMPDIR=str(d / "jobtmp"))

    # ---- start ----

    def start(self) -> None:
        """Start every daemon and wait for the nodes to be idle; pytest.skip saying why
        when Slurm cannot run here."""
        if os.geteuid() != 0:
            pytest.skip("Slurm test: not root (the test starts munged, slurmctld and slurmd; "
                        "slurmd runs the jobs)")
        needed = DAEMONS + CLIENTS + (("unshare", "hostname") if self.namespaced else ())
        missing = [p for p in needed if which(p) is None]
        if missing:
            pytest.skip(f"Slurm test: not installed: {', '.join(missing)} (Debian packages "
                        "slurm-wlm, munge: make deps)")
        self.bins = {p: which(p) for p in needed}
        for p in (MPI_ALLOC, CRASH):
            if not p.exists():
                pytest.skip(f"Slurm test: {p} is not built (make build; mpi_alloc needs mpicc)")
        (self.dir / "jobtmp").mkdir()
        self._munge()
        ports = free_ports(1 + len(self.nodes))
        self._write_conf(ports[0], ports[1:])
        mpis = subprocess.run([self.bins["srun"], "--mpi=list"], capture_output=True,
                              text=True, timeout=CMD_S, env=self.env)
        said = (mpis.stdout + mpis.stderr).strip()
        if mpis.returncode != 0:
            self._give_up(f"srun --mpi=list refuses the test's slurm.conf: {said}", [])
        if "pmix" not in said:
            self._give_up(f"srun has no PMIx plugin (srun --mpi=list: {said!r}; Debian "
                          "package slurm-wlm-basic-plugins)", [])
        self._spawn("slurmctld", [self.bins["slurmctld"], "-D", "-f", str(self.conf)])
        for node in self.nodes:
            self._slurmd(node)
        self._wait_idle()

    def _spawn(self, name: str, cmd: list[str]) -> subprocess.Popen:
        """A daemon in the foreground, in a session (process group) of its own; its
        stdout and stderr in dir/NAME.out."""
        with (self.dir / f"{name}.out").open("wb") as out:
            p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out,
                                 stderr=subprocess.STDOUT, env=self.env,
                                 start_new_session=True)
        self.procs.append((name, p))
        return p

    def _munge(self) -> None:
        d = self.dir
        key = d / "munge.key"
        r = subprocess.run([self.bins["mungekey"], "-c", "-k", str(key)], capture_output=True,
                           text=True, timeout=CMD_S)
        if r.returncode != 0:
            pytest.skip(f"Slurm test: mungekey -c failed: {r.stderr.strip()}")
        key.chmod(0o400)
        self.munge_sock = d / "munge.sock"
        # -F: foreground; -f: run although the key's directory is a temporary one
        p = self._spawn("munged", [self.bins["munged"], "-F", "-f",
                                   f"--socket={self.munge_sock}", f"--key-file={key}",
                                   f"--pid-file={d / 'munged.pid'}",
                                   f"--log-file={d / 'munged.log'}",
                                   f"--seed-file={d / 'munge.seed'}"])
        deadline = time.monotonic() + 10
        while not self.munge_sock.exists():
            if p.poll() is not None or time.monotonic() > deadline:
                why = f"exited {p.returncode}" if p.poll() is not None else "no socket in 10 s"
                self._give_up(f"munged did not come up ({why})", ["munged.log", "munged.out"])
            time.sleep(0.1)

    def _write_conf(self, ctld_port: int, node_ports: list[int]) -> None:
        d = self.dir
        if self.namespaced:
            nodes = [f"NodeName={n} NodeHostname={self.host} NodeAddr=127.0.0.1 Port={p} "
                     "CPUs=2 State=UNKNOWN" for n, p in zip(self.nodes, node_ports, strict=True)]
        else:
            nodes = [f"NodeName={self.host} Port={node_ports[0]} CPUs=2 State=UNKNOWN"]
        for n in self.nodes:
            (d / f"spool-{n}").mkdir()
            (d / f"tmp-{n}").mkdir()
        self.conf.write_text("\n".join([
            "ClusterName=hmtune-test",
            f"SlurmctldHost={self.host}",
            "AuthType=auth/munge",
            f"AuthInfo=socket={self.munge_sock}",
            "CredType=cred/munge",
            "SlurmUser=root",
            "SlurmdUser=root",
            f"SlurmctldPort={ctld_port}",
            f"SlurmdPort={node_ports[0]}",
            f"StateSaveLocation={d / 'state'}",
            f"SlurmdSpoolDir={d}/spool-%n",
            f"SlurmctldPidFile={d / 'slurmctld.pid'}",
            f"SlurmdPidFile={d}/slurmd-%n.pid",
            f"SlurmctldLogFile={d / 'slurmctld.log'}",
            f"SlurmdLogFile={d}/slurmd-%n.log",
            f"TmpFS={d}/tmp-%n",                # the PMIx plugin's spmix_appdir_UID_JOB.STEP
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_CPU",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "MpiDefault=none",
            "ReturnToService=2",
            # sbatch --wait polls every 2 s while MinJobAge/3 <= 2 (else 2, 8, 32 s)
            "MinJobAge=8",
            *nodes,
            "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
            ""]))

    def _slurmd(self, node: str) -> None:
        cmd = [self.bins["slurmd"], "-D", "-f", str(self.conf)]
        if not self.namespaced:
            self._spawn(f"slurmd-{node}", cmd + ["-N", node])
            return
        # a hostname of its own: the tracer (and Open MPI) tell nodes apart by it
        script = 'hostname "$1" && shift && exec "$@"'
        self._spawn(f"slurmd-{node}", [self.bins["unshare"], "-u", "sh", "-c", script,
                                       "sh", node, *cmd, "-N", node])

    def logs(self, names: list[str] | None = None) -> str:
        """The tails of the daemons' logs and outputs (slurmctld's and slurmd's unless
        named)."""
        if names is None:
            names = ["slurmctld.log", "slurmctld.out"]
            for n in self.nodes:
                names += [f"slurmd-{n}.log", f"slurmd-{n}.out"]
        return "\n".join(f"  {name}:\n{tail(self.dir / name)}" for name in names)

    def _give_up(self, why: str, logs: list[str] | None = None) -> None:
        """Skip saying why Slurm cannot run here, with the logs' tails as they were
        (read before the daemons are stopped)."""
        text = self.logs(logs)
        self.stop()
        pytest.skip(f"Slurm test: {why}" + (f":\n{text}" if text else ""))

    def states(self) -> dict[str, str]:
        """Node name -> state, as sinfo says ({} while slurmctld does not answer)."""
        try:
            r = subprocess.run([self.bins["sinfo"], "-h", "-N", "-o", "%N %T"],
                               capture_output=True, text=True, timeout=10, env=self.env)
        except subprocess.TimeoutExpired:
            return {}
        return dict(line.split(None, 1) for line in r.stdout.splitlines() if " " in line)

    def _wait_idle(self) -> None:
        deadline = time.monotonic() + UP_S
        states: dict[str, str] = {}
        while time.monotonic() < deadline:
            dead = [(n, p.returncode) for n, p in self.procs if p.poll() is not None]
            if dead:
                self._give_up(f"{dead[0][0]} exited {dead[0][1]} while starting")
            states = self.states()
            if all(states.get(n) == "idle" for n in self.nodes):
                return
            time.sleep(0.5)
        self._give_up(f"the node(s) were not idle within {UP_S} s (sinfo: "
                      f"{states or 'no answer'})")

    # ---- jobs ----

    def sbatch(self, name: str, commands: str, *, nodes: int = 1, ntasks: int = 2) -> Job:
        """Submit a batch script running `commands` (shell text) in the checkout, wait for
        it (sbatch --wait: its exit status is the job's) and return it with its output."""
        out = self.dir / f"{name}.out"
        script = self.dir / f"{name}.sh"
        script.write_text("#!/bin/bash\n"
                          f"#SBATCH -J hmtune-{name}\n"
                          f"#SBATCH -N {nodes}\n"
                          f"#SBATCH -n {ntasks}\n"
                          f"#SBATCH -o {out}\n"
                          f"#SBATCH -D {ROOT}\n"
                          "#SBATCH -t 6\n"
                          f"{commands}\n")
        try:
            r = subprocess.run([self.bins["sbatch"], "--wait", "--parsable", str(script)],
                               capture_output=True, text=True, timeout=JOB_S, env=self.env)
        except subprocess.TimeoutExpired:
            subprocess.run([self.bins["scancel"], "-n", f"hmtune-{name}"], timeout=CMD_S,
                           env=self.env, capture_output=True)
            output = out.read_text(errors="replace") if out.exists() else "(none)"
            pytest.fail(f"job {name}: sbatch --wait did not return within {JOB_S} s; the "
                        f"job's output:\n{output}\n{self.logs()}")
        output = out.read_text(errors="replace") if out.exists() else "(no output file)"
        if r.stderr.strip():
            output += f"\n(sbatch: {r.stderr.strip()})"
        return Job(name, r.returncode, output)

    # ---- stop ----

    def _ours(self) -> list[int]:
        """Processes started by our daemons and jobs that outlive them (slurmstepd and
        the job's processes run in sessions of their own): the ones whose environment
        names our private slurm.conf."""
        mark = f"SLURM_CONF={self.conf}".encode()
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                env = (entry / "environ").read_bytes()
            except OSError:
                continue
            if mark in env.split(b"\0"):
                found.append(int(entry.name))
        return found

    def stop(self) -> None:
        """Stop every daemon (its whole process group) and every process of a job;
        SIGTERM, then SIGKILL after 10 s."""
        for _, p in reversed(self.procs):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for _, p in reversed(self.procs):
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=10)
        self.procs = []
        for _ in range(50):             # what they left: slurmstepd, job processes
            left = self._ours()
            if not left:
                return
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.1)
        raise AssertionError(f"processes of the test's Slurm cluster still alive: {left}")


def cluster(d: Path, nodes: list[str] | None = None) -> Iterator[Cluster]:
    c = Cluster(d, nodes)
    try:
        c.start()
        yield c
    finally:
        c.stop()


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """One node, named after this host, 2 CPUs."""
    yield from cluster(tmp_path_factory.mktemp("slurm"))


# ---- what the tests read ----

def hmtune(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(HMTUNE), *args], capture_output=True, text=True, timeout=CMD_S)


def step(verb: str, out: Path, *app: str, nodes: int = 1) -> str:
    """The batch step's line: `hmtune VERB --mpirun "srun --mpi=pmix -N nodes -n 2" -o OUT
    -- APP...` (shell text)."""
    return shlex.join([str(HMTUNE), verb, "--mpirun", f"srun --mpi=pmix -N {nodes} -n 2",
                       "-o", str(out), "--", *app])


def raw_files(out: Path) -> dict[int, str]:
    """The tracer's per-process files in OUT/raw (HOST.PID.K.hmr): pid -> host."""
    found = {}
    for f in (out / "raw").glob("*.hmr"):
        host, pid, _ = f.name[:-len(".hmr")].rsplit(".", 2)
        assert int(pid) not in found, f"two files of process {pid}"
        found[int(pid)] = host
    return found


def rank_rows(sites_csv: Path) -> dict[int, tuple[str, int]]:
    """mpi_alloc's `rank` site in a per-rank sites.csv: rank -> (chain, max_size)."""
    s = read_sites(sites_csv)
    mine = s[s["callstack"].str.split(" > ").str[0] == RANK_SITE]
    return {int(r): (c, int(m)) for r, c, m in zip(mine["rank"], mine["callstack_raw"],
                                                   mine["max_size"], strict=True)}


def rank_chain(sites_csv: Path) -> str:
    """The `rank` site's chain in a sites.csv (one row per site)."""
    s = read_sites(sites_csv)
    chains = set(s[s["callstack"].str.split(" > ").str[0] == RANK_SITE]["callstack_raw"])
    assert len(chains) == 1, f"{sites_csv}: {len(chains)} rows for the rank site {RANK_SITE}"
    return chains.pop()


@dataclass
class Traced:
    job: Job
    out: Path


@pytest.fixture(scope="module")
def traced(slurm: Cluster) -> Traced:
    """The 2-rank traced job (test a), shared with the placed job (test b)."""
    out = slurm.dir / "mpi_alloc"
    return Traced(slurm.sbatch("trace", step("trace", out, str(MPI_ALLOC))), out)


# ---- the tests ----

def test_traced_job(slurm: Cluster, traced: Traced) -> None:
    """sbatch: hmtune trace --mpirun "srun --mpi=pmix -n 2": each rank traced into a file
    of its own on the node, merged once by the batch step; one row per rank for the rank
    site."""
    job, out = traced.job, traced.out
    assert job.rc == 0, job
    assert "ok 2" in job.output.splitlines(), job
    assert job.output.count("hmtune: traced ") == 1, job          # one merge, one summary
    prv = out / "trace.prv"
    assert read_header(prv).ntasks == 2, job
    assert check(prv) == [], job
    t = load(prv)
    assert sorted(t.rank.values()) == [0, 1], job
    host = socket.gethostname().replace(".", "_")
    assert raw_files(out) == {pid: host for pid in t.pid.values()}, job
    assert parse_row(out / "trace.row").names("NODE") == [host], job
    a = hmtune("analyze", str(out), "--per-rank", "-o", str(out / "per-rank"), "--top", "0")
    assert a.returncode == 0, a.stderr
    rows = rank_rows(out / "per-rank" / "sites.csv")
    assert {r: size for r, (_, size) in rows.items()} == {0: MIB, 1: 2 * MIB}
    assert rows[0][0] == rows[1][0]                     # one site, seen on both ranks
    nodes = {int(r): n for r, n in zip(read_sites(out / "per-rank" / "sites.csv")["rank"],
                                       read_sites(out / "per-rank" / "sites.csv")["node"],
                                       strict=True)}
    assert set(nodes.values()) == {host}                # each rank's node, by name


def test_placed_job(slurm: Cluster, traced: Traced) -> None:
    """advise from the Slurm trace, then sbatch: hmtune run --mpirun "srun ...": both ranks
    use the placement; each one's rank site matched and placed."""
    assert traced.job.rc == 0, f"the trace job failed: {traced.job}"
    out = traced.out
    a = hmtune("analyze", str(out), "--top", "0")
    assert a.returncode == 0, a.stderr
    v = hmtune("advise", str(out), "--mem", "64M", "--machine", str(THP))
    assert v.returncode == 0, v.stderr
    chain = rank_chain(out / "sites.csv")
    pf = read_placement(out / "placement.txt")
    assert chain in {s.chain for s in pf.sites}, "the rank site is not in placement.txt"
    job = slurm.sbatch("run", step("run", out, str(MPI_ALLOC)))
    assert job.rc == 0, job
    assert "ok 2" in job.output.splitlines(), job
    assert "2 rank(s) wrote statistics" in job.output, job
    for rank in (0, 1):
        f = out / f"run-stats.{rank}.json"
        assert f.exists(), f"rank {rank} wrote no {f.name}; {job}"
        s = json.loads(f.read_text())
        assert s["rank"] == rank
        assert s["placement"] == str((out / "placement.txt").resolve())
        site = [x for x in s["sites"] if x["chain"] == chain]
        assert len(site) == 1, f"rank {rank}: the rank site is not in its statistics"
        assert (site[0]["matches"], site[0]["placed"], site[0]["placed_bytes"]) == \
            (1, 1, (rank + 1) * MIB), f"rank {rank}: {site[0]}"


# rank 1 exits 3 (crash exit3, after its two allocations), rank 0 exits 0
ONE_FAILING = f'[ "$SLURM_PROCID" = 1 ] && exec {shlex.quote(str(CRASH))} exit3; exit 0'


def test_one_failing_rank_traced(slurm: Cluster) -> None:
    """Rank 1 exits 3, rank 0 exits 0: srun, hmtune trace and the batch step return 3,
    and sbatch --wait with them; the trace is still merged, with both ranks."""
    out = slurm.dir / "one-failing"
    job = slurm.sbatch("trace-one-failing", step("trace", out, "sh", "-c", ONE_FAILING))
    assert job.rc == 3, job
    assert "out" in job.output.splitlines(), job               # crash exit3's stdout
    t = load(out / "trace.prv")        # a task per process: both sh, and crash on rank 1
    assert sorted(set(t.rank.values())) == [0, 1], job
    assert t.rank[t.one(100000).task] == 1 and t.rank[t.one(200000).task] == 1, job


def test_failing_ranks_placed(slurm: Cluster) -> None:
    """Both ranks exit 3 (crash exit3): traced under Slurm, then re-run with the placement
    advised from that trace; hmtune trace and hmtune run both return 3 through srun and
    sbatch --wait, and each rank still wrote its statistics, its sites placed."""
    out = slurm.dir / "crash"
    job = slurm.sbatch("trace-crash", step("trace", out, str(CRASH), "exit3"))
    assert job.rc == 3, job
    assert read_header(out / "trace.prv").ntasks == 2, job
    a = hmtune("analyze", str(out), "--top", "0")
    assert a.returncode == 0, a.stderr
    v = hmtune("advise", str(out), "--mem", "64M", "--machine", str(THP))
    assert v.returncode == 0, v.stderr
    pf = read_placement(out / "placement.txt")
    assert pf.program == str(CRASH) and pf.sites, "no crash site in placement.txt"
    job = slurm.sbatch("run-crash", step("run", out, str(CRASH), "exit3"))
    assert job.rc == 3, job
    for rank in (0, 1):
        f = out / f"run-stats.{rank}.json"
        assert f.exists(), f"rank {rank} wrote no {f.name}; {job}"
        s = json.loads(f.read_text())
        assert s["rank"] == rank
        assert [(x["matches"], x["placed"]) for x in s["sites"]] == [(1, 1)] * len(pf.sites), \
            f"rank {rank}: {s['sites']}"


@pytest.fixture()
def slurm2(tmp_path: Path) -> Iterator[Cluster]:
    """Two nodes n1, n2 on this host (two slurmd, each in a UTS namespace of its own)."""
    yield from cluster(tmp_path, ["n1", "n2"])


def test_two_node_traced_job(slurm2: Cluster) -> None:
    """sbatch -N 2 -n 2: hmtune trace --mpirun "srun --mpi=pmix -N 2 -n 2": one rank on
    each node; the merged trace has 2 tasks on 2 nodes."""
    out = slurm2.dir / "mpi_alloc"
    job = slurm2.sbatch("trace2", step("trace", out, str(MPI_ALLOC), nodes=2), nodes=2)
    assert job.rc == 0, job
    assert "ok 2" in job.output.splitlines(), job
    h = read_header(out / "trace.prv")
    assert h.ntasks == 2 and len(h.nodes) == 2, job
    assert sorted(parse_row(out / "trace.row").names("NODE")) == ["n1", "n2"], job
    assert check(out / "trace.prv") == [], job
    t = load(out / "trace.prv")
    assert sorted(t.rank.values()) == [0, 1], job
    assert sorted(raw_files(out).values()) == ["n1", "n2"], job   # each node wrote its rank's
    # each rank's node in sites.csv, and the per-node tier of a 2-node job split over
    # the one rank of each node (not over both ranks)
    a = hmtune("analyze", str(out), "--per-rank", "-o", str(out / "per-rank"), "--top", "0")
    assert a.returncode == 0, a.stderr
    s = read_sites(out / "per-rank" / "sites.csv")
    assert sorted(set(zip(s["rank"].astype(int), s["node"], strict=True))) == \
        [(0, "n1"), (1, "n2")]
    a = hmtune("analyze", str(out))
    assert a.returncode == 0, a.stderr
    a = hmtune("advise", str(out), "--machine", str(ROOT / "configs" / "machines" /
                                                    "vm-hugetlb.toml"))
    assert a.returncode == 0, a.stderr
    assert read_placement(out / "placement.txt").tiers[0].capacity == \
        load_machine(ROOT / "configs" / "machines" / "vm-hugetlb.toml").tiers[0].capacity
