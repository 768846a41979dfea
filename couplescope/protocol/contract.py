"""The parent <-> worker contract: how a worker is started, what it reads, how it ends.

Both sides import these names, so neither has to import the other: the parent never
imports worker-side modules (they would pull torch into the CLI), and a worker never
imports the parent's orchestration.
"""

from __future__ import annotations

import json

#: `python -m couplescope.worker SPEC_JSON` measures one variant (one rank of it under MPI)
WORKER_MODULE = "couplescope.worker"

#: where the parent wants a variant's trace files (a staging directory it moves later)
TRACE_DIR_ENV = "COUPLESCOPE_TRACE_DIR"
#: operators (as dispatched, summed over the recorded iterations) a trace may hold
MAX_OPS_ENV = "COUPLESCOPE_PROFILE_MAX_OPS"
#: torch.profiler's trace files, as tensorboard_trace_handler names them
TRACE_SUFFIXES = (".pt.trace.json", ".pt.trace.json.gz")

#: the parent's scratch folder (couplescope.protocol.scratch): a worker's files go in it
SCRATCH_ENV = "COUPLESCOPE_SCRATCH"
#: how much memory a variant may plan to use (couplescope.worker.memory_check); "none": no limit
MEMORY_LIMIT_ENV = "COUPLESCOPE_MEMORY_LIMIT"
#: the parent's process id, for a worker it starts directly (not through a launcher): the
#: worker checks that this parent is still there once it has asked to die with it
PARENT_PID_ENV = "COUPLESCOPE_PARENT_PID"

#: exit codes of the worker and of the `couplescope` command
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_WRITE_FAILED = 3    # results could not all be written (a full disk); the statistics were printed
#: a signal ends a run as the shell reports it: 128 + the signal's number
EXIT_HANGUP = 129        # SIGHUP: the terminal or ssh session closed
EXIT_INTERRUPTED = 130   # SIGINT: Ctrl-C
EXIT_TERMINATED = 143    # SIGTERM: a batch system's time limit, scancel, timeout, kill
EXIT_CODES = {
    EXIT_OK: "all checks passed",
    EXIT_FAILED: "a check failed or a variant broke",
    EXIT_USAGE: "bad input",
    EXIT_WRITE_FAILED: "results not all written (a full disk)",
    EXIT_HANGUP: "hung up (SIGHUP)",
    EXIT_INTERRUPTED: "interrupted (SIGINT, Ctrl-C)",
    EXIT_TERMINATED: "terminated (SIGTERM)",
}
#: the signals that stop a run the way Ctrl-C does, in both processes
STOP_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")


def exit_code_for_signal(signum: int) -> int:
    """The exit code of a run a signal stopped (the shell's convention, 128 + N)."""
    return 128 + int(signum)


def worker_argv(python: str, spec_dict: dict) -> list[str]:
    """The command line of a worker for one variant (a launcher may wrap it)."""
    return [python, "-m", WORKER_MODULE, json.dumps(spec_dict)]


def is_worker_argv(argv: list[str]) -> bool:
    """True for a process started by `worker_argv` (telemetry tells workers from launchers)."""
    return argv[1:3] == ["-m", WORKER_MODULE]
