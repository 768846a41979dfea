"""The worker seam: what a session needs from whatever measures a variant.

A Session (couplescope.core.session) measures a run's variants one after another. For
each it asks its `Workers` to `prepare` what the variant needs (the native host, built
once per run), then to `start` a worker, and reads the worker's events until one ends
the variant. Everything the printer, the exporters and the app know of a run comes
through this seam, so any of these can stand behind it:

    LiveWorkers       core/runner.py      a worker process per variant
                                           (`python -m couplescope.worker SPEC_JSON`, or
                                           that command under a launcher: mpiexec, srun)
    ReplayWorkers     core/replay.py      a recorded events.jsonl played back (`--replay FILE`)
    SyntheticWorkers  core/synthetic.py   events made up from the spec: tests of what is
                                           shown and saved, with no torch, compiler, MPI
                                           or recording (a new event kind included)

One `Workers` object serves one run, so what it works out once (the native host's build
key and module) holds for every variant. A run in interleaved rounds (--rounds,
couplescope.core.rounds) starts each variant's worker paced: `start(spec, env, shares)`
with its timed iterations per round; the session then calls `run_round` before each of
its rounds and reads `events()` up to that round's round_finished, and `finish` after
the last round. The worker (its process, its loaded model) stays between rounds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Protocol, runtime_checkable

from couplescope.protocol.events import Event


@runtime_checkable
class WorkerHandle(Protocol):
    """One variant being measured, as the session sees it."""

    #: the process to sample for telemetry (its tree), None when there is none to watch
    pid: int | None
    #: how the worker ended (an exit status; None while it runs or where there is none)
    returncode: int | None
    #: the last lines the worker printed (not events), and how many it printed in all
    output: Sequence[str]
    output_total: int
    #: set by the session: called with a message the user must hear now (a pending srun step)
    on_notice: Callable[[str], None] | None

    def events(self) -> Iterator[Event]:
        """The worker's events, typed and in order, until it has ended (a batch's calls
        already expanded: couplescope.protocol.events.parse); paced, until it ends the
        round it was given (round_finished, the last event yielded)."""

    def run_round(self, round_number: int, iterations: int) -> None:
        """Paced: measure `iterations` timed iterations as round `round_number`."""

    def finish(self) -> None:
        """Paced: the rounds are over; the worker finishes (profiled window, variant_finished)."""

    def stop(self, timeout: float = 5.0) -> None:
        """End the worker (what it measured stays); safe from any thread, and twice."""

    def crash_reason(self, after: str = "") -> str:
        """One line for a worker that ended without an ending event; `after` says how far
        it got ("after warm-up iteration 2")."""


@runtime_checkable
class Workers(Protocol):
    """Starts the workers of one run."""

    #: True when workers are processes whose CPU and memory the parent samples (telemetry);
    #: a recording carries the samples it was recorded with
    processes: bool

    def prepare(self, spec, emit: Callable[[Event], None]) -> None:
        """What must exist before `spec`'s worker starts, reported with `emit` (host_build
        events). Raises when the variant cannot run; the message becomes its
        variant_failed line."""

    def start(self, spec, env: dict, shares=None) -> WorkerHandle:
        """A worker measuring `spec`, with `env` added to its environment (the listeners'
        and the request's variables); paced when `shares` (its timed iterations per round)
        are given."""
