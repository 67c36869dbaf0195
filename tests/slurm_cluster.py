"""A real single-node SLURM cluster for tests: munged + slurmctld + slurmd, all in a temp dir.

Installs nothing (``.ci/slurm.sh`` does: ``apt-get install slurm-wlm munge``). If the binaries
are missing or we are not root, tests using the ``slurm_cluster`` fixture are skipped with the
reason -- or fail, when ``URD_REQUIRE_SLURM=1`` (CI sets it, so a broken set-up cannot pass as a
skip).

Choices, from pipeline-notes and measured here:

* everything private to one temp dir: its own munge key and socket, free TCP ports, state and
  spool dirs, so it neither needs nor disturbs a system munged/slurm, and two checkouts can
  test at once;
* ``proctrack/linuxproc`` + ``task/none``: no cgroups in a container; ``accounting_storage/none``
  (no slurmdbd), hence the profile polls with ``squeue`` instead of ``sacct``;
* a ``cpu`` partition (default) and a ``gpu`` partition on the same node with one fake GPU:
  ``gres.conf: Name=gpu File=/dev/null Count=1`` (without ``File=`` the node goes INVAL); jobs
  given ``--gpus=1`` there see ``CUDA_VISIBLE_DEVICES=0``;
* ``/etc/slurm/slurm.conf`` must point at our config while the cluster runs: the job-step
  executor (snakemake-executor-plugin-slurm-jobstep 0.6.1) strips every ``SLURM_*`` variable,
  ``SLURM_CONF`` included, before its ``srun``, so srun only finds the compiled-in default
  path. We link it there if nothing else is there (a dangling link from a crashed run counts as
  nothing), remove our link afterwards, and skip rather than replace a system config;
* daemons are stopped by their PID files: PID 1 here does not reap, so a stopped daemon may
  linger as a zombie, which we treat as gone.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

SYSTEM_CONF = Path("/etc/slurm/slurm.conf")  # compiled-in default of Debian's slurm-wlm
SBIN_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
DAEMONS = ("munged", "mungekey", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "sinfo", "srun", "scontrol")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie is as good as gone
    except FileNotFoundError:
        return False


def missing_reason() -> str | None:
    """Why a cluster cannot run here, or None."""
    if os.geteuid() != 0:
        return "SLURM test cluster needs root (slurmd, SlurmUser=root); run the tests as root"
    missing = [b for b in DAEMONS + CLIENTS if not shutil.which(b, path=SBIN_PATH)]
    if missing:
        return f"not installed: {', '.join(missing)} (run .ci/slurm.sh: apt-get install slurm-wlm munge)"
    if SYSTEM_CONF.is_symlink() and not SYSTEM_CONF.exists():
        return None  # dangling link left by a crashed run: ours to replace
    if SYSTEM_CONF.exists() or SYSTEM_CONF.is_symlink():
        return (f"{SYSTEM_CONF} already exists ({os.path.realpath(SYSTEM_CONF)}): the test cluster "
                "would need to replace it, since srun inside jobs only reads that path")
    return None


class SlurmCluster:
    def __init__(self, root: Path, cpus: int | None = None):
        self.root = root
        self.node = socket.gethostname().split(".")[0]
        self.cpus = cpus or os.cpu_count() or 1
        self.conf = root / "slurm.conf"
        self.munge_socket = root / "munge" / "munge.socket"
        self.pidfiles = {n: root / f"{n}.pid" for n in ("slurmd", "slurmctld", "munged")}
        self.env = {**os.environ, "SLURM_CONF": str(self.conf), "PATH": SBIN_PATH}
        self.setup_seconds: float | None = None
        self.linked = False  # whether /etc/slurm/slurm.conf is our link (to remove on stop)

    # ---------------------------------------------------------------- config
    def write_config(self) -> None:
        for d in ("munge", "state", "spool", "log"):
            (self.root / d).mkdir(mode=0o700, parents=True, exist_ok=True)
        r = self.root
        self.conf.write_text(
            f"""\
