"""What a backend builds in the worker: a Coupling, and the clock it times phases with.

The engine owns the loop, the checks and the events; a Coupling only knows how to load
the model once and make one iteration's calls, timing each phase through `PhaseClock`.
Keeping the clock here (not in each backend) means every backend's phases mean the
same thing and the profiler's `record_function` ranges carry the same names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from time import perf_counter

import numpy as np

#: Phase names, in the order they happen. Backends use these and nothing else.
PHASES = ("load", "marshal_in", "h2d", "forward", "d2h", "marshal_out")
RANGE_PREFIX = "couplescope/"


class PhaseClock:
    """`with clock("forward"): ...` adds the wall time of the block to phases["forward"].

    Accumulates (cgdrag makes two calls per iteration). When `profiling` is on, each
    phase is also a torch.profiler `record_function` range named couplescope/<phase>;
    off, no profiler call is made, so timed iterations pay nothing for it. When `sync`
    is set (a CUDA device), it is called before both timestamps so a phase is measured
    at its device-true length, not its launch cost; synchronising rather than CUDA events
    keeps host-only phases and device phases on one clock (docs/gpu.md says why and what
    it costs). Not re-entrant: phases do not nest.
    """

    __slots__ = ("phases", "profiling", "sync", "_name", "_t0", "_range")

    def __init__(self) -> None:
        self.phases: dict[str, float] = {}
        self.profiling = False
        self.sync = None
        self._name = ""
        self._t0 = 0.0
        self._range = None

    def reset(self) -> dict[str, float]:
        """Start a new iteration; returns the previous iteration's phases."""
        done, self.phases = self.phases, {}
        return done

    def __call__(self, name: str) -> "PhaseClock":
        self._name = name
        return self

    def __enter__(self) -> "PhaseClock":
        if self.profiling:
            from torch.profiler import record_function

            self._range = record_function(RANGE_PREFIX + self._name)
            self._range.__enter__()
        if self.sync is not None:
            self.sync()
        self._t0 = perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        if self.sync is not None:
            self.sync()
        dt = perf_counter() - self._t0
        self.phases[self._name] = self.phases.get(self._name, 0.0) + dt
        if self._range is not None:
            self._range.__exit__(*exc)
            self._range = None


@dataclass
class CouplingContext:
    """Everything a backend needs to build its Coupling in the worker."""

    spec: object                      # RunSpec
    workload: object                  # Workload
    size: int
    dtype: str
    arrays: dict[str, np.ndarray]     # host inputs, column-major
    outputs: dict[str, np.ndarray]    # host outputs, preallocated, column-major
    calls: list                       # list[Call]
    torchscript_path: str | None      # the saved TorchScript file (None if not needed)
    clock: PhaseClock
    device: str = "cpu"
    extra: dict = field(default_factory=dict)


class Coupling:
    """One backend's way of calling the model. Subclasses implement load() and call()."""

    def __init__(self, ctx: CouplingContext) -> None:
        self.ctx = ctx
        #: set by call() when the model's output could not be written (wrong shape ...)
        self.output_error: str | None = None

    def load(self) -> None:
        """Load the model once (timed as load_seconds; inside every call with reload)."""
        raise NotImplementedError

    def call(self) -> None:
        """Make one iteration's calls, writing into ctx.outputs and timing phases."""
        raise NotImplementedError

    def close(self) -> None:
        pass


class BackendBase:
    """Shared defaults for backend registry objects."""

    name = ""
    summary = ""
    needs_torchscript = False

    def unavailable(self, spec=None) -> str | None:
        return None

    def command(self, spec, worker_cmd: list[str]) -> list[str]:
        return worker_cmd

    def env(self, spec) -> dict:
        """Environment variables the launch needs (Open MPI as root); none by default."""
        return {}

    def open(self, ctx: CouplingContext) -> Coupling:
        raise NotImplementedError
