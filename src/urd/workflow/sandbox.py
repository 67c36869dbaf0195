"""Hermetic jobs: a job's command runs where it sees only what its rule declares.

Bazel's sandboxed actions are the model. :func:`urd.workflow.job.run` builds, from the job's
declared inputs and outputs, a bubblewrap (``bwrap``) command line in Linux namespaces:

- the system (``/usr``, ``/etc``, ...), the Python environment and the ``urd`` package, and the
  source files of configured plug-ins, read-only; nothing else of the working tree;
- every declared input read-only at its path;
- each declared output's folder as a fresh, empty staging folder: when the command succeeds, the
  declared outputs (and nothing else) are moved into place; when it fails, nothing is;
- a fresh empty ``/tmp`` and ``$HOME``; no network, except for the jobs that fetch a checkpoint
  or call a live LLM API (:data:`NETWORK`);
- for session B's jobs (:data:`HIDDEN_INPUTS`), the checkpoint not at all: the runner opens it
  and hands the command the descriptor (:mod:`urd.core.hidden`), which the command loads and
  closes before the system's plug-in is imported, so the plug-in sees the model only through the
  metered handle;
- the job's own folder of the LLM suites' work folder (replay cache, batch journal, ledgers, run
  stores) writable, for the jobs that keep one; no other job's folder.

So a session-B job cannot read session A's view, the episodes with their answers, another
cell's outputs, or a stash in ``/tmp``, ``$HOME`` or beside the fiches: an undeclared path does
not exist there, and the job fails naming it. ``sandbox`` in config: ``auto`` (on where user
namespaces work, off with a one-line warning elsewhere), ``required`` (refuse to run without
it, for published results) or ``off``. Inside, ``URD_SANDBOX`` says which, for provenance.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ..core.hidden import ENV as HIDDEN_ENV
from ..core.provenance import SANDBOX_ENV

MODES = ("auto", "required", "off")
ENV = SANDBOX_ENV  # inside a job: "bwrap" or "off (<why>)"
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc", "/sys")
FIX = ("install bubblewrap (Debian and Ubuntu: apt-get install bubblewrap) on every machine that runs jobs, "
       "with unprivileged user namespaces enabled (sysctl kernel.unprivileged_userns_clone=1 and "
       "user.max_user_namespaces > 0), or set sandbox: auto (runs unsandboxed, labelled) or off")


def _live(wildcards: Mapping, config: Mapping | None = None) -> bool:
    return wildcards.get("model", "scripted") != "scripted"


def _urd3_live(wildcards: Mapping, config: Mapping | None = None) -> bool:
    # rung 3's model is the scripted reader, a backbone (run here) or an LLM (the live route)
    return _live(wildcards) and wildcards.get("model") not in (config or {}).get("backbones", {})


def _urd3_writes(wildcards: Mapping, config: Mapping | None = None) -> bool:
    # a consolidate job on an LLM asks it only for a system that writes notes with the model
    from ..rung3.plan import writes_notes

    return _urd3_live(wildcards, config) and writes_notes(dict(config or {}), wildcards.get("system"))


#: The jobs that reach the network, and when: the checkpoint fetch, an LLM suite on a live model, and
#: rung 3's answer and control jobs on an LLM (neither the scripted reader nor a backbone), and its
#: consolidate jobs there of a system that writes notes with the model (summary).
NETWORK = {"fetch_backbone": lambda wc, config=None: True, "agentmem_trip_vs_move": _live,
           "agentmem_update_gate": _live, "planting_run": _live, "urd3_answer": _urd3_live, "urd3_control": _urd3_live,
           "urd3_consolidate": _urd3_writes}
#: The jobs that keep state in the LLM suites' work folder (``agentmem.work_dir``), and their suite:
#: each its own folder in it (``urd.stores.settings.job_folder``: the replay cache, so a rerun never
#: pays twice, the batch journal, the spend ledgers and the run's stores), bound alone.
WORK_DIR_RULES = {"agentmem_trip_vs_move": "trip-vs-move", "agentmem_update_gate": "update-gate",
                  "planting_run": "planting", "urd3_answer": "urd3-answer", "urd3_control": "urd3-control",
                  "urd3_consolidate": "urd3-consolidate"}
#: The jobs that answer in session B, and their input that is handed over as an open descriptor
#: instead of mounted: the checkpoint (the system's plug-in runs in the job's process).
HIDDEN_INPUTS = {"answer": "model", "chain_answer": "model", "sweep_answer": "model", "urd3_answer": "model"}
#: The jobs whose output folders are bound in place, not staged: a checkpoint download resumes
#: from the part file a killed job left beside its output.
IN_PLACE_RULES = frozenset({"fetch_backbone"})


class SandboxUnavailable(RuntimeError):
    """``sandbox: required`` and no working bubblewrap here."""


class SandboxViolation(RuntimeError):
    """A job left something among its outputs that no job may hand the next (a symbolic link)."""


#: What a job's environment keeps (prefixes); the rest of the caller's environment stays out.
PASSED_ENV = ("PATH", "LANG", "LC_", "TZ", "TERM", "PYTHONPATH", "PYTHONUNBUFFERED", "PYTHONHASHSEED", "OMP_",
              "MKL_", "OPENBLAS_", "CUDA_", "NVIDIA_", "SLURM_", "HF_", "HUGGINGFACE_", "URD_", "TORCH",
              "SSL_CERT_", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NO_PROXY", "no_proxy")
#: What only a job with the network gets: the LLM API's key and endpoint, proxies.
NETWORK_ENV = ("ANTHROPIC_", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")


@lru_cache(maxsize=1)
def unavailable() -> str | None:
    """Why a sandbox cannot run here, or None when it can (tried once per process)."""
    if not sys.platform.startswith("linux"):
        return f"bubblewrap needs Linux namespaces ({sys.platform})"
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bwrap (bubblewrap) is not installed"
    try:
        # the flags every job's sandbox uses: where /proc cannot be mounted (some containers), none can run
        proc = subprocess.run([bwrap, "--unshare-all", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
                               "--tmpfs", "/tmp", "true"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap could not start: {exc}"
    if proc.returncode != 0:
        return f"bwrap cannot create namespaces here: {proc.stderr.strip() or proc.returncode}"
    return None


def mode_of(config: Mapping) -> str:
    mode = config.get("sandbox", "auto")
    mode = "off" if mode is False else mode  # YAML reads a bare `off` as false
    if mode not in MODES:
        raise ValueError(f"config sandbox: expected one of {list(MODES)}, got {mode!r}")
    return mode


def decide(mode: str) -> tuple[bool, str]:
    """(sandboxed, label). Under ``required`` without bubblewrap: SandboxUnavailable, naming the fix."""
    if mode == "off":
        return False, "off (sandbox: off)"
    why = unavailable()
    if why is None:
        return True, "bwrap"
    if mode == "required":
        raise SandboxUnavailable(f"urd sandbox: sandbox is required but {why} on {os.uname().nodename}; {FIX}")
    print(f"urd sandbox: WARNING: running unsandboxed ({why}); outputs are labelled so", file=sys.stderr)
    return False, f"off ({why})"


def plugin_sources(config: Mapping) -> list[Path]:
    """The source files (or package folders) of every configured plug-in: systems, stores and
    planting strategies, found without importing them."""
    specs = list((config.get("plugins") or {}).values())
    agentmem = config.get("agentmem") or {}
    specs += list(((agentmem.get("stores") or {}).get("plugins") or {}).values())
    specs += [a["strategy"] for a in ((agentmem.get("planting") or {}).get("arms") or {}).values()
              if isinstance(a, Mapping) and "strategy" in a]
    out = []
    for spec in specs:
        top = str(spec).partition(":")[0].split(".")[0]
        try:
            found = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            found = None
        if found is None or not found.origin or found.origin in ("built-in", "frozen"):
            continue  # resolving it is the registry's job, which names what is wrong
        path = Path(found.origin)
        out.append(path.parent if path.name == "__init__.py" else path)
    return out


def sweep_stale(root: Path) -> list[Path]:
    """Remove the staging folders of jobs that were killed before they could clean up: those made
    on this host by a process that is gone. Another host's are left to that host."""
    swept = []
    for folder in sorted(root.iterdir()) if root.is_dir() else []:
        host, _, pid = folder.name.rpartition("-")[0].rpartition("-")  # <host>-<pid>-<id>
        if host != socket.gethostname() or not pid.isdigit() or _alive(int(pid)):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        swept.append(folder)
    return swept


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class Plan:
    """One job's sandbox: what is bound where, and where its outputs are staged."""

    workdir: Path
    inputs: list[Path]
    outputs: list[Path]
    network: bool
    writable: list[Path] = field(default_factory=list)
    readonly: list[Path] = field(default_factory=list)
    in_place: bool = False
    hidden: Path | None = None  # the input handed over as a descriptor, not mounted
    staging_root: Path | None = None
    staged: dict[Path, Path] = field(default_factory=dict)  # real output folder -> its staging folder

    def stage(self) -> None:
        if self.in_place:
            self.staged = {folder: folder for folder in sorted({o.parent for o in self.outputs})}
            return
        root = self.workdir / ".snakemake" / "sandbox"
        sweep_stale(root)
        self.staging_root = root / f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        for folder in sorted({o.parent for o in self.outputs}, key=lambda p: len(p.parts)):
            staging = self.staging_root / f"{len(self.staged)}"
            staging.mkdir(parents=True)
            self.staged[folder] = staging

    def command(self, inner: list[str], hidden_fd: int | None = None) -> list[str]:
        """The bwrap command line; ``hidden_fd``: the open descriptor of :attr:`hidden`, which
        the caller passes to the process (``pass_fds``)."""
        home = os.environ.get("HOME") or "/root"
        args = [shutil.which("bwrap") or "bwrap", "--die-with-parent", "--unshare-all", "--new-session",
                "--clearenv"]
        if self.network:
            args += ["--share-net"]
        args += ["--proc", "/proc", "--dev", "/dev"]
        for gpu in sorted(Path("/dev").glob("nvidia*")):
            args += ["--dev-bind", str(gpu), str(gpu)]
        for d in SYSTEM_DIRS:
            if Path(d).exists():
                args += ["--ro-bind", d, d]
        if self.network:  # name resolution where /etc/resolv.conf points elsewhere (systemd-resolved)
            resolv = Path("/etc/resolv.conf")
            if resolv.is_symlink() and not _under(resolv.resolve(), Path("/etc")):
                args += ["--ro-bind", str(resolv.resolve().parent), str(resolv.resolve().parent)]
        # after the system: a fresh /tmp and $HOME, whatever folder they live under
        args += ["--tmpfs", "/tmp", "--tmpfs", home]
        for p in _python_paths() + self.readonly:
            args += ["--ro-bind", str(p), str(p)]
        for p in self.writable:
            p.mkdir(parents=True, exist_ok=True)
            args += ["--bind", str(p), str(p)]
        # the job's own files, shallowest first, so that a deeper mount lands on top: an input
        # inside an output's folder is seen through that folder's staging, a staging folder
        # inside an input folder replaces that part of it
        mounts = [(len(f.parts), 0, ["--bind", str(st), str(f)]) for f, st in self.staged.items()]
        mounts += [(len(p.parts), 1, ["--ro-bind", str(p.resolve()), str(p)]) for p in self.inputs]
        for _, _, mount in sorted(mounts, key=lambda m: (m[0], m[1])):
            args += mount
        from ..core.provenance import COMMIT_ENV, git_commit

        env = {k: v for k, v in os.environ.items() if k.startswith(PASSED_ENV)}
        if self.network:  # the API key goes only where the API can be reached
            env.update({k: v for k, v in os.environ.items() if k.startswith(NETWORK_ENV)})
        env.update({"HOME": home, "TMPDIR": "/tmp", ENV: "bwrap", "PYTHONDONTWRITEBYTECODE": "1"})
        env.pop(HIDDEN_ENV, None)
        if self.hidden is not None:
            if hidden_fd is None:
                raise ValueError(f"{self.hidden} is handed over as a descriptor: pass hidden_fd")
            env[HIDDEN_ENV] = f"{hidden_fd}:{self.hidden}"
        commit = git_commit(self.workdir)  # .git stays outside: the job's provenance still names the commit
        if commit:
            env[COMMIT_ENV] = commit
        for k, v in sorted(env.items()):
            args += ["--setenv", k, v]
        return [*args, "--chdir", str(self.workdir), "--", *inner]

    def collect(self) -> list[str]:
        """Move the declared outputs into place; return what else the job wrote (discarded).
        A symbolic link among the outputs is refused: the next job would be handed its target."""
        if self.in_place:
            return []
        for out in self.outputs:
            staged = self.staged[out.parent] / out.name
            links = [staged] if staged.is_symlink() else [p for p in staged.rglob("*") if p.is_symlink()] \
                if staged.is_dir() else []
            if links:
                raise SandboxViolation(f"urd sandbox: output {out} is or holds a symbolic link "
                                       f"({links[0].relative_to(staged.parent)}); outputs must be plain files")
        for out in self.outputs:
            staged = self.staged[out.parent] / out.name
            if staged.exists():
                if out.is_dir() and not out.is_symlink():
                    shutil.rmtree(out)
                shutil.move(str(staged), str(out))  # a rename, or a copy where results/ is on another disk
        stray = []
        declared = {(self.staged[o.parent] / o.name) for o in self.outputs}
        inputs = {self.staged[f] / p.relative_to(f) for p in self.inputs for f in self.staged if _under(p, f)}
        for staging in self.staged.values():
            for p in sorted(staging.rglob("*")):
                if p.is_file() and p not in declared and p not in inputs and not _under_any(p, declared):
                    stray.append(str(p.relative_to(staging)))
        return stray

    def cleanup(self) -> None:
        if self.staging_root is not None:
            shutil.rmtree(self.staging_root, ignore_errors=True)


