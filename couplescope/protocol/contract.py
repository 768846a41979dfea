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
#: the native host's compiled module, built (or found in the cache) by the parent once per
#: run: a worker loads it instead of working out the build key again
NATIVE_MODULE_ENV = "COUPLESCOPE_NATIVE_MODULE"
#: the pid of the couplescope process that started a worker: a worker whose parent is gone
#: ends itself (the worker's main), even under a launcher (mpiexec, srun) in between
PARENT_PID_ENV = "COUPLESCOPE_PARENT_PID"
#: how much memory a variant may plan to use (couplescope.worker.memory_check): "16G",
#: "none" for no limit; unset: half of what is available
MEMORY_LIMIT_ENV = "COUPLESCOPE_MEMORY_LIMIT"
#: samples per second for the node samplers of a job whose ranks may run on other nodes
#: (couplescope.probes.node); unset or 0: the ranks start none
NODE_TELEMETRY_HZ_ENV = "COUPLESCOPE_NODE_TELEMETRY_HZ"
#: torch.profiler's trace files, as tensorboard_trace_handler names them
TRACE_SUFFIXES = (".pt.trace.json", ".pt.trace.json.gz")

#: exit codes of the worker and of the `couplescope` command (docs/usage.md has the table).
#: A run ended by a signal exits 128 + the signal's number, as a shell reports it, after
#: keeping and exporting what was measured.
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_NOT_SAVED = 3
EXIT_NODE_LOST = 4
EXIT_INCONCLUSIVE = 5
EXIT_HANGUP = 129
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143
EXIT_CODES = {
    EXIT_OK: "all checks passed",
    EXIT_FAILED: "a check failed or a variant broke",
    EXIT_USAGE: "bad input (nothing was run, or the variant was refused)",
    EXIT_NOT_SAVED: "the results could not be written (a full disk, no permission); the "
                    "statistics were printed",
    EXIT_NODE_LOST: "a node of a multi-node job failed mid-run (Slurm's node failure); what "
                    "was measured is kept and the node and its ranks are named",
    EXIT_INCONCLUSIVE: "--compare: a difference the machine's load may explain (other "
                       "processes loaded it differently while the two runs were timed); no "
                       "variant was slower by a margin that load cannot explain",
    EXIT_HANGUP: "the terminal went away (SIGHUP); what was measured is kept",
    EXIT_INTERRUPTED: "interrupted (SIGINT, Ctrl-C); what was measured is kept",
    EXIT_TERMINATED: "terminated (SIGTERM: a batch time limit, scancel, timeout); what was "
                     "measured is kept",
}


#: the variants' outcomes (a results.builder verdict, or how a variant ended) that make a
#: run fail, in the order they decide the code
_OUTCOME_CODES = ((("stopped",), EXIT_INTERRUPTED), (("lost",), EXIT_NODE_LOST), (("usage",), EXIT_USAGE),
                  (("failed", "error", "running"), EXIT_FAILED))


def exit_code(*, signal: int | None = None, refused: bool = False, output_lost: bool = False,
              not_saved: bool = False, outcomes=(), comparison: tuple[bool, bool] | None = None) -> int:
    """The exit code of the `couplescope` command: the one place it is decided, whichever
    front end ran (the table above; docs/usage.md).

    signal       the signal that ended the run: 128 + its number, whatever else happened
    refused      bad input, refused before anything ran: 2
    output_lost  the reader of stdout went away (`| head`): 1
    not_saved    the results could not be written (a full disk): 3
    outcomes     the variants' outcomes (results.builder's ResultsBuilder.outcomes): a
                 stopped variant 130, a node of its job lost 4, bad input found in a worker 2,
                 a failed check, a
                 broken or unfinished variant 1; else 0
    comparison   --compare's (a variant slower, a verdict inconclusive): 1, else 5, else 0
    """
    if comparison is not None:
        slower, inconclusive = comparison
        return EXIT_FAILED if slower else (EXIT_INCONCLUSIVE if inconclusive else EXIT_OK)
    if signal is not None:
        return 128 + int(signal)
    if refused:
        return EXIT_USAGE
    if output_lost:
        return EXIT_FAILED
    if not_saved:
        return EXIT_NOT_SAVED
    found = set(outcomes)
    for words, code in _OUTCOME_CODES:
        if found.intersection(words):
            return code
    return EXIT_OK


def exit_for_signal(signum: int) -> int:
    """The exit code of a run ended by signal `signum` (SIGINT 130, SIGTERM 143, SIGHUP 129)."""
    return exit_code(signal=signum)


#: a worker started with this flag measures in rounds (--rounds): after its warm-up it waits
#: for a command on its stdin before each round's timed iterations (the parent's pacing)
PACED_FLAG = "--paced"


def worker_argv(python: str, spec_dict: dict, paced: bool = False) -> list[str]:
    """The command line of a worker for one variant (a launcher may wrap it)."""
    return [python, "-m", WORKER_MODULE, json.dumps(spec_dict), *([PACED_FLAG] if paced else [])]


# -- the rounds' commands: one JSON line each on a paced worker's stdin -------------------------
#
# {"round": R, "iterations": N}   measure N timed iterations as round R, then write
#                                 round_finished and wait for the next command
# {"finish": true}                the rounds are over: the profiled window, the training's
#                                 final check, variant_finished, exit
# End of file (the parent went away) ends the worker as an interrupt does.

def round_command(round_number: int, iterations: int) -> str:
    return json.dumps({"round": int(round_number), "iterations": int(iterations)}) + "\n"


FINISH_COMMAND = json.dumps({"finish": True}) + "\n"


def parse_command(line: str) -> dict | None:
    """A command line read by a paced worker: {"round", "iterations"} or {"finish": True};
    None at end of file. ValueError for anything else (a parent of another version)."""
    if not line:
        return None
    command = json.loads(line)
    if command.get("finish") is True:
        return {"finish": True}
    if isinstance(command.get("round"), int) and isinstance(command.get("iterations"), int):
        return {"round": command["round"], "iterations": command["iterations"]}
    raise ValueError(f"not a round command: {line.strip()!r}")


def is_worker_argv(argv: list[str]) -> bool:
    """True for a process started by `worker_argv` (telemetry tells workers from launchers)."""
    return argv[1:3] == ["-m", WORKER_MODULE]