ClusterName=urdci
SlurmctldHost={self.node}(127.0.0.1)
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={self.munge_socket}
StateSaveLocation={r}/state
SlurmdSpoolDir={r}/spool
SlurmctldPidFile={self.pidfiles['slurmctld']}
SlurmdPidFile={self.pidfiles['slurmd']}
SlurmctldLogFile={r}/log/slurmctld.log
SlurmdLogFile={r}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
DefMemPerCPU=1000
GresTypes=gpu
MpiDefault=none
ReturnToService=2
MinJobAge=300
SchedulerParameters=sched_interval=2
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
NodeName={self.node} NodeAddr=127.0.0.1 CPUs={self.cpus} RealMemory={1000 * self.cpus} Gres=gpu:1 State=UNKNOWN
PartitionName=cpu Nodes={self.node} Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes={self.node} MaxTime=INFINITE State=UP
"""
        )
        (r / "gres.conf").write_text(f"NodeName={self.node} Name=gpu File=/dev/null Count=1\n")

    def link_system_conf(self) -> None:
        SYSTEM_CONF.parent.mkdir(parents=True, exist_ok=True)
        if SYSTEM_CONF.is_symlink() and not SYSTEM_CONF.exists():
            SYSTEM_CONF.unlink()
        SYSTEM_CONF.symlink_to(self.conf)
        self.linked = True

    def unlink_system_conf(self) -> None:
        if self.linked and SYSTEM_CONF.is_symlink() and Path(os.readlink(SYSTEM_CONF)) == self.conf:
            SYSTEM_CONF.unlink()

    # ---------------------------------------------------------------- life cycle
    def _run(self, *cmd: str, timeout: float = 30) -> subprocess.CompletedProcess:
        return subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=timeout)

    def start(self, wait_s: float = 30) -> None:
        t0 = time.monotonic()
        self.write_config()
        self.link_system_conf()
        key = self.root / "munge" / "munge.key"
        steps = [
            ("mungekey", "--create", f"--keyfile={key}"),
            ("munged", "--force", f"--key-file={key}", f"--socket={self.munge_socket}",
             f"--pid-file={self.pidfiles['munged']}", f"--log-file={self.root}/log/munged.log",
             f"--seed-file={self.root}/munge/munged.seed"),
            ("slurmctld", "-f", str(self.conf)),
            ("slurmd", "-f", str(self.conf), "-N", self.node),
        ]
        for cmd in steps:
            r = self._run(*cmd)
            if r.returncode != 0:
                raise RuntimeError(f"{' '.join(cmd)} exited {r.returncode}: {r.stderr.strip()}\n{self.log_tail()}")
        deadline = time.monotonic() + wait_s
        state = ""
        while time.monotonic() < deadline:
            r = self._run("sinfo", "-h", "-N", "-n", self.node, "-o", "%t")
            state = r.stdout.strip() or r.stderr.strip()
            if r.returncode == 0 and set(state.split()) == {"idle"}:  # one line per partition
                self.setup_seconds = time.monotonic() - t0
                return
            time.sleep(0.2)
        raise RuntimeError(f"node {self.node} not idle after {wait_s:.0f} s (sinfo: {state!r})\n{self.log_tail()}")

    def stop(self) -> None:
        self.unlink_system_conf()
        # slurmd before slurmctld before munged: each still needs the next while shutting down
        for name in ("slurmd", "slurmctld", "munged"):
            pidfile = self.pidfiles[name]
            try:
                pid = int(pidfile.read_text().split()[0])
            except (FileNotFoundError, ValueError, IndexError):
                continue
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            deadline = time.monotonic() + 10
            while _alive(pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)

    def log_tail(self, lines: int = 15) -> str:
        out = []
        for log in sorted((self.root / "log").glob("*.log")):
            tail = log.read_text(errors="replace").splitlines()[-lines:]
            out.append(f"--- {log.name}\n" + "\n".join(tail))
        return "\n".join(out)


#: One cluster on a machine at a time: it links the system's slurm.conf and starts its daemons, so
#: two pytest workers (xdist) each holding one would clash. The lock is held while a cluster lives.
LOCK = Path(tempfile.gettempdir()) / "urd-slurm-cluster.lock"


@pytest.fixture(scope="module")
def slurm_cluster():
    """A running single-node cluster; ``.env`` carries SLURM_CONF for sbatch/squeue/snakemake."""

    def unavailable(reason: str):
        if os.environ.get("URD_REQUIRE_SLURM") == "1":
            pytest.fail(f"URD_REQUIRE_SLURM=1 but {reason}")
        pytest.skip(reason)

    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # before looking: another worker's cluster may be stopping
        reason = missing_reason()
        if reason:
            unavailable(reason)
        root = Path(tempfile.mkdtemp(prefix="urd-slurm-"))
        cluster = SlurmCluster(root)
        try:
            try:
                cluster.start()
            except (RuntimeError, subprocess.TimeoutExpired) as exc:
                unavailable(f"SLURM test cluster did not start: {exc}")
            yield cluster
        finally:
            cluster.stop()
            shutil.rmtree(root, ignore_errors=True)