def _under(p: Path, folder: Path) -> bool:
    try:
        p.relative_to(folder)
    except ValueError:
        return False
    return True


def _under_any(p: Path, folders: Iterable[Path]) -> bool:
    return any(_under(p, f) for f in folders)


def _python_paths() -> list[Path]:
    """The interpreter, the environment, the standard library and site-packages, and the urd
    package itself, read-only (the working tree around them stays out)."""
    import urd

    cwd = Path.cwd().resolve()
    found = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix), Path(urd.__file__).resolve().parent}
    for entry in sys.path:
        p = Path(entry or ".").resolve()
        if p.exists() and not (p == cwd or _under(cwd, p)) and not _under(p, cwd / ".snakemake"):
            found.add(p)
    exe = Path(sys.executable)
    found.add(exe.parent)
    found.add(exe.resolve().parent)
    keep = sorted({p for p in found if p.exists() and not any(str(p).startswith(d + "/") for d in SYSTEM_DIRS)},
                  key=lambda p: len(p.parts))
    return [p for i, p in enumerate(keep) if not any(_under(p, q) for q in keep[:i])]


def plan_for(snakemake, *, workdir: Path | None = None) -> Plan:
    """The sandbox of one Snakemake job, from its declared inputs, outputs and rule."""
    workdir = (workdir or Path.cwd()).resolve()

    def absolute(paths) -> list[Path]:
        # where the job looks (symbolic links kept: the job opens the path, not its target)
        return [Path(os.path.abspath(workdir / str(p))) for p in paths]

    rule = snakemake.rule
    inputs = [p for p in absolute(flatten(snakemake.input)) if p.exists()]
    hidden = getattr(snakemake.input, HIDDEN_INPUTS.get(rule, ""), None)  # not mounted: a descriptor
    if hidden is not None:
        hidden = absolute([hidden])[0]
        inputs = [p for p in inputs if p != hidden]
    outputs = absolute(flatten(snakemake.output))
    config = snakemake.config
    network = NETWORK.get(rule, lambda wc, config=None: False)(dict(snakemake.wildcards.items()), config)
    writable = []
    if rule in WORK_DIR_RULES and (network or not rule.startswith("urd3_")):  # rung 3 keeps one on an LLM only
        from ..stores.settings import job_folder

        work = workdir / str(config.get("agentmem", {}).get("work_dir", "artifacts/agentmem"))
        writable.append(job_folder(work, WORK_DIR_RULES[rule], dict(snakemake.wildcards.items())).resolve())
    return Plan(workdir, inputs, outputs, network, writable=writable, readonly=plugin_sources(config),
                in_place=rule in IN_PLACE_RULES, hidden=hidden)


def flatten(items: Iterable) -> list[str]:
    """Snakemake's named lists (and nested lists) as one list of strings."""
    out = []
    for item in items:
        out += flatten(item) if isinstance(item, (list, tuple)) else [str(item)]
    return out


_MISSING = re.compile(r"(?:No such file or directory|Read-only file system|Permission denied): '([^']+)'")


def undeclared(log_text: str) -> list[str]:
    """Paths an error in the log names as missing or not writable: the undeclared reads and
    writes a sandboxed job tried."""
    return sorted(set(_MISSING.findall(log_text)))
