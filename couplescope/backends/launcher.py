"""How a variant's worker processes are started, watched and cleaned up after: its launcher.

The parent's side of a backend that starts several processes (mpi: mpiexec or srun) is
all here, apart from the backend's other hooks, so that a backend that starts one worker
process the usual way has nothing to override and the parent asks one object about the
launch. `Backend.launcher(spec)` returns it; this default starts one process directly.
"""

from __future__ import annotations


class Launcher:
    """One worker process, started directly. Every hook a launcher may implement."""

    def processes(self, spec) -> int:
        """How many worker processes (ranks) the launch starts."""
        return 1

    def placement_known(self, spec) -> bool:
        """Whether the parent knows which cores the processes run on (not on other nodes)."""
        return True

    def samples_on_nodes(self, spec) -> bool:
        """Whether the worker processes may run on other nodes than the parent (srun, host
        lists): then a process of the job samples each node (couplescope.probes.node) and
        the parent samples none of them, not even those that happen to run here."""
        return False

    def command(self, spec, worker_cmd: list[str]) -> list[str]:
        """The command that starts the worker(s); a launcher wraps the worker's own."""
        return worker_cmd

    def env(self, spec) -> dict:
        """Environment variables the launch needs (Open MPI as root); none by default."""
        return {}

    def notice(self, spec, line: str) -> tuple[str, float | None] | None:
        """A line the launch printed (stderr, as it comes) that the user must hear about
        now: (message, seconds to wait before giving up on the launch, or None). srun: a
        step that waits for resources. None: nothing to say."""
        return None

    def crash_reason(self, spec, stderr_lines: list[str], returncode, placements=()) -> str | None:
        """One line for a launch that died without an event; None: the generic one.
        `placements`: the rank_info events heard so far (where each process ran)."""
        return None

    def lost_node(self, spec, stderr_lines: list[str], placements=()) -> str | None:
        """The node the launcher says failed under the job (its variant then ends with
        kind "lost", exit code 4), or None."""
        return None

    def cleanup(self, spec) -> None:
        """Release what the launch may leave behind once it has ended, on every path
        (srun: a pending or running job of ours)."""


#: the launcher of every backend that starts one worker process itself
DIRECT = Launcher()
